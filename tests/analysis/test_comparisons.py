"""Comparisons from hand-made rows (exact McNemar for one seed, paired t-tests over seeds, Holm),
and the error rates of the whole pipeline (rows -> paired tests -> Holm -> "differs") in simulation."""

import numpy as np
import pytest
from paired_rows import row

from lnbench.analysis.comparisons import compare_comparisons, paired_test


def test_one_seed_uses_exact_mcnemar_on_the_per_example_results():
    # layer right on 10 examples where none is wrong (b = 10), none right on 2 where layer is wrong (c = 2)
    layer = [1] * 10 + [0] * 2 + [1] * 88
    none = [0] * 10 + [1] * 2 + [1] * 88
    (acc,) = compare_comparisons([row("none", correct=none, acc=0.9), row("layer", correct=layer, acc=0.98)])
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
    cmp = {(c.norm_a, c.norm_b): c for c in compare_comparisons(rows) if c.metric == "final_test_acc"}
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
    (acc, _) = compare_comparisons(rows)
    assert acc.p_value == 1.0 and not acc.significant
    # every seed exactly one point apart on n_test = 200: the sd is floored at 0.005 / sqrt(6),
    # t = 10.95 on 4 df, p = 0.00039: small but not 0, and the interval is not zero-width
    rows = [row("none", s, 0.9) for s in range(5)] + [row("layer", s, 0.91) for s in range(5)]
    (acc, _) = compare_comparisons(rows)
    assert acc.p_value == pytest.approx(0.000394, rel=1e-2) and acc.ci95[0] < -0.01 < acc.ci95[1] < 0


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
        cmp = [c for c in compare_comparisons(rows) if c.metric == "final_test_acc"]
        any_hit += any(c.significant for c in cmp)
        pair_hit += any(c.significant for c in cmp if {c.norm_a, c.norm_b} == {"none", "layer"})
    return any_hit / n_sims, pair_hit / n_sims


def test_null_simulation_false_positive_rate_at_most_5_percent():
    rate, _ = _simulate(0.0, np.random.default_rng(0), 1000)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1000), rate  # family-wise, Holm over 3 pairs


def test_power_for_a_true_2_point_paired_difference_over_5_seeds():
    _, power = _simulate(0.02, np.random.default_rng(1), 300)
    assert power >= 0.80, power


def test_one_seed_batch_stats_without_per_example_results_is_not_tested():
    """The per-example results with batch statistics missing (only the eval ones kept): nothing
    to test, so None, as the docstring says; with them, the exact McNemar test."""
    correct = [1, 0, 1, 1]
    bn = row("batch", correct=correct, acc=0.75, acc_bs=0.5)
    assert paired_test([(bn, bn)], "batch_stats_vs_eval") is None
    bn.test_correct_batch_stats = [1, 0, 0, 1]
    assert paired_test([(bn, bn)], "batch_stats_vs_eval").test.startswith("exact McNemar")
