"""``lnbench claims``' verdict rules: each claim about LayerNorm tested in a regime where it can show.

A claim compares two conditions (a norm, and optionally a batch size) of one model family in one
*regime*: a preset config in ``configs/claims/<regime>.yaml`` (an ordinary lnbench config: data,
model, train, seeds). The runs are paired by seed (same data, initial weights and batch order),
and the verdict is computed from the paired differences a - b over the seeds
(:func:`lnbench.analysis.stats.paired_over_seeds`), never written in:

- a *directional* claim (``direction="less"``: a below b, e.g. LayerNorm's area under the
  train-loss curve below NoNorm's) is ``held`` when the Holm-adjusted p < 0.05 (Holm over all
  directional claims of the run), the effect has the claimed sign and is at least the claim's
  ``margin``; ``not held`` when it is significant with the other sign, when it is significant
  but smaller than the margin, or when the whole 95% interval lies within the margin (the
  effect is shown to be negligible); otherwise ``inconclusive``.
- an *equivalence* claim (``direction="equal"``: a and b within ``margin``, e.g. LayerNorm's
  accuracy at batch size 1 and 64) is ``held`` when the whole 95% interval lies inside
  (-margin, +margin); ``not held`` when it lies wholly outside; otherwise ``inconclusive``.

- a *divergence* claim (metric ``diverged``: a diverges in fewer seeds than b) reads k_a of n
  seeds against k_b of n and is decided by Fisher's exact test, one-sided (:func:`divergence_test`),
  with the rules of a directional claim: its p-value in the same Holm family, Newcombe's interval
  of the difference of the rates in place of the t interval, a margin of half the seeds.
- an accuracy claim with ``diverged_at_chance`` keeps a diverged seed in its pairs at chance
  accuracy, 1 / the number of classes (:func:`claim_value`), and says how many it so counted.

The margins are the smallest effects the claims care about (2 accuracy points, 0.02 nats of
mean train loss, 0.1 of an absolute rank correlation, half the seeds of a divergence count); they
are printed with every verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from lnbench.analysis import stats
from lnbench.analysis.claim_catalogue import DIVERGED, Claim, Condition
from lnbench.analysis.metrics import METRICS, format_amount, format_interval, format_level
from lnbench.names import family_label
from lnbench.records.schema import SummaryRow

if TYPE_CHECKING:
    from lnbench.config import RunConfig


def metric_value(row: SummaryRow, metric: str) -> float | None:
    """A claim's metric of one run: a :class:`SummaryRow` field, or ``abs_scale_spearman``, the
    absolute Spearman correlation of ||h_T|| with the input scale (a state whose size falls as
    the scale grows depends on it as much as one whose size grows)."""
    if metric == "abs_scale_spearman":
        rho = row.final_scale_spearman
        return None if rho is None else abs(rho)
    return getattr(row, metric)


def claim_value(claim: Claim, row: SummaryRow) -> float | None:
    """What ``claim`` reads of one run: its metric of a finished run (:func:`metric_value`; None
    for a diverged or failed one), except that a divergence claim reads whether the run diverged
    (1.0) or finished (0.0), and an accuracy claim with ``diverged_at_chance`` reads a diverged
    run's accuracy as chance, 1 / its number of classes. None: the run does not count."""
    if claim.metric == DIVERGED:
        return 1.0 if row.status == "diverged" else 0.0 if row.ok else None
    if claim.diverged_at_chance and row.status == "diverged":
        return 1 / row.num_classes
    return metric_value(row, claim.metric) if row.ok else None


