"""Config loading, overrides and one-line errors."""

import pytest

from lnbench.config import ConfigError, RunConfig, load_config
from lnbench.config.checks import check_sweep


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
                ("{'4': 1e-3, null: 1e-3}", "batch size '4', batch size null"),
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


# ---- YAML 1.2 scalars, duplicate keys, every error on its own line, bounded echo


def _load_text(tmp_path, text, *overrides):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_config(path, list(overrides))


def test_yaml_1_1_integer_forms_are_read_as_yaml_1_2_reads_them(tmp_path):
    cfg = _load_text(tmp_path, "seed: 010\ntrain:\n  epochs: 0x10\n  lr: 1e-3\n")
    assert cfg.seed == 10 and cfg.train.epochs == 16 and cfg.train.lr == 1e-3
    assert _load_text(tmp_path, "seed: 1_000\n").seed == 1000  # a string to YAML 1.2, read as Python reads it
    for text, key in [("seed: 0b11\n", "seed"), ("seed: 1:20\n", "seed"), ("train:\n  lr: yes\n", "train.lr")]:
        with pytest.raises(ConfigError, match=rf"c.yaml: {key}: Input should be a valid (integer|number)"):
            _load_text(tmp_path, text)
    with pytest.raises(ConfigError, match="model.input_norm: Input should be a valid boolean"):
        _load_text(tmp_path, "model:\n  input_norm: on\n")
    with pytest.raises(ConfigError, match="seeds: expected a list of numbers or names, got a boolean"):
        _load_text(tmp_path, "seeds: [0, true]\n")
    assert load_config(None, ["seed=010"]).seed == 10  # --set values too


def test_a_number_where_a_string_is_expected_says_to_quote_it(tmp_path):
    with pytest.raises(
        ConfigError,
        match='name: Input should be a valid string \\(got 2024\\); YAML read a number: quote it, name: "2024"',
    ):
        _load_text(tmp_path, "name: 2024\n")
    assert _load_text(tmp_path, 'name: "2024"\n').name == "2024"


