"""A validation split carved out of the training data by its own fixed generator, through training,
the metrics, the tables and a sweep's best cell (the split itself: test_data.py).

Oracles: the model's own predictions on the validation split (its accuracy by hand), and hand-made
metrics whose validation and test curves reach the target at different epochs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.analysis.grid import aggregate, best_cell, sentences
from lnbench.config import DataConfig, ModelConfig, TrainConfig
from lnbench.nn.models import build_model
from lnbench.records.schema import Metrics, summary_row
from lnbench.report.tables import aggregate_table, grid_table, runs_table
from lnbench.training.loop import train_model
from lnbench.training.tasks import make_task_data

TASKS = {
    "trend": dict(task="trend", n_train=60, n_test=20, seq_len=4, features=3),
    "adding": dict(task="adding", n_train=60, n_test=20, seq_len=6),
    "digits": dict(task="digits", n_train=300, n_test=50),
}


def test_val_metrics_per_epoch_are_the_models_own_on_the_split():
    data = make_task_data(DataConfig(**TASKS["trend"], n_val=20), seed=0)
    torch.manual_seed(0)
    model = build_model(ModelConfig(hidden_size=4), 3, 4)
    m = train_model(model, data, TrainConfig(epochs=3, batch_size=8, lr=1e-2))
    assert len(m.val_loss) == len(m.val_acc) == 3
    model.eval()
    with torch.no_grad():
        logits = model(data.X_val)
    assert m.val_acc[-1] == (logits.argmax(-1) == data.y_val).sum().item() / 20
    assert m.val_loss[-1] == pytest.approx(torch.nn.functional.cross_entropy(logits, data.y_val).item(), rel=1e-5)
    assert len(m.test_acc) == 3  # the test set is still read every epoch
    plain = train_model(model, make_task_data(DataConfig(**TASKS["trend"]), seed=0), TrainConfig(epochs=1))
    assert plain.val_acc == [] and plain.val_loss == []


def _metrics(n_val, seed=0, val=(0.5, 0.95, 0.95), test=(0.92, 0.6, 0.91)):
    return Metrics(
        seed=seed,
        n_test=100,
        n_val=n_val,
        status="completed",
        epochs=[1, 2, 3],
        train_loss=[0.7, 0.5, 0.4],
        test_loss=[0.6, 0.5, 0.4],
        test_acc=list(test),
        val_loss=[0.6, 0.5, 0.4] if n_val else [],
        val_acc=list(val) if n_val else [],
    )


def test_the_first_epoch_at_the_target_reads_the_validation_split():
    """Validation reaches 90 % at epoch 2, test at epoch 1: with a split the row says 2 (and val),
    without one 1 (and test), as before."""
    with_val, without = summary_row(_metrics(20), 0.9), summary_row(_metrics(0), 0.9)
    assert (with_val.first_epoch_at_target, with_val.selected_on, with_val.final_val_acc) == (2, "val", 0.95)
    assert (without.first_epoch_at_target, without.selected_on, without.final_val_acc) == (1, "test", None)
    assert with_val.final_test_acc == without.final_test_acc == 0.91  # the test number is reported as it was
    entry = aggregate_over_seeds([with_val, summary_row(_metrics(20, seed=1), 0.9)])[0]
    assert (entry["selected_on"], entry["mean_final_val_acc"], entry["median_first_epoch_at_target"]) == (
        "val",
        0.95,
        2,
    )


def _header(table):
    return [c.header for c in table.columns]


def test_tables_say_which_split_each_number_comes_from():
    rows_val, rows_test = [summary_row(_metrics(20), 0.9)], [summary_row(_metrics(0), 0.9)]
    assert "1st epoch >= 90% (val)" in _header(runs_table("t", rows_val, 0.9))
    assert "val acc" in _header(runs_table("t", rows_val, 0.9))
    assert "1st epoch >= 90% (test)" in _header(runs_table("t", rows_test, 0.9))
    assert "val acc" not in _header(runs_table("t", rows_test, 0.9))
    mixed = runs_table("t", rows_val + rows_test, 0.9)
    assert "1st epoch >= 90% (val where n_val > 0, else test)" in _header(mixed)
    assert "reached 90% (val)" in _header(aggregate_table(aggregate_over_seeds(rows_val), 0.9))
    assert "reached 90% (test)" in _header(aggregate_table(aggregate_over_seeds(rows_test), 0.9))


def test_a_sweeps_best_cell_is_chosen_on_the_validation_split():
    """Cell a has the higher test accuracy, cell b the higher validation accuracy: b is chosen, and
    its test accuracy is what the sentence reports; without a split the test accuracy chooses a."""
    cells = [{"model__norm": "layer", "train__lr": 0.01}, {"model__norm": "layer", "train__lr": 0.1}]
    a = [summary_row(_metrics(20, s, val=(0.5, 0.6, 0.7), test=(0.5, 0.8, 0.95)), 0.9) for s in (0, 1)]
    b = [summary_row(_metrics(20, s, val=(0.5, 0.8, 0.9), test=(0.5, 0.8, 0.85)), 0.9) for s in (0, 1)]
    entries = aggregate(cells, [a, b])
    assert best_cell(entries) is entries[1] and entries[1]["mean_final_val_acc"] == 0.9
    text = " ".join(sentences(entries, []))
    assert "Chosen on the validation split: the best cell is norm=layer, lr=0.1" in text and "85.0%" in text
    table = grid_table(entries)
    assert [row for row in table.columns[-1]._cells] == ["", "*"] and "val acc mean" in _header(table)
    assert "chosen on the validation split" in str(table.caption)
    no_val = [[summary_row(_metrics(0, s, test=(0.5, 0.8, t)), 0.9) for s in (0, 1)] for t in (0.95, 0.85)]
    plain = aggregate(cells, no_val)
    assert best_cell(plain) is plain[0] and "chosen on the test split" in str(grid_table(plain).caption)
    assert not any("validation" in s for s in sentences(plain, []))
    # lnbench ls's headline names the same cell: the one chosen on the validation split, not the
    # highest test accuracy (a, 95%), which would be a selection on the test set
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.records.folder import RunFolder

    headline = EXPERIMENTS["sweep"].headline(RunFolder(Path(".")), {"cells": entries})
    assert headline is not None and headline["value"] == 0.85 and "best on val" in headline["label"]
    assert EXPERIMENTS["sweep"].headline(RunFolder(Path(".")), {"cells": plain})["value"] == 0.95


def test_an_older_metrics_file_reads_with_no_validation_split():
    old = Metrics.from_dict({"schema_version": 3, "epochs": [1], "test_acc": [0.9], "status": "completed"})
    assert (old.val_acc, old.val_loss, old.n_val, old.lr) == ([], [], 0, [])
    assert summary_row(old, 0.9).selected_on == "test"
