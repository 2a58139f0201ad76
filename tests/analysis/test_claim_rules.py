"""The claims' decision rules at their boundaries (lnbench.analysis.claims), and every number and
sentence a claim reports, against hand computations (the shipped claims pinned:
test_claim_catalogue.py; the regimes and cells: tests/experiments/test_claim_regimes.py).

Each rule is checked on both sides of each boundary and exactly on it; the expected verdicts
follow the module docstring of :mod:`lnbench.analysis.claims`: an equivalence claim is held only
when the whole interval lies strictly inside (-margin, +margin) and not held only when it lies
wholly outside; a directional claim is held when the Holm-adjusted p < 0.05 and the effect is at
least the margin in the claimed direction.
"""

import math
from dataclasses import replace

import pytest
from scipy.stats import t as t_dist

from lnbench.analysis import claim_catalogue
from lnbench.analysis import claims as claim_rules
from lnbench.analysis.claim_catalogue import Claim, Condition, select_claims
from lnbench.analysis.claims import ClaimResult, claim_sentences, evaluate_claims, format_effect, metric_value
from lnbench.analysis.metrics import format_amount, format_level
from lnbench.config import ConfigError, RunConfig
from lnbench.records.schema import SummaryRow


def row(norm, seed, metric="mean_train_loss", value=0.5, status="completed", bs=64, acc=0.8, n_test=200):
    r = SummaryRow(
        family="rnn",
        norm=norm,
        batch_size=bs,
        seed=seed,
        status=status,
        epochs_completed=3,
        final_test_acc=None if status == "diverged" else acc,
        final_test_acc_batch_stats=None,
        final_train_loss=0.5,
        final_test_loss=0.5,
        mean_train_loss=None if status == "diverged" else 0.5,
        first_epoch_at_target=None,
        n_test=n_test,
        run_dir=f"{norm}_bs{bs}_seed{seed}",
    )
    if status != "diverged":
        setattr(r, metric, value)
    return r


def claim(direction="less", metric="mean_train_loss", margin=0.02, a=Condition("layer"), b=Condition("none"), id="c"):
    return Claim(id, "LayerNorm converges faster than NoNorm", "r", "rnn", metric, a, b, direction, margin)


REGIMES = {"r": RunConfig()}  # train.batch_size 64


def evaluate(c, a_values, b_values, chance=None, a_bs=64, b_bs=64, regimes=REGIMES, **kw):
    """The claim's one result on rows whose seed k has the claim's metric a_values[k] (b_values[k])."""
    field = "final_scale_spearman" if c.metric == "abs_scale_spearman" else c.metric  # the SummaryRow field
    rows = {
        ("r", "rnn", c.a.norm, a_bs): [row(c.a.norm, s, field, v, bs=a_bs, **kw) for s, v in enumerate(a_values)],
        ("r", "rnn", c.b.norm, b_bs): [row(c.b.norm, s, field, v, bs=b_bs, **kw) for s, v in enumerate(b_values)],
    }
    (result,) = evaluate_claims([c], rows, regimes, chance)
    return result


# ---------------------------------------------------------------- equivalence: the interval against the margin

# margin 0.02 of accuracy = "+-2.0 points"
WITHIN, OUTSIDE, PAST = (
    "the 95% interval lies within +-2.0 points",
    "the 95% interval lies outside +-2.0 points",
    "the 95% interval reaches past +-2.0 points",
)


@pytest.mark.parametrize(
    "lo,hi,verdict,reason",
    [
        (-0.01, 0.01, "held", WITHIN),
        (-0.0199, 0.0199, "held", WITHIN),
        (-0.01, 0.02, "inconclusive", PAST),  # touching the margin from inside is not inside
        (-0.02, 0.01, "inconclusive", PAST),
        (-0.03, 0.03, "inconclusive", PAST),  # the whole band inside the interval
        (0.0199, 0.05, "inconclusive", PAST),  # still reaches inside the margin
        (-0.05, -0.0199, "inconclusive", PAST),
        (0.02, 0.05, "not held", OUTSIDE),  # touching it from outside is outside
        (-0.05, -0.02, "not held", OUTSIDE),
        (0.03, 0.05, "not held", OUTSIDE),
        (-0.05, -0.03, "not held", OUTSIDE),
    ],
)
def test_an_equivalence_verdict_follows_the_interval_only(lo, hi, verdict, reason):
    c = claim("equal", "final_test_acc", 0.02, Condition("layer", 1), Condition("layer", 64))
    for p_adj in (None, 0.0, 0.5):  # equivalence claims are not tested for a difference: p plays no part
        assert claim_rules._verdict(c, (lo + hi) / 2, (lo, hi), p_adj) == (verdict, reason)


# ---------------------------------------------------------------- directional: significance, sign, margin

HELD = "Holm p < 0.05, a below b by at least 0.020 nats"
NEGLIGIBLE = "Holm p < 0.05 but the effect is smaller than 0.020 nats: negligible"
OPPOSITE = "Holm p < 0.05, a above b: the opposite"
NO_EFFECT = "no effect: the 95% interval lies within +-0.020 nats"
OPEN = "not significant, and the interval does not rule out an effect"


