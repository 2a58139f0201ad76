"""Experiments as library calls: the seeds axis, child configs that re-run alone, summary.json."""

import json

import pytest
from conftest import TINY_OVERRIDES

from lnbench import experiments
from lnbench.config import load_config
from lnbench.records.schema import read_metrics

pytestmark = pytest.mark.e2e  # trains models and writes run folders

COMPARISON_KEYS = {
    "borderline",
    "seeds_to_settle",
    "family",
    "norm_a",
    "norm_b",
    "metric",
    "mean_diff",
    "ci95",
    "p_value",
    "p_adjusted",
    "test",
    "n_seeds",
    "significant",
    "condition_a",
    "condition_b",
}


def _curves(m):
    return m.train_loss, m.test_acc, m.test_correct


def _same(a, b):
    """An ensemble member and its solo re-run (a one-member ensemble): bit for bit."""
    assert (a.train_loss, a.test_loss, a.test_acc, a.test_correct) == (
        b.train_loss,
        b.test_loss,
        b.test_acc,
        b.test_correct,
    )


def test_compare_trains_every_seed_and_each_child_reruns_alone(tmp_path):
    cfg = load_config(None, [*TINY_OVERRIDES, "compare.families=[rnn]", "compare.norms=[none,batch]", "seeds=[0,1]"])
    result = experiments.compare(cfg, runs_dir=tmp_path / "runs")
    # in the config's order (the cells run biggest first, the rows come back in cell order)
    assert [(r.norm, r.seed) for r in result.rows] == [("none", 0), ("none", 1), ("batch", 0), ("batch", 1)]
    child = {(r.norm, r.seed): read_metrics(result.path / r.run_dir) for r in result.rows}
    assert _curves(child[("batch", 0)]) != _curves(child[("batch", 1)])  # the seed is really varied
    for (norm, seed), m in child.items():
        assert m.seed == seed
        solo = experiments.train(load_config(result.path / f"rnn_{norm}_seed{seed}" / "config.yaml"), tmp_path / "solo")
        _same(read_metrics(solo.path), m)
    summary = json.loads((result.path / "summary.json").read_text())
    assert summary["seeds"] == [0, 1] and summary["complete"]
    assert summary["comparisons"] and all(set(c) == COMPARISON_KEYS for c in summary["comparisons"])
    assert {c["metric"] for c in summary["comparisons"]} == {"final_test_acc", "mean_train_loss"}
    assert all(c["test"] == "paired t-test over 2 seeds" or "2 seeds" in c["test"] for c in summary["comparisons"])


def test_rows_come_back_in_config_order_although_the_biggest_cells_run_first(tmp_path):
    cfg = load_config(
        None,
        [
            *TINY_OVERRIDES,
            "compare.families=[rnn,transformer]",
            "compare.norms=[none,layer]",
            "seeds=[0,1]",
            "train.epochs=1",
        ],
    )
    result = experiments.compare(cfg, runs_dir=tmp_path)
    expected = [(f, n, s) for f in ("rnn", "transformer") for n in ("none", "layer") for s in (0, 1)]
    assert [(r.family, r.norm, r.seed) for r in result.rows] == expected
    assert all(r.run_dir == f"{r.family}_{r.norm}_seed{r.seed}" for r in result.rows)
