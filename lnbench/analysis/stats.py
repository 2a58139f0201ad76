"""Significance tests for comparing normalization conditions. Pure statistics: numpy + scipy, no I/O.

Design: runs compared within one experiment share the test set, the seed, the data and the initial
weights, so their results are *paired*, and every test here is a paired test:

- one seed, per-example correctness (0/1) on the same test set -> exact McNemar test
  (:func:`mcnemar_exact`): only the examples on which the two runs disagree carry information;
- several seeds, one number per seed and condition -> paired t-test on the per-seed differences
  (:func:`paired_over_seeds`). The seed effect (a lucky initialisation helps every norm) cancels in
  the differences; an unpaired test would count it as noise and lose most of its power.

With several conditions, correct the p-values of all pairs in one family with :func:`holm`.
All p-values are two-sided but Fisher's exact test of two rates (:func:`fisher_exact_less`: how
many seeds of each condition diverged), which is one-sided, the direction of the claim it decides.
Accuracy differences are fractions (0.02 = 2 points).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np


def _scipy_stats():  # imported when first needed: the CLI checks a config without SciPy
    from scipy import stats

    return stats


ALPHA = 0.05
# Differences whose spread is at most this fraction of the data's magnitude count as all equal: round-off
# (0.91 - 0.90 != 0.87 - 0.86 in floats; float32 losses carry ~1e-7 relative error) would otherwise
# give scipy's t-test a near-zero sd, a huge t and p ~ 0. Erring this way only makes p larger.
_EQUAL_RTOL = 1e-6


@dataclass(frozen=True)
class PairedResult:
    """Result of a paired comparison of conditions a and b."""

    mean_diff: float  # mean of (a - b); for accuracies a fraction (0.02 = 2 points)
    ci95: tuple[float, float]  # 95% interval of mean_diff
    p_value: float  # two-sided, unadjusted
    test: str  # short human name of the test, e.g. "paired t-test over 5 seeds"
    n: int  # number of pairs (test examples for McNemar, seeds for the paired test)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion: k successes (int, 0 <= k <= n) out of n trials.

    Returns (low, high) as fractions in [0, 1]. Raises ValueError for n < 1 or k outside [0, n].
    Mirrors ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="wilson")`` (Wilson 1927).
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = _scipy_stats().binomtest(int(k), int(n)).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


def fisher_exact_less(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """One-sided Fisher's exact test that condition a's rate (k_a events of n_a runs) is below
    condition b's (k_b of n_b): the p-value of ``scipy.stats.fisher_exact([[k_a, n_a - k_a], [k_b,
    n_b - k_b]], alternative="less")``, i.e. P(X <= k_a) for X hypergeometric (n_a + n_b runs, k_a +
    k_b events, n_a drawn): the chance of a's events being this few when the labels a and b are
    exchangeable (Fisher 1935). Unpaired: it reads the counts, not which seed had which event.
    0 of 6 against 6 of 6: 1 / C(12, 6) = 1/924.

    Raises ValueError for n < 1 or k outside [0, n].
    """
    for k, n in ((k_a, n_a), (k_b, n_b)):
        if n < 1 or not 0 <= k <= n:
            raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    table = [[int(k_a), int(n_a - k_a)], [int(k_b), int(n_b - k_b)]]
    return float(_scipy_stats().fisher_exact(table, alternative="less").pvalue)


def rate_difference_interval(k_a: int, n_a: int, k_b: int, n_b: int, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's hybrid score interval of the difference of two rates, k_a / n_a - k_b / n_b
    (Newcombe 1998, method 10): from each rate's Wilson interval (l, u) at ``confidence``,
    ``d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2)`` to ``d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2)``;
    within [-1, 1], and not zero-width at 0 of n against 0 of n (Wald's would be).

    Raises ValueError for n < 1 or k outside [0, n] (:func:`wilson_interval`).
    """
    (lo_a, hi_a), (lo_b, hi_b) = wilson_interval(k_a, n_a, confidence), wilson_interval(k_b, n_b, confidence)
    p_a, p_b = k_a / n_a, k_b / n_b
    d = p_a - p_b
    low = d - float(np.sqrt((p_a - lo_a) ** 2 + (hi_b - p_b) ** 2))
    high = d + float(np.sqrt((hi_a - p_a) ** 2 + (p_b - lo_b) ** 2))
    return max(-1.0, low), min(1.0, high)


