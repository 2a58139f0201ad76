"""The verdicts' sentences at their boundaries: which sentence each decision gives (a borderline
comparison and the seeds that would settle it, the sweep's, compare's and the baselines' verdicts,
where a model stands against the memoryless baseline). The comparisons alone:
test_comparison_rules.py."""

import math

import pytest
from paired_rows import baselines, result, t_by_hand, vectors
from paired_rows import rule_row as row
from scipy.stats import nct
from scipy.stats import t as t_dist

from lnbench.analysis import comparisons, verdicts
from lnbench.analysis.comparisons import Comparison, compare_comparisons, holm_family
from lnbench.analysis.stats import seeds_for_power

# ---------------------------------------------------------------- borderline comparisons


def _loss_rows_at(p, n=3, sd=0.01):
    """NoNorm and LayerNorm rows whose mean train losses differ by d = m + sd * (-1, 0, +1) (n = 3): a
    paired t-test with t = m / (sd / sqrt(3)) = t_{1 - p/2, 2}, i.e. p-value ``p``; the accuracies are equal."""
    m = t_dist.isf(p / 2, n - 1) * sd / math.sqrt(n)
    d = [m - sd, m, m + sd]
    return [row("none", s, 0.8, loss=0.5) for s in range(n)] + [row("layer", s, 0.8, loss=0.5 + d[s]) for s in range(n)]


@pytest.mark.parametrize("p,borderline", [(0.009, False), (0.03, True), (0.07, True), (0.11, False)])
def test_a_comparison_is_borderline_when_its_holm_p_is_between_1_and_10_percent(p, borderline):
    loss = [c for c in compare_comparisons(_loss_rows_at(p)) if c.metric == "mean_train_loss"]
    (c,) = loss  # a family of one: Holm p = p
    assert c.p_adjusted == pytest.approx(p) and c.borderline is borderline
    assert c.significant is (p < 0.05) and c.to_dict()["borderline"] is borderline
    assert ("Borderline (Holm p between 0.01 and 0.1)" in verdicts.describe_in_words(c)) is borderline


def test_seeds_to_settle_is_the_power_at_the_level_that_gives_holm_p_below_1_percent():
    # 3 norms, 4 seeds, n_test = 200: LayerNorm +0.5 points above NoNorm and RMSNorm on every seed (RMSNorm = NoNorm).
    # The sd of the differences is 0, floored at the resolution: (1/200) / sqrt(6) = 0.00204; t = 0.005 / (0.00204 / 2)
    # = 4.90, df 3: p = 0.0163 for both LayerNorm pairs, Holm over 3 (tied, both x 3) = 0.0488: borderline
    accs = [0.80, 0.70, 0.75, 0.72]
    rows = [
        row(n, s, a + (0.005 if n == "layer" else 0.0)) for n in ("none", "layer", "rms") for s, a in enumerate(accs)
    ]
    acc = {(c.norm_a, c.norm_b): c for c in compare_comparisons(rows) if c.metric == "final_test_acc"}
    sd = (1 / 200) / math.sqrt(6)
    _, p, _ = t_by_hand([-0.005] * 4, floor=sd)
    c = acc[("none", "layer")]
    assert c.p_value == pytest.approx(p) and c.p_adjusted == pytest.approx(3 * p) and c.borderline
    # the raw level that Holm (x 3) takes below 0.01: 0.01 * p / p_adj = 0.01 / 3; power 80% with the floored sd
    by_hand = seeds_for_power(-0.005, sd, alpha=0.01 * c.p_value / c.p_adjusted)
    assert by_hand == 7 and c.seeds_to_settle == 7 and acc[("layer", "rms")].seeds_to_settle == 7
    crit = [t_dist.ppf(1 - 0.01 / 3 / 2, n - 1) for n in (6, 7)]  # noncentral t at 6 and 7 seeds: 0.71 < 0.8 <= 0.88
    power = [
        nct.sf(k, n - 1, 0.005 / sd * math.sqrt(n)) + nct.sf(k, n - 1, -0.005 / sd * math.sqrt(n))
        for k, n in zip(crit, (6, 7))
    ]
    assert power[0] < 0.8 <= power[1]
    assert acc[("none", "rms")].borderline is False and acc[("none", "rms")].seeds_to_settle is None  # p = 1
    assert verdicts.describe_in_words(c) == (
        # significant at 0.05 (t(3) 3.182 x 0.00102 = 0.33 points of half-width), not at 0.01
        "LayerNorm is more accurate than NoNorm (final test accuracy +0.5 points [unadjusted 95% CI +0.2, +0.8],"
        " paired t-test over 4 seeds (sd floored at the resolution), Holm p = 0.049). Borderline (Holm p between"
        " 0.01 and 0.1): another machine's rounding can flip it; about 7 seeds would settle it."
    )
    assert c.to_dict()["seeds_to_settle"] == 7


