"""End to end: a sweep over train.optimizer with a validation split records the
optimizer in every row and the tidy export, carries the validation curves, chooses its best cell
on the validation split and says so in its tables and report.html."""

from __future__ import annotations

import json

import pytest
from conftest import TINY_OVERRIDES, runner, set_args

import lnbench
from lnbench.cli.app import app
from lnbench.config import load_config


@pytest.mark.e2e
def test_a_sweep_over_the_optimizer_with_a_validation_split(tmp_path):
    overrides = TINY_OVERRIDES + ["data.n_train=40", "data.n_val=8", "seeds=[0,1]", "train.lr_schedule=cosine"]
    config = tmp_path / "sweep.yaml"
    config.write_text("name: optimizers\n")  # no grid of its own: -g is the whole grid
    runs = tmp_path / "runs"
    args = ["sweep", str(config), *set_args(overrides), "-g", "train.optimizer=adam,sgd", "--runs-dir", str(runs)]
    result = runner.invoke(app, [*args, "-j", "1"])
    assert result.exit_code == 0, result.output
    (folder,) = [p for p in runs.iterdir() if p.is_dir()]
    summary = json.loads((folder / "summary.json").read_text())
    assert [r["values"]["train.optimizer"] for r in summary["rows"]] == ["adam", "adam", "sgd", "sgd"]
    assert {r["selected_on"] for r in summary["rows"]} == {"val"} and all(r["n_val"] == 8 for r in summary["rows"])
    cells = summary["cells"]
    best = max(cells, key=lambda c: c["mean_final_val_acc"])
    assert summary["best_cell"] == {"values": best["values"], "selected_on": "val"}
    assert "Chosen on the validation split" in result.output

    t = lnbench.load(folder)
    assert sorted(t.runs["train.optimizer"]) == ["adam", "adam", "sgd", "sgd"]
    assert set(t.runs["train.lr_schedule"]) == {"cosine"}
    assert t.epochs["val_acc"].notna().all() and t.epochs["val_loss"].notna().all()
    assert {"final_val_acc", "selected_on"} <= set(t.runs.columns)
    child = folder / summary["rows"][2]["run_dir"]
    metrics = json.loads((child / "metrics.json").read_text())
    assert len(metrics["val_acc"]) == 2 and metrics["lr"][0] == load_config(None, overrides).train.lr
    assert "optimizer: sgd" in (child / "config.yaml").read_text()

    html = (folder / "report.html").read_text()
    assert "val acc mean" in html and "chosen on the validation split" in html