@dataclass
class ClaimResult:
    """One evaluated claim, as written to ``summary.json`` ``claims``."""

    id: str
    claim: str
    regime: str
    family: str
    metric: str
    a: str
    b: str
    direction: str
    margin: float
    effect: float | None  # mean over seeds of a - b (accuracy: a fraction); of (a - b) - (c - d) for net
    ci95: list[float] | None
    p_value: float | None
    p_adjusted: float | None
    test: str
    n_seeds: int
    mean_a: float | None
    mean_b: float | None
    verdict: str
    reason: str
    runs: list[str] = field(default_factory=list)
    why: str = ""  # why the claim is tested in this regime
    seeds_needed: int | None = None  # inconclusive: seeds that would decide it (:func:`seeds_needed`)
    #: the verdict would differ at level 0.01 or 0.1 (99% or 90% intervals): another machine's rounding can flip it
    borderline: bool = False
    seeds_to_settle: int | None = None  # borderline: seeds that would decide it at level 0.01 (99% intervals)
    #: each condition's mean over the paired seeds, by its label (a difference in differences shows its four)
    means: dict[str, float] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)  # the paired seeds the test read
    alpha: float = stats.ALPHA  # the level it was decided at; ci95 is its 1 - alpha interval
    #: which stage gave the verdict: "" (a run without --confirm), "pilot" (decided in the pilot),
    #: "confirm" (on fresh seeds), "not decidable" (the seeds it needs exceed --max-seeds)
    stage: str = ""
    pilot: dict | None = None  # a confirmed run: the pilot's seeds, effect, ci95, p, Holm p, verdict, borderline
    plan: dict | None = None  # a confirmed run: the seeds planned, why, and the fresh seeds
    #: a claim with ``diverged_at_chance``: each condition's diverged seeds counted at chance, by its
    #: label (None: not such a claim; then summary.json leaves the key out)
    counted_at_chance: dict[str, int] | None = None

    def to_dict(self) -> dict:
        from dataclasses import asdict

        out = asdict(self)
        if out["counted_at_chance"] is None:  # the claims without it keep summary.json's keys as they were
            del out["counted_at_chance"]
        return out


def _alpha_for(p_value: float | None, p_adjusted: float | None, level: float) -> float:
    """The raw level a p-value must pass for its Holm-adjusted value to pass ``level``: ``level``
    times this test's Holm multiplier as it stands (p / p_adjusted; 1 without an adjustment)."""
    if p_value is None or p_adjusted is None or p_adjusted <= 0 or p_value <= 0:
        return level
    return level * min(1.0, p_value / p_adjusted)


