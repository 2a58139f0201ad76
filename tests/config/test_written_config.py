"""What lnbench writes as config.yaml reads back as the same config: every key of the schema, set
away from its default, survives :meth:`RunConfig.to_yaml` and :func:`load_config` (an experiment's
config.yaml, and a child run's, which keeps its family's and norm's keys only).

Oracle: the config itself (written, loaded, equal), and a child's ``config_hash`` as the code before
``lr_by_batch_size``'s keys were written as integers computed it (so finished runs stay kept)."""

from pathlib import Path

import pytest
from pydantic import BaseModel

from lnbench.config import RunConfig, load_config
from lnbench.experiments.base import config_hash

#: each key of the schema set to a value other than its default (``key=value``), then the keys it needs
#: set too (its task, family, norm, optimizer or schedule) so that the config is valid and a child run
#: records the key
NON_DEFAULT_LINES = """
name=my_run
seed=7
seeds=[3, 5]
data.task=adding
data.n_train=500
data.n_test=100
data.n_val=50
data.seq_len=12
data.features=8
data.digits_order=permuted ; data.task=digits
data.mnist_order=flat ; data.task=mnist ; model.family=mlp
data.permutation_seed=3 ; data.task=digits ; data.digits_order=permuted
data.trend_strength=1.5
data.noise_std=0.5
data.offset_std=2.0
data.scale_min=0.5
data.scale_max=2.0
model.family=transformer
model.norm=rms
model.hidden_size=32
model.num_layers=2
model.d_ff=48 ; model.family=transformer
model.batch_norm_stats=per_timestep ; model.norm=batch
model.norm_placement=separate
model.recurrent_init=orthogonal
model.recurrent_gain=1.5
model.pos_emb=learned ; model.family=transformer
model.pos_emb_std=0.02 ; model.family=transformer ; model.pos_emb=learned
model.forget_bias=0.0 ; model.family=lstm
model.norm_eps=1e-3
model.state_noise_std=0.1
model.norm_gain_init=0.1
model.batch_norm_unbiased=true ; model.norm=batch
model.batch_norm_population=recomputed ; model.norm=batch
model.norm_groups=4 ; model.norm=group
model.input_norm=false ; model.family=transformer
train.epochs=7
train.batch_size=16
train.lr=0.02
train.grad_clip=1.0
train.optimizer=sgd
train.momentum=0.9 ; train.optimizer=sgd
train.rmsprop_alpha=0.5 ; train.optimizer=rmsprop
train.nesterov=true ; train.optimizer=sgd ; train.momentum=0.9
train.weight_decay=0.01
train.weight_decay_params=all ; train.weight_decay=0.01
train.lr_schedule=cosine
train.lr_step_epochs=5 ; train.lr_schedule=step
train.lr_gamma=0.5 ; train.lr_schedule=step ; train.lr_step_epochs=5
train.warmup_epochs=3 ; train.lr_schedule=warmup_cosine
train.lr_by_batch_size={4: 1e-4, 128: 1e-3}
train.num_threads=2
compare.families=[transformer]
compare.norms=[layer, rms]
compare.placements=[joint, separate]
compare.norm_gain_inits=[0.1, null]
compare.target_acc=0.75
sweep.family=lstm
sweep.norms=[layer]
sweep.batch_sizes=[4, 128]
sweep.reference_batch_size=4
sweep.grid={model.norm: [none, layer], train.lr_by_batch_size: [{4: 1e-3}]}
launcher.cluster=local
launcher.partition=gpu
launcher.timeout_min=30
launcher.cpus_per_task=2
launcher.mem_gb=8.5
launcher.array_parallelism=4
launcher.slurm_additional_parameters={account: proj, exclusive: true}
"""
NON_DEFAULT = {
    line.partition("=")[0]: [part.strip() for part in line.split(" ; ")]
    for line in NON_DEFAULT_LINES.strip().splitlines()
}


def _schema_keys() -> list[str]:
    keys = []
    for name, field in RunConfig.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            keys += [f"{name}.{key}" for key in section.model_fields]
        else:
            keys.append(name)
    return keys


def _get(cfg: RunConfig, key: str):
    node = cfg
    for part in key.split("."):
        node = getattr(node, part)
    return node


def test_the_table_names_every_key_of_the_schema():
    """A key added to the schema (a norm's own key too) must be added here, so that its round trip is tested."""
    assert sorted(NON_DEFAULT) == sorted(_schema_keys())


@pytest.mark.parametrize("key", sorted(NON_DEFAULT))
def test_every_key_reads_back_from_its_config_yaml(key, tmp_path: Path):
    """``key`` away from its default: the experiment's config.yaml (every key) and a child run's
    (its family's and norm's keys) load back as the config that wrote them."""
    given, *needs = NON_DEFAULT[key]
    cfg = load_config(None, [*needs, given])
    assert _get(cfg, key) != _get(RunConfig(), key)
    for family_only in (False, True):
        path = tmp_path / f"config_{family_only}.yaml"
        path.write_text(cfg.to_yaml(model_family_only=family_only), encoding="utf-8")
        assert load_config(path) == cfg, path.read_text()


def test_lr_by_batch_size_is_written_with_integer_batch_sizes_and_the_old_quoted_form_still_reads(tmp_path: Path):
    """config.yaml writes ``4: 0.0001``; a config.yaml written with the batch sizes quoted (``'4': 0.0001``,
    lnbench before this was fixed) reads as the same config, whose child has the ``config_hash`` it had
    then (31660f5886d18e64, computed by that code), so its finished runs are kept by ``--resume``."""
    cfg = load_config(None, ["train.lr_by_batch_size={4: 1e-4, 128: 1e-3}", "train.batch_size=4"])
    text = cfg.to_yaml(model_family_only=True)
    assert "    4: 0.0001\n    128: 0.001\n" in text
    old = tmp_path / "config.yaml"
    old.write_text(text.replace("    4: ", "    '4': ").replace("    128: ", "    '128': "), encoding="utf-8")
    assert "'4': 0.0001" in old.read_text()
    read = load_config(old)
    assert read == cfg and read.train.batch_lr == 1e-4
    assert config_hash(read) == "31660f5886d18e64"