@pytest.mark.parametrize(
    "effect,lo,hi,p_adj,verdict,reason",
    [
        (-0.10, -0.15, -0.05, 0.01, "held", HELD),
        (-0.02, -0.03, -0.01, 0.01, "held", HELD),  # an effect equal to the margin is enough
        (-0.0199, -0.03, -0.01, 0.01, "not held", NEGLIGIBLE),  # just smaller than the margin
        (-0.001, -0.0015, -0.0005, 0.01, "not held", NEGLIGIBLE),
        (0.0001, 0.00005, 0.00015, 0.01, "not held", OPPOSITE),
        (0.10, 0.05, 0.15, 0.01, "not held", OPPOSITE),
        (-0.10, -0.15, -0.05, 0.049999, "held", HELD),
        (-0.10, -0.20, 0.00, 0.05, "inconclusive", OPEN),  # p exactly at alpha is not significant
        (0.10, 0.0, 0.20, 0.05, "inconclusive", OPEN),
        (0.0, -0.019, 0.019, 0.5, "not held", NO_EFFECT),  # not significant, shown negligible
        (0.005, -0.0199, 0.0199, 1.0, "not held", NO_EFFECT),
        (0.0, -0.02, 0.01, 0.5, "inconclusive", OPEN),  # touching the margin: not shown negligible
        (0.0, -0.01, 0.02, 0.5, "inconclusive", OPEN),
        (-0.005, -0.03, 0.01, 0.5, "inconclusive", OPEN),  # leaning the claimed way past the margin
        (0.005, -0.01, 0.03, 0.5, "inconclusive", OPEN),  # leaning the other way past the margin
        (0.0, -0.05, 0.05, 0.9, "inconclusive", OPEN),
    ],
)
def test_a_directional_verdict_at_each_boundary(effect, lo, hi, p_adj, verdict, reason):
    assert claim_rules._verdict(claim(), effect, (lo, hi), p_adj) == (verdict, reason)


def test_the_margin_and_units_in_a_directional_reason_are_the_claims():
    acc = claim(metric="final_test_acc", margin=0.05)
    assert claim_rules._verdict(acc, -0.06, (-0.08, -0.04), 0.001) == (
        "held",
        "Holm p < 0.05, a below b by at least 5.0 points",
    )
    rho = claim(metric="abs_scale_spearman", margin=0.1)
    assert claim_rules._verdict(rho, 0.0, (-0.05, 0.05), 0.9) == (
        "not held",
        "no effect: the 95% interval lies within +-0.10",
    )


# ---------------------------------------------------------------- evaluate_claims: from rows to verdicts

B = [0.40, 0.55, 0.47, 0.62, 0.50]  # a large seed effect; the paired differences are small


def test_a_directional_claim_from_rows_with_its_numbers_by_hand():
    d = [-0.10, -0.09, -0.11, -0.10, -0.08]
    r = evaluate(claim(), [b + x for b, x in zip(B, d)], B)
    # d: mean -0.096, deviations (-0.004, 0.006, -0.014, -0.004, 0.016), sum of squares 0.00052,
    # sd = sqrt(0.00052 / 4) = 0.0114018, se = sd / sqrt(5) = 0.0050990, t = -18.827 on 4 df
    se = math.sqrt(0.00052 / 4) / math.sqrt(5)
    half = t_dist.ppf(0.975, 4) * se
    assert r.effect == pytest.approx(-0.096) and r.ci95 == pytest.approx([-0.096 - half, -0.096 + half])
    assert r.p_value == pytest.approx(2 * t_dist.sf(0.096 / se, 4)) and r.p_adjusted == pytest.approx(r.p_value)
    assert r.mean_a == pytest.approx(sum(B) / 5 - 0.096) and r.mean_b == pytest.approx(sum(B) / 5)
    assert (r.verdict, r.reason) == ("held", HELD)
    assert (r.test, r.n_seeds, r.direction, r.margin) == ("paired t-test over 5 seeds", 5, "less", 0.02)
    assert (r.a, r.b, r.regime, r.family, r.metric) == ("LayerNorm", "NoNorm", "r", "rnn", "mean_train_loss")


def test_pairs_are_matched_by_seed_whatever_the_order_and_a_missing_seed_drops_out():
    c = claim()
    a = {s: B[s] - 0.1 - 0.01 * s for s in range(5)}  # d_s = -0.1 - 0.01 s
    rows = {
        ("r", "rnn", "layer", 64): [row("layer", s, value=a[s]) for s in (4, 1, 3, 0, 2)],
        ("r", "rnn", "none", 64): [row("none", s, value=B[s]) for s in (3, 0, 1, 4)],  # seed 2 missing
    }
    (r,) = evaluate_claims([c], rows, REGIMES)
    assert r.n_seeds == 4 and r.effect == pytest.approx(-0.1 - 0.01 * (4 + 1 + 3 + 0) / 4)
    assert r.mean_b == pytest.approx((B[0] + B[1] + B[3] + B[4]) / 4)
    assert r.mean_a == pytest.approx((a[0] + a[1] + a[3] + a[4]) / 4)
    assert len(r.runs) == 9  # every run of both conditions is listed, paired or not


