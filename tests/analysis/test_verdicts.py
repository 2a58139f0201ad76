"""Comparisons and verdict sentences from hand-made rows, and the error rates of the whole
pipeline (rows -> paired tests -> Holm -> "differs") in simulation."""

import numpy as np
import pytest

from lnbench.analysis import verdicts
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.records.schema import Metrics, SummaryRow, first_epoch_at, summary_row


def row(
    norm,
    seed=0,
    acc=0.9,
    loss=0.3,
    first=3,
    status="completed",
    family="rnn",
    bs=64,
    correct=None,
    acc_bs=None,
    correct_bs=None,
):
    return SummaryRow(
        family=family,
        norm=norm,
        batch_size=bs,
        seed=seed,
        status=status,
        epochs_completed=10,
        final_test_acc=None if status == "diverged" else acc,
        final_test_acc_batch_stats=acc_bs,
        final_train_loss=loss,
        final_test_loss=loss,
        mean_train_loss=None if status == "diverged" else loss,
        first_epoch_at_target=first,
        n_test=len(correct) if correct else 200,
        test_correct=correct,
        test_correct_batch_stats=correct_bs,
    )


def test_first_epoch_at_counts_an_exact_hit():
    # 180/200 = 0.9 exactly: reaching the target means >=, not >
    assert first_epoch_at([0.5, 0.85, 180 / 200, 0.95], 0.9) == 3
    assert first_epoch_at([0.5, 0.85], 0.9) is None


def test_one_seed_uses_exact_mcnemar_on_the_per_example_results():
    # layer right on 10 examples where none is wrong (b = 10), none right on 2 where layer is wrong (c = 2)
    layer = [1] * 10 + [0] * 2 + [1] * 88
    none = [0] * 10 + [1] * 2 + [1] * 88
    (acc,) = verdicts.compare_comparisons([row("none", correct=none, acc=0.9), row("layer", correct=layer, acc=0.98)])
    # two-sided binomial on 2 of 12: 2 * (1 + 12 + 66) / 4096 = 0.03857
    assert acc.metric == "final_test_acc" and acc.test.startswith("exact McNemar")
    assert (
        acc.norm_a == "none"
        and acc.mean_diff == pytest.approx(-0.08)
        and acc.p_value == pytest.approx(0.0385742, rel=1e-5)
    )
    assert acc.p_adjusted == acc.p_value and acc.significant  # a family of one comparison (no loss test on one seed)


def test_paired_over_seeds_with_holm_and_diverged_seeds_left_out():
    rows = []
    for s, (n_acc, b_acc, l_acc) in enumerate([(0.90, 0.80, 0.92), (0.80, 0.70, 0.81), (0.85, 0.74, 0.87)]):
        rows += [row("none", s, n_acc), row("batch", s, b_acc), row("layer", s, l_acc)]
    rows.append(row("none", 3, status="diverged"))
    rows += [row("batch", 3, 0.99), row("layer", 3, 0.20)]  # seed 3 only pairs batch with layer
    cmp = {(c.norm_a, c.norm_b): c for c in verdicts.compare_comparisons(rows) if c.metric == "final_test_acc"}
    none_batch = cmp[("none", "batch")]
    assert none_batch.n_seeds == 3 and none_batch.mean_diff == pytest.approx(0.31 / 3)
    # d = [0.10, 0.10, 0.11]: t = 0.10333 / (0.005774 / sqrt(3)) = 31.0, df 2 -> p = 0.00104
    assert none_batch.p_value == pytest.approx(0.001039, rel=1e-2) and none_batch.test == "paired t-test over 3 seeds"
    p = sorted(c.p_value for c in cmp.values())
    assert sorted(c.p_adjusted for c in cmp.values()) == pytest.approx(
        [min(1, 3 * p[0]), min(1, max(3 * p[0], 2 * p[1])), min(1, max(3 * p[0], 2 * p[1], p[2]))]
    )
    assert cmp[("batch", "layer")].n_seeds == 4


def test_identical_seeds_are_not_called_different():
    rows = [row(n, s, 0.9) for n in ("none", "layer") for s in range(5)]
    (acc, _) = verdicts.compare_comparisons(rows)
    assert acc.p_value == 1.0 and not acc.significant
    # every seed exactly one point apart on n_test = 200: the sd is floored at 0.005 / sqrt(6),
    # t = 10.95 on 4 df, p = 0.00039: small but not 0, and the interval is not zero-width
    rows = [row("none", s, 0.9) for s in range(5)] + [row("layer", s, 0.91) for s in range(5)]
    (acc, _) = verdicts.compare_comparisons(rows)
    assert acc.p_value == pytest.approx(0.000394, rel=1e-2) and acc.ci95[0] < -0.01 < acc.ci95[1] < 0


