"""The comparisons behind compare, sweep and baseline verdicts at their boundaries, and the
one-seed paths tested like the several-seed ones: every McNemar pairing's sign, pairing by seed
with rows out of order or a seed missing, the resolution of an accuracy, significance exactly at
alpha, the memoryless baseline as a condition (the sentences: test_verdict_rules.py)."""

import math

import pytest
from paired_rows import baselines, result, t_by_hand, vectors
from paired_rows import rule_row as row
from scipy.stats import binomtest

from lnbench.analysis.comparisons import (
    compare_comparisons,
    holm_family,
    memoryless_rows,
    memoryless_tests,
    pair_by_seed,
    paired_test,
    sweep_comparisons,
)
from lnbench.analysis.stats import holm

# ---------------------------------------------------------------- one seed: McNemar, and its sign


def test_one_seed_accuracy_is_mcnemar_of_a_against_b_with_the_sign_of_a_minus_b():
    a, b = vectors(6, 1, both_right=10, both_wrong=3)  # n = 20: a right and b wrong on 6, the reverse on 1
    r = paired_test([(row("layer", correct=a), row("none", correct=b))], "final_test_acc")
    assert r.mean_diff == pytest.approx(5 / 20) and r.n == 20 and r.test == "exact McNemar (n_test=20)"
    assert r.p_value == pytest.approx(binomtest(6, 7, 0.5).pvalue)  # 2 * 8 / 128 = 0.125
    s = paired_test([(row("none", correct=b), row("layer", correct=a))], "final_test_acc")
    assert s.mean_diff == pytest.approx(-5 / 20) and s.ci95 == pytest.approx((-r.ci95[1], -r.ci95[0]))


def test_one_seed_batch_statistics_minus_running_statistics_is_mcnemar_with_that_sign():
    eval_mode, batch_stats = vectors(1, 4, both_right=5)  # batch statistics right on 4 where running ones are wrong
    bn = row("batch", correct=eval_mode, correct_bs=batch_stats, acc=0.6, acc_bs=0.9)
    r = paired_test([(bn, bn)], "batch_stats_vs_eval")
    assert r.mean_diff == pytest.approx((4 - 1) / 10) and r.p_value == pytest.approx(binomtest(4, 5, 0.5).pvalue)
    c = sweep_comparisons([bn], reference_batch_size=64)
    (stats_vs_eval,) = [x for x in c if x.metric == "batch_stats_vs_eval"]
    assert stats_vs_eval.mean_diff == pytest.approx(0.3) and stats_vs_eval.test == "exact McNemar (n_test=10)"
    assert stats_vs_eval.condition_a == "batch size 64, batch statistics"
    assert stats_vs_eval.condition_b == "batch size 64, running statistics"


@pytest.mark.parametrize(
    "a,b,metric",
    [
        (row("layer", correct=[1, 0]), row("none", correct=None), "final_test_acc"),  # no per-example results
        (row("layer", correct=[]), row("none", correct=[1, 0]), "final_test_acc"),
        (row("layer", correct=[1, 0, 1]), row("none", correct=[1, 0]), "final_test_acc"),  # another test set
        (row("layer", correct=[1, 0]), row("none", correct=[0, 1]), "mean_train_loss"),  # no test of one curve
        (row("batch", correct=None, correct_bs=[1, 0]), row("batch"), "batch_stats_vs_eval"),
    ],
)
def test_one_seed_without_comparable_per_example_results_is_not_tested(a, b, metric):
    assert paired_test([(a, b)], metric) is None


def test_nothing_to_pair_is_not_tested():
    assert paired_test([], "final_test_acc") is None and paired_test([], "batch_stats_vs_eval") is None


# ---------------------------------------------------------------- several seeds: paired t-test, resolution


