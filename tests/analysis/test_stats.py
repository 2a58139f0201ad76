"""lnbench.analysis.stats on hand-made inputs with known answers, plus seeded null / power simulations."""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm, ttest_ind
from scipy.stats import t as t_dist

from lnbench.analysis.stats import (
    ALPHA,
    PairedResult,
    accuracy_interval,
    describe_first_epochs,
    holm,
    mcnemar_exact,
    paired_over_seeds,
    summarize_first_epochs,
    wilson_interval,
)

# ---------------------------------------------------------------- Wilson


def wilson_closed_form(k, n, conf=0.95):
    # (p + z^2/2n ± z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    p, z = k / n, norm.ppf(0.5 + conf / 2)
    centre, half = p + z**2 / (2 * n), z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return (centre - half) / (1 + z**2 / n), (centre + half) / (1 + z**2 / n)


@pytest.mark.parametrize("k,n,conf", [(0, 10, 0.95), (7, 10, 0.95), (10, 10, 0.95), (187, 200, 0.95), (187, 200, 0.9)])
def test_wilson_matches_closed_form(k, n, conf):
    assert wilson_interval(k, n, conf) == pytest.approx(wilson_closed_form(k, n, conf), abs=1e-12)


def test_wilson_hand_value_and_errors():
    # k=7, n=10, z=1.959964, z^2=3.841459: centre 0.7 + 3.841459/20 = 0.892073;
    # half 1.959964 * sqrt(0.021 + 0.0096036) = 0.342874; denominator 1.384146 -> (0.396778, 0.892209)
    assert wilson_interval(7, 10) == pytest.approx((0.396778, 0.892209), abs=1e-6)
    for k, n in [(0, 0), (-1, 10), (11, 10)]:
        with pytest.raises(ValueError):
            wilson_interval(k, n)


def test_accuracy_interval():
    assert accuracy_interval(0.935, 200) == wilson_interval(187, 200)  # 0.935 * 200 = 187
    assert accuracy_interval(1.0, 50) == wilson_interval(50, 50)
    with pytest.raises(ValueError):
        accuracy_interval(1.5, 200)
    with pytest.raises(ValueError):
        accuracy_interval(0.9, 0)


# ---------------------------------------------------------------- McNemar


def mcnemar_vectors(b, c, both_right, both_wrong):
    a = [1] * b + [0] * c + [1] * both_right + [0] * both_wrong
    bb = [0] * b + [1] * c + [1] * both_right + [0] * both_wrong
    return a, bb


def test_mcnemar_b8_c2():
    a, b = mcnemar_vectors(8, 2, both_right=7, both_wrong=3)  # n = 20
    r = mcnemar_exact(a, b)
    assert isinstance(r, PairedResult) and r.n == 20 and r.test == "exact McNemar (n_test=20)"
    assert r.mean_diff == pytest.approx((8 - 2) / 20)  # 0.3 = 30 points
    # two-sided exact: 2 * (C(10,0) + C(10,1) + C(10,2)) / 2^10 = 2 * 56 / 1024
    assert r.p_value == pytest.approx(0.109375, abs=1e-12)
    # Agresti-Min: pb = 8.5/22, pc = 2.5/22, d = 6/22 = 0.272727,
    # se = sqrt((11/22 - (6/22)^2) / 22) = sqrt(0.425620 / 22) = 0.139092; d +- 1.959964 se
    se = np.sqrt((11 / 22 - (6 / 22) ** 2) / 22)
    assert se == pytest.approx(0.139092, abs=1e-6)
    assert r.ci95 == pytest.approx((6 / 22 - 1.959964 * se, 6 / 22 + 1.959964 * se), abs=1e-6)
    assert r.ci95[0] < r.mean_diff < r.ci95[1]  # (here just above 0 while the exact test, conservative, gives p = 0.11)
    # swapping a and b flips the sign and the interval, same p
    s = mcnemar_exact(b, a)
    assert s.mean_diff == -r.mean_diff and s.p_value == r.p_value
    assert s.ci95 == pytest.approx((-r.ci95[1], -r.ci95[0]))