def seeds_needed(
    claim: Claim,
    effect: float,
    a: Sequence[float | None],
    b: Sequence[float | None],
    resolution: float | None = None,
    alpha: float = stats.ALPHA,
    confidence: float = 0.95,
) -> int | None:
    """How many seeds would decide a claim, if the paired differences a - b (the claim's metric
    of a and of b, seed by seed) keep the mean ``effect`` and the spread the test uses now
    (:func:`lnbench.analysis.stats.paired_sd`: the sample sd floored at ``resolution / sqrt(6)``,
    as :func:`lnbench.analysis.stats.paired_over_seeds` floors it):

    - a directional claim: the seeds at which a paired t-test (two-sided, level ``alpha``: pass
      the raw level that Holm needs, :func:`_alpha_for`) of that effect has 80 % power
      (:func:`lnbench.analysis.stats.seeds_for_power`);
    - an equivalence claim: the seeds at which the ``confidence`` interval fits inside the margin
      (:func:`lnbench.analysis.stats.seeds_for_interval`).

    None when no number of seeds would (no spread, no effect, an effect past the margin of an
    equivalence claim), more than 1000 are needed, a value is None (NaN, as in paired_over_seeds),
    or the answer is no more seeds than were run (a run of that many did not decide it: no hint).
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size < 2:
        return None
    sd = stats.paired_sd(xa, xb, resolution)
    if not np.isfinite(sd):
        return None
    if claim.direction == "equal":
        n = stats.seeds_for_interval(effect, sd, claim.margin, confidence=confidence)
    else:
        n = stats.seeds_for_power(effect, sd, alpha=alpha)
    return n if n is not None and n > xa.size else None


def _verdict(
    claim: Claim, effect: float, ci: Sequence[float], p_adj: float | None, alpha: float = stats.ALPHA
) -> tuple[str, str]:
    """The verdict and its reason from the effect, its interval and Holm p, decided at ``alpha``
    (the interval is the matching 1 - alpha interval)."""
    lo, hi, m = ci[0], ci[1], claim.margin
    band = "+-" + format_amount(claim.metric, m, signed=False)
    level = f"{1 - alpha:.0%}"
    if claim.direction == "equal":
        if -m < lo and hi < m:
            return "held", f"the {level} interval lies within {band}"
        if lo >= m or hi <= -m:
            return "not held", f"the {level} interval lies outside {band}"
        return "inconclusive", f"the {level} interval reaches past {band}"
    significant = p_adj is not None and p_adj < alpha
    if significant and effect <= -m:
        return "held", f"Holm p < {alpha:g}, a below b by at least {band[2:]}"
    if significant and effect < 0:
        return "not held", f"Holm p < {alpha:g} but the effect is smaller than {band[2:]}: negligible"
    if significant and effect > 0:
        return "not held", f"Holm p < {alpha:g}, a above b: the opposite"
    if -m < lo and hi < m:
        return "not held", f"no effect: the {level} interval lies within {band}"
    return "inconclusive", "not significant, and the interval does not rule out an effect"


def _borderline(
    claim: Claim,
    r: stats.PairedResult,
    p_adj: float | None,
    verdict: str,
    at: float = stats.ALPHA,
    counts: tuple[int, int, int] | None = None,
) -> bool:
    """Whether the verdict at level ``at`` (``r.ci95`` its ``1 - at`` interval) would differ at
    0.01 (99%) or 0.1 (90%): the data sit near the claim's threshold, where another machine's
    rounding or a rerun can flip it. ``counts``: a divergence claim's (k_a, k_b, n), whose
    interval at each level is Newcombe's again (not a t interval rescaled)."""
    bound = METRICS[claim.metric].bound
    for alpha in stats.BORDERLINE_ALPHAS:
        if counts is not None:
            k_a, k_b, n = counts
            lo, hi = stats.rate_difference_interval(k_a, n, k_b, n, 1 - alpha)
        else:
            lo, hi = stats.interval_at(r.mean_diff, r.ci95, r.n, 1 - alpha, from_confidence=1 - at)
        if bound is not None:
            lo, hi = max(-bound, lo), min(bound, hi)
        if _verdict(claim, r.mean_diff, (lo, hi), p_adj, alpha)[0] != verdict:
            return True
    return False


def _paired_values(
    claim: Claim, regime: RunConfig, rows_by_setting: dict[tuple, list[SummaryRow]]
) -> tuple[list[dict[Condition, SummaryRow]], list[SummaryRow]]:
    """Per seed with a finished run and a value in every condition: the rows by condition; and
    every row of the claim's conditions (its runs)."""
    rows = {
        cond: rows_by_setting.get(cond.setting(claim.family, claim.regime, regime), []) for cond in claim.conditions
    }
    by_seed = {cond: {r.seed: r for r in rs} for cond, rs in rows.items()}
    seeds = [r.seed for r in rows[claim.a]]
    matched = []
    for seed in seeds:
        here = {cond: by_seed[cond].get(seed) for cond in claim.conditions}
        if all(r is not None and claim_value(claim, r) is not None for r in here.values()):
            matched.append({cond: r for cond, r in here.items() if r is not None})
    return matched, [r for rs in rows.values() for r in rs]


def _sides(claim: Claim, matched: Sequence[dict[Condition, SummaryRow]]) -> tuple[list[float], list[float]]:
    """The per-seed values the paired test compares: a and b, or (a - b) and net's difference."""

    def value(seed_rows: dict[Condition, SummaryRow], cond: Condition) -> float:
        v = claim_value(claim, seed_rows[cond])
        assert v is not None  # matched rows have a value
        return v

    if claim.net is None:
        return [value(m, claim.a) for m in matched], [value(m, claim.b) for m in matched]
    c, d = claim.net
    return (
        [value(m, claim.a) - value(m, claim.b) for m in matched],
        [value(m, c) - value(m, d) for m in matched],
    )