def test_a_condition_without_a_batch_size_takes_the_regimes():
    regimes = {"r": RunConfig().with_changes(train__batch_size=32)}
    r = evaluate(claim(), [b - 0.1 + 0.001 * k for k, b in enumerate(B)], B, a_bs=32, b_bs=32, regimes=regimes)
    assert r.n_seeds == 5 and r.verdict == "held"
    r = evaluate(claim(), [b - 0.1 for b in B], B, regimes=regimes)  # rows at 64 are not this regime's
    assert r.n_seeds == 0 and r.verdict == "inconclusive" and r.effect is None


def test_too_few_pairs_says_how_many_and_why():
    c = claim()
    rows = {
        ("r", "rnn", "layer", 64): [row("layer", 0, value=0.3)]
        + [row("layer", s, status="diverged") for s in range(1, 5)],
        ("r", "rnn", "none", 64): [row("none", s, value=0.5) for s in range(5)],
    }
    (r,) = evaluate_claims([c], rows, REGIMES)
    assert r.verdict == "inconclusive" and r.n_seeds == 1
    assert r.reason == "1 of 5 seeds have a value for both runs (4 runs diverged); a paired test needs 2"
    assert (r.effect, r.ci95, r.p_value, r.p_adjusted, r.test) == (None, None, None, None, "")
    assert r.mean_a == 0.3 and r.mean_b == 0.5  # the one pair's values


def test_an_undefined_metric_is_named_in_the_reason():
    rho = claim(metric="abs_scale_spearman", margin=0.1)
    r = evaluate(rho, [None, None], [0.5, 0.6])
    assert r.reason == (
        "0 of 2 seeds have a value for both runs (2 finished runs have no abs_scale_spearman: the correlation"
        " is undefined when ||h_T|| or the scales are all equal, or n_test < 3); a paired test needs 2"
    )
    loss = claim()
    rows = {
        ("r", "rnn", "layer", 64): [row("layer", s, value=None) for s in range(2)],
        ("r", "rnn", "none", 64): [row("none", s, value=0.5) for s in range(2)],
    }
    (r,) = evaluate_claims([loss], rows, REGIMES)
    assert r.reason == (
        "0 of 2 seeds have a value for both runs (2 finished runs have no mean_train_loss); a paired test needs 2"
    )
    assert r.mean_a is None and r.mean_b is None


def test_an_accuracy_claim_floors_the_sd_at_its_resolution_and_a_loss_claim_does_not():
    acc = claim(metric="final_test_acc")
    same = [0.80, 0.85, 0.78, 0.90, 0.83]
    r = evaluate(acc, [x - 0.05 for x in same], same, n_test=200)
    # every difference -0.05 (up to round-off): sd floored at (1/200)/sqrt(6), t = 0.05 / (sd / sqrt(5))
    se = (1 / 200) / math.sqrt(6) / math.sqrt(5)
    assert r.test == "paired t-test over 5 seeds (sd floored at the resolution)"
    assert r.p_value == pytest.approx(2 * t_dist.sf(0.05 / se, 4), rel=1e-4)
    r = evaluate(claim(), [x - 0.05 for x in same], same)
    assert r.test == "sign test over 5 seeds (all differences equal)" and r.p_value == pytest.approx(0.0625)


def test_the_interval_of_a_bounded_metric_is_clipped_and_of_a_loss_is_not():
    # two seeds, differences -1 and +1: mean 0, sd sqrt(2), se 1, half-width t_{0.975,1} = 12.706
    half = t_dist.ppf(0.975, 1)
    acc = evaluate(claim("equal", "final_test_acc", 0.02), [0.0, 1.0], [1.0, 0.0], n_test=10**9)
    assert acc.ci95 == [-1.0, 1.0] and acc.effect == 0.0 and acc.verdict == "inconclusive"
    rho = evaluate(claim(metric="abs_scale_spearman"), [0.0, 1.0], [1.0, 0.0])
    assert rho.ci95 == [-1.0, 1.0]
    loss = evaluate(claim(), [0.0, 1.0], [1.0, 0.0])
    assert loss.ci95 == pytest.approx([-half, half])
    narrow = evaluate(
        claim("equal", "final_test_acc", 0.02),
        [0.5, 0.6, 0.7],
        [0.5, 0.61, 0.69],
        n_test=10**9,
    )
    assert -1 < narrow.ci95[0] < narrow.ci95[1] < 1  # clipping leaves an interval inside the bounds alone