def test_seeds_to_settle_is_none_when_no_more_seeds_are_needed_or_it_cannot_be_computed():
    spec = {"norm_a": "layer", "norm_b": "none", "metric": "final_test_acc", "paired_sd": 0.01}
    family = [
        ({**spec, "n_seeds": 5}, result(0.03, 0.02)),
        ({**spec, "n_seeds": 5, "condition_a": "x"}, result(0.01, 0.02)),
    ]
    first, second = holm_family("f", family)  # Holm: 0.03 (x 1: raw level 0.01), 0.02 (x 2: raw level 0.005)
    assert (first.p_adjusted, second.p_adjusted) == pytest.approx((0.03, 0.02))
    assert first.seeds_to_settle == seeds_for_power(0.02, 0.01, alpha=0.01) == 7
    assert second.seeds_to_settle == seeds_for_power(0.02, 0.01, alpha=0.005) == 8
    ran_7 = holm_family("f", [({**s, "n_seeds": 7}, r) for s, r in family])
    assert [c.seeds_to_settle for c in ran_7] == [None, 8]  # 7 seeds already run: 7 would not settle it
    no_sd = holm_family("f", [({**spec, "n_seeds": 5, "paired_sd": None}, result(0.03, 0.02))])
    assert no_sd[0].borderline and no_sd[0].seeds_to_settle is None
    # one seed: McNemar, b = 7 and c = 1 of 20: p = 2 (1 + 8) / 256 = 0.0703, borderline, no seed count
    a, b = vectors(7, 1, both_right=10, both_wrong=2)
    (one,) = compare_comparisons([row("layer", correct=a, acc=0.85), row("none", correct=b, acc=0.55)])
    assert one.p_adjusted == pytest.approx(18 / 256) and one.borderline and one.seeds_to_settle is None
    assert verdicts.describe_in_words(one).endswith(
        "Holm p = 0.07). Borderline (Holm p between 0.01 and 0.1): another machine's rounding can flip it."
    )


# ---------------------------------------------------------------- the sweep's verdicts


def _cmp(norm_a, norm_b, diff, significant, cond_a="batch size 1", metric="final_test_acc"):
    return Comparison(
        "sweep",
        norm_a,
        norm_b,
        metric,
        diff,
        (diff - 0.01, diff + 0.01),
        0.01,
        0.01,
        "paired t-test over 3 seeds",
        3,
        significant,
        cond_a,
        "batch size 64",
    )


@pytest.mark.parametrize(
    "comparison,part",
    [
        (_cmp("layer", "none", -0.05, True), "below NoNorm at batch size 1 (-5.0 points)"),
        (_cmp("layer", "none", 0.05, True), "above NoNorm at batch size 1 (+5.0 points)"),
        (_cmp("layer", "layer", -0.05, True), "below its batch size 64 at batch size 1 (-5.0 points)"),
        (_cmp("layer", "layer", 0.05, True), "above its batch size 64 at batch size 1 (+5.0 points)"),
        (
            _cmp("layer", "layer", 0.05, True, "batch size 1, batch statistics", "batch_stats_vs_eval"),
            "batch statistics minus running statistics differs from 0 at batch size 1 (+5.0 points)",
        ),
        (_cmp("layer", "none", -0.05, False), "no tested difference (vs NoNorm) is significant"),
        (
            _cmp("layer", "none", 0.0, True),
            "no tested difference (vs NoNorm) is significant",
        ),  # neither below nor above
        (_cmp("layer", "layer", 0.0, True), "no tested difference (vs its own batch sizes) is significant"),
    ],
)
def test_a_sweep_verdict_names_each_significant_difference_once_with_its_direction(comparison, part):
    rows = [row("layer", s, 0.9 + 0.01 * s, bs=bs) for s in range(2) for bs in (1, 64)]
    (line, _) = verdicts.sweep_verdicts(rows, [comparison], 64)
    assert line == f"LayerNorm: {part}; final test accuracy 90.5% to 90.5% across batch sizes (mean over 2 seeds)."