@dataclass
class ClaimSamples:
    """One claim's paired per-seed values, what its test reads: ``a`` and ``b`` (the metric of
    each side, or of each side's difference for a difference in differences), the ``seeds`` they
    come from, the metric's ``resolution`` (an accuracy's 1 / n_test; None: none), each
    condition's mean by its label, the claim's ``runs``, and ``why`` it has no test (fewer than 2
    seeds with values; then ``a`` and ``b`` have fewer than 2 values)."""

    a: list[float]
    b: list[float]
    seeds: list[int] = field(default_factory=list)
    resolution: float | None = None
    means: dict[str, float] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    why: str = ""
    at_chance: str = ""  # a reference condition at chance: the reason the claim cannot show (empty: none)
    #: a claim with ``diverged_at_chance``: each condition's diverged seeds among the pairs, by its label
    counted_at_chance: dict[str, int] | None = None

    def divergence_counts(self) -> tuple[int, int, int]:
        """A divergence claim's (k_a, k_b, n): the seeds of a and of b that diverged, of n each."""
        return round(sum(self.a)), round(sum(self.b)), len(self.a)


def divergence_test(sample: ClaimSamples, confidence: float = 0.95) -> stats.PairedResult:
    """A divergence claim's test (:data:`lnbench.analysis.claim_catalogue.DIVERGED`): k_a of n seeds
    of a diverged against k_b of n of b (``sample.a``, ``sample.b``: 1.0 per diverged seed, 0.0
    per finished one). ``mean_diff`` is k_a / n - k_b / n, ``ci95`` Newcombe's interval of that
    difference at ``confidence`` (:func:`lnbench.analysis.stats.rate_difference_interval`), and
    ``p_value`` the one-sided Fisher's exact test that a's rate is below b's
    (:func:`lnbench.analysis.stats.fisher_exact_less`)."""
    k_a, k_b, n = sample.divergence_counts()
    return stats.PairedResult(
        k_a / n - k_b / n,
        stats.rate_difference_interval(k_a, n, k_b, n, confidence),
        stats.fisher_exact_less(k_a, n, k_b, n),
        f"Fisher's exact test, one-sided, {n} seeds each",
        n,
    )


def claim_samples(
    claims: Sequence[Claim],
    rows_by_setting: dict[tuple, list[SummaryRow]],
    regimes: dict[str, RunConfig],
    chance: dict[str, float] | None = None,
    seeds: Mapping[str, Sequence[int]] | None = None,
) -> list[ClaimSamples]:
    """Each claim's paired values from its rows (paired by seed, diverged seeds dropped).

    ``seeds``: regime -> the seeds to read (a stage of a confirmed run); None: every seed. An
    accuracy claim whose reference condition is within its margin of ``chance`` (regime -> chance
    accuracy; None: not checked) gets ``at_chance`` (see :func:`evaluate_claims`)."""
    out = []
    for c in claims:
        keep = None if seeds is None else set(seeds.get(c.regime, ()))
        rows = {setting: [r for r in rs if keep is None or r.seed in keep] for setting, rs in rows_by_setting.items()}
        matched, all_rows = _paired_values(c, regimes[c.regime], rows)
        runs = [r.run_dir for r in all_rows]
        means = {
            cond.label(): float(np.mean([claim_value(c, m[cond]) for m in matched])) for cond in c.conditions if matched
        }
        xa, xb = _sides(c, matched) if matched else ([], [])
        sample = ClaimSamples(xa, xb, [next(iter(m.values())).seed for m in matched], None, means, runs)
        if c.diverged_at_chance:
            sample.counted_at_chance = {
                cond.label(): sum(m[cond].status == "diverged" for m in matched) for cond in c.conditions
            }
        if len(matched) < 2:
            n_a = len(rows.get(c.a.setting(c.family, c.regime, regimes[c.regime]), []))
            diverged = sum(r.status == "diverged" for r in all_rows)
            undefined = sum(r.ok and claim_value(c, r) is None for r in all_rows)
            what = "for both runs" if c.net is None else f"for all {len(c.conditions)} runs"
            why = f"{len(matched)} of {n_a} seeds have a value {what}" + (
                f" ({diverged} runs diverged)" if diverged else ""
            )
            if undefined:
                why += f" ({undefined} finished runs have no {c.metric}" + (
                    ": the correlation is undefined when ||h_T|| or the scales are all equal, or n_test < 3)"
                    if c.metric == "abs_scale_spearman"
                    else ")"
                )
            sample.why = why + ("; the test needs 2" if c.metric == DIVERGED else "; a paired test needs 2")
        elif c.metric == "final_test_acc":
            sample.resolution = 1 / matched[0][c.a].n_test * (np.sqrt(2) if c.net is not None else 1.0)
        level = None if chance is None or c.metric != "final_test_acc" else chance.get(c.regime)
        for cond in c.references:
            if (
                level is not None
                and cond.label() in means
                and means[cond.label()] < level + c.margin
                and not sample.at_chance
            ):
                sample.at_chance = (
                    f"{cond.label()} is at chance ({means[cond.label()]:.1%}) in this regime: the claim cannot show"
                )
        out.append(sample)
    return out