def test_several_seeds_of_accuracy_are_a_paired_t_test_with_the_accuracy_resolution():
    acc_a, acc_b = [0.91, 0.85, 0.88, 0.90], [0.89, 0.84, 0.85, 0.90]  # d = 0.02, 0.01, 0.03, 0.00
    pairs = [(row("layer", s, a), row("none", s, b)) for s, (a, b) in enumerate(zip(acc_a, acc_b))]
    r = paired_test(pairs, "final_test_acc")
    m, p, half = t_by_hand([0.02, 0.01, 0.03, 0.00])  # sd 0.0129 is above the floor 0.005 / sqrt(6)
    assert r.mean_diff == pytest.approx(m) and r.p_value == pytest.approx(p) and r.test == "paired t-test over 4 seeds"
    assert r.ci95 == pytest.approx((m - half, m + half))
    same = [(row("layer", s, a + 0.01), row("none", s, a)) for s, a in enumerate(acc_b)]  # all d = +1 point
    r = paired_test(same, "final_test_acc")
    m, p, half = t_by_hand([0.01] * 4, floor=(1 / 200) / math.sqrt(6))
    assert r.test == "paired t-test over 4 seeds (sd floored at the resolution)" and r.p_value == pytest.approx(
        p, rel=1e-6
    )


def test_the_resolution_is_the_first_pairs_n_test_and_a_loss_has_none():
    # d = 0, 0.005, 0.01: sd 0.005 is below the floor of n_test = 50 (0.02 / sqrt(6) = 0.0082), above that of 200
    same = [(row("layer", s, 0.5 + 0.005 * s), row("none", s, 0.5)) for s in range(3)]
    same[0][0].n_test = 50  # the first pair's (the runs of one experiment share their test set)
    r = paired_test(same, "final_test_acc")
    _, p, _ = t_by_hand([0.0, 0.005, 0.01], floor=(1 / 50) / math.sqrt(6))
    assert r.p_value == pytest.approx(p) and r.test.endswith("(sd floored at the resolution)")
    flat = [(row("layer", s, loss=0.5 + 0.02), row("none", s, loss=0.5)) for s in range(5)]
    r = paired_test(flat, "mean_train_loss")  # no resolution: every difference equal is a sign test
    assert r.test == "sign test over 5 seeds (all differences equal)" and r.p_value == pytest.approx(0.0625)
    for a, b in flat:
        a.n_test = b.n_test = 0
    flat_acc = [(row("layer", s, 0.92), row("none", s, 0.9)) for s in range(5)]
    for a, b in flat_acc:
        a.n_test = b.n_test = 0  # n_test unknown (an old file): no resolution to floor with
    assert paired_test(flat_acc, "final_test_acc").test == "sign test over 5 seeds (all differences equal)"


def test_several_seeds_of_batch_statistics_pair_each_rows_two_accuracies():
    rows = [row("batch", s, acc=a, acc_bs=b) for s, (a, b) in enumerate([(0.8, 0.9), (0.7, 0.75), (0.85, 0.87)])]
    r = paired_test([(x, x) for x in rows], "batch_stats_vs_eval")
    m, p, _ = t_by_hand([0.1, 0.05, 0.02])
    assert r.mean_diff == pytest.approx(m) and r.p_value == pytest.approx(p) and r.n == 3


def test_several_seeds_of_batch_statistics_use_the_accuracy_resolution():
    rows = [row("batch", s, acc=a, acc_bs=a + 0.02) for s, a in enumerate([0.8, 0.7, 0.85])]  # every d = +2 points
    rows[0].n_test = 50
    r = paired_test([(x, x) for x in rows], "batch_stats_vs_eval")
    _, p, _ = t_by_hand([0.02] * 3, floor=(1 / 50) / math.sqrt(6))
    assert r.test == "paired t-test over 3 seeds (sd floored at the resolution)" and r.p_value == pytest.approx(p)


# ---------------------------------------------------------------- pairing by seed


