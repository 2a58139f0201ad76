"""lnbench.config.yaml12: config YAML read the way YAML 1.2 reads it, with duplicate keys refused."""

import pytest

from lnbench.config import ConfigError, load_config


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


def test_duplicate_keys_are_refused_with_both_lines(tmp_path):
    with pytest.raises(ConfigError, match="duplicate key 'train' at lines 1 and 3"):
        _load_text(tmp_path, "train:\n  epochs: 2\ntrain:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match="duplicate key 'epochs' at lines 2 and 3"):
        _load_text(tmp_path, "train:\n  epochs: 2\n  epochs: 3\n")