def evaluate_claims(
    claims: Sequence[Claim],
    rows_by_setting: dict[tuple, list[SummaryRow]],
    regimes: dict[str, RunConfig],
    chance: dict[str, float] | None = None,
    seeds: Mapping[str, Sequence[int]] | None = None,
    alpha: float = stats.ALPHA,
) -> list[ClaimResult]:
    """Test every claim on its rows (paired by seed, diverged seeds dropped) and give verdicts.

    An accuracy claim whose reference condition (b, and a difference in differences' second net
    condition) is within the margin of chance is ``inconclusive`` whatever the test says: nothing
    can degrade from chance, and two models at chance are "equal" for no reason that concerns the
    claim. A difference in differences of accuracies has the resolution of four accuracies: its
    sd is floored at ``sqrt(2) / n_test / sqrt(6)`` (four rounding errors, not two).

    Args:
        claims: the claims.
        rows_by_setting: :func:`setting_key` -> the rows of its seeds.
        regimes: the regime configs (for the default batch size and gain).
        chance: regime -> chance accuracy on its test sets (the ``chance`` baseline); None: not checked.
        seeds: regime -> the seeds to test on (one stage of a confirmed run); None: every seed.
        alpha: the level of the decisions (:func:`claim_verdicts`).

    Returns:
        One :class:`ClaimResult` per claim, in order; Holm over the directional claims' p-values.
    """
    return claim_verdicts(claims, claim_samples(claims, rows_by_setting, regimes, chance, seeds), alpha)