def test_mcnemar_no_discordant_pairs_and_balanced():
    for a, b in [mcnemar_vectors(0, 0, 10, 5), mcnemar_vectors(0, 0, 0, 4)]:
        r = mcnemar_exact(a, b)
        assert (r.mean_diff, r.p_value) == (0.0, 1.0) and r.ci95[0] < 0 < r.ci95[1]  # uncertain, not [0, 0]
    r = mcnemar_exact(*mcnemar_vectors(5, 5, 10, 0))  # b == c: P(X <= 5 or X >= 5) = 1
    assert r.mean_diff == 0.0 and r.p_value == 1.0


def test_mcnemar_bools_and_small_p():
    a, b = mcnemar_vectors(10, 0, 90, 0)  # p = 2 / 2^10 = 0.001953125
    r = mcnemar_exact(np.array(a, dtype=bool), [bool(x) for x in b])
    assert r.p_value == pytest.approx(2 / 1024) and r.mean_diff == pytest.approx(0.1)
    # not capped at the observed 10 points: pb = 10.5/102, pc = 0.5/102
    pb, pc = 10.5 / 102, 0.5 / 102
    half = 1.959964 * np.sqrt((pb + pc - (pb - pc) ** 2) / 102)
    assert r.ci95 == pytest.approx((pb - pc - half, pb - pc + half), abs=1e-6) and r.ci95[1] > 0.1 > r.ci95[0] > 0


@pytest.mark.parametrize(
    "a,b",
    [([1, 0], [1]), ([], []), ([1, 2], [1, 0]), ([1, 0.5], [1, 0]), ([1, float("nan")], [1, 0]), ([[1, 0]], [[1, 0]])],
)
def test_mcnemar_errors(a, b):
    with pytest.raises(ValueError):
        mcnemar_exact(a, b)


# ---------------------------------------------------------------- paired over seeds


def test_paired_t_against_hand_computation():
    d = np.array([0.02, 0.01, 0.03, 0.00, 0.04])
    a = np.array([0.92, 0.88, 0.93, 0.90, 0.95])
    r = paired_over_seeds(a, a - d)
    # mean 0.02; deviations (0, -.01, .01, -.02, .02), sum sq 0.001, sd = sqrt(0.001/4) = 0.0158114,
    # se = sd/sqrt(5) = 0.00707107, t = 0.02/se = 2*sqrt(2) = 2.828427 on 4 df
    se = math.sqrt(0.001 / 4) / math.sqrt(5)
    assert r.mean_diff == pytest.approx(0.02) and r.n == 5 and r.test == "paired t-test over 5 seeds"
    assert r.p_value == pytest.approx(2 * t_dist.sf(2 * math.sqrt(2), 4))  # 0.04742
    assert r.p_value == pytest.approx(0.04742, abs=1e-5)
    # CI: 0.02 ± t_{0.975,4} se = 0.02 ± 2.776445 * 0.00707107 = (0.000368, 0.039632)
    q = t_dist.ppf(0.975, 4)
    assert r.ci95 == pytest.approx((0.02 - q * se, 0.02 + q * se))
    assert r.ci95 == pytest.approx((0.000368, 0.039632), abs=1e-6)


def test_zero_spread_identical_is_not_significant():
    a = [0.91, 0.87, 0.93, 0.89, 0.95]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # must not reach scipy's t-test (t = nan / inf)
        r = paired_over_seeds(a, list(a))
    assert (r.mean_diff, r.ci95, r.p_value) == (0.0, (0.0, 0.0), 1.0)
    assert "zero" in r.test and r.n == 5


def test_zero_spread_constant_difference_is_sign_test():
    # accuracies k/200 with b one point lower: in floats these differences are 0.01 +- 1e-16, and
    # scipy's ttest_rel would give |t| ~ 1e14, p ~ 0. The exact sign test: 2 * (1/2)^5 = 0.0625.
    k = np.array([192, 181, 175, 163, 165])
    a, b = k / 200, (k - 2) / 200
    assert np.ptp(a - b) > 0  # the round-off this guards against is really there
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = paired_over_seeds(a, b)
    assert r.p_value == pytest.approx(0.0625) and not r.p_value < ALPHA
    assert r.mean_diff == pytest.approx(0.01) and r.ci95 == pytest.approx((0.01, 0.01))
    assert r.test == "sign test over 5 seeds (all differences equal)"
    r = paired_over_seeds(b, a)
    assert r.p_value == pytest.approx(0.0625) and r.mean_diff == pytest.approx(-0.01)
    assert paired_over_seeds([0.5, 0.6], [0.4, 0.5]).p_value == pytest.approx(0.5)  # 2 * (1/2)^2


