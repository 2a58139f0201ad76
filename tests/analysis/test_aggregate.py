"""The aggregate over seeds (lnbench.analysis.aggregate) by hand: every spread and interval that
tables and summary.json show, the one-seed Wilson interval, the groups."""

import math

import pytest
from scipy.stats import norm
from scipy.stats import t as t_dist

from lnbench.analysis.aggregate import aggregate_over_seeds, condition_label
from lnbench.records.schema import SummaryRow


def row(norm_, seed, acc=0.9, status="completed", family="rnn", bs=64, placement=None, first=None, **kw):
    r = SummaryRow(
        family=family,
        norm=norm_,
        batch_size=bs,
        seed=seed,
        status=status,
        epochs_completed=5,
        final_test_acc=None if status == "diverged" else acc,
        final_test_acc_batch_stats=None,
        final_train_loss=0.4,
        final_test_loss=0.4,
        mean_train_loss=None if status == "diverged" else 0.5,
        first_epoch_at_target=first,
        n_test=200,
        norm_placement=placement,
    )
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def wilson(k, n, z=norm.ppf(0.975)):
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [(centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)]


def test_several_seeds_by_hand():
    rows = [
        row("layer", 0, 0.80, first=3, mean_train_loss=0.30, final_test_acc_batch_stats=None),
        row("layer", 1, 0.82, first=5, mean_train_loss=0.40),
        row("layer", 2, 0.87, first=None, mean_train_loss=0.50),
        row("layer", 3, status="diverged", first=2),
    ]
    (a,) = aggregate_over_seeds(rows)
    # over the three finished seeds: mean 0.83, sd sqrt(0.0026 / 2) = 0.036056 (ddof 1), t interval on 2 df
    sd = math.sqrt(0.0026 / 2)
    half = t_dist.ppf(0.975, 2) * sd / math.sqrt(3)
    assert (a["family"], a["norm"], a["batch_size"], a["n_seeds"], a["n_diverged"]) == ("rnn", "layer", 64, 4, 1)
    assert a["mean_final_test_acc"] == pytest.approx(0.83) and a["std_final_test_acc"] == pytest.approx(sd)
    assert a["ci95_final_test_acc"] == pytest.approx([0.83 - half, 0.83 + half]) and half == pytest.approx(
        0.0896, abs=1e-4
    )
    assert (a["min_final_test_acc"], a["max_final_test_acc"]) == (0.80, 0.87)
    assert a["mean_mean_train_loss"] == pytest.approx(0.4) and a["mean_final_test_acc_batch_stats"] is None
    # the first epoch at the target over all seeds, the diverged one's earlier epochs too: 3, 5, 2 reached it
    assert (a["n_reached_target"], a["median_first_epoch_at_target"]) == (3, 3.0)
    assert (a["min_first_epoch_at_target"], a["max_first_epoch_at_target"]) == (2, 5)


def test_one_seed_has_the_wilson_interval_of_its_test_set_and_no_spread():
    (a,) = aggregate_over_seeds([row("layer", 0, 0.9)])  # 180 of 200
    assert a["std_final_test_acc"] is None and a["n_seeds"] == 1
    assert a["ci95_final_test_acc"] == pytest.approx(wilson(180, 200), abs=1e-12)
    assert a["ci95_final_test_acc"] == pytest.approx([0.8506, 0.9343], abs=1e-4)  # not zero-width
    (small,) = aggregate_over_seeds([row("layer", 0, 0.5, n_test=10), row("layer", 1, status="diverged")])
    assert small["ci95_final_test_acc"] == pytest.approx(wilson(5, 10), abs=1e-12) and small["n_diverged"] == 1


def test_the_interval_over_seeds_stays_within_0_and_1():
    (top,) = aggregate_over_seeds([row("layer", 0, 0.99), row("layer", 1, 1.0)])
    half = t_dist.ppf(0.975, 1) * math.sqrt(0.00005) / math.sqrt(2)
    assert top["ci95_final_test_acc"] == [pytest.approx(0.995 - half), 1.0]
    (bottom,) = aggregate_over_seeds([row("layer", 0, 0.0), row("layer", 1, 0.01)])
    assert bottom["ci95_final_test_acc"] == [0.0, pytest.approx(0.005 + half)]


