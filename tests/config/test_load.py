"""lnbench.config.load: config loading, overrides and one-line errors (the YAML 1.2 reading:
test_yaml12.py; the checks of a whole experiment: test_checks.py)."""

import pytest

from lnbench.config import ConfigError, RunConfig, load_config


def _write(tmp_path, text):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_defaults_and_shipped_configs_validate():
    cfg = load_config(None)
    assert (cfg.train.epochs, cfg.train.batch_size, cfg.train.lr) == (50, 64, 1e-3)
    assert (cfg.data.seq_len, cfg.data.features, cfg.data.n_train, cfg.data.n_test) == (20, 64, 1000, 200)
    for name in ["compare", "batchsize_sweep", "train"]:
        assert isinstance(load_config(f"configs/{name}.yaml"), RunConfig)


def test_a_norms_boolean_key_and_the_lr_table_take_their_values():
    """The values the strict checks leave: model.batch_norm_unbiased true / false, and
    lr_by_batch_size's integer batch sizes with their rates (as given)."""
    assert load_config(None, ["model.norm=batch", "model.batch_norm_unbiased=true"]).model.batch_norm_unbiased is True
    assert load_config(None, ["train.lr_by_batch_size={4: 1e-4, 128: 1e-3}"]).train.lr_by_batch_size == {
        4: 1e-4,
        128: 1e-3,
    }


def test_yaml_1e_minus_3_string_becomes_float(tmp_path):
    cfg = load_config(_write(tmp_path, "train:\n  lr: 1e-3\n"))
    assert cfg.train.lr == 0.001 and isinstance(cfg.train.lr, float)


def test_overrides_parse_yaml_values_and_seed(tmp_path):
    cfg = load_config(
        _write(tmp_path, "train:\n  epochs: 3\n"),
        ["train.epochs=7", "compare.norms=[layer]", "model.d_ff=null"],
        seed=5,
    )
    assert cfg.train.epochs == 7 and cfg.compare.norms == ["layer"] and cfg.model.d_ff is None
    assert cfg.seed == 5 and cfg.seeds is None and cfg.seed_list == [5, 6, 7, 8, 9]  # 5 seeds by default
    listed = load_config(_write(tmp_path, "seeds: [1, 2]\n"), seed=7)
    assert listed.seed_list == [7, 8]  # --seed is the first seed; the list keeps its length
    assert load_config(_write(tmp_path, "seeds: [1, 2]\n")).seed_list == [1, 2]