def test_holm_runs_over_the_directional_claims_only():
    c1 = claim(id="c1")
    c2 = Claim("c2", "x", "r", "rnn", "mean_train_loss", Condition("batch"), Condition("none"), "less", 0.02)
    eq = Claim("eq", "y", "r", "rnn", "mean_train_loss", Condition("rms"), Condition("none"), "equal", 0.02)
    rows = {
        ("r", "rnn", "layer", 64): [row("layer", s, value=b - 0.1 + 0.01 * s) for s, b in enumerate(B)],
        ("r", "rnn", "batch", 64): [row("batch", s, value=b - 0.05 + 0.03 * (-1) ** s) for s, b in enumerate(B)],
        ("r", "rnn", "rms", 64): [row("rms", s, value=b + 0.001 * (-1) ** s) for s, b in enumerate(B)],
        ("r", "rnn", "none", 64): [row("none", s, value=b) for s, b in enumerate(B)],
    }
    r1, r_eq, r2 = evaluate_claims([c1, eq, c2], rows, REGIMES)
    lo, hi = sorted([r1.p_value, r2.p_value])
    assert sorted([r1.p_adjusted, r2.p_adjusted]) == pytest.approx([2 * lo, max(2 * lo, hi)])  # m = 2, not 3
    assert r_eq.p_adjusted is None and r_eq.p_value is not None and r_eq.verdict == "held"


# ---------------------------------------------------------------- the chance rule

ACC_CLAIM = claim("less", "final_test_acc", 0.125, Condition("batch", 1), Condition("batch", 64))
A_LOW = [0.40, 0.405, 0.41, 0.395, 0.40]  # about 22 points below 0.625, significant


def test_a_reference_exactly_at_chance_plus_the_margin_is_not_at_chance():
    r = evaluate(ACC_CLAIM, A_LOW, [0.625] * 5, {"r": 0.5}, a_bs=1)
    assert r.mean_b == 0.625 and r.verdict == "held"  # 0.625 = 0.5 + 0.125: not below chance + margin


def test_a_reference_below_chance_plus_the_margin_makes_the_claim_inconclusive():
    r = evaluate(ACC_CLAIM, [a - 0.01 for a in A_LOW], [0.62] * 5, {"r": 0.5}, a_bs=1)
    assert r.verdict == "inconclusive"
    assert r.reason == "BatchNorm at batch size 64 is at chance (62.0%) in this regime: the claim cannot show"
    assert r.effect is not None and r.p_adjusted is not None  # tested and reported; the verdict is withheld


def test_the_chance_rule_reads_the_reference_b_not_a():
    """BatchNorm collapsing to chance at batch size 1 (a) is the claim holding, not a reason to withhold it."""
    r = evaluate(ACC_CLAIM, [0.5, 0.505, 0.5, 0.495, 0.5], [0.90] * 5, {"r": 0.5}, a_bs=1)
    assert r.verdict == "held" and r.mean_a == pytest.approx(0.5)


def test_the_chance_rule_applies_to_accuracy_claims_of_that_regime_only():
    loss = evaluate(claim(), [b - 0.1 + 0.001 * k for k, b in enumerate(B)], B, {"r": 0.9})
    assert loss.verdict == "held"  # mean_b 0.508 < 0.9 + margin, but a loss is not an accuracy
    # b at 56% is below chance 50% + margin 12.5 points, but there is no chance level for this regime
    other = evaluate(ACC_CLAIM, A_LOW, [0.56] * 5, {"elsewhere": 0.5}, a_bs=1)
    assert other.verdict == "held"
    assert evaluate(ACC_CLAIM, A_LOW, [0.56] * 5, None, a_bs=1).verdict == "held"
    assert evaluate(ACC_CLAIM, A_LOW, [0.56] * 5, {"r": 0.5}, a_bs=1).verdict == "inconclusive"


# ---------------------------------------------------------------- numbers and sentences


def test_metric_value_is_the_absolute_correlation_for_scale_claims():
    r = row("layer", 0)
    r.final_scale_spearman = -0.75
    assert metric_value(r, "abs_scale_spearman") == 0.75 and metric_value(r, "mean_train_loss") == 0.5
    r.final_scale_spearman = None
    assert metric_value(r, "abs_scale_spearman") is None


def test_format_level_and_effect():
    assert format_level("final_test_acc", 0.9355) == "93.5%" and format_level("mean_train_loss", 0.2641) == "0.264 nats"
    assert format_level("abs_scale_spearman", 0.061) == "0.06"
    r = ClaimResult(
        "c", "t", "r", "rnn", "final_test_acc", "A", "B", "less", 0.02, 0.015, [-0.005, 0.035], 0.1, 0.2, "x", 5,
        0.8, 0.785, "inconclusive", "why",
    )  # fmt: skip
    assert format_effect(r) == "+1.5 [-0.5, +3.5] points"
    loss = replace(r, metric="mean_train_loss", effect=-0.0834, ci95=[-0.1012, -0.0656])
    assert format_effect(loss) == "-0.083 [-0.101, -0.066] nats"
    assert format_effect(replace(r, effect=None, ci95=None)) == "-"