def test_compare_verdict_sentences():
    rows = [row("none", s, a, first=f) for s, (a, f) in enumerate([(0.80, None), (0.82, 9), (0.81, None)])]
    rows += [row("layer", s, a, first=f) for s, (a, f) in enumerate([(0.95, 3), (0.96, 4), (0.94, 7)])]
    rows.append(row("batch", 0, status="diverged", first=None))
    cmp = verdicts.compare_comparisons(rows)
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
    cmp = verdicts.sweep_comparisons(rows, reference_batch_size=64)
    assert {c.family for c in cmp} == {"sweep"}
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


def _simulate(effect: float, rng, n_sims: int, seeds: int = 5) -> tuple[float, float]:
    """Rows of 3 norms x seeds: accuracy = seed effect (sd 3 points, shared by the norms) + paired
    noise (sd 0.6 points, about what n_test = 1000 gives two models that disagree on 4% of the
    examples); ``layer`` gets ``effect``. Returns (rate of any 'differs' in the family,
    rate of 'layer vs none differs')."""
    any_hit = pair_hit = 0
    for _ in range(n_sims):
        base = rng.normal(0.85, 0.03, seeds)
        rows = [
            row(n, s, base[s] + rng.normal(0, 0.006) + (effect if n == "layer" else 0))
            for n in ("none", "batch", "layer")
            for s in range(seeds)
        ]
        cmp = [c for c in verdicts.compare_comparisons(rows) if c.metric == "final_test_acc"]
        any_hit += any(c.significant for c in cmp)
        pair_hit += any(c.significant for c in cmp if {c.norm_a, c.norm_b} == {"none", "layer"})
    return any_hit / n_sims, pair_hit / n_sims


def test_null_simulation_false_positive_rate_at_most_5_percent():
    rate, _ = _simulate(0.0, np.random.default_rng(0), 1000)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1000), rate  # family-wise, Holm over 3 pairs


def test_power_for_a_true_2_point_paired_difference_over_5_seeds():
    _, power = _simulate(0.02, np.random.default_rng(1), 300)
    assert power >= 0.80, power


def test_sweep_verdict_for_nonorm_names_each_comparison_once():
    rows = [row("none", s, a, bs=b) for s in range(3) for b, a in [(1, 0.95 + 0.01 * s), (16, 0.80 + 0.011 * s)]]
    cmp = verdicts.sweep_comparisons(rows, reference_batch_size=16)
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
    text = verdicts.compare_verdicts(rows, verdicts.compare_comparisons(rows), 10, 0.9)
    assert "NoNorm 80.0%, LayerNorm 91.5% (2 seeds)." in text[2]


def test_a_sweep_claims_nothing_against_a_norm_with_no_result():
    """NoNorm diverged at every batch size: no comparison involves it, and its verdict line says it
    has no finished run at any batch size."""
    rows = []
    for seed in range(3):
        for bs in (1, 64):
            rows.append(row("none", seed, acc=None, status="diverged", bs=bs))
            rows.append(row("layer", seed, acc=0.9 + 0.01 * seed, bs=bs))
    comparisons = verdicts.sweep_comparisons(rows, 64)
    assert all("none" not in (c.norm_a, c.norm_b) for c in comparisons)
    lines = verdicts.sweep_verdicts(rows, comparisons, 64)
    assert any(line.startswith("NoNorm: no finished run at any batch size") for line in lines)
    (layer,) = [line for line in lines if line.startswith("LayerNorm")]
    assert "NoNorm" not in layer and "vs its own batch sizes" in layer


def test_one_seed_batch_stats_without_per_example_results_is_not_tested():
    """The per-example results with batch statistics missing (only the eval ones kept): nothing
    to test, so None, as the docstring says; with them, the exact McNemar test."""
    correct = [1, 0, 1, 1]
    bn = row("batch", correct=correct, acc=0.75, acc_bs=0.5)
    assert verdicts.paired_test([(bn, bn)], "batch_stats_vs_eval") is None
    bn.test_correct_batch_stats = [1, 0, 0, 1]
    assert verdicts.paired_test([(bn, bn)], "batch_stats_vs_eval").test.startswith("exact McNemar")