@pytest.mark.parametrize(
    "text,overrides,message",
    [
        ("train:\n  epochs: 0\n", [], "train.epochs: Input should be greater than or equal to 1 (got 0)"),
        ("train:\n  lr: -1\n", [], "train.lr: Input should be greater than 0"),
        (
            "model:\n  norm: instance\n",
            [],
            "model.norm: Input should be 'none', 'batch', 'layer', 'rms', 'weight' or 'group', or a norm class 'package.module:ClassName' (got instance)",
        ),
        (
            "train:\n  epoch: 3\n",
            [],
            "train.epoch: unknown key (did you mean epochs?); allowed: epochs, batch_size, lr, grad_clip",
        ),
        (
            "trian:\n  epochs: 3\n",
            [],
            "trian: unknown key (did you mean train?); allowed: name, seed, seeds, data, model, train, compare, sweep",
        ),
        ("train:\n  epochs: many\n", [], "train.epochs: Input should be a valid integer"),
        ("data:\n  scale_min: 5\n", [], "scale_min (5.0) must be <= scale_max (4.0)"),
        ("train: [1, 2\n", [], "invalid YAML at line"),
        ("- 1\n- 2\n", [], "expected a mapping"),
        ("", ["train.epochs"], "expected key=value"),
        ("", ["sweep.batch_sizes=[0, 4]"], "batch_sizes must all be >= 1"),
        ("seed: -1\n", [], "seed: Input should be greater than or equal to 0"),
        ("", ["seeds=[4294967296]"], "seeds.0: Input should be less than or equal to 4294967295"),
        ("", ["compare.norms=[layer, layer]"], "compare.norms: duplicate entries in ['layer', 'layer']"),
        ("", ["sweep.batch_sizes=[4, 4]"], "sweep.batch_sizes: duplicate entries in [4, 4]"),
        ("", ["train.lr=.inf"], "train.lr: Input should be a finite number"),
        ("", ["data.scale_max=.inf"], "data.scale_max: Input should be a finite number"),
        ("", ["train.batch_size=true"], "train.batch_size: expected a number, got the boolean true"),
        (
            "",
            ["train.batch_size=yes"],
            "train.batch_size: Input should be a valid integer, unable to parse string as an integer (got yes)",
        ),
        ("", ["train.batch_size=2000"], "train.batch_size (2000) must be <= data.n_train (1000)"),
        ("compare: [1]\n", [], "compare: Input should be a valid dictionary"),
        ("", ["seeds=[0, true]"], "seeds: expected a list of numbers or names, got a boolean"),
        (
            "",
            ["sweep.batch_sizes=[true, 16]"],
            "sweep.batch_sizes: expected a list of numbers or names, got a boolean",
        ),
        ("", ["model.batch_norm_stats=per_step"], "model.batch_norm_stats: Input should be 'pooled' or 'per_timestep'"),
        ("", ["sweep.reference_batch_size=3"], "reference_batch_size 3 is not one of batch_sizes"),
        # a norm's own boolean key is as strict as the schema's (model.input_norm): YAML's true or false only
        ("", ["model.batch_norm_unbiased=1"], "model.batch_norm_unbiased: Input should be a valid boolean (got 1)"),
        ("", ["model.batch_norm_unbiased=yes"], "model.batch_norm_unbiased: Input should be a valid boolean (got yes)"),
        ("", ["model.batch_norm_unbiased='true'"], "model.batch_norm_unbiased: Input should be a valid boolean"),
        *[
            (
                "",
                [f"train.lr_by_batch_size={table}"],
                f"train.lr_by_batch_size: {bad}; its keys are batch sizes (integers >= 1) and its values learning "
                "rates (numbers > 0), e.g. {4: 1e-4, 128: 1e-3}",
            )
            for table, bad in [
                ("{0: 1e-3, -4: 1e-3}", "batch size 0, batch size -4"),
                ("{true: 1e-3}", "batch size true"),
                ("{4.5: 1e-3, 4.0: 1e-3}", "batch size 4.5, batch size 4.0"),
                ("{'04': 1e-3, null: 1e-3}", "batch size '04', batch size null"),
                ("{4: true}", "lr true at batch size 4"),
            ]
        ],
    ],
)
def test_errors_are_one_line_naming_file_and_key(tmp_path, text, overrides, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path, overrides)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    if not overrides or "=" in overrides[0]:
        assert str(err.value).startswith(str(path))


def test_missing_or_binary_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(tmp_path / "bin.yaml")
    (tmp_path / "list.yaml").write_text("compare: [1]\n")
    with pytest.raises(ConfigError, match="compare: Input should be a valid dictionary"):
        load_config(tmp_path / "list.yaml", seed=3)


def test_resolved_config_round_trips(tmp_path):
    cfg = load_config(None, ["train.epochs=3", "model.norm=batch"])
    again = load_config(_write(tmp_path, cfg.to_yaml()))
    assert again == cfg