def accuracy_interval(acc: float, n: int) -> tuple[float, float]:
    """95% Wilson interval of an accuracy ``acc`` (fraction in [0, 1]) measured on n test examples.

    The count is recovered as round(acc * n). Raises ValueError for acc outside [0, 1] or n < 1.
    """
    if not 0.0 <= acc <= 1.0:
        raise ValueError(f"accuracy must be a fraction in [0, 1], got {acc}")
    return wilson_interval(round(acc * n), n)


@lru_cache(maxsize=4096)
def _mcnemar_counts(b: int, c: int, n: int) -> tuple[float, float, float]:
    """(p, lo, hi) for b, c discordant counts out of n; cached because few (b, c) pairs recur."""
    p = 1.0 if b + c == 0 else float(_scipy_stats().binomtest(b, b + c, 0.5).pvalue)
    # Agresti & Min (2005): a Wald interval of the paired difference with 1/2 added to each of the
    # four cells; unconditional (the number of discordant pairs is random too), so it is not
    # capped at the observed difference as an interval conditional on b + c would be
    m = n + 2
    pb, pc = (b + 0.5) / m, (c + 0.5) / m
    half = 1.959963984540054 * np.sqrt(max(pb + pc - (pb - pc) ** 2, 0.0) / m)
    return p, max(-1.0, pb - pc - half), min(1.0, pb - pc + half)


def mcnemar_exact(correct_a: Sequence[int], correct_b: Sequence[int]) -> PairedResult:
    """Exact (binomial) McNemar test of accuracy(a) - accuracy(b) on the SAME test set, one seed.

    correct_a, correct_b: equal-length 1-D sequences of 0/1 (or bool), one per test example.
    With b = #(a right, b wrong) and c = #(a wrong, b right): mean_diff = (b - c) / n_test (fraction);
    p = ``scipy.stats.binomtest(b, b + c, 0.5).pvalue`` (exact, two-sided; 1 when b + c == 0).
    ci95: the Agresti-Min (2005) interval of the paired difference (Wald with 1/2 added to each
    cell of the 2x2 table, n + 2 in all), clipped to [-1, 1]. Reference: McNemar (1947); Agresti &
    Min (2005); Fagerland, Lydersen & Laake (2013) recommend it over the conditional interval.
    Near p = 0.05 the approximate interval and the exact (conservative) test can disagree on
    whether 0 is excluded; the verdict follows the test.
    Raises ValueError for different lengths, empty input, or values other than 0/1.
    """
    a, b_ = np.asarray(correct_a), np.asarray(correct_b)
    if a.ndim != 1 or a.shape != b_.shape:
        raise ValueError(f"need two 1-D sequences of equal length, got shapes {a.shape} and {b_.shape}")
    if a.size == 0:
        raise ValueError("need at least one test example")
    if not (((a == 0) | (a == 1)).all() and ((b_ == 0) | (b_ == 1)).all()):
        raise ValueError("correctness values must be 0/1 (or bool)")
    a, b_ = a.astype(bool), b_.astype(bool)
    b, c, n = int((a & ~b_).sum()), int((~a & b_).sum()), a.size
    p, lo, hi = _mcnemar_counts(b, c, n)
    return PairedResult((b - c) / n, (lo, hi), p, f"exact McNemar (n_test={n})", n)