def test_a_sweep_verdict_states_its_means_divergences_and_tests():
    rows = [row("batch", s, 0.9 + 0.02 * s, bs=8) for s in range(3)] + [row("batch", s, 0.6, bs=64) for s in range(3)]
    rows.append(row("batch", 3, status="diverged", bs=1))
    lines = verdicts.sweep_verdicts(rows, [_cmp("batch", "batch", 0.32, True, "batch size 8")], 64)
    assert lines == [
        "BatchNorm: diverged at batch size 1 (left out of means and tests).",
        "BatchNorm: above its batch size 64 at batch size 8 (+32.0 points); final test accuracy 60.0% to 92.0% across batch sizes (mean over 4 seeds).",
        "Significance: paired t-test over 3 seeds, Holm-Bonferroni over all 1 comparisons of this sweep at 5%; "
        "the effects with 95% intervals are in summary.json (comparisons).",
    ]
    one = verdicts.sweep_verdicts([row("layer", 0, 0.9, bs=8)], [], 8)
    assert one == [
        "LayerNorm: final test accuracy 90.0% at batch size 8 (one seed).",
        "One seed: the tests cover the test-set sampling only, not the seed-to-seed variation; set seeds to 5 or more.",
    ]


# ---------------------------------------------------------------- the baseline verdict at the target


def test_the_baseline_verdict_at_exactly_the_target():
    (line,) = verdicts.baseline_verdicts(baselines([0.9, 0.85, 0.9]), 0.9)  # reaching it is >=, as for a model
    assert line == (
        "Baselines on the same data (mean over 3 seeds, n_test = 200): chance 50.0%; linear readout of x_T alone 88.3%;"
        " linear readout of all T x D inputs 100.0%. The 90% target does not need memory: a linear readout of the"
        " last timestep alone reaches it on 2 of 3 seeds."
    )
    (line,) = verdicts.baseline_verdicts(baselines([0.8994]), 0.9)
    assert line == (
        "Baselines on the same data (mean over 1 seed, n_test = 200): chance 50.0%; linear readout of x_T alone 89.9%;"
        " linear readout of all T x D inputs 100.0%. A memoryless readout stays below the 90% target on every seed."
    )


def test_no_baselines_no_sentence_and_without_the_memoryless_one_no_claim_about_memory():
    assert verdicts.baseline_verdicts(None, 0.9) == [] and verdicts.baseline_verdicts([], 0.9) == []
    only = [b for b in baselines([0.95]) if b["name"] != "last_timestep"]
    (line,) = verdicts.baseline_verdicts(only, 0.9)
    assert line.endswith("linear readout of all T x D inputs 100.0%.") and "memory" not in line


# ---------------------------------------------------------------- compare's sentences, by hand


def _pair(metric, diff, significant, n_seeds=5, norm_a="layer", norm_b="none"):
    return Comparison(
        "rnn/" + metric,
        norm_a,
        norm_b,
        metric,
        diff,
        (diff - 0.01, diff + 0.01),
        0.001,
        0.003,
        "paired t-test over 5 seeds",
        n_seeds,
        significant,
    )