def test_claim_sentences_by_hand():
    c = claim()
    r = evaluate(c, [b + x for b, x in zip(B, [-0.10, -0.09, -0.11, -0.10, -0.08])], B)
    (text,) = claim_sentences([r])
    assert text == (
        f"RNN, LayerNorm converges faster than NoNorm (r): mean train loss (area under the loss curve), LayerNorm minus"
        f" NoNorm = {format_effect(r)}, p = {r.p_value:.2g}, Holm p = {r.p_adjusted:.2g}, 5 seeds (LayerNorm 0.412 nats,"
        f" NoNorm 0.508 nats): HELD ({HELD})."
    )
    assert format_effect(r) == "-0.096 [-0.110, -0.082] nats"
    eq = evaluate(claim("equal"), [b + 0.001 * (-1) ** k for k, b in enumerate(B)], B)
    (text,) = claim_sentences([eq])
    assert f", p = {eq.p_value:.2g}, 5 seeds" in text and "Holm" not in text  # no Holm for an equivalence claim
    untested = evaluate(c, [0.3], [0.5])
    assert claim_sentences([untested]) == [
        "RNN, LayerNorm converges faster than NoNorm (r): not tested (1 of 1 seeds have a value for both runs;"
        " a paired test needs 2): INCONCLUSIVE."
    ]


# ---------------------------------------------------------------- conditions and results as written


def test_a_condition_and_a_result_as_written():
    assert Condition("layer").label() == "LayerNorm" and Condition("batch", 1).label() == "BatchNorm at batch size 1"
    r = evaluate(claim(), [b - 0.1 + 0.001 * k for k, b in enumerate(B)], B)
    out = r.to_dict()
    assert out["id"] == "c" and out["verdict"] == "held" and out["ci95"] == r.ci95 and out["runs"] == r.runs
    # counted_at_chance is written by a claim that counts a diverged seed at chance only: the others' keys stay
    assert set(out) == set(ClaimResult.__dataclass_fields__) - {"counted_at_chance"}


# ---------------------------------------------------------------- seeds that would decide, and sentences of several


def test_an_inconclusive_claim_says_how_many_seeds_would_decide_it():
    from statistics import stdev

    from lnbench.analysis.stats import seeds_for_interval, seeds_for_power

    d = [0.03, -0.04, 0.02, -0.01, 0.05]  # layer - none: mean +0.01 nats, sd 0.0354: not significant
    r = evaluate(claim(), [b + x for b, x in zip(B, d)], B)
    assert r.verdict == "inconclusive" and r.seeds_needed == seeds_for_power(0.01, stdev(d)) == 101
    assert claim_sentences([r])[0].endswith(
        "INCONCLUSIVE (not significant, and the interval does not rule out an effect). About 101 seeds would decide it"
        " (an effect this size at 80% power, from the sd of the paired differences the test uses):"
        " lnbench claims --only c --num-seeds 101, with this run's other options (its --set and --seed), for which that"
        " number was computed."
    )
    eq = evaluate(claim("equal"), [b + x for b, x in zip(B, d)], B)
    assert eq.seeds_needed == seeds_for_interval(0.01, stdev(d), 0.02) and eq.seeds_needed is not None
    assert (
        f"(an interval inside the margin, from the sd of the paired differences the test uses): lnbench claims --only c --num-seeds {eq.seeds_needed}, with this run's other options (its --set and --seed), for which that number was computed."
        in claim_sentences([eq])[0]
    )
    two = evaluate(claim(), [B[0] + 0.03, B[1] - 0.04], B[:2])  # two seeds are enough to estimate a spread
    assert two.verdict == "inconclusive" and two.seeds_needed == seeds_for_power(-0.005, stdev([0.03, -0.04]))


def test_a_decided_or_unanswerable_claim_asks_for_no_more_seeds():
    held = evaluate(claim(), [b - 0.1 + 0.001 * k for k, b in enumerate(B)], B)
    assert held.seeds_needed is None and held.to_dict()["seeds_needed"] is None
    at_chance = evaluate(ACC_CLAIM, A_LOW, [0.56] * 5, {"r": 0.5}, a_bs=1)
    assert at_chance.verdict == "inconclusive" and at_chance.seeds_needed is None  # more seeds cannot help
    assert "About" not in claim_sentences([at_chance])[0]
    # every difference +0.05 up to round-off (1e-9): the sign test decides (it cannot below 6 seeds), not a
    # t-test with an sd of 1e-9, for which 2 seeds would do
    flat = evaluate(claim(), [b + 0.05 + 1e-9 * (-1) ** k for k, b in enumerate(B)], B)
    assert flat.test == "sign test over 5 seeds (all differences equal)" and flat.verdict == "inconclusive"
    assert flat.seeds_needed is None and "About" not in claim_sentences([flat])[0]


def test_differences_equal_up_to_the_round_off_of_the_data_ask_for_no_more_seeds():
    """Round-off is judged against the data (1e-6 x 0.55 = 5.5e-7), as the test judged it, not against
    the differences (1e-6 x 0.05 = 5e-8): a spread of 2e-7 is a sign test's "all equal", and its sd of
    1.1e-7 must not plan a t-test that 2 seeds would decide (the sentence asked for 2 of the 5 seeds)."""
    flat = evaluate(claim(), [0.55 + 1e-7 * (-1) ** k for k in range(5)], [0.5] * 5)
    assert flat.test == "sign test over 5 seeds (all differences equal)" and flat.verdict == "inconclusive"
    assert flat.seeds_needed is None and "About" not in claim_sentences([flat])[0]