def test_pairs_are_matched_by_seed_in_the_order_of_a_and_a_missing_or_diverged_seed_drops_out():
    a = [row("layer", s, 0.9 + 0.01 * s) for s in (3, 0, 2, 1, 4)]
    b = [row("none", s, 0.8) for s in (1, 2, 3, 0)]  # seed 4 missing
    b[1] = row("none", 2, status="diverged")
    pairs = pair_by_seed(a, b, "final_test_acc")
    assert [(x.seed, y.seed) for x, y in pairs] == [(3, 3), (0, 0), (1, 1)]
    assert [x.final_test_acc - y.final_test_acc for x, y in pairs] == pytest.approx([0.13, 0.1, 0.11])


def test_a_pair_needs_a_value_of_the_metric_on_both_sides():
    with_bs = [row("batch", s, acc_bs=0.9) for s in range(2)] + [row("batch", 2, acc_bs=None)]
    assert [x.seed for x, _ in pair_by_seed(with_bs, with_bs, "batch_stats_vs_eval")] == [0, 1]
    no_loss = [row("layer", 0), row("layer", 1)]
    no_loss[1].mean_train_loss = None
    assert [x.seed for x, _ in pair_by_seed(no_loss, [row("none", 0), row("none", 1)], "mean_train_loss")] == [0]
    assert [x.seed for x, _ in pair_by_seed([row("none", 0), row("none", 1)], no_loss, "mean_train_loss")] == [0]


def test_compare_pairs_by_seed_with_rows_out_of_order():
    accs = {"none": [0.80, 0.70, 0.75, 0.72], "layer": [0.85, 0.74, 0.81, 0.76]}
    rows = [row(n, s, accs[n][s]) for n in accs for s in (2, 0, 3, 1)]
    (acc, _) = compare_comparisons(rows)
    m, p, _ = t_by_hand([0.80 - 0.85, 0.70 - 0.74, 0.75 - 0.81, 0.72 - 0.76])
    assert (acc.norm_a, acc.norm_b) == ("none", "layer") and acc.n_seeds == 4
    assert acc.mean_diff == pytest.approx(m) and acc.p_value == pytest.approx(p)


# ---------------------------------------------------------------- Holm and significance at alpha


def test_holm_family_marks_significant_below_alpha_only():
    specs = [{"norm_a": "layer", "norm_b": "none", "metric": "final_test_acc", "n_seeds": 5}]
    (at,) = holm_family("f", [(specs[0], result(0.05))])
    (below,) = holm_family("f", [(specs[0], result(0.0499))])
    assert (at.p_adjusted, at.significant) == (0.05, False) and below.significant
    two = holm_family("f", [(specs[0], result(0.03)), ({**specs[0], "condition_a": "x"}, result(0.01))])
    assert [c.p_adjusted for c in two] == pytest.approx([0.03, 0.02]) == holm([0.03, 0.01])
    assert [c.significant for c in two] == [True, True]
    assert (two[0].condition_a, two[1].condition_a, two[1].condition_b) == ("", "x", "")
    assert two[0].to_dict()["ci95"] == [0.0, pytest.approx(0.02)] and two[0].to_dict()["family"] == "f"


def test_borderline_at_exactly_its_edges():
    spec = {"norm_a": "layer", "norm_b": "none", "metric": "final_test_acc", "n_seeds": 5}
    edges = [holm_family("f", [(spec, result(p))])[0].borderline for p in (0.0099, 0.01, 0.0999, 0.1)]
    assert edges == [False, True, True, False]


# ---------------------------------------------------------------- the sweep's comparisons