def test_a_learning_rate_adam_cannot_take_is_a_config_error():
    """A learning rate the configured optimizer cannot take in float32 is a ConfigError of
    load_config (so no run folder is made) naming train.lr and the optimizer: Adam at 1e38 (its
    float32 step overflows; the message gives lr <= 1e30), RMSprop at 1e38 (its first step is not
    finite). SGD takes 1e38 and Adam 1e30."""
    with pytest.raises(
        ConfigError, match=r"train\.lr: adam \(torch\.optim\.Adam\) cannot take lr = 1e\+38 .*; give lr <= 1e30$"
    ):
        load_config(None, ["train.lr=1e38"])
    # the check is the configured optimizer's: SGD takes it, RMSprop's first step is infinite
    assert load_config(None, ["train.lr=1e38", "train.optimizer=sgd"]).train.lr == 1e38
    with pytest.raises(
        ConfigError,
        match=r"train\.lr: rmsprop \(torch\.optim\.RMSprop\) cannot take lr = 1e\+38 \(its first step is not finite",
    ):
        load_config(None, ["train.lr=1e38", "train.optimizer=rmsprop"])
    assert load_config(None, ["train.lr=1e30"]).train.lr == 1e30  # large but representable: a run that diverges


# ---- YAML errors: every error on its own line, bounded echo (YAML 1.2 scalars, duplicate keys: test_yaml12.py)


def _load_text(tmp_path, text, *overrides):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_config(path, list(overrides))


def test_a_number_where_a_string_is_expected_says_to_quote_it(tmp_path):
    with pytest.raises(
        ConfigError,
        match='name: Input should be a valid string \\(got 2024\\); YAML read a number: quote it, name: "2024"',
    ):
        _load_text(tmp_path, "name: 2024\n")
    assert _load_text(tmp_path, 'name: "2024"\n').name == "2024"


def test_every_schema_error_is_its_own_line_and_invalid_yaml_says_why(tmp_path):
    with pytest.raises(ConfigError) as err:
        _load_text(tmp_path, "train:\n  epochs: 0\n  lr: -1\nmodel:\n  norm: instance\n")
    lines = str(err.value).splitlines()
    assert len(lines) == 3 and all(line.startswith(str(tmp_path / "c.yaml")) for line in lines)
    assert (
        any("train.epochs" in x for x in lines)
        and any("train.lr" in x for x in lines)
        and any("model.norm" in x for x in lines)
    )
    with pytest.raises(ConfigError, match=r"invalid YAML at line 2, column 1: expected the node content"):
        _load_text(tmp_path, "train: [\n")
    assert _load_text(tmp_path, "train:\n#  epochs: 2\n").train.epochs == 50  # an all-commented section: defaults


def test_an_alias_bomb_is_echoed_in_a_bounded_line(tmp_path):
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    levels += [f"{x}: &{x} [{', '.join(['*' + p] * 9)}]" for p, x in zip("abcde", "bcdef")]
    with pytest.raises(ConfigError) as err:
        _load_text(tmp_path, "\n".join(levels) + "\ntrain:\n  epochs: *f\n")
    first = str(err.value).splitlines()[0]
    assert "train.epochs" in first and len(first) < 250


def test_a_set_value_may_itself_contain_equals_signs():
    """Only the first '=' separates the key: an sbatch parameter such as --constraint=a=b keeps its
    value whole, in apply_overrides and in load_config, at the top level and inside a mapping."""
    from lnbench.config import load_config
    from lnbench.config.load import apply_overrides

    assert apply_overrides({}, ["launcher.partition=gpu=a100"]) == {"launcher": {"partition": "gpu=a100"}}
    cfg = load_config(None, ["launcher.slurm_additional_parameters={comment: x=1=2}", "launcher.partition=a=b"])
    assert cfg.launcher.slurm_additional_parameters == {"comment": "x=1=2"}
    assert cfg.launcher.partition == "a=b"


def test_epochs_are_bounded_where_no_experiment_goes():
    """An epoch count no experiment needs (1e20) would run until stopped: the bound is 100000."""
    assert load_config(None, ["train.epochs=100000"]).train.epochs == 100_000
    with pytest.raises(ConfigError, match="train.epochs: Input should be less than or equal to 100000"):
        load_config(None, ["train.epochs=99999999999999999999"])