def claim_verdicts(
    claims: Sequence[Claim], samples: Sequence[ClaimSamples], alpha: float = stats.ALPHA, hints: bool = True
) -> list[ClaimResult]:
    """The verdicts of ``claims`` from their paired values (:func:`claim_samples`), decided at
    level ``alpha``: Holm over the directional claims' p-values at ``alpha``, and the
    ``1 - alpha`` interval (recorded in ``ci95`` with ``alpha``) for the effect and the
    equivalence claims. ``borderline`` is whether the verdict differs at 0.01 or 0.1;
    ``seeds_needed`` and ``seeds_to_settle`` (the hints of an undecided verdict) are left None
    without ``hints`` (a simulation of many runs does not read them).

    Returns:
        One :class:`ClaimResult` per claim, in order.
    """
    tested: list[stats.PairedResult | None] = []
    for c, sample in zip(claims, samples, strict=True):
        result = None
        if len(sample.a) >= 2 and c.metric == DIVERGED:
            result = divergence_test(sample, 1 - alpha)
        elif len(sample.a) >= 2:
            result = stats.paired_over_seeds(sample.a, sample.b, sample.resolution)
            ci = (
                result.ci95
                if alpha == stats.ALPHA
                else stats.interval_at(result.mean_diff, result.ci95, result.n, 1 - alpha)
            )
            bound = METRICS[c.metric].bound  # a difference of accuracies (correlations) lies in [-1, 1] ([-2, 2])
            if bound is not None:
                bound *= 2 if c.net is not None else 1  # a difference of two such differences
                ci = (max(-bound, ci[0]), min(bound, ci[1]))
            result = replace(result, ci95=(ci[0], ci[1]))
        tested.append(result)
    directional = {k: r.p_value for k, r in enumerate(tested) if r is not None and claims[k].direction == "less"}
    adjusted = dict(zip(directional, stats.holm(list(directional.values()))))
    out = []
    for k, (c, sample, r) in enumerate(zip(claims, samples, tested, strict=True)):
        mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
        xa, xb, resolution = sample.a, sample.b, sample.resolution
        borderline, settle, needed = False, None, None
        if r is None:
            verdict, reason = "inconclusive", sample.why
        elif sample.at_chance:
            verdict, reason = "inconclusive", sample.at_chance
        else:
            p_adj = adjusted.get(k)
            verdict, reason = _verdict(c, r.mean_diff, r.ci95, p_adj, alpha)
            counts = sample.divergence_counts() if c.metric == DIVERGED else None
            borderline = _borderline(c, r, p_adj, verdict, alpha, counts)
            hinted = hints and counts is None  # the seeds-needed hints are a paired t-test's
            if verdict == "inconclusive" and hinted:
                needed = seeds_needed(c, r.mean_diff, xa, xb, resolution, _alpha_for(r.p_value, p_adj, alpha))
            if borderline and hinted:
                low = stats.BORDERLINE_ALPHAS[0]
                settle = seeds_needed(
                    c, r.mean_diff, xa, xb, resolution, _alpha_for(r.p_value, p_adj, low), confidence=1 - low
                )
        out.append(
            ClaimResult(
                id=c.id,
                claim=c.text,
                regime=c.regime,
                family=c.family,
                metric=c.metric,
                a=c.a.label() if c.net is None else f"({c.a.label()} minus {c.b.label()})",
                b=c.b.label() if c.net is None else f"({c.net[0].label()} minus {c.net[1].label()})",
                direction=c.direction,
                margin=c.margin,
                effect=None if r is None else r.mean_diff,
                ci95=None if r is None else list(r.ci95),
                p_value=None if r is None else r.p_value,
                p_adjusted=adjusted.get(k),
                test="" if r is None else r.test,
                n_seeds=len(xa),
                mean_a=mean(xa),
                mean_b=mean(xb),
                verdict=verdict,
                reason=reason,
                runs=sample.runs,
                why=c.why,
                seeds_needed=needed,
                borderline=borderline,
                seeds_to_settle=settle,
                means=sample.means,
                seeds=sample.seeds,
                alpha=alpha,
                counted_at_chance=sample.counted_at_chance,
            )
        )
    return out


def format_effect(r: ClaimResult) -> str:
    """``-0.083 [-0.101, -0.065] nats`` or ``+1.5 [-0.5, +3.5] points``."""
    if r.effect is None:
        return "-"
    assert r.ci95 is not None  # a tested claim (effect set) has its interval
    return format_interval(r.metric, r.effect, r.ci95)


def stage_label(r: ClaimResult) -> str:
    """The stage that decided a confirmed run's verdict, short: ``pilot``, ``confirm (12 fresh
    seeds)``, ``not decidable``; empty for a run without ``--confirm``."""
    if r.stage == "confirm":
        return f"confirm ({r.n_seeds} fresh seeds)"
    return r.stage


