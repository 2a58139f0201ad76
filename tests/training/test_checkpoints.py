"""Saved weights and per-epoch checkpoints.

The oracle is the uninterrupted run: training stopped after an epoch and continued from its
checkpoints gives the same metrics (but the wall times) and the same weights, bit for bit; a
member cut out of an ensemble is the model trained alone.
"""

from __future__ import annotations

import io

import pytest
import torch
from conftest import TINY_OVERRIDES

from lnbench.config import load_config
from lnbench.nn.models import build_model
from lnbench.records.schema import Metrics
from lnbench.training import checkpoints
from lnbench.training.loop import train_members
from lnbench.training.tasks import make_task_data

SEEDS = [0, 1]


def _setup(cfg, seeds=SEEDS, ensemble=True):
    datas = [make_task_data(cfg.data, s) for s in seeds]
    models = []
    for s, d in zip(seeds, datas):
        torch.manual_seed(s)
        models.append(build_model(cfg.model, d.input_size, d.seq_len))
    return datas, models, type(models[0]).stack(models) if ensemble else models[0]


def _without_time(m: Metrics) -> dict:
    out = m.to_dict()
    out.pop("epoch_seconds")
    return out


def _roundtrip(obj):
    """Through torch.save and torch.load(weights_only=True), as a file on disk is."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


CONFIGS = {
    "rnn-batch-per-timestep": ["model.norm=batch", "model.batch_norm_stats=per_timestep"],
    "rnn-layer": ["model.norm=layer"],
    "transformer-batch": ["model.family=transformer", "model.norm=batch"],
    # the optimizer's momentum and the schedule's position come back too
    "rnn-sgd-warmup-cosine": [
        "train.optimizer=sgd",
        "train.momentum=0.9",
        "train.lr=0.05",
        "train.lr_schedule=warmup_cosine",
        "train.warmup_epochs=1",
        "data.n_val=8",
        "train.epochs=4",  # two epochs after the resumed one: the schedule's own state matters
    ],
    # two parameter groups (decayed weights; gains and biases not): the state is saved and restored by name
    "rnn-adamw-decay-groups": ["train.optimizer=adamw", "train.weight_decay=0.1"],
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_training_continued_from_a_checkpoint_is_bit_identical(name):
    cfg = load_config(None, TINY_OVERRIDES + ["train.epochs=3", *CONFIGS[name]])
    ensemble = cfg.model.family == "rnn"
    seeds = SEEDS if ensemble else SEEDS[:1]
    datas, _, model = _setup(cfg, seeds, ensemble)
    full = train_members(model, datas, cfg.train, seeds)

    datas, solo, stopped = _setup(cfg, seeds, ensemble)
    hists = [Metrics() for _ in seeds]
    saved = {}

    def checkpoint(epoch, opt, gens, scheduler):
        states = checkpoints.member_states(stopped, solo[0], opt, gens, hists, epoch, scheduler)
        saved[epoch] = [_roundtrip(s) for s in states]

    def interrupt(epoch, ms):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_members(stopped, datas, cfg.train, seeds, interrupt, hists, None, checkpoint)
    assert sorted(saved) == [1, 2]
    datas, _, resumed = _setup(cfg, seeds, ensemble)
    torch.manual_seed(12345)  # whatever the global RNG did meanwhile: the checkpoint's comes back
    again = train_members(resumed, datas, cfg.train, seeds, resume_from=saved[2])
    assert [_without_time(m) for m in again] == [_without_time(m) for m in full]
    assert [m.epochs for m in again] == [list(range(1, cfg.train.epochs + 1))] * len(seeds)
    for (k, a), b in zip(model.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), k


def test_a_members_weights_load_into_its_model_alone():
    """weights.pt's slices: each member of an ensemble (per-timestep BatchNorm: the running
    statistics have the members on axis 1) loads into a plain model of its config, which then
    gives the member's logits and its final test accuracy."""
    cfg = load_config(None, TINY_OVERRIDES + ["model.norm=batch", "model.batch_norm_stats=per_timestep"])
    datas, solo, ensemble = _setup(cfg)
    hists = train_members(ensemble, datas, cfg.train, SEEDS)
    ensemble.eval()
    with torch.no_grad():
        logits = ensemble(torch.stack([d.X_test for d in datas]))  # (S, N, C)
    for s, weights in enumerate(checkpoints.member_weights(ensemble, solo[0])):
        alone = build_model(cfg.model, datas[s].input_size, datas[s].seq_len)
        alone.load_state_dict(_roundtrip(weights))  # strict: every key, every shape
        with torch.no_grad():
            out = alone.eval()(datas[s].X_test)
        assert torch.allclose(out, logits[s], atol=1e-5, rtol=0)
        acc = (out.argmax(-1) == datas[s].y_test).double().mean().item()
        assert acc == pytest.approx(hists[s].test_acc[-1], abs=1e-12)


def test_checkpoints_of_different_epochs_or_configs_are_not_resumed(tmp_path):
    cfg = load_config(None, TINY_OVERRIDES + ["train.epochs=3"])
    datas, solo, model = _setup(cfg)
    hists = [Metrics() for _ in SEEDS]
    opt = torch.optim.Adam(model.parameters())
    gens = [torch.Generator().manual_seed(s) for s in SEEDS]
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder, epoch, state in zip(folders, (1, 1), checkpoints.member_states(model, solo[0], opt, gens, hists, 1)):
        folder.mkdir()
        checkpoints.save(folder / checkpoints.CHECKPOINT, {**state, "epoch": epoch, "config_hash": folder.name})
    assert checkpoints.resumable(folders, ["a", "b"], 3) is not None
    assert checkpoints.resumable(folders, ["a", "x"], 3) is None  # another config
    assert checkpoints.resumable(folders, ["a", "b"], 1) is None  # nothing left to train
    assert checkpoints.resumable([folders[0], None], ["a", "b"], 3) is None  # a member without one
    state = checkpoints.load(folders[1] / checkpoints.CHECKPOINT)
    checkpoints.save(folders[1] / checkpoints.CHECKPOINT, {**state, "epoch": 2})
    assert checkpoints.resumable(folders, ["a", "b"], 3) is None  # members of different epochs
    (folders[0] / checkpoints.CHECKPOINT).write_bytes(b"half a file")
    assert checkpoints.resumable(folders, ["a", "b"], 3) is None