#: every key whose value is an integer (or a list of integers), as docs/config-reference.md lists them
INTEGER_KEYS = [
    "seed", "seeds", "data.n_train", "data.n_test", "data.n_val", "data.seq_len", "data.features",
    "data.permutation_seed", "model.hidden_size", "model.num_layers", "model.d_ff", "model.norm_groups",
    "train.epochs", "train.batch_size", "train.lr_step_epochs", "train.warmup_epochs", "train.num_threads",
    "sweep.batch_sizes", "sweep.reference_batch_size", "launcher.timeout_min", "launcher.cpus_per_task",
    "launcher.array_parallelism",
]  # fmt: skip


@pytest.mark.parametrize("key", INTEGER_KEYS)
@pytest.mark.parametrize("typed", ["1e3", "1000.0", "2.5"])
def test_a_float_is_refused_for_every_integer_key_whole_or_not(tmp_path, key, typed):
    """One rule for integers: a float (YAML 1.2 reads ``1e3`` and ``1000.0`` as floats) is refused for
    every integer key, in one line naming the key and, when it is whole, the integer to write; in a
    list (``seeds``, ``sweep.batch_sizes``) too, in a file as on the command line."""
    value = f"[{typed}]" if key in ("seeds", "sweep.batch_sizes") else typed
    section, _, leaf = key.rpartition(".")
    text = f"{section}:\n  {leaf}: {value}\n" if section else f"{leaf}: {value}\n"
    got = "1000.0" if typed != "2.5" else "2.5"
    got += f" in [{got}]" if value.startswith("[") else ""
    hint = "" if typed == "2.5" else " (YAML reads 1e3 and 1000.0 as floats); write 1000"
    for load in (lambda: _load_text(tmp_path, text), lambda: load_config(None, [f"{key}={value}"])):
        with pytest.raises(ConfigError) as err:
            load()
        assert str(err.value).endswith(f": {key}: expected an integer, got {got}{hint}"), str(err.value)
    try:  # the integer itself is not refused as one (1000 may be out of the key's bounds)
        load_config(None, [f"{key}={value.replace(typed, '1000')}"])
    except ConfigError as exc:
        assert "expected an integer" not in str(exc)


@pytest.mark.parametrize(
    ("typed", "got", "hint"),
    [
        (":smile:", "{':smile': null}", "YAML read a mapping: quote it, --set 'name=\":smile:\"'"),
        ("a: b", "{a: b}", "YAML read a mapping: quote it, --set 'name=\"a: b\"'"),
        ("2024", "2024", "YAML read a number: quote it, --set 'name=\"2024\"'"),
        ("true", "true", "YAML read a boolean: quote it, --set 'name=\"true\"'"),
    ],
)
def test_a_set_value_yaml_reads_as_a_mapping_is_echoed_with_how_to_quote_it(typed, got, hint):
    """``--set name=:smile:`` (YAML: the mapping {':smile': null}) where a string is wanted echoes
    the value and says how to quote it on the command line, as a number or a boolean does; the
    quoted form is then the string."""
    with pytest.raises(ConfigError) as err:
        load_config(None, [f"name={typed}"])
    assert str(err.value) == f"(defaults) (with --set): name: Input should be a valid string (got {got}); {hint}"
    assert load_config(None, [f"launcher.partition={typed.join(chr(34) * 2)}"]).launcher.partition == typed


def test_a_mapping_in_a_file_where_a_string_is_wanted_is_echoed(tmp_path):
    with pytest.raises(ConfigError) as err:
        _load_text(tmp_path, "launcher:\n  partition: {gpu: 1}\n")
    assert str(err.value).endswith(
        "launcher.partition: Input should be a valid string (got {gpu: 1}); "
        "YAML read a mapping (a ': ' or a '{' in the value): quote the value"
    )
