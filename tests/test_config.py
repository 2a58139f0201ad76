"""Config loading, overrides and one-line errors."""

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


def test_yaml_1e_minus_3_string_becomes_float(tmp_path):
    cfg = load_config(_write(tmp_path, "train:\n  lr: 1e-3\n"))
    assert cfg.train.lr == 0.001 and isinstance(cfg.train.lr, float)


def test_overrides_parse_yaml_values_and_seed(tmp_path):
    cfg = load_config(_write(tmp_path, "train:\n  epochs: 3\n"), ["train.epochs=7", "compare.norms=[layer]", "model.d_ff=null"], seed=5)
    assert cfg.train.epochs == 7 and cfg.compare.norms == ["layer"] and cfg.model.d_ff is None
    assert cfg.seed == 5 and cfg.seeds is None and cfg.seed_list == [5, 6, 7, 8, 9]  # 5 seeds by default
    listed = load_config(_write(tmp_path, "seeds: [1, 2]\n"), seed=7)
    assert listed.seed_list == [7]
    assert load_config(_write(tmp_path, "seeds: [1, 2]\n")).seed_list == [1, 2]


@pytest.mark.parametrize(
    "text,overrides,message",
    [
        ("train:\n  epochs: 0\n", [], "train.epochs: Input should be greater than or equal to 1 (got 0)"),
        ("train:\n  lr: -1\n", [], "train.lr: Input should be greater than 0"),
        ("model:\n  norm: group\n", [], "model.norm: Input should be 'none', 'batch' or 'layer' (got 'group')"),
        ("train:\n  epoch: 3\n", [], "train.epoch: unknown key; allowed: epochs, batch_size, lr, grad_clip"),
        ("trian:\n  epochs: 3\n", [], "trian: unknown key; allowed: name, seed, seeds, data, model, train, compare, sweep"),
        ("train:\n  epochs: many\n", [], "train.epochs: Input should be a valid integer"),
        ("data:\n  scale_min: 5\n", [], "scale_min (5.0) must be <= scale_max (4.0)"),
        ("train: [1, 2\n", [], "invalid YAML at line"),
        ("- 1\n- 2\n", [], "expected a mapping"),
        ("", ["train.epochs"], "expected key=value"),
        ("", ["sweep.batch_sizes=[0, 4]"], "batch_sizes must all be >= 1"),
        ("seed: -1\n", [], "seed: Input should be greater than or equal to 0"),
        ("", ["seeds=[4294967296]"], "seeds.0: Input should be less than or equal to 4294967295"),
        ("", ["compare.norms=[layer, layer]"], "compare: norms: duplicate entries in ['layer', 'layer']"),
        ("", ["sweep.batch_sizes=[4, 4]"], "sweep: batch_sizes: duplicate entries in [4, 4]"),
        ("", ["train.lr=.inf"], "train.lr: Input should be a finite number"),
        ("", ["data.scale_max=.inf"], "data.scale_max: Input should be a finite number"),
        ("", ["train.batch_size=yes"], "train: batch_size: expected a number, got the boolean true"),
        ("", ["train.batch_size=2000"], "train.batch_size (2000) must be <= data.n_train (1000)"),
        ("compare: null\n", [], "compare: Input should be a valid dictionary"),
        ("", ["seeds=[0, true]"], "seeds: expected a list of numbers or names, got a boolean"),
        ("", ["sweep.batch_sizes=[true, 16]"], "sweep: batch_sizes: expected a list of numbers or names, got a boolean"),
        ("", ["model.batch_norm_stats=per_step"], "model.batch_norm_stats: Input should be 'pooled' or 'per_timestep'"),
        ("", ["sweep.reference_batch_size=3"], "reference_batch_size 3 is not one of batch_sizes"),
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
    (tmp_path / "null.yaml").write_text("compare: null\n")
    with pytest.raises(ConfigError, match="compare: Input should be a valid dictionary"):
        load_config(tmp_path / "null.yaml", seed=3)


def test_resolved_config_round_trips(tmp_path):
    cfg = load_config(None, ["train.epochs=3", "model.norm=batch"])
    again = load_config(_write(tmp_path, cfg.to_yaml()))
    assert again == cfg


def test_a_learning_rate_adam_cannot_take_is_a_config_error():
    """Issue 10 (2): lr = 1e38 overflowed inside Adam (float32) after the run folder existed."""
    with pytest.raises(ConfigError, match=r"train\.lr: Adam cannot take lr = 1e\+38"):
        load_config(None, ["train.lr=1e38"])
    assert load_config(None, ["train.lr=1e30"]).train.lr == 1e30  # large but representable: a run that diverges