def test_duplicate_keys_are_refused_with_both_lines(tmp_path):
    with pytest.raises(ConfigError, match="duplicate key 'train' at lines 1 and 3"):
        _load_text(tmp_path, "train:\n  epochs: 2\ntrain:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match="duplicate key 'epochs' at lines 2 and 3"):
        _load_text(tmp_path, "train:\n  epochs: 2\n  epochs: 3\n")


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


def test_resume_with_the_same_regimes_in_another_order_says_so(tmp_path):
    """A claims folder of --tasks trend,adding resumed with --tasks adding,trend: its config.yaml
    lists the same regimes in another order, and the refusal says so ("the same settings in another
    order", no empty "()"); a changed value is named with both values."""
    import json

    from lnbench.config.checks import check_resume

    (tmp_path / "run.json").write_text(json.dumps({"kind": "claims"}))
    (tmp_path / "config.yaml").write_text("default:\n  seed: 0\ndefault@adding:\n  seed: 0\n")
    with pytest.raises(ConfigError) as err:
        check_resume(tmp_path, "default@adding:\n  seed: 0\ndefault:\n  seed: 0\n", "claims")
    assert "the same settings in another order" in str(err.value) and "()" not in str(err.value)
    with pytest.raises(ConfigError, match=r"default.seed: 0 in the folder, 1 now"):
        check_resume(tmp_path, "default:\n  seed: 1\ndefault@adding:\n  seed: 0\n", "claims")


def test_a_set_value_may_itself_contain_equals_signs():
    """Only the first '=' separates the key: an sbatch parameter such as --constraint=a=b keeps its
    value whole, in apply_overrides and in load_config, at the top level and inside a mapping."""
    from lnbench.config import load_config
    from lnbench.config.load import apply_overrides

    assert apply_overrides({}, ["launcher.partition=gpu=a100"]) == {"launcher": {"partition": "gpu=a100"}}
    cfg = load_config(None, ["launcher.slurm_additional_parameters={comment: x=1=2}", "launcher.partition=a=b"])
    assert cfg.launcher.slurm_additional_parameters == {"comment": "x=1=2"}
    assert cfg.launcher.partition == "a=b"


def test_a_folder_written_before_a_key_was_added_is_the_same_config_and_the_same_runs(tmp_path):
    """ADDED_KEYS (keys added after run folders were written, at their neutral values: train.optimizer,
    data.n_val, ...): a config.yaml without them is the same config for --resume, and a child run's
    config_hash is the hash of the YAML it had then."""
    import hashlib
    import json

    import yaml

    from lnbench.config.checks import check_resume
    from lnbench.config.identity import ADDED_KEYS
    from lnbench.experiments.base import config_hash

    cfg = RunConfig()
    raw = yaml.safe_load(cfg.to_yaml(model_family_only=True))
    for key in ADDED_KEYS:
        section, _, leaf = key.partition(".")
        raw[section].pop(leaf, None)  # a key of another norm is not written at all
    before = yaml.safe_dump(raw, sort_keys=False)  # as the code before the keys wrote it
    assert config_hash(cfg) == hashlib.sha256(before.encode()).hexdigest()[:16]
    assert config_hash(cfg.with_changes(train__optimizer="sgd")) != config_hash(cfg)
    assert config_hash(cfg.with_changes(data__n_val=100)) != config_hash(cfg)
    assert config_hash(cfg.with_changes(model__num_layers=2)) != config_hash(cfg)
    # num_layers was new for the RNN and the LSTM only: a Transformer run always wrote it
    assert "num_layers: 1" in RunConfig().with_changes(model__family="transformer").identity_yaml()
    assert "num_layers" not in cfg.identity_yaml()

    (tmp_path / "run.json").write_text(json.dumps({"kind": "compare"}))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    check_resume(tmp_path, cfg.to_yaml(model_family_only=True), "compare")  # the same: no error
    with pytest.raises(ConfigError, match=r"train.optimizer: absent in the folder, sgd now|train.optimizer"):
        check_resume(tmp_path, cfg.with_changes(train__optimizer="sgd").to_yaml(model_family_only=True), "compare")


@pytest.mark.parametrize(
    ("overrides", "data"),
    [
        (
            ["data.n_train=5000", "data.n_val=4999"],
            "data.n_train - data.n_val (5000 - 4999 = 1, the training sequences)",
        ),
        (["data.n_train=100"], "data.n_train (100)"),
    ],
)
def test_the_sweep_batch_sizes_message_spells_out_the_training_sequences(overrides, data):
    """sweep.batch_sizes past the training sequences: the message gives the keys, their values and
    the difference in one phrase, the one train.batch_size's message uses. Oracle: the arithmetic
    5000 - 4999 = 1 by hand."""
    cfg = load_config(None, [*overrides, "train.batch_size=1", "sweep.batch_sizes=[1,128]"])
    with pytest.raises(ConfigError) as err:
        check_sweep(cfg)
    assert (
        str(err.value) == f"sweep.batch_sizes: [128] exceed {data}; every batch size must be <= the training sequences"
    )
    with pytest.raises(ConfigError) as err:
        load_config(None, [*overrides, "train.batch_size=128"])
    assert f"train.batch_size (128) must be <= {data}" in str(err.value)


def test_epochs_are_bounded_where_no_experiment_goes():
    """An epoch count no experiment needs (1e20) would run until stopped: the bound is 100000."""
    assert load_config(None, ["train.epochs=100000"]).train.epochs == 100_000
    with pytest.raises(ConfigError, match="train.epochs: Input should be less than or equal to 100000"):
        load_config(None, ["train.epochs=99999999999999999999"])


def test_a_config_whose_seeds_do_not_fit_in_memory_names_the_seeds_that_would(monkeypatch):
    """The memory refusal of a compare that fits with fewer of its seeds names ``seeds`` and the most
    that fit (oracle: memory_needed for 2 and 3 seeds against a memory set between them); a config
    too big for one seed gives no seeds advice."""
    from lnbench.config import checks

    cfg = RunConfig().with_changes(seed=3)  # 5 seeds: 3 .. 7
    have = (checks.memory_needed(cfg, 2) + checks.memory_needed(cfg, 3)) // 2
    monkeypatch.setattr(checks, "available_memory", lambda: have)
    with pytest.raises(ConfigError) as err:
        checks.check_memory_of_families(cfg, ["rnn"])
    assert "5 seeds at once" in str(err.value)
    assert "; set seeds to at most 2 seeds (e.g. seeds: [3, 4]), or lower data.n_train," in str(err.value)
    monkeypatch.setattr(checks, "available_memory", lambda: checks.memory_needed(cfg, 1) - 1)
    with pytest.raises(ConfigError) as err:
        checks.check_memory_of_families(cfg, ["rnn"])
    assert "more than the" in str(err.value) and "seeds:" not in str(err.value)


def test_a_family_whose_members_train_one_after_another_needs_one_seeds_memory(monkeypatch):
    """At pixel MNIST's sizes (T 784, B 64, H 100) the LSTM trains its seeds one after another
    (lnbench.names.seeds_train_together) and the RNN as one ensemble: with memory for one seed
    and not for five (oracle: memory_needed of one LSTM seed and of five RNN seeds), five LSTM seeds pass the memory
    check and five RNN seeds are refused with "5 seeds at once"."""
    from lnbench.config import checks

    cfg = load_config(None, ["data.task=mnist", "data.mnist_order=pixels", "model.hidden_size=100"])
    lstm, rnn = cfg.with_changes(model__family="lstm"), cfg.with_changes(model__family="rnn")
    have = (checks.memory_needed(lstm, 1) + checks.memory_needed(rnn, 5)) // 2  # 2.4 and 3.0 GiB
    assert checks.memory_needed(lstm, 5) > have
    monkeypatch.setattr(checks, "available_memory", lambda: have)
    checks.check_memory_of_families(cfg, ["lstm"])
    with pytest.raises(ConfigError, match="5 seeds at once"):
        checks.check_memory_of_families(cfg, ["rnn"])


def test_the_pixel_by_pixel_mnist_preset_trains_one_seed():
    """configs/compare_mnist_pixels.yaml sets seeds: [0], and its one LSTM seed fits in 24 GiB
    (memory_needed: ~12 GiB per seed at T = 784, trained one seed at a time)."""
    from lnbench.config import checks

    cfg = load_config("configs/compare_mnist_pixels.yaml")
    assert cfg.seed_list == [0]
    assert 8 * 2**30 < checks.memory_needed(cfg.with_changes(model__family="lstm"), 1) < 24 * 2**30