def test_sentences_of_several_claims_and_their_why():
    c = Claim(
        "w", "text", "r", "rnn", "mean_train_loss", Condition("layer"), Condition("none"), "less", 0.02, "why here"
    )
    rows = {
        ("r", "rnn", "layer", 64): [row("layer", s, value=b - 0.1 + 0.001 * s) for s, b in enumerate(B)],
        ("r", "rnn", "none", 64): [row("none", s, value=b) for s, b in enumerate(B)],
    }
    untested, tested = evaluate_claims([claim(id="u", b=Condition("rms")), c], rows, REGIMES)
    assert tested.why == "why here" and untested.why == ""
    one, two = claim_sentences([untested, tested])
    assert one.endswith(": INCONCLUSIVE.") and two.startswith("RNN, text (r): mean train loss")


def test_the_first_pairs_n_test_is_the_resolution_of_an_accuracy_claim():
    acc = claim(metric="final_test_acc")
    same = [0.80, 0.85, 0.78]
    rows = {
        ("r", "rnn", "layer", 64): [
            row("layer", s, "final_test_acc", a - 0.05 + 0.005 * s) for s, a in enumerate(same)
        ],
        ("r", "rnn", "none", 64): [row("none", s, "final_test_acc", a) for s, a in enumerate(same)],
    }
    rows[("r", "rnn", "layer", 64)][0].n_test = 50  # d = -0.05, -0.045, -0.04: sd 0.005 < 0.02 / sqrt(6)
    (r,) = evaluate_claims([acc], rows, REGIMES)
    assert r.test == "paired t-test over 3 seeds (sd floored at the resolution)"


def test_format_amount_is_signed_by_default_and_select_claims_lists_the_ids():
    assert format_amount("final_test_acc", 0.015) == "+1.5 points"
    with pytest.raises(ConfigError) as err:
        select_claims(["nope"])
    regimes = ", ".join(claim_catalogue.CLAIM_REGIMES)
    assert (
        str(err.value)
        == f"--only: unknown claim 'nope'; allowed: {', '.join(claim_catalogue.CLAIM_IDS)}, or a regime: {regimes}"
        f", or a card's claim ID@NORM (lstm_faster@rms) with ID one of: {', '.join(claim_catalogue.TEMPLATE_IDS)}"
    )


# ---------------------------------------------------------------- differences in differences

BN_1, BN_64, NONE_1, NONE_64 = (
    Condition("batch", 1),
    Condition("batch", 64),
    Condition("none", 1),
    Condition("none", 64),
)


def did_claim(direction="less", margin=0.02):
    """[BN(1) - BN(64)] - [NoNorm(1) - NoNorm(64)] on accuracy, as the shipped batch-size claims."""
    return Claim(
        "did", "BN degrades", "r", "rnn", "final_test_acc", BN_1, BN_64, direction, margin, net=(NONE_1, NONE_64)
    )


def evaluate_did(c, values, chance=None, n_test=200):
    """The claim's one result on rows of its four settings: ``values`` maps each condition to its seeds' accuracies."""
    rows = {
        ("r", "rnn", cond.norm, cond.batch_size): [
            row(cond.norm, s, "final_test_acc", v, bs=cond.batch_size, n_test=n_test) for s, v in enumerate(vs)
        ]
        for cond, vs in values.items()
    }
    (result,) = evaluate_claims([c], rows, REGIMES, chance)
    return result


D64 = [0.80, 0.82, 0.78, 0.85, 0.81]  # NoNorm at 64
B64 = [0.84, 0.86, 0.83, 0.88, 0.85]  # BatchNorm at 64


def _did_values(bn_change, none_change, b64=B64, d64=D64):
    return {
        BN_1: [b + x for b, x in zip(b64, bn_change)],
        BN_64: list(b64),
        NONE_1: [d + x for d, x in zip(d64, none_change)],
        NONE_64: list(d64),
    }


