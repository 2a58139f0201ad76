"""lnbench.analysis.stats at its edges: one test example, an accuracy of exactly
0 or 1, a p-value of exactly 0, a difference exactly at the round-off tolerance, inputs that are
None, and the exact message of every error, each against a hand computation."""

import math

import pytest
from scipy.stats import norm

from lnbench.analysis.stats import (
    accuracy_interval,
    holm,
    mcnemar_exact,
    paired_over_seeds,
    seeds_for_interval,
    seeds_for_power,
    t_half_width,
    wilson_interval,
)


def wilson(k, n, z=norm.ppf(0.975)):
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n))


def test_wilson_with_one_trial():
    # k = 0, n = 1, z^2 = 3.8415: centre 1.9207 / 4.8415 = 0.39672, half 1.9600 * sqrt(0.9604) / 4.8415 = 0.39672
    assert wilson_interval(0, 1) == pytest.approx((0.0, 0.79345), abs=1e-5)
    assert wilson_interval(1, 1) == pytest.approx(wilson(1, 1), abs=1e-12)
    assert wilson_interval(1, 1) == pytest.approx((0.20655, 1.0), abs=1e-5)


@pytest.mark.parametrize("acc,k", [(0.0, 0), (1.0, 10), (0.3, 3)])
def test_accuracy_interval_at_0_and_1(acc, k):
    assert accuracy_interval(acc, 10) == pytest.approx(wilson(k, 10), abs=1e-12)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: wilson_interval(0, 0), "need 0 <= k <= n and n >= 1, got k=0, n=0"),
        (lambda: wilson_interval(4, 3), "need 0 <= k <= n and n >= 1, got k=4, n=3"),
        (lambda: accuracy_interval(1.01, 10), "accuracy must be a fraction in [0, 1], got 1.01"),
        (lambda: accuracy_interval(-0.01, 10), "accuracy must be a fraction in [0, 1], got -0.01"),
        (lambda: mcnemar_exact([1, 0], [1]), "need two 1-D sequences of equal length, got shapes (2,) and (1,)"),
        (lambda: mcnemar_exact([], []), "need at least one test example"),
        (lambda: mcnemar_exact([1, 2], [1, 0]), "correctness values must be 0/1 (or bool)"),
        (lambda: mcnemar_exact([1, 0], [1, 0.5]), "correctness values must be 0/1 (or bool)"),
        (
            lambda: paired_over_seeds([0.9, 0.8], [0.8]),
            "need two 1-D sequences of equal length, got shapes (2,) and (1,)",
        ),
        (lambda: paired_over_seeds([0.9], [0.8]), "at least 2 seeds are needed for a paired test over seeds, got 1"),
        (
            lambda: paired_over_seeds([0.9, 0.8], [0.8, None]),
            "metrics must be finite (a diverged run has no comparable value)",
        ),
        (lambda: paired_over_seeds([0.9, 0.8], [0.8, 0.7], -0.1), "resolution must be > 0, got -0.1"),
        (lambda: holm([0.01, -0.5]), "p-values must be in [0, 1], got [0.01, -0.5]"),
        (lambda: holm([0.01, None]), "p-values must be in [0, 1], got [0.01, None]"),
    ],
)
def test_every_error_says_what_it_needs(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message


def test_mcnemar_on_one_test_example_clips_its_interval_at_1():
    r = mcnemar_exact([1], [0])
    # b = 1, c = 0, n = 1: p = 1 (one discordant pair); Agresti-Min: pb = 1.5 / 3, pc = 0.5 / 3,
    # half = 1.959964 * sqrt((2/3 - 1/9) / 3) = 0.843434; (1/3 - 0.843434, 1/3 + 0.843434 -> 1)
    half = 1.959963984540054 * math.sqrt((2 / 3 - 1 / 9) / 3)
    assert (r.mean_diff, r.p_value, r.n) == (1.0, 1.0, 1)
    assert r.ci95 == pytest.approx((1 / 3 - half, 1.0)) and half == pytest.approx(0.843434, abs=1e-6)
    r = mcnemar_exact([0], [1])
    assert r.mean_diff == -1.0 and r.ci95 == pytest.approx((-1.0, -1 / 3 + half))


def test_holm_of_a_p_value_of_exactly_0():
    assert holm([0.0, 0.5]) == [0.0, 0.5] and holm([0.0]) == [0.0] and holm([1.0, 1.0]) == [1.0, 1.0]
    assert holm([0, 1]) == [0.0, 1.0]  # ints are p-values too


def test_the_sign_test_and_no_test_results_in_full():
    r = paired_over_seeds([0.9, 0.8, 0.7, 0.6, 0.5], [0.88, 0.78, 0.68, 0.58, 0.48])
    assert (r.p_value, r.n, r.test) == (pytest.approx(0.0625), 5, "sign test over 5 seeds (all differences equal)")
    assert r.mean_diff == pytest.approx(0.02) and r.ci95 == pytest.approx((0.02, 0.02))
    assert paired_over_seeds([0.9, 0.8, 0.7], [0.9, 0.8, 0.7]) == type(r)(
        0.0, (0.0, 0.0), 1.0, "no test over 3 seeds (all differences zero)", 3
    )


def test_the_floored_test_says_so_in_full():
    r = paired_over_seeds([0.91, 0.92, 0.93], [0.90, 0.91, 0.92], resolution=1 / 100)
    assert r.test == "paired t-test over 3 seeds (sd floored at the resolution)" and r.n == 3
    zero = paired_over_seeds([0.9, 0.8, 0.7], [0.9, 0.8, 0.7], resolution=1 / 100)
    half = 4.302653 * (0.01 / math.sqrt(6)) / math.sqrt(3)  # t_{0.975, 2} x floor / sqrt(3)
    assert zero.p_value == 1.0 and zero.mean_diff == 0.0 and zero.ci95 == pytest.approx((-half, half), rel=1e-6)


# The round-off tolerance is 1e-6 of the data's largest magnitude: 1.0 exactly for data of 1e6.


def test_a_spread_at_most_the_tolerance_counts_as_none():
    big = 1e6
    assert 1e-6 * big == 1.0  # the tolerance of these numbers, exactly
    at = paired_over_seeds([big, big], [big - 3, big - 4])  # d = 3, 4: a spread of exactly the tolerance
    assert at.test == "sign test over 2 seeds (all differences equal)" and at.mean_diff == 3.5
    above = paired_over_seeds([big, big], [big - 3, big - 4.5])  # a spread of 1.5 tolerances: a t-test
    assert above.test == "paired t-test over 2 seeds"
    # relative, not absolute: the same differences divided by 1e6 are far above 1e-6 of their magnitude
    assert paired_over_seeds([1.0, 1.0], [1 - 3e-6, 1 - 4e-6]).test == "paired t-test over 2 seeds"


def test_a_mean_difference_at_most_the_tolerance_counts_as_zero():
    big = 1e6
    at = paired_over_seeds([big, big], [big - 1, big - 1])  # every d = 1.0 = the tolerance
    assert (at.mean_diff, at.p_value, at.test) == (0.0, 1.0, "no test over 2 seeds (all differences zero)")
    above = paired_over_seeds([big, big], [big - 2, big - 2])
    assert above.test == "sign test over 2 seeds (all differences equal)" and above.mean_diff == 2.0


def test_t_half_width_by_hand():
    # 0.80, 0.82, 0.87: sd 0.036056, t_{0.975, 2} = 4.302653: 4.302653 * 0.036056 / sqrt(3) = 0.089567
    assert t_half_width([0.80, 0.82, 0.87]) == pytest.approx(0.089567, abs=1e-6)
    assert t_half_width([0.80, 0.82, 0.87], confidence=0.9) == pytest.approx(
        2.919986 * 0.0360555 / math.sqrt(3), rel=1e-5
    )


# ---------------------------------------------------------------- seeds that would decide a claim


def quadrature_power(d, n, alpha=0.05):
    """Power of the two-sided paired t-test at n pairs, effect size d, by quadrature over the chi-square
    of the sd (independent of scipy's noncentral t): E_V[Phi(nc - c sqrt(V/df)) + Phi(-nc - c sqrt(V/df))]."""
    from scipy import integrate, stats

    df, nc = n - 1, d * math.sqrt(n)
    c = stats.t.ppf(1 - alpha / 2, df)

    def f(v):
        s = c * math.sqrt(v / df)
        return (stats.norm.sf(s - nc) + stats.norm.cdf(-s - nc)) * stats.chi2.pdf(v, df)

    return integrate.quad(f, 0, math.inf, limit=200)[0]


@pytest.mark.parametrize("d,n", [(0.33, 75), (0.52, 32), (0.81, 15), (1.44, 6), (2.13, 4), (4.75, 3), (12.0, 2)])
def test_seeds_for_power_is_the_first_n_with_80_percent_power(d, n):
    """Against quadrature: n pairs reach 80 % power, n - 1 do not. d = 4.75 needs 3, where scipy's
    nct.cdf gives NaN for the lower tail (a Monte Carlo of 200,000 runs: power 0.40 at 2, 0.96 at 3)."""
    assert seeds_for_power(d, 1.0) == n
    assert quadrature_power(d, n) >= 0.8 > (quadrature_power(d, n - 1) if n > 2 else 0.0)


@pytest.mark.parametrize("d,n", [(0.2, 199), (0.3, 90), (0.4, 52), (0.6, 24), (0.7, 19), (0.9, 12)])
def test_seeds_for_power_matches_the_g_power_table(d, n):
    assert seeds_for_power(d, 1.0) == n and seeds_for_power(-2 * d, 2.0) == n


def test_seeds_for_power_with_its_other_arguments():
    assert seeds_for_power(0.5, 1.0, power=0.9, alpha=0.01) == 63
    assert quadrature_power(0.5, 63, alpha=0.01) >= 0.9 > quadrature_power(0.5, 62, alpha=0.01)
    assert seeds_for_power(0.5, 1.0, max_n=34) == 34 and seeds_for_power(0.5, 1.0, max_n=33) is None
    assert seeds_for_power(0.08865, 1.0, max_n=1001) == 1001 and seeds_for_power(0.08865, 1.0) is None  # at most 1000
    for effect in (math.inf, math.nan):
        assert seeds_for_power(effect, 1.0) is None and seeds_for_power(0.5, effect) is None


def test_seeds_for_interval_by_its_formula():
    from scipy import stats

    def first(effect, sd, margin):  # the docstring: t_{0.975, n-1} sd / sqrt(n) < margin - |effect|
        return next(n for n in range(2, 1001) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < margin - abs(effect))

    for effect, sd, margin in [
        (0.0, 0.5, 1.0),
        (0.01, 0.02, 0.02),
        (-0.3, 1.0, 1.0),
        (0.0, 3.0, 1.0),
        (0.015, 0.004, 0.02),
    ]:
        assert seeds_for_interval(effect, sd, margin) == first(effect, sd, margin), (effect, sd, margin)
    assert seeds_for_interval(0.0, 0.01, 1.0) == 2 and seeds_for_interval(0.5, 0.0, 1.0) == 2  # no spread: 2
    assert seeds_for_interval(0.0, 1.0, 1.0, max_n=7) == 7 and seeds_for_interval(0.0, 1.0, 1.0, max_n=6) is None
    # t_{0.975, 999} / sqrt(1000) = 0.062055 > 0.062039 > t_{0.975, 1000} / sqrt(1001) = 0.062024: 1001 seeds
    assert seeds_for_interval(0.0, 1.0, 0.062039) is None and seeds_for_interval(0.0, 1.0, 0.062039, max_n=1001) == 1001
    assert seeds_for_interval(0.02, 0.0, 0.02) is None and seeds_for_interval(0.0, math.inf, 1.0) is None


def test_an_sd_exactly_at_the_floor_is_not_floored():
    """d = 0, 1: sd = 1/sqrt(2); the resolution sqrt(3) floors the sd at sqrt(3)/sqrt(6) = 1/sqrt(2), the
    same float, and only an sd below the floor is raised. t = 0.5 / (0.7071 / sqrt(2)) = 1 with 1 df
    (a Cauchy variable): p = P(|T| > 1) = 1/2; half-width t_{0.975, 1} x 0.5 = 6.3531."""
    assert math.sqrt(3) / math.sqrt(6) == math.sqrt(0.5)
    r = paired_over_seeds([1.0, 2.0], [1.0, 1.0], resolution=math.sqrt(3))
    assert r.test == "paired t-test over 2 seeds" and r.p_value == pytest.approx(0.5)
    assert r.ci95 == pytest.approx((0.5 - 6.353102, 0.5 + 6.353102))


def test_an_interval_exactly_as_wide_as_the_room_does_not_fit():
    from scipy import stats

    margin = stats.t.ppf(0.975, 1) * 1.0 / math.sqrt(2)  # the half-width at 2 seeds with sd 1: 8.9846
    assert margin == pytest.approx(8.984644)
    assert seeds_for_interval(0.0, 1.0, margin) == 3  # "fits inside": strictly narrower than the room
    assert seeds_for_interval(0.0, 1.0, math.nextafter(margin, 10.0)) == 2


def test_seeds_for_power_at_the_ends_of_its_target():
    # the two-sided t-test is unbiased: a nonzero effect is rejected more often than alpha, so a target of
    # alpha is reached at 2 seeds (with both tails: the upper alone is 0.0297 at d = 0.1, 2 seeds)
    assert quadrature_power(0.1, 2) >= 0.05 and seeds_for_power(0.1, 1.0, power=0.05) == 2
    assert seeds_for_power(1000.0, 1.0, power=1.0) == 2  # rejected with probability 1.0 (in floats) at 2 seeds
    # no effect, or an infinite spread: None whatever the target, even one below alpha that the null reaches
    assert seeds_for_power(0.0, 1.0, power=0.01) is None and seeds_for_power(0.5, math.inf, power=0.01) is None