@pytest.mark.parametrize(
    "c,sentence",
    [
        (
            _pair("final_test_acc", 0.02, True),
            "LayerNorm is more accurate than NoNorm (final test accuracy +2.0 points [unadjusted 95% CI +1.0, +3.0], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            _pair("final_test_acc", -0.02, True),
            "NoNorm is more accurate than LayerNorm (final test accuracy +2.0 points [unadjusted 95% CI +1.0, +3.0], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            _pair("final_test_acc", -0.02, False),
            "LayerNorm and NoNorm are not distinguishable in accuracy with 5 seeds (final test accuracy -2.0 points [unadjusted 95% CI -3.0, -1.0], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            _pair("mean_train_loss", -0.05, True),
            "LayerNorm's train loss fell faster than NoNorm's (mean train loss -0.050 nats [unadjusted 95% CI -0.060, -0.040], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            _pair("mean_train_loss", 0.05, True),
            "NoNorm's train loss fell faster than LayerNorm's (mean train loss -0.050 nats [unadjusted 95% CI -0.060, -0.040], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            _pair("mean_train_loss", 0.05, False, n_seeds=4),
            "LayerNorm and NoNorm are not distinguishable in training speed with 4 seeds (mean train loss +0.050 nats [unadjusted 95% CI +0.040, +0.060], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
    ],
)
def test_each_compared_pair_in_words(c, sentence):
    assert verdicts.describe_in_words(c) == sentence


@pytest.mark.parametrize(
    "pairs, gains, answer",
    [
        (
            [("layer", "none", 0.1, True), ("batch", "none", 0.05, True), ("layer", "batch", 0.01, False)],
            {},
            "LayerNorm is more accurate than NoNorm; BatchNorm is more accurate than NoNorm;"
            " LayerNorm vs BatchNorm not distinguishable with 5 seeds",
        ),
        (
            [("none", "batch", -0.1, True), ("none", "layer", -0.05, True), ("batch", "layer", 0.01, False)],
            {"batch": 0.1, "layer": 1.0},
            "BatchNorm is more accurate than NoNorm; LayerNorm is more accurate than NoNorm;"
            " BatchNorm vs LayerNorm (unequal initial gains) not distinguishable with 5 seeds",
        ),
        (
            [("batch", "none", 0.1, True), ("batch", "layer", 0.05, True)],
            {},
            "BatchNorm is more accurate than NoNorm and LayerNorm",
        ),
        (
            [("layer", "none", 0.01, False), ("batch", "none", 0.01, False)],
            {},
            "no tested pair is distinguishable with 5 seeds",
        ),
    ],
)
def test_a_compare_verdict_opens_with_its_answer(pairs, gains, answer):
    """A family's first sentence names each significant pair's winner with the norms it beat (the
    better one: higher accuracy), then the pairs no test told apart; a pair of norms that started at
    different initial gains is marked. Oracle: the hand-set significance and sign of each pair."""
    cmp = [_pair("final_test_acc", d, sig, norm_a=a, norm_b=b) for a, b, d, sig in pairs]
    assert verdicts.comparisons_answer(cmp, gains) == answer
    loss = [_pair("mean_train_loss", 0.05, True), _pair("mean_train_loss", -0.05, True, norm_a="layer", norm_b="batch")]
    assert (
        verdicts.comparisons_answer(loss)
        == "NoNorm's train loss fell faster than LayerNorm's; LayerNorm's train loss fell faster than BatchNorm's"
    )


def test_compare_verdicts_in_full():
    rows = []
    for s, (n_acc, l_acc, n_loss, l_loss) in enumerate(
        [(0.80, 0.90, 0.50, 0.30), (0.70, 0.82, 0.60, 0.35), (0.75, 0.84, 0.55, 0.40)]
    ):
        rows += [row("none", s, n_acc, n_loss), row("layer", s, l_acc, l_loss)]
    rows[0].first_epoch_at_target, rows[1].first_epoch_at_target, rows[3].first_epoch_at_target = None, 2, 4
    rows.append(row("batch", 0, status="diverged"))
    cmp = [c for c in compare_comparisons(rows) if {c.norm_a, c.norm_b} == {"none", "layer"}]
    memoryless = {
        ("rnn", "layer"): {
            "diff": 0.2,
            "ci95": [0.15, 0.25],
            "p_value": 0.001,
            "p_adjusted": 0.002,
            "test": "t",
            "n_seeds": 3,
            "learned": True,
        }
    }
    lines = verdicts.compare_verdicts(rows, cmp, 10, 0.9, memoryless)
    acc, loss = cmp[0], cmp[1]
    assert lines[:3] == [
        "RNN: BatchNorm diverged in 1 of 1 seed; a diverged seed has no final accuracy and is left out of means and tests.",
        "RNN, did it learn the memory task? LayerNorm learned it. LayerNorm above the memoryless baseline (+20.0 points [unadjusted 95% CI"
        " +15.0, +25.0], t, Holm p = 0.002): it learned more than the last input.",
        "RNN, first epoch at 90% test accuracy within 10 epochs: NoNorm 0/3 seeds reached it; LayerNorm 2/3 seeds"
        " reached it, median epoch 3 (range 2-4); BatchNorm 0/1 seed reached it.",
    ]
    assert lines[3] == (
        "RNN, final test accuracy: LayerNorm is more accurate than NoNorm. Mean over 3 seeds: NoNorm 75.0%,"
        " LayerNorm 85.3%. Holm over 1 comparison: " + verdicts.describe_in_words(acc)
    )
    assert lines[4] == (
        "RNN, mean train loss (area under the loss curve): LayerNorm's train loss fell faster than NoNorm's"
        " (borderline). Mean over 3 seeds: NoNorm 0.550 nats, LayerNorm 0.350 nats."
        " Holm over 1 comparison: " + verdicts.describe_in_words(loss)
    )
    assert len(lines) == 5
    one = verdicts.compare_verdicts([row("none", 0, 0.8), row("layer", 0, 0.9)], [], 5, 0.95)
    assert one[1:] == [
        "RNN, final test accuracy: not tested (no pair of finished runs). One seed: NoNorm 80.0%, LayerNorm 90.0%.",
        "RNN, mean train loss (area under the loss curve): not tested (one seed has no paired test for a loss"
        " curve). One seed: NoNorm 0.300 nats, LayerNorm 0.300 nats.",
        "One seed: the tests above cover the test-set sampling only, not the seed-to-seed variation; "
        "set seeds to 5 or more (e.g. --set seeds=[0,1,2,3,4]) before trusting a ranking.",
    ]
    dead = verdicts.compare_verdicts([row("none", 0, status="diverged"), row("none", 1, status="diverged")], [], 5, 0.9)
    assert dead[-2:] == [
        "RNN, final test accuracy: every run diverged, so there is nothing to compare.",
        "RNN, mean train loss (area under the loss curve): every run diverged, so there is nothing to compare.",
    ]
    failed = row("none", 0, None, None, status="failed")  # as failed_row: no final values
    broken = verdicts.compare_verdicts([failed, row("layer", 1, status="diverged")], [], 5, 0.9)
    assert broken[-1] == (
        "RNN, mean train loss (area under the loss curve): every run diverged or failed (see run.json),"
        " so there is nothing to compare."
    )


# ---------------------------------------------------------------- where a model stands against the memoryless baseline


NOTE = "borderline: Holm p between 0.01 and 0.1, another machine's rounding can flip it"


@pytest.mark.parametrize(
    "diff,ci95,p_adjusted,learned,did_not_learn,verdict",
    [
        (
            -0.05,
            [-0.06, -0.04],
            0.001,
            False,
            True,
            "below the memoryless baseline ({}): did not learn the memory task",
        ),
        (  # the interval is well below, but the test is not significant at exactly alpha: not shown either way
            -0.05,
            [-0.06, -0.04],
            0.05,
            False,
            False,
            "not significantly above the memoryless baseline ({}): not shown to learn the memory task with 5 seeds"
            f" ({NOTE})",
        ),
        (  # significantly below and inside the margin: "below" comes first
            -0.01,
            [-0.015, -0.005],
            0.02,
            False,
            True,
            f"below the memoryless baseline ({{}}): did not learn the memory task ({NOTE})",
        ),
        (
            0.0,
            [-0.0199, 0.0199],
            0.5,
            False,
            True,
            "within 2 points of the memoryless baseline ({}): did not learn the memory task",
        ),
        (  # an interval edge at exactly -2 points is not inside the margin
            0.0,
            [-0.02, 0.01],
            0.5,
            False,
            False,
            "not significantly above the memoryless baseline ({}): not shown to learn the memory task with 5 seeds",
        ),
        (  # significantly above by less than the margin: it learned (a little) more than the last input
            0.01,
            [0.005, 0.015],
            0.001,
            True,
            False,
            "above the memoryless baseline ({}): it learned more than the last input",
        ),
        (
            0.05,
            [0.04, 0.06],
            0.001,
            True,
            False,
            "above the memoryless baseline ({}): it learned more than the last input",
        ),
    ],
)
def test_where_a_model_stands_against_the_memoryless_baseline(diff, ci95, p_adjusted, learned, did_not_learn, verdict):
    assert comparisons.did_not_learn(diff, ci95, p_adjusted) is did_not_learn
    test = {
        "diff": diff, "ci95": ci95, "p_adjusted": p_adjusted, "test": "t", "n_seeds": 5, "learned": learned,
        "did_not_learn": did_not_learn, "borderline": 0.01 <= p_adjusted < 0.1, "seeds_to_settle": None,
    }  # fmt: skip
    effect = (
        f"{100 * diff:+.1f} points [unadjusted 95% CI {100 * ci95[0]:+.1f}, {100 * ci95[1]:+.1f}], t,"
        f" Holm p = {p_adjusted:.2g}"
    )
    assert verdicts.describe_memoryless(test) == verdict.format(effect)


def test_a_sweep_verdict_for_a_norm_that_never_finished():
    rows = [row("none", s, status="diverged", bs=bs) for s in range(2) for bs in (64, 1)]
    assert verdicts.sweep_verdicts(rows, [], 64) == [
        "NoNorm: diverged at batch size 1, 64 (left out of means and tests).",
        "NoNorm: no finished run at any batch size, so no norm is compared with it and it is compared with nothing.",
    ]


# ---------------------------------------------------------------- lists of several, and missing cells


def test_compare_verdicts_join_several_items_and_count_seeds():
    rows = []
    for s, (n_acc, l_acc, b_acc) in enumerate([(0.60, 0.80, 0.70), (0.62, 0.86, 0.75)]):
        rows += [row("none", s, n_acc, 0.5), row("layer", s, l_acc, 0.3 + 0.01 * s), row("batch", s, b_acc, 0.4)]
    cmp = compare_comparisons(rows)
    acc = [c for c in cmp if c.metric == "final_test_acc"]
    learned = {
        ("rnn", n): {
            "diff": 0.1,
            "ci95": [0.05, 0.15],
            "p_value": 0.01,
            "p_adjusted": 0.02,
            "test": "t",
            "n_seeds": 2,
            "learned": True,
            "did_not_learn": False,
            "borderline": True,  # Holm p = 0.02
            "seeds_to_settle": 6 if n == "layer" else None,
        }
        for n in ("layer", "batch")
    }
    lines = verdicts.compare_verdicts(rows, cmp, 10, 0.9, learned)
    effect = "+10.0 points [unadjusted 95% CI +5.0, +15.0], t, Holm p = 0.02"
    assert lines[0] == (
        "RNN, did it learn the memory task? LayerNorm (borderline) and BatchNorm (borderline) learned it."
        f" LayerNorm above the memoryless baseline ({effect}): it learned more than"
        f" the last input ({NOTE}; about 6 seeds would settle it); BatchNorm above the memoryless baseline ({effect}):"
        f" it learned more than the last input ({NOTE})."
    )
    assert lines[2] == (
        "RNN, final test accuracy: no tested pair is distinguishable with 2 seeds. Mean over 2 seeds: NoNorm 61.0%,"
        " LayerNorm 83.0%, BatchNorm 72.5%. Holm over 3 comparisons: "
        + " ".join(verdicts.describe_in_words(c) for c in acc)
    )
    alone = verdicts.compare_verdicts([row("layer", s, 0.9) for s in range(2)], [], 10, 0.9)
    assert alone[1] == "RNN, final test accuracy (mean over 2 seeds): LayerNorm 90.0%."  # one norm: nothing to test


def test_a_sweep_verdict_lists_several_sizes_and_groups_and_what_was_tested():
    rows = [row("layer", s, 0.9, bs=bs) for s in range(2) for bs in (1, 2, 64)]
    below = [_cmp("layer", "none", -0.05, True, f"batch size {b}") for b in (1, 2)]
    above = [_cmp("layer", "layer", 0.03, True, "batch size 2")]
    (line, _) = verdicts.sweep_verdicts(rows, below + above, 64)
    assert line.startswith(
        "LayerNorm: below NoNorm at batch size 1 (-5.0 points), 2 (-5.0 points); above its batch size 64 at batch size 2 (+3.0 points); "
    )
    quiet = [_cmp("layer", "layer", 0.01, False), _cmp("layer", "none", 0.01, False)]
    (line, _) = verdicts.sweep_verdicts(rows, quiet, 64)
    assert line.startswith("LayerNorm: no tested difference (vs NoNorm, its own batch sizes) is significant; ")


def test_the_sweeps_significance_line_names_each_test_once_without_its_notes():
    rows = [row("layer", s, 0.9, bs=bs) for s in range(2) for bs in (1, 64)]
    floored = _cmp("layer", "none", 0.01, False)
    floored.test = "paired t-test over 3 seeds (sd floored at the resolution)"
    mcnemar = _cmp("layer", "layer", 0.01, False)
    mcnemar.test = "exact McNemar (n_test=200)"
    *_, significance = verdicts.sweep_verdicts(rows, [floored, mcnemar, _cmp("layer", "none", 0.0, False)], 64)
    assert significance.startswith(
        "Significance: exact McNemar, paired t-test over 3 seeds, Holm-Bonferroni over all 3 comparisons of this sweep at 5%; "
    )


def test_a_sweep_mean_leaves_out_a_diverged_run_even_with_a_value():
    kept, diverged = row("layer", 0, 0.9, bs=8), row("layer", 1, status="diverged", bs=8)
    diverged.final_test_acc = 0.1  # not ok whatever it holds: a diverged seed is out of the means
    assert verdicts.sweep_verdicts([kept, diverged], [], 8) == [
        "LayerNorm: diverged at batch size 8 (left out of means and tests).",
        "LayerNorm: final test accuracy 90.0% at batch size 8 (mean over 2 seeds).",
    ]


def test_a_sweep_verdict_of_a_users_norm_names_what_it_was_tested_against():
    """A user's norm (``pkg.mod:Class``) is not in the registry's order: the verdict sorts the
    norms it was tested against built-ins first, then users', without a ValueError."""
    mine = "toy_norms:ScaleNorm"
    rows = [row(mine, s, 0.9, bs=bs) for s in range(2) for bs in (1, 64)]
    cmp = [_cmp(mine, mine, 0.0, False), _cmp(mine, "none", 0.01, False)]
    (line, _) = verdicts.sweep_verdicts(rows, cmp, 64)
    assert line == (
        "ScaleNorm: no tested difference (vs NoNorm, its own batch sizes) is significant;"
        " final test accuracy 90.0% to 90.0% across batch sizes (mean over 2 seeds)."
    )


def test_norm_order_puts_the_registry_first_then_users_norms_as_given():
    from lnbench.names import norm_order

    given = ["b.c:Two", "layer", "a.b:One", "none", "layer", "b.c:Two"]
    assert norm_order(given) == ["none", "layer", "b.c:Two", "a.b:One"]


def _memoryless(learned=False, did_not_learn=False, p_adjusted=0.5, n_seeds=3, **extra):
    return {
        "learned": learned,
        "did_not_learn": did_not_learn,
        "diff": 0.05,
        "ci95": [-0.01, 0.11],
        "p_adjusted": p_adjusted,
        "n_seeds": n_seeds,
        **extra,
    }


@pytest.mark.parametrize(
    "tests, answer",
    [
        (
            [("layer", _memoryless(learned=True, p_adjusted=0.001)), ("none", _memoryless(did_not_learn=True))],
            "LayerNorm learned it; NoNorm did not",
        ),
        (
            [
                ("none", _memoryless(did_not_learn=True, p_adjusted=0.02)),
                ("batch", _memoryless(learned=True, p_adjusted=0.001)),
                ("layer", _memoryless()),
            ],
            "NoNorm (borderline) did not; BatchNorm learned it; LayerNorm not shown with 3 seeds",
        ),
        (
            [("none", _memoryless(n_seeds=2)), ("batch", _memoryless(n_seeds=2)), ("layer", _memoryless(n_seeds=2))],
            "NoNorm, BatchNorm and LayerNorm not shown with 2 seeds",
        ),
        (
            [("none", _memoryless(n_seeds=2)), ("layer", _memoryless(n_seeds=3))],
            "NoNorm and LayerNorm not shown",  # different seed counts: none named
        ),
        (
            [("layer", _memoryless(learned=True, p_adjusted=0.001, borderline=True))],
            "LayerNorm (borderline) learned it",  # a stored borderline flag wins over the p-value
        ),
    ],
)
def test_a_memoryless_verdict_opens_with_which_norms_learned(tests, answer):
    """The first sentence of 'did it learn the memory task?': the norms grouped by outcome in the
    order first met (learned: above the baseline; did not: below it or within 2 points; not shown:
    neither, with the seeds when they agree), each borderline test (Holm p in [0.01, 0.1), or its
    stored flag) marked. Oracle: the hand-set outcome of each test."""
    assert verdicts.memoryless_answer(tests) == answer


@pytest.mark.parametrize(
    "test, outcome",
    [
        (_memoryless(learned=True), "learned"),
        ({"learned": False, "did_not_learn": True, "p_adjusted": 0.5}, "did not learn"),  # stored: no effect needed
        (_memoryless(did_not_learn=True), "did not learn"),
        (_memoryless(), "not shown"),
        ({"learned": False, "diff": -0.2, "ci95": [-0.3, -0.1], "p_adjusted": 0.001}, "did not learn"),  # below
        ({"learned": False, "diff": 0.0, "ci95": [-0.01, 0.01], "p_adjusted": 1.0}, "did not learn"),  # within 2 points
        ({"learned": False, "diff": 0.05, "ci95": [-0.01, 0.11], "p_adjusted": 0.3}, "not shown"),
    ],
)
def test_a_memoryless_outcome_is_read_from_the_stored_flags_or_else_computed(test, outcome):
    """``learned`` wins; a stored ``did_not_learn`` is read as given, else computed from the
    effect, its interval and Holm p (:func:`did_not_learn`). Oracle: the rule by hand."""
    assert verdicts.memoryless_outcome(test) == outcome


@pytest.mark.parametrize(
    "task, learned, did_not",
    [
        ("trend", "it learned more than the last input", "did not learn the memory task"),
        ("mnist", "it learned more than its last row or pixel, which is blank on most images", "did not learn more than its last row or pixel"),
    ],
)  # fmt: skip
def test_the_memoryless_verdict_is_worded_by_the_task(task, learned, did_not):
    """The memoryless baseline reads x_T alone: on the trend task that is the memory task's test;
    on MNIST x_T is a blank row on most images (a baseline near chance), and the verdict says so
    (lnbench.names.tasks.Task's learned_what and last_input)."""
    above = {"learned": True, "diff": 0.2, "ci95": (0.15, 0.25), "p_adjusted": 1e-4, "test": "paired t-test"}
    below = {"learned": False, "diff": -0.2, "ci95": (-0.25, -0.15), "p_adjusted": 1e-4, "test": "paired t-test"}
    assert verdicts.describe_memoryless(above, task).split(": ", 1)[1].startswith(learned)
    assert verdicts.describe_memoryless(below, task).endswith(did_not)


def test_a_verdict_without_a_winner_names_its_one_pair_and_the_seeds_its_tests_had():
    """No significant pair: one pair is named ("LayerNorm vs NoNorm not distinguishable"), several
    are summed up ("no tested pair"); the seed count is the tests' own (4 where a seed diverged
    and was left out of both), and none is given when the pairs had different counts (oracle: the
    hand-set n_seeds)."""
    one = [_pair("final_test_acc", 0.01, False)]
    assert verdicts.comparisons_answer(one) == "LayerNorm vs NoNorm not distinguishable with 5 seeds"
    diverged = [_pair("final_test_acc", 0.01, False, n_seeds=4), _pair("final_test_acc", 0.0, False, 4, "batch")]
    assert verdicts.comparisons_answer(diverged) == "no tested pair is distinguishable with 4 seeds"
    mixed = [_pair("final_test_acc", 0.01, False, n_seeds=4), _pair("final_test_acc", 0.0, False, 5, "batch")]
    assert verdicts.comparisons_answer(mixed) == "no tested pair is distinguishable"
    winner = [_pair("final_test_acc", 0.1, True), _pair("final_test_acc", 0.0, False, 4, "batch")]
    assert verdicts.comparisons_answer(winner) == (
        "LayerNorm is more accurate than NoNorm; BatchNorm vs NoNorm not distinguishable with 4 seeds"
    )