def paired_over_seeds(
    a: Sequence[float | None], b: Sequence[float | None], resolution: float | None = None
) -> PairedResult:
    """Paired comparison of one metric of conditions a and b over seeds: a paired t-test.

    a[i], b[i]: the metric (floats, any unit; accuracies as fractions) of the two conditions for seed i,
    same seeds in the same order. d = a - b; mean_diff = mean(d), in the metric's unit; p and ci95
    from the t distribution with n - 1 degrees of freedom, as ``scipy.stats.ttest_rel(a, b)`` and its
    ``confidence_interval(0.95)``.

    ``resolution``: the metric's smallest step, e.g. 1 / n_test for an accuracy. Each value is then
    known only to within a rounding error uniform on +-resolution / 2, so the sd of d is floored at
    ``resolution / sqrt(6)`` (the sd of the difference of two such errors). Without the floor, seeds
    that all land on the same difference (common when accuracies move in 0.5-point steps) give
    sd = 0: scipy returns t = inf, p = 0, and a zero-width interval; a sign test instead could
    never reach p < 0.0625 with 5 seeds, however consistent the effect. With the floor the test is
    continuous in the data. Without a resolution and zero spread (all d equal, up to round-off):
    d == 0 -> p = 1, ci95 (0, 0); otherwise the exact two-sided sign test, ci95 (d, d).
    Raises ValueError for fewer than 2 seeds, different lengths, non-1-D input, non-finite values
    (None, a run without a value such as a diverged one, counts as NaN) or a resolution <= 0.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.ndim != 1 or xa.shape != xb.shape:
        raise ValueError(f"need two 1-D sequences of equal length, got shapes {xa.shape} and {xb.shape}")
    n = xa.size
    if n < 2:
        raise ValueError(f"at least 2 seeds are needed for a paired test over seeds, got {n}")
    if not (np.isfinite(xa).all() and np.isfinite(xb).all()):
        raise ValueError("metrics must be finite (a diverged run has no comparable value)")
    if resolution is not None and not resolution > 0:
        raise ValueError(f"resolution must be > 0, got {resolution}")
    d = xa - xb
    tol = _EQUAL_RTOL * max(np.abs(xa).max(), np.abs(xb).max())
    mean = float(d.mean())
    spread = bool(np.ptp(d) > tol)
    if resolution is None and not spread:
        if abs(mean) <= tol:
            return PairedResult(0.0, (0.0, 0.0), 1.0, f"no test over {n} seeds (all differences zero)", n)
        p = float(_scipy_stats().binomtest(n, n, 0.5).pvalue)
        return PairedResult(mean, (mean, mean), p, f"sign test over {n} seeds (all differences equal)", n)
    # from here on sd > 0: there is a spread (above tol >= 0), or a resolution that floors it
    sd = paired_sd(xa, xb, resolution)
    test = f"paired t-test over {n} seeds"
    if float(d.std(ddof=1)) < sd:
        test += " (sd floored at the resolution)"
    se = sd / np.sqrt(n)
    t = mean / se
    p = float(2 * _scipy_stats().t.sf(abs(t), n - 1))
    half = float(_scipy_stats().t.ppf(0.975, n - 1) * se)
    return PairedResult(mean, (mean - half, mean + half), p, test, n)


def paired_sd(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, resolution: float | None = None
) -> float:
    """The sd of the paired differences ``a - b`` that :func:`paired_over_seeds` tests with.

    The sample sd (ddof 1) of d = a - b, floored at ``resolution / sqrt(6)`` when a resolution is
    given (see :func:`paired_over_seeds`); 0.0 when the differences are equal up to round-off (a
    spread of at most 1e-6 of the data's largest magnitude) and there is no resolution. Needs >= 2
    finite pairs (NaN otherwise). Every "how many seeds" estimate uses this sd, so it asks about
    the test that will be run, not a spread the test never sees.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size < 2:
        return float("nan")
    d = xa - xb
    spread = np.ptp(d) > _EQUAL_RTOL * max(np.abs(xa).max(), np.abs(xb).max())
    sd = float(d.std(ddof=1)) if spread else 0.0
    floor = resolution / np.sqrt(6) if resolution is not None else 0.0
    return max(sd, floor)


#: A decision counts as *borderline* when it would differ at either of these levels instead of
#: :data:`ALPHA` (for an interval: at 90% or 99% confidence instead of 95%): the p-value (or the
#: interval's edge) is within a factor of ~2-5 of its threshold, where another machine's rounding,
#: one more seed or a rerun can move it across.
BORDERLINE_ALPHAS = (0.01, 0.1)


def is_borderline(p_adjusted: float | None) -> bool:
    """Whether a test decided at :data:`ALPHA` would be decided otherwise at 0.01 or at 0.1:
    ``0.01 <= p_adjusted < 0.1`` (a Holm-adjusted p-value; None: not tested, not borderline)."""
    low, high = BORDERLINE_ALPHAS
    return p_adjusted is not None and low <= p_adjusted < high


def interval_at(
    mean: float, ci95: Sequence[float], n: int, confidence: float, from_confidence: float = 0.95
) -> tuple[float, float]:
    """The t interval of a paired mean at ``confidence``, from its ``from_confidence`` (95%)
    interval ``ci95`` over ``n`` pairs: the half-width scaled by
    t_{(1+confidence)/2, n-1} / t_{(1+from_confidence)/2, n-1} (same sd, same df)."""
    t = _scipy_stats().t
    scale = float(t.ppf(0.5 + confidence / 2, n - 1) / t.ppf(0.5 + from_confidence / 2, n - 1))
    return mean - (mean - ci95[0]) * scale, mean + (ci95[1] - mean) * scale


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (Holm 1979), in the order given.

    With p sorted ascending, p_(i) (i = 0..m-1) is adjusted to max_{j <= i} (m - j) p_(j), capped at 1;
    the result is monotone in p. Reject where adjusted p < ALPHA: controls the family-wise error rate.
    Equals ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]``. Empty -> [].
    Raises ValueError for NaN or values outside [0, 1].
    """
    p = np.asarray(p_values, dtype=float)
    if np.isnan(p).any() or ((p < 0) | (p > 1)).any():
        raise ValueError(f"p-values must be in [0, 1], got {list(p_values)}")
    m, order = p.size, np.argsort(p)  # tied p-values get one adjusted value whatever their order
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return adjusted.tolist()


def summarize_first_epochs(first_epochs: Sequence[int | None]) -> dict:
    """Summary of the first epoch (int, 1-based as recorded) at which each seed reached a target.

    None = that seed never reached it. Returns {"n_reached": k, "n": n, "median": float or None,
    "min": int or None, "max": int or None}; the statistics are over the seeds that reached it.
    """
    reached = [e for e in first_epochs if e is not None]
    if not reached:
        return {"n_reached": 0, "n": len(first_epochs), "median": None, "min": None, "max": None}
    return {
        "n_reached": len(reached),
        "n": len(first_epochs),
        "median": float(np.median(reached)),
        "min": min(reached),
        "max": max(reached),
    }


def describe_first_epochs(summary: dict) -> str:
    """One line for a :func:`summarize_first_epochs` result, e.g.
    "3/5 seeds reached it, median epoch 4 (range 3-7)", "1/1 seed reached it at epoch 4",
    "0/5 seeds reached it".
    """
    k, n = summary["n_reached"], summary["n"]
    head = f"{k}/{n} seed{'' if n == 1 else 's'} reached it"
    if k == 0:
        return head
    if summary["min"] == summary["max"]:
        return f"{head} at epoch {summary['min']}"
    return f"{head}, median epoch {summary['median']:g} (range {summary['min']}-{summary['max']})"


def t_half_width(values: Sequence[float], confidence: float = 0.95, resolution: float | None = None) -> float:
    """Half the width of the t interval of the mean of ``values`` (>= 2 of them).

    ``resolution``: the metric's smallest step (1 / n_test for an accuracy). Each value is then
    known only to within a rounding error uniform on +-resolution / 2, so the sd is floored at
    ``resolution / sqrt(12)``, that error's sd (the floor :func:`paired_sd` puts on a difference of
    two such values is ``resolution / sqrt(6)``): seeds that tie give an interval of the width the
    rounding leaves, not zero width."""
    n = len(values)
    sd = float(np.std(values, ddof=1))
    if resolution is not None:
        sd = max(sd, resolution / np.sqrt(12))
    return float(_scipy_stats().t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n))


def accuracy_mean_interval(accs: Sequence[float], n_test: int | None) -> tuple[float, float]:
    """The 95% t interval of the mean of the accuracies ``accs`` (fractions, >= 2 seeds), the sd
    floored at the resolution 1 / ``n_test`` (:func:`t_half_width`; no floor for ``n_test`` 0 or
    None), clipped to [0, 1]."""
    m = float(np.mean(accs))
    half = t_half_width(accs, resolution=1 / n_test if n_test else None)
    return max(0.0, m - half), min(1.0, m + half)


def seeds_for_power(
    effect: float, sd: float, power: float = 0.8, alpha: float = ALPHA, max_n: int = 1000
) -> int | None:
    """The fewest seeds at which a paired t-test (two-sided, level ``alpha``) of a true mean
    difference ``effect`` with seed-to-seed sd ``sd`` of the differences has ``power``.

    Power at n pairs: P(|T| > t_{1-alpha/2, n-1}) with T noncentral t (df n - 1, noncentrality
    effect / sd * sqrt(n)) -- the textbook formula (Cohen 1988; G*Power's "matched pairs" test:
    d = 0.5 needs 34 pairs, d = 0.8 needs 15). None: no effect, no spread, or more than ``max_n``.
    """
    if sd <= 0 or effect == 0 or not (np.isfinite(effect) and np.isfinite(sd)):
        return None
    nct, t = _scipy_stats().nct, _scipy_stats().t
    d = abs(effect) / sd

    def enough(n: int) -> bool:
        crit = t.ppf(1 - alpha / 2, n - 1)
        nc = d * np.sqrt(n)
        # P(T < -crit) as P(-T > crit), -T noncentral with -nc: scipy's nct.cdf(-crit, ...) is NaN
        # for a large noncentrality (d = 4.75 skipped n = 3 and 4 and asked for 6 seeds)
        return bool(nct.sf(crit, n - 1, nc) + nct.sf(crit, n - 1, -nc) >= power)

    return fewest(enough, max_n)


def fewest(enough, max_n: int, low: int = 2) -> int | None:
    """The smallest n in ``low .. max_n`` with ``enough(n)`` true, for a predicate that stays true
    once it is (power grows with n): a bisection, ~log2(max_n) calls. None if ``enough(max_n)`` is false."""
    if max_n < low or not enough(max_n):
        return None
    while low < max_n:
        mid = (low + max_n) // 2
        if enough(mid):
            max_n = mid
        else:
            low = mid + 1
    return low


def seeds_for_interval(
    effect: float, sd: float, margin: float, max_n: int = 1000, confidence: float = 0.95
) -> int | None:
    """The fewest seeds at which the t interval (``confidence``, default 95%) of a mean difference
    ``effect`` (sd ``sd`` of the differences) fits inside +-``margin``:
    t_{(1+confidence)/2, n-1} sd / sqrt(n) < margin - |effect|.
    None when ``|effect| >= margin`` (no number of seeds can) or more than ``max_n`` are needed."""
    room = margin - abs(effect)
    if room <= 0 or not np.isfinite(sd):
        return None
    t = _scipy_stats().t
    for n in range(2, max_n + 1):
        if t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n) < room:
            return n
    return None