def test_a_difference_in_differences_from_four_settings_by_hand():
    bn, none = [-0.10, -0.12, -0.09, -0.11, -0.105], [-0.02, -0.01, -0.03, -0.02, -0.015]
    values = _did_values(bn, none)
    r = evaluate_did(did_claim(), values)
    did = [x - y for x, y in zip(bn, none)]  # -0.08, -0.11, -0.06, -0.09, -0.09
    mean = sum(did) / 5
    sd = math.sqrt(sum((x - mean) ** 2 for x in did) / 4)  # 0.018166 > the floor sqrt(2)/200/sqrt(6) = 0.00289
    se = sd / math.sqrt(5)
    half = t_dist.ppf(0.975, 4) * se
    assert r.effect == pytest.approx(-0.086) and r.ci95 == pytest.approx([-0.086 - half, -0.086 + half])
    assert r.p_value == pytest.approx(2 * t_dist.sf(0.086 / se, 4)) and r.test == "paired t-test over 5 seeds"
    # the paired test is on xa = A - B against xb = C - D, seed by seed
    assert r.mean_a == pytest.approx(sum(bn) / 5) and r.mean_b == pytest.approx(sum(none) / 5)
    assert r.a == "(BatchNorm at batch size 1 minus BatchNorm at batch size 64)"
    assert r.b == "(NoNorm at batch size 1 minus NoNorm at batch size 64)"
    assert r.means == pytest.approx({c.label(): sum(v) / 5 for c, v in values.items()})
    assert list(r.means) == [c.label() for c in (BN_1, BN_64, NONE_1, NONE_64)]
    assert (r.verdict, r.n_seeds, len(r.runs)) == ("held", 5, 20)  # 4 settings x 5 seeds
    text = claim_sentences([r])[0]
    # the sentence gives the four conditions' levels: 0.852 - 0.105, 0.852, 0.812 - 0.019, 0.812
    assert (
        "5 seeds (BatchNorm at batch size 1 74.7%, BatchNorm at batch size 64 85.2%, NoNorm at batch size 1 79.3%,"
        " NoNorm at batch size 64 81.2%): HELD" in text
    )


def test_a_difference_in_differences_of_accuracies_floors_its_sd_at_four_rounding_errors():
    """Every seed the same DiD (-0.08): the sd is floored at sqrt(2) / n_test / sqrt(6), not 1 / n_test / sqrt(6)."""
    r = evaluate_did(did_claim(), _did_values([-0.10] * 5, [-0.02] * 5))
    floor = math.sqrt(2) / 200 / math.sqrt(6)
    se = floor / math.sqrt(5)
    assert r.test == "paired t-test over 5 seeds (sd floored at the resolution)"
    assert r.effect == pytest.approx(-0.08)
    assert r.p_value == pytest.approx(2 * t_dist.sf(0.08 / se, 4), rel=1e-6)
    half = t_dist.ppf(0.975, 4) * se
    assert r.ci95 == pytest.approx([-0.08 - half, -0.08 + half], rel=1e-6)
    eq = evaluate_did(did_claim("equal"), _did_values([-0.02] * 5, [-0.02] * 5))  # the same change: DiD 0
    assert eq.effect == pytest.approx(0.0, abs=1e-12) and eq.ci95 == pytest.approx([-half, half], rel=1e-6)
    assert eq.verdict == "held"


def test_a_reference_of_a_difference_in_differences_at_chance_makes_it_inconclusive():
    bn, none = [-0.10] * 5, [-0.02, -0.01, -0.03, -0.02, -0.015]
    low = [0.51, 0.505, 0.51, 0.515, 0.51]  # below chance 0.5 + the margin 0.02
    r = evaluate_did(did_claim(), _did_values(bn, none, d64=low), {"r": 0.5})  # net[1], NoNorm at 64, at chance
    assert r.verdict == "inconclusive" and r.effect is not None
    assert r.reason == "NoNorm at batch size 64 is at chance (51.0%) in this regime: the claim cannot show"
    r = evaluate_did(did_claim(), _did_values(bn, none, b64=low), {"r": 0.5})  # b, BatchNorm at 64, at chance
    assert r.verdict == "inconclusive"
    assert r.reason == "BatchNorm at batch size 64 is at chance (51.0%) in this regime: the claim cannot show"
    # a, BatchNorm at 1, collapsing to chance is the claim holding, not a reason to withhold it
    collapsed = _did_values(bn, none)
    collapsed[BN_1] = [0.5, 0.505, 0.5, 0.495, 0.5]
    r = evaluate_did(did_claim(), collapsed, {"r": 0.5})
    assert r.verdict == "held" and r.means["BatchNorm at batch size 1"] == pytest.approx(0.5)


# ---------------------------------------------------------------- seeds needed from the floored sd


def test_equal_differences_over_two_seeds_ask_for_more_than_two_seeds_for_an_interval():
    from lnbench.analysis.stats import seeds_for_interval

    c = claim("equal", "final_test_acc", 0.05)
    r = evaluate(c, [0.72, 0.82], [0.70, 0.80], n_test=50)  # every seed +0.02: raw sd 0
    assert r.verdict == "inconclusive" and r.effect == pytest.approx(0.02)
    assert seeds_for_interval(r.effect, 0.0, 0.05) == 2  # the old hint, from the raw sd: the 2 seeds just run
    floor = (1 / 50) / math.sqrt(6)
    # room 0.03: n = 3 gives 4.303 x 0.00816 / sqrt(3) = 0.0203 < 0.03; n = 2: 12.71 x 0.00816 / sqrt(2) = 0.073
    assert r.seeds_needed == seeds_for_interval(r.effect, floor, 0.05) == 3
    assert r.seeds_needed > 2