def test_sweep_comparisons_against_nonorm_and_the_reference_batch_size():
    rows = []
    for s in range(3):
        rows += [row("none", s, 0.80 + 0.01 * s, bs=bs) for bs in (4, 64)]
        rows += [row("layer", s, 0.85 + 0.012 * s, bs=bs) for bs in (4, 64)]
    cmp = sweep_comparisons(rows, reference_batch_size=64)
    got = [(c.norm_a, c.norm_b, c.condition_a, c.condition_b) for c in cmp]
    assert got == [
        ("none", "none", "batch size 4", "batch size 64"),
        ("layer", "none", "batch size 4", "batch size 4"),
        ("layer", "layer", "batch size 4", "batch size 64"),
        ("layer", "none", "batch size 64", "batch size 64"),
    ]  # never NoNorm against itself at the same size, never a size against itself
    assert all(c.holm_family == "sweep" for c in cmp) and [c.p_adjusted for c in cmp] == pytest.approx(
        holm([c.p_value for c in cmp])
    )


def test_sweep_comparisons_of_batch_statistics_name_the_norm_and_skip_missing_cells():
    rows = [row("batch", s, 0.6, bs=4, acc_bs=0.7 + 0.01 * s) for s in range(3)]
    rows += [row("none", s, 0.8, bs=bs) for s in range(3) for bs in (4, 64)]  # no BatchNorm at 64
    cmp = sweep_comparisons(rows, reference_batch_size=64)
    (bs_vs_eval,) = [c for c in cmp if c.metric == "batch_stats_vs_eval"]
    assert (bs_vs_eval.norm_a, bs_vs_eval.norm_b, bs_vs_eval.n_seeds) == ("batch", "batch", 3)
    assert [(c.norm_a, c.norm_b, c.condition_a) for c in cmp if c.metric == "final_test_acc"] == [
        ("batch", "none", "batch size 4"),
        ("none", "none", "batch size 4"),
    ]


# ---------------------------------------------------------------- the memoryless baseline as a condition


def test_the_memoryless_baseline_as_rows_and_its_tests_by_hand():
    base = baselines([0.6, 0.7, 0.65])
    base[1]["correct_per_seed"] = [[1, 0], [0, 0], [1, 1]]
    (r0, r1, r2) = memoryless_rows(base)
    assert (r0.seed, r0.final_test_acc, r0.test_correct, r0.n_test, r0.ok) == (0, 0.6, [1, 0], 200, True)
    assert (r0.family, r0.norm, r0.batch_size, r0.status, r0.epochs_completed) == (
        "baseline",
        "memoryless",
        0,
        "completed",
        0,
    )
    assert memoryless_rows(None) == [] and memoryless_rows(base[:1]) == []
    assert memoryless_rows(baselines([0.6]))[0].test_correct is None
    rows = [row("layer", s, a) for s, a in enumerate([0.8, 0.9, 0.86])] + [
        row("none", s, a) for s, a in enumerate([0.61, 0.7, 0.64])
    ]
    tests = memoryless_tests(rows, baselines([0.6, 0.7, 0.65]))
    m, p, half = t_by_hand([0.2, 0.2, 0.21])
    layer = tests[("rnn", "layer")]
    assert set(layer) == {
        "diff", "ci95", "p_value", "p_adjusted", "test", "n_seeds", "learned", "did_not_learn", "borderline",
        "seeds_to_settle",
    }  # fmt: skip
    assert layer["diff"] == pytest.approx(m) and layer["p_value"] == pytest.approx(p) and layer["n_seeds"] == 3
    assert layer["ci95"] == pytest.approx([m - half, m + half]) and layer["learned"] is True
    assert (layer["did_not_learn"], layer["borderline"], layer["seeds_to_settle"]) == (False, False, None)
    none = tests[("rnn", "none")]
    assert none["learned"] is False and none["diff"] == pytest.approx(0.0)
    # d = +1, 0, -1 points: sd 1 point, half-width t(2) 4.303 / sqrt(3) = 2.48 points, past the 2-point margin
    assert none["ci95"] == pytest.approx([-0.0248, 0.0248], abs=1e-4) and none["did_not_learn"] is False
    assert [layer["p_adjusted"], none["p_adjusted"]] == pytest.approx(holm([layer["p_value"], none["p_value"]]))