@pytest.mark.parametrize(
    "a,b,match",
    [
        ([0.9], [0.8], "at least 2 seeds"),
        ([], [], "at least 2 seeds"),
        ([0.9, 0.8], [0.8], "equal length"),
        ([0.9, float("nan")], [0.8, 0.7], "finite"),
        ([0.9, 0.8], [float("inf"), 0.7], "finite"),
        ([0.9, None], [0.8, 0.7], "finite"),  # None (no value, e.g. diverged) is NaN
    ],
)
def test_paired_errors(a, b, match):
    with pytest.raises(ValueError, match=match):
        paired_over_seeds(a, b)


# ---------------------------------------------------------------- Holm


def test_holm_hand_values():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max
    # 0.02, 0.03, 0.06, 0.06 -> back in input order:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.4, 0.9, 0.02]) == pytest.approx([0.8, 0.9, 0.06])  # 0.02x3, 0.4x2, 0.9x1
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # 1.2 capped at 1
    assert holm([0.01, 0.01]) == pytest.approx([0.02, 0.02])  # ties
    assert holm([0.03]) == [0.03] and holm([]) == []


def test_holm_monotone_and_errors():
    p = np.random.default_rng(0).uniform(0, 0.2, 50)
    adj = np.array(holm(p))
    assert (adj >= p).all() and (adj <= 1).all()
    assert (np.diff(adj[np.argsort(p)]) >= 0).all()
    for bad in ([0.01, float("nan")], [0.5, 1.5], [-0.1]):
        with pytest.raises(ValueError):
            holm(bad)


# ---------------------------------------------------------------- first epochs


def test_first_epochs():
    s = summarize_first_epochs([4, None, 3, 7, None])
    assert s == {"n_reached": 3, "n": 5, "median": 4, "min": 3, "max": 7}
    assert describe_first_epochs(s) == "3/5 seeds reached it, median epoch 4 (range 3-7)"
    assert describe_first_epochs(summarize_first_epochs([4])) == "1/1 seed reached it at epoch 4"
    assert describe_first_epochs(summarize_first_epochs([None] * 5)) == "0/5 seeds reached it"
    assert describe_first_epochs(summarize_first_epochs([None])) == "0/1 seed reached it"
    assert describe_first_epochs(summarize_first_epochs([3, 6])) == "2/2 seeds reached it, median epoch 4.5 (range 3-6)"
    assert summarize_first_epochs([None, None]) == {"n_reached": 0, "n": 2, "median": None, "min": None, "max": None}


# ---------------------------------------------------------------- simulations
# Noise model (accuracies as fractions), 3 norms per family, 5 seeds:
#   acc[norm, seed] = 0.9 + seed_effect[seed] + e[norm, seed] (+ effect for norm 0)
#   seed_effect ~ N(0, 0.03), shared by all norms (same data, init, order); e ~ N(0, NOISE_SD).
# Family = the 3 pairs (0,1), (0,2), (1,2), Holm-adjusted; flagged = adjusted p < ALPHA.
PAIRS = [(0, 1), (0, 2), (1, 2)]
SEED_SD, SEEDS = 0.03, 5
# NOISE_SD tuned from 0.01: with 0.01 per norm the pair difference has sd 1.41 points, so a 2-point
# effect over 5 seeds has noncentrality 3.16, and Holm makes the first rejection need p < 0.05/3
# (|t| > 3.96 on 4 df): power 0.38 (analytic), 0.42 measured. 0.006 (pair sd 0.85 points,
# noncentrality 5.3) is the largest round value giving >= 0.8: 0.82 analytic at 0.05/3, ~0.89 measured.
# The seed sd (3 points) stays 5x the per-norm noise, so an unpaired test still drowns.
NOISE_SD = 0.006
# a 0.05 rate estimated from 2000 simulations has SE sqrt(0.05 * 0.95 / 2000) = 0.0049
N_NULL = 2000
NULL_BOUND = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / N_NULL)  # 0.0646


def simulate_seeds(rng, n_sims, effect):
    acc = 0.9 + rng.normal(0, SEED_SD, (n_sims, 1, SEEDS)) + rng.normal(0, NOISE_SD, (n_sims, 3, SEEDS))
    acc[:, 0] += effect
    return acc