def test_equal_differences_over_two_seeds_plan_a_directional_test_at_the_holm_level():
    from lnbench.analysis.stats import seeds_for_power

    c1 = claim(metric="final_test_acc", id="c1")  # layer - none: -0.02 on both seeds (raw sd 0)
    c2 = claim(metric="final_test_acc", a=Condition("batch"), id="c2")  # batch - none: +0.04, -0.02
    none = [0.70, 0.80]
    rows = {
        ("r", "rnn", "layer", 64): [row("layer", s, "final_test_acc", v - 0.02, n_test=50) for s, v in enumerate(none)],
        ("r", "rnn", "batch", 64): [
            row("batch", s, "final_test_acc", v + x, n_test=50) for s, (v, x) in enumerate(zip(none, [0.04, -0.02]))
        ],
        ("r", "rnn", "none", 64): [row("none", s, "final_test_acc", v, n_test=50) for s, v in enumerate(none)],
    }
    r1, r2 = evaluate_claims([c1, c2], rows, REGIMES)
    floor = (1 / 50) / math.sqrt(6)
    assert r1.p_value == pytest.approx(2 * t_dist.sf(0.02 / (floor / math.sqrt(2)), 1))  # 0.179
    assert r1.p_value < r2.p_value and r1.p_adjusted == pytest.approx(2 * r1.p_value)  # Holm's multiplier 2
    assert r1.verdict == "inconclusive"
    alpha = 0.05 * r1.p_value / r1.p_adjusted  # 0.025: the raw level Holm needs
    assert alpha == pytest.approx(0.025)
    assert r1.seeds_needed == seeds_for_power(r1.effect, floor, alpha=alpha) == 5  # the raw sd 0 gave None
    assert seeds_for_power(r1.effect, floor) == 4  # at 0.05 without Holm: fewer


def test_a_hint_of_no_more_seeds_than_were_run_is_none():
    from statistics import stdev

    from lnbench.analysis.claims import seeds_needed
    from lnbench.analysis.stats import seeds_for_power

    dev = [0.0, 0.01, -0.01, 0.02, -0.02]
    exactly = [-0.05 + 1.5 * x for x in dev]  # 80% power at exactly 5 seeds, the 5 run: no hint
    assert seeds_for_power(-0.05, stdev(exactly)) == 5
    assert seeds_needed(claim(), -0.05, [0.5 + x for x in exactly], [0.5] * 5) is None
    fewer = [-0.05 + 0.5 * x for x in dev]  # 3 would have done: no hint either
    assert (
        seeds_for_power(-0.05, stdev(fewer)) == 3
        and seeds_needed(claim(), -0.05, [0.5 + x for x in fewer], [0.5] * 5) is None
    )
    more = [-0.05 + 1.9 * x for x in dev]  # 6 seeds: one more than were run
    assert seeds_needed(claim(), -0.05, [0.5 + x for x in more], [0.5] * 5) == seeds_for_power(-0.05, stdev(more)) == 6


# ---------------------------------------------------------------- borderline verdicts

DEV = [0.0, 0.01, -0.01, 0.02, -0.02]


def test_a_directional_verdict_near_its_level_is_borderline():
    from statistics import stdev

    from lnbench.analysis.stats import seeds_for_power

    d = [-0.05 + 2.14 * x for x in DEV]
    r = evaluate(claim(), [b + x for b, x in zip(B, d)], B)
    assert r.p_adjusted == pytest.approx(0.0298, abs=1e-3) and r.verdict == "held" and r.borderline
    # to settle it: the seeds for 80% power at level 0.01
    assert r.seeds_to_settle == seeds_for_power(-0.05, stdev(d), alpha=0.01) == 9
    firm = [-0.05 + 0.8 * x for x in DEV]
    r = evaluate(claim(), [b + x for b, x in zip(B, firm)], B)
    assert r.p_adjusted == pytest.approx(0.0009, abs=1e-4) and r.verdict == "held"
    assert not r.borderline and r.seeds_to_settle is None
    assert "BORDERLINE" not in claim_sentences([r])[0]


def test_an_equivalence_interval_just_inside_the_margin_is_borderline():
    from statistics import stdev

    from lnbench.analysis.stats import seeds_for_interval

    r = evaluate(claim("equal"), [b + x for b, x in zip(B, DEV)], B)
    sd = stdev(DEV)
    half95, half99 = (t_dist.ppf(q, 4) * sd / math.sqrt(5) for q in (0.975, 0.995))
    assert half95 < 0.02 < half99  # 0.0196 inside the margin of 0.02; the 99% interval, 0.0326, past it
    assert r.ci95 == pytest.approx([-half95, half95]) and r.verdict == "held" and r.borderline
    assert r.seeds_to_settle == seeds_for_interval(r.effect, sd, 0.02, confidence=0.99) == 8
    (text,) = claim_sentences([r])
    assert text.endswith(
        "HELD (the 95% interval lies within +-0.020 nats). BORDERLINE: the verdict differs at level 0.01 or 0.1"
        " (99% or 90% intervals), so another machine's rounding can flip it; about 8 seeds would settle it."
    )
    narrow = evaluate(claim("equal"), [b + 0.3 * x for b, x in zip(B, DEV)], B)
    assert narrow.verdict == "held" and not narrow.borderline
