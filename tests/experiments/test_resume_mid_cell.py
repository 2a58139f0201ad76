"""``--resume`` continues an interrupted cell from its last finished epoch.

A compare is interrupted in the middle of a cell (Ctrl-C after epoch 2 of 3), then resumed: every
child's metrics.json equals the one of the same compare run in one go, bit for bit (but the wall
times); the interrupted cell went on from its checkpoint; each completed run keeps its weights
and no checkpoint, and its weights rebuild the model that scored its final accuracy.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import TINY_OVERRIDES

import lnbench
from lnbench.config import load_config
from lnbench.experiments import compare
from lnbench.training.checkpoints import CHECKPOINT, WEIGHTS
from lnbench.training.tasks import make_task_data

pytestmark = pytest.mark.e2e

OVERRIDES = [
    *TINY_OVERRIDES,
    "train.epochs=3",
    "seeds=[0, 1]",
    "compare.families=[rnn]",  # the Transformer's checkpoints: tests/training/test_checkpoints.py
    "compare.norms=[none, batch]",
]
STOP_AT = ("rnn_batch_seed1", 2)  # an ensemble cell of two seeds, with BatchNorm's running statistics


def _metrics(folder):
    out = {}
    for child in sorted(p for p in folder.iterdir() if (p / "metrics.json").exists() and ".attempt" not in p.name):
        body = json.loads((child / "metrics.json").read_text())
        body.pop("epoch_seconds")
        out[child.name] = body
    return out


def test_an_interrupted_cell_goes_on_from_its_last_epoch(tmp_path):
    cfg = load_config(None, OVERRIDES)
    whole = compare(cfg, runs_dir=tmp_path / "whole")

    def ctrl_c(label, epoch, epochs, acc=None):
        if (label, epoch) == STOP_AT:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        compare(cfg, runs_dir=tmp_path / "stopped", on_epoch=ctrl_c)
    (folder,) = (tmp_path / "stopped").iterdir()
    stopped = folder / "rnn_batch_seed1"
    assert json.loads((stopped / "metrics.json").read_text())["epochs"] == [1, 2]
    assert torch.load(stopped / CHECKPOINT, weights_only=True)["epoch"] == 2

    resumed = compare(cfg, runs_dir=tmp_path / "stopped", resume=folder)
    assert resumed.path == folder and resumed.status == "completed"
    assert _metrics(folder) == _metrics(whole.path)
    assert [r.final_test_acc for r in resumed.rows] == [r.final_test_acc for r in whole.rows]
    for seed in (0, 1):
        manifest = json.loads((folder / f"rnn_batch_seed{seed}" / "run.json").read_text())
        assert manifest["resumed_from"] == {"run_dir": f"rnn_batch_seed{seed}.attempt1", "epoch": 2}
        assert not (folder / f"rnn_batch_seed{seed}.attempt1" / CHECKPOINT).exists()  # moved, not copied
    for row in resumed.rows:
        child = folder / row.run_dir
        assert (child / WEIGHTS).is_file() and not (child / CHECKPOINT).exists()

    child = folder / "rnn_batch_seed1"
    model = lnbench.load_model(child)  # the documented one-liner
    run_cfg = load_config(child / "config.yaml")
    data = make_task_data(run_cfg.data, run_cfg.seed)
    with torch.no_grad():
        acc = (model(data.X_test).argmax(-1) == data.y_test).double().mean().item()
    row = next(r for r in resumed.rows if r.run_dir == "rnn_batch_seed1")
    assert acc == pytest.approx(row.final_test_acc, abs=1e-12)
