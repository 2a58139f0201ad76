"""lnbench.config.identity, a run's identity across versions: a run folder written by an older
lnbench still resumes: its config.yaml reads, --resume finds the same config, and every child's
config_hash is the one it wrote, so its finished runs are kept.

Oracle: the folder a1d2100 (the commit before the mnist task, model.batch_norm_unbiased,
data.mnist_order and train.lr_by_batch_size) wrote for a compare of the three families, produced by
running that commit's code: its config.yaml as text and its children's hashes, pinned here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lnbench.config import ConfigError, RunConfig, load_config
from lnbench.config.checks import check_resume
from lnbench.experiments.base import config_hash
from lnbench.experiments.registry import EXPERIMENTS

#: the experiment folder's config.yaml as a1d2100 wrote it (a compare of rnn, lstm and transformer,
#: the tiny sizes of the tests, seeds 0 and 1)
OLD_CONFIG_YAML = """\
name: run
seed: 0
seeds:
- 0
- 1
data:
  task: trend
  n_train: 32
  n_test: 16
  n_val: 0
  seq_len: 5
  features: 8
  digits_order: rows
  permutation_seed: 0
  trend_strength: 0.5
  noise_std: 1.0
  offset_std: 4.0
  scale_min: 0.25
  scale_max: 4.0
model:
  family: rnn
  norm: layer
  hidden_size: 8
  num_layers: 1
  d_ff: null
  batch_norm_stats: pooled
  norm_placement: joint
  recurrent_init: uniform
  recurrent_gain: 1.0
  pos_emb: sinusoidal
  pos_emb_std: 1.0
  forget_bias: 1.0
  norm_gain_init: null
  norm_groups: 2
  input_norm: true
train:
  epochs: 2
  batch_size: 16
  lr: 0.001
  grad_clip: null
  optimizer: adam
  momentum: 0.0
  nesterov: false
  weight_decay: 0.0
  lr_schedule: constant
  lr_step_epochs: null
  lr_gamma: 0.1
  warmup_epochs: null
  num_threads: 1
compare:
  families:
  - rnn
  - lstm
  - transformer
  norms:
  - none
  - batch
  - layer
  placements: null
  norm_gain_inits: null
  target_acc: 0.9
sweep:
  family: rnn
  norms:
  - none
  - batch
  - layer
  batch_sizes:
  - 1
  - 2
  - 4
  - 8
  - 16
  - 32
  - 64
  - 128
  reference_batch_size: null
  grid: null
launcher:
  cluster: slurm
  partition: null
  timeout_min: 60
  cpus_per_task: 1
  mem_gb: 4.0
  array_parallelism: 64
  slurm_additional_parameters: {}
"""

#: each child's config_hash as a1d2100 wrote it into its run.json
OLD_HASHES = {
    "rnn_none_seed0": "5f694b70a0da5ed9",
    "rnn_none_seed1": "b1a082ee524cbbea",
    "rnn_batch_seed0": "ce27b6fecafebde4",
    "rnn_batch_seed1": "52849c3aa20c627a",
    "rnn_layer_seed0": "fe84ee44afe8f811",
    "rnn_layer_seed1": "d859345996b9ea39",
    "lstm_none_seed0": "2ead0f953e64a444",
    "lstm_none_seed1": "518517118655a91b",
    "lstm_batch_seed0": "2b7cd1bcad930131",
    "lstm_batch_seed1": "9768d2118cf16a1f",
    "lstm_layer_seed0": "776700a533fdce06",
    "lstm_layer_seed1": "a7e3f8d644ee4a50",
    "transformer_none_seed0": "eccca6ec3dee4be2",
    "transformer_none_seed1": "eb5872475018ae90",
    "transformer_batch_seed0": "ef3ca39094da71ce",
    "transformer_batch_seed1": "0afad043d05a6049",
    "transformer_layer_seed0": "bb212bdc5af55d31",
    "transformer_layer_seed1": "c018994470d7ed05",
}


def _old_folder(tmp_path: Path) -> Path:
    (tmp_path / "config.yaml").write_text(OLD_CONFIG_YAML)
    (tmp_path / "run.json").write_text(json.dumps({"kind": "compare", "status": "interrupted"}))
    return tmp_path


def test_an_old_compare_folder_resumes_with_the_same_config_and_every_childs_hash(tmp_path):
    """Its config.yaml, read by today's code (every key added since at its default), is the same
    config for --resume, and the plan's children have the hashes the folder's run.json files hold."""
    folder = _old_folder(tmp_path)
    compare = EXPERIMENTS["compare"]
    spec = load_config(folder / "config.yaml")
    check_resume(folder, compare.config_yaml(spec), "compare")  # no error: the same config
    cells = compare.plan(spec, folder)
    assert {c.name: config_hash(c) for cell in cells for c in cell.cfgs} == OLD_HASHES


def test_an_old_folder_is_a_changed_config_when_a_setting_really_changed(tmp_path):
    """The comparison is not blind: another optimizer is named as the change."""
    folder = _old_folder(tmp_path)
    spec = load_config(folder / "config.yaml", ["train.optimizer=sgd"])
    with pytest.raises(ConfigError, match=r"train\.optimizer: adam in the folder, sgd now"):
        check_resume(folder, EXPERIMENTS["compare"].config_yaml(spec), "compare")


def test_a_folder_written_before_a_key_was_added_is_the_same_config_and_the_same_runs(tmp_path):
    """ADDED_KEYS (keys added after run folders were written, at their neutral values: train.optimizer,
    data.n_val, ...): a config.yaml without them is the same config for --resume, and a child run's
    config_hash is the hash of the YAML it had then."""
    import hashlib
    import json

    import yaml

    from lnbench.config.checks import check_resume
    from lnbench.config.identity import ADDED_FOR, ADDED_KEYS
    from lnbench.experiments.base import config_hash

    cfg = RunConfig()
    raw = yaml.safe_load(cfg.to_yaml(model_family_only=True))
    for key in ADDED_KEYS:
        if key in ADDED_FOR and cfg.model.family not in ADDED_FOR[key]:
            continue  # a key the RNN always had (model.recurrent_init, added for the LSTM)
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
