"""Verdict sentences from hand-made rows, with the comparisons they are built on (the comparisons
alone, and the error rates of the pipeline in simulation: test_comparisons.py)."""

import pytest
from paired_rows import row

from lnbench.analysis import verdicts
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.analysis.comparisons import compare_comparisons, sweep_comparisons
from lnbench.records.schema import Metrics, first_epoch_at, summary_row


def test_first_epoch_at_counts_an_exact_hit():
    # 180/200 = 0.9 exactly: reaching the target means >=, not >
    assert first_epoch_at([0.5, 0.85, 180 / 200, 0.95], 0.9) == 3
    assert first_epoch_at([0.5, 0.85], 0.9) is None


def test_compare_verdict_sentences():
    rows = [row("none", s, a, first=f) for s, (a, f) in enumerate([(0.80, None), (0.82, 9), (0.81, None)])]
    rows += [row("layer", s, a, first=f) for s, (a, f) in enumerate([(0.95, 3), (0.96, 4), (0.94, 7)])]
    rows.append(row("batch", 0, status="diverged", first=None))
    cmp = compare_comparisons(rows)
    text = verdicts.compare_verdicts(rows, cmp, epochs=10, target_acc=0.9)
    assert (
        text[0]
        == "RNN: BatchNorm diverged in 1 of 1 seed; a diverged seed has no final accuracy and is left out of means and tests."
    )
    assert (
        "NoNorm 1/3 seeds reached it at epoch 9; LayerNorm 3/3 seeds reached it, median epoch 4 (range 3-7); BatchNorm 0/1 seed reached it"
        in text[1]
    )
    assert "NoNorm 81.0%, LayerNorm 95.0%" in text[2]
    # layer - none per seed: +15, +14, +13 points; mean 14, sd 1, t(2) half width 4.303 / sqrt(3) = 2.48
    assert (
        "Holm over 1 comparison: LayerNorm is more accurate than NoNorm (final test accuracy +14.0 points "
        "[unadjusted 95% CI +11.5, +16.5], paired t-test over 3 seeds, Holm p = 0.0017)." in text[2]
    )


def test_sweep_comparisons_family_and_sentences():
    rows = []
    for s in range(3):
        rows += [row("none", s, 0.92 + 0.01 * s, bs=1), row("none", s, 0.93 + 0.01 * s, bs=64)]
        rows += [
            row("batch", s, 0.50 + 0.001 * s, bs=1, acc_bs=0.5),
            row("batch", s, 0.92 + 0.01 * s, bs=64, acc_bs=0.95 + 0.002 * s),
        ]
        rows += [row("layer", s, 0.93 + 0.011 * s, bs=1), row("layer", s, 0.94 + 0.01 * s, bs=64)]
    cmp = sweep_comparisons(rows, reference_batch_size=64)
    assert {c.holm_family for c in cmp} == {"sweep"}
    # 2 norms vs NoNorm at 2 sizes + 3 norms at bs 1 vs 64 + BatchNorm batch vs running stats at 2 sizes
    assert len(cmp) == 4 + 3 + 2
    text = {line.split(":")[0]: line for line in verdicts.sweep_verdicts(rows, cmp, 64)}
    assert "below NoNorm at batch size 1 (-42.9 points)" in text["BatchNorm"]
    assert "below its batch size 64 at batch size 1" in text["BatchNorm"]
    assert "Holm-Bonferroni over all 9 comparisons" in text["Significance"]


def test_aggregate_over_seeds_by_hand():
    rows = [
        row("layer", 0, 0.9, 0.1, 3),
        row("layer", 1, 0.8, 0.3, None),
        row("layer", 2, status="diverged", first=None),
    ]
    (agg,) = aggregate_over_seeds(rows)
    assert agg["n_seeds"] == 3 and agg["n_diverged"] == 1 and agg["n_reached_target"] == 1
    assert agg["mean_final_test_acc"] == pytest.approx(0.85) and agg["std_final_test_acc"] == pytest.approx(
        0.0707107, rel=1e-5
    )
    # t interval, df 1: 0.85 +- 12.706 * 0.0707107 / sqrt(2) = 0.85 +- 0.6353, clipped at 100%
    assert agg["ci95_final_test_acc"] == pytest.approx([0.85 - 0.63531, 1.0], rel=1e-4)
    assert agg["mean_mean_train_loss"] == pytest.approx(0.2) and agg["median_first_epoch_at_target"] == 3


def test_summary_row_of_a_diverged_run_has_no_final_values():
    m = Metrics(
        status="diverged",
        epochs=[1, 2],
        test_acc=[0.6, 0.7],
        train_loss=[0.6, 0.5],
        test_loss=[0.6, 0.5],
        test_correct=[1, 0],
        n_test=2,
        diverged_at_epoch=3,
    )
    r = summary_row(m, 0.9)
    assert r.final_test_acc is None and r.mean_train_loss is None and r.test_correct is None and not r.ok
    assert r.epochs_completed == 2


def test_sweep_verdict_for_nonorm_names_each_comparison_once():
    rows = [row("none", s, a, bs=b) for s in range(3) for b, a in [(1, 0.95 + 0.01 * s), (16, 0.80 + 0.011 * s)]]
    cmp = sweep_comparisons(rows, reference_batch_size=16)
    (line, _) = verdicts.sweep_verdicts(rows, cmp, 16)
    assert "above its batch size 16 at batch size 1 (+14.9 points)" in line and "NoNorm at batch size" not in line


def test_one_batch_size_and_per_norm_seed_counts_are_stated():
    rows = [row("layer", s, 0.9 + 0.01 * s, bs=8) for s in range(2)]
    assert verdicts.sweep_verdicts(rows, [], 8)[0].startswith("LayerNorm: final test accuracy 90.5% at batch size 8")
    rows = [row("none", s, 0.8) for s in range(3)] + [
        row("layer", 0, 0.9),
        row("layer", 1, 0.93),
        row("layer", 2, status="diverged"),
    ]
    text = verdicts.compare_verdicts(rows, compare_comparisons(rows), 10, 0.9)
    assert "NoNorm 80.0%, LayerNorm 91.5% (2 seeds)." in text[2]


def test_a_sweep_claims_nothing_against_a_norm_with_no_result():
    """NoNorm diverged at every batch size: no comparison involves it, and its verdict line says it
    has no finished run at any batch size."""
    rows = []
    for seed in range(3):
        for bs in (1, 64):
            rows.append(row("none", seed, acc=None, status="diverged", bs=bs))
            rows.append(row("layer", seed, acc=0.9 + 0.01 * seed, bs=bs))
    comparisons = sweep_comparisons(rows, 64)
    assert all("none" not in (c.norm_a, c.norm_b) for c in comparisons)
    lines = verdicts.sweep_verdicts(rows, comparisons, 64)
    assert any(line.startswith("NoNorm: no finished run at any batch size") for line in lines)
    (layer,) = [line for line in lines if line.startswith("LayerNorm")]
    assert "NoNorm" not in layer and "vs its own batch sizes" in layer