def _stage_sentence(r: ClaimResult) -> str:
    """A confirmed run: which stage decided the verdict, in one sentence (empty without ``--confirm``)."""
    if not r.stage:
        return ""
    pilot = r.pilot or {}
    before = pilot.get("verdict", "?") + (", borderline" if pilot.get("borderline") else "")
    if r.stage == "pilot":
        return f" Decided in the pilot ({r.n_seeds} seeds; it stands at level 0.01)."
    if r.stage == "confirm":
        seeds = f"{r.seeds[0]}-{r.seeds[-1]}" if r.seeds else "-"
        decided = "Decided" if r.verdict != "inconclusive" else "Still undecided"
        return (
            f" {decided} in the confirm stage, on {r.n_seeds} fresh seeds ({seeds}) alone at level {r.alpha:g} "
            f"(the pilot on {pilot.get('n_seeds', '?')} seeds: {before})."
        )
    why = (r.plan or {}).get("why") or "the pilot had no test"
    if (r.plan or {}).get("action") == "untested":
        return f" Not decidable: the pilot had no test of it (the pilot: {before})."
    return f" {why[0].upper()}{why[1:]} (the pilot: {before})."


def claim_sentences(results: Sequence[ClaimResult]) -> list[str]:
    """One sentence per claim: claim, regime, effect with its interval, verdict and why."""
    out = []
    for r in results:
        if r.effect is None:
            out.append(
                f"{family_label(r.family)}, {r.claim} ({r.regime}): not tested ({r.reason}): {r.verdict.upper()}."
                + _stage_sentence(r)
            )
            continue
        # a tested claim (an effect) has its p-value and >= 2 seeds with values
        assert r.p_value is not None
        assert r.mean_a is not None
        assert r.mean_b is not None
        p = f", p = {r.p_value:.2g}" + (f", Holm p = {r.p_adjusted:.2g}" if r.p_adjusted is not None else "")
        more = ""
        task = r.regime.partition("@")[2]  # a regime on another task (lnbench.analysis.claim_tasks)
        on_task = f" --task {task}" if task else ""
        if r.verdict == "inconclusive" and r.seeds_needed is not None:
            what = "an effect this size at 80% power" if r.direction == "less" else "an interval inside the margin"
            more = (
                f" About {r.seeds_needed} seeds would decide it ({what}, from the sd of the paired differences "
                f"the test uses): lnbench claims --only {r.id}{on_task} --num-seeds {r.seeds_needed}, with this "
                "run's other options (its --set and --seed), for which that number was computed."
            )
        if r.borderline:
            settle = f"; about {r.seeds_to_settle} seeds would settle it" if r.seeds_to_settle is not None else ""
            more += (
                " BORDERLINE: the verdict differs at level 0.01 or 0.1 (99% or 90% intervals), so another "
                f"machine's rounding can flip it{settle}."
            )
        if r.metric == DIVERGED:  # k of n seeds diverged
            levels = f"{r.a} {round(r.mean_a * r.n_seeds)} of {r.n_seeds}, {r.b} {round(r.mean_b * r.n_seeds)} of {r.n_seeds}"
        elif r.means and len(r.means) > 2:  # a difference in differences: its four conditions
            levels = ", ".join(f"{label} {format_level(r.metric, v)}" for label, v in r.means.items())
        else:
            levels = f"{r.a} {format_level(r.metric, r.mean_a)}, {r.b} {format_level(r.metric, r.mean_b)}"
        counted = {label: k for label, k in (r.counted_at_chance or {}).items() if k}
        if counted:
            levels += "; counted at chance, 1 / the number of classes: the diverged seeds, " + ", ".join(
                f"{label} {k} of {r.n_seeds}" for label, k in counted.items()
            )
        out.append(
            f"{family_label(r.family)}, {r.claim} ({r.regime}): {METRICS[r.metric].label}, {r.a} minus {r.b} = {format_effect(r)}"
            f"{p}, {r.n_seeds} seeds ({levels}): {r.verdict.upper()} ({r.reason}).{more}{_stage_sentence(r)}"
        )
    return out