def test_no_finished_seed_has_no_numbers():
    (a,) = aggregate_over_seeds([row("none", s, status="diverged") for s in range(2)])
    assert (a["n_seeds"], a["n_diverged"]) == (2, 2)
    for key in ("mean_final_test_acc", "std_final_test_acc", "ci95_final_test_acc", "min_final_test_acc"):
        assert a[key] is None, key
    assert a["max_final_test_acc"] is None and a["mean_mean_train_loss"] is None and a["n_reached_target"] == 0


def test_batch_statistics_and_losses_are_averaged_over_the_finished_seeds_that_have_them():
    rows = [
        row("batch", 0, 0.8, final_test_acc_batch_stats=0.9, mean_train_loss=0.2),
        row("batch", 1, 0.7, final_test_acc_batch_stats=0.6, mean_train_loss=None),
        row("batch", 2, 0.75, final_test_acc_batch_stats=None, mean_train_loss=0.4),
        row("batch", 3, status="diverged", final_test_acc_batch_stats=0.1),
    ]
    (a,) = aggregate_over_seeds(rows)
    assert a["mean_final_test_acc_batch_stats"] == pytest.approx(0.75) and a["mean_mean_train_loss"] == pytest.approx(
        0.3
    )


def test_one_entry_per_family_placement_norm_and_batch_size_in_first_seen_order():
    rows = [
        row("layer", 0, 0.8, placement="joint"),
        row("layer", 0, 0.6, placement="separate"),
        row("layer", 1, 0.9, placement="joint"),
        row("layer", 0, 0.7, family="transformer"),
        row("layer", 0, 0.5, bs=8, placement="joint"),
        row("none", 0, 0.4, placement="joint"),
    ]
    out = aggregate_over_seeds(rows)
    keys = [(a["family"], a["norm_placement"], a["norm"], a["batch_size"]) for a in out]
    assert keys == [
        ("rnn", "joint", "layer", 64),
        ("rnn", "separate", "layer", 64),
        ("transformer", None, "layer", 64),
        ("rnn", "joint", "layer", 8),
        ("rnn", "joint", "none", 64),
    ]
    assert out[0]["n_seeds"] == 2 and out[0]["mean_final_test_acc"] == pytest.approx(0.85)


def test_condition_label_names_the_rnns_batch_statistics():
    assert condition_label("rnn", "batch", "per_timestep") == "batch (per_timestep)"
    assert condition_label("transformer", "batch", "pooled") == "batch"
    assert condition_label("rnn", "batch", None) == "batch" and condition_label("rnn", "layer", "pooled") == "layer"
    (a,) = aggregate_over_seeds([row("batch", 0, batch_norm_stats="per_timestep")])
    assert a["batch_norm_stats"] == "per_timestep"


def test_seeds_that_tie_give_an_interval_of_the_width_the_test_set_resolves():
    """Three seeds at exactly 70% on 200 test sequences: the 95% interval of the mean is not zero
    wide; its sd is floored at the rounding error of an accuracy known to 1/200, (1/200)/sqrt(12)
    (the paired tests floor the sd of a difference at (1/200)/sqrt(6)). Oracle: the t interval by
    hand, 0.7 +- t(0.975, 2) (1/200)/sqrt(12)/sqrt(3), the same for the sweep's cells
    (lnbench.analysis.grid.aggregate); seeds that differ keep their own sd."""
    from lnbench.analysis import grid

    half = t_dist.ppf(0.975, 2) * (1 / 200) / math.sqrt(12) / math.sqrt(3)
    tied = [row("layer", s, acc=0.7) for s in range(3)]
    (entry,) = aggregate_over_seeds(tied)
    assert entry["std_final_test_acc"] == 0
    assert entry["ci95_final_test_acc"] == pytest.approx([0.7 - half, 0.7 + half], abs=1e-12)
    (cell,) = grid.aggregate([{"model__norm": "layer"}], [tied])
    assert cell["ci95_final_test_acc"] == pytest.approx([0.7 - half, 0.7 + half], abs=1e-12)
    spread = [row("layer", s, acc=a) for s, a in enumerate((0.6, 0.7, 0.8))]
    (entry,) = aggregate_over_seeds(spread)
    half = t_dist.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert entry["ci95_final_test_acc"] == pytest.approx([0.7 - half, 0.7 + half], abs=1e-12)