def family_adjusted(acc, test):
    return holm([test(acc[i], acc[j]).p_value for i, j in PAIRS])


def test_null_family_wise_error_over_seeds():
    acc = simulate_seeds(np.random.default_rng(1), N_NULL, effect=0.0)
    any_flag = np.mean([min(family_adjusted(x, paired_over_seeds)) < ALPHA for x in acc])
    print(f"paired t + Holm, null family-wise false-positive rate: {any_flag:.4f}")
    assert any_flag <= NULL_BOUND


def test_null_family_wise_error_mcnemar_one_seed():
    # one seed, n_test = 200; example i has a difficulty shared by all norms: P(correct) = q_i ~ Beta(9, 1)
    # (mean 0.9), so the norms' correctness vectors are correlated; given q_i they are independent.
    rng = np.random.default_rng(2)
    q = rng.beta(9, 1, (N_NULL, 1, 200))
    correct = (rng.random((N_NULL, 3, 200)) < q).astype(np.int8)
    any_flag = np.mean([min(family_adjusted(x, mcnemar_exact)) < ALPHA for x in correct])
    print(f"McNemar + Holm, null family-wise false-positive rate: {any_flag:.4f}")
    assert any_flag <= NULL_BOUND


def test_power_paired_vs_welch():
    n_sims = 1000  # power ~0.9 has SE ~0.01 here
    acc = simulate_seeds(np.random.default_rng(3), n_sims, effect=0.02)
    power = np.mean([family_adjusted(x, paired_over_seeds)[0] < ALPHA for x in acc])
    # Welch on the very same numbers, same Holm family, vectorised over simulations
    welch_p = np.stack([ttest_ind(acc[:, i], acc[:, j], axis=1, equal_var=False).pvalue for i, j in PAIRS], 1)
    welch_power = np.mean([holm(p)[0] < ALPHA for p in welch_p])
    welch_raw = np.mean(welch_p[:, 0] < ALPHA)  # even unadjusted, one pair on its own
    print(f"power: paired+Holm {power:.3f}, Welch+Holm {welch_power:.3f}, Welch unadjusted {welch_raw:.3f}")
    assert power >= 0.80
    assert welch_power < 0.3 and welch_raw < 0.3  # the seed effect swamps the unpaired test


def test_resolution_floors_the_sd_so_identical_differences_are_not_p_zero_nor_unreachable():
    # 5 seeds, every accuracy difference exactly +1 point, n_test = 200 (resolution 0.005):
    # sd floor = 0.005 / sqrt(6) = 0.0020412; t = 0.01 / (0.0020412 / sqrt(5)) = 10.954, df 4
    from scipy.stats import t as student_t

    r = paired_over_seeds([0.91] * 5, [0.90] * 5, resolution=1 / 200)
    se = 0.005 / np.sqrt(6) / np.sqrt(5)
    assert r.p_value == pytest.approx(2 * student_t.sf(0.01 / se, 4), rel=1e-6) and 0 < r.p_value < 0.001
    assert r.ci95 == pytest.approx((0.01 - 2.776445 * se, 0.01 + 2.776445 * se), rel=1e-5)
    assert "floored" in r.test
    # continuous: one seed half a point off gives a similar, not a wildly different, answer
    near = paired_over_seeds([0.91] * 4 + [0.915], [0.90] * 5, resolution=1 / 200)
    assert near.p_value == pytest.approx(r.p_value, rel=2)
    # all differences zero: p = 1 and a non-degenerate interval around 0
    zero = paired_over_seeds([0.9] * 5, [0.9] * 5, resolution=1 / 200)
    assert zero.p_value == 1.0 and zero.ci95[0] < 0 < zero.ci95[1]
    with pytest.raises(ValueError, match="resolution"):
        paired_over_seeds([0.9, 0.8], [0.9, 0.7], resolution=0)


@pytest.mark.parametrize("acc, n, k", [(0.57, 100, 57), (0.29, 100, 29), (0.58, 200, 116)])
def test_accuracy_interval_recovers_the_count_by_rounding_not_truncation(acc, n, k):
    """0.57 x 100 is 56.999999999999993 in floating point: a count taken by truncation (int) is
    one short, and the interval would be another accuracy's: the interval is the Wilson interval of
    the rounded count k."""
    assert int(acc * n) == k - 1  # the float product is just below the count
    assert accuracy_interval(acc, n) == wilson_interval(k, n)
