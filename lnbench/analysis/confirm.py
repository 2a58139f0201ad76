"""Confirmatory runs: settle what a pilot leaves open, on fresh seeds, at the error rates claimed.

A two-stage design (``lnbench claims --confirm``), valid by construction:

1. **Pilot**: the run as it is, on its seeds. A verdict the pilot *decides* (not inconclusive, not
   borderline: the same verdict at level 0.01 as at 0.05 and 0.1) is kept, marked "decided in the
   pilot". Such a decision holds at level :data:`PILOT_ALPHA` = 0.01.
2. **Plan** (:func:`plan_claims`): every other tested claim gets the number of fresh seeds N at
   which the confirm stage decides it with probability :data:`POWER` (80 %), computed from the
   pilot's effect and the sd its test used (floored at the resolution), at the level the confirm
   stage's Holm family needs: :data:`CONFIRM_ALPHA` divided by the number of directional claims
   confirmed (Bonferroni, Holm's strictest step, so each claim keeps its power whatever its rank).
   A claim whose N exceeds ``max_seeds`` is "not decidable within max_seeds" and nothing is run
   for it. A regime runs once for all its planned claims, on the largest N they need.
3. **Confirm** (:func:`confirm_verdicts`): the planned claims are tested on the fresh seeds alone
   (disjoint from the pilot's: :func:`fresh_seeds`), Holm over the confirmed directional claims at
   :data:`CONFIRM_ALPHA` = 0.04, equivalence claims by their 96 % interval.

Why the error rates hold: under any configuration of true effects, a false decision of the whole
procedure is a false pilot decision (family-wise at most 0.01: a Holm-adjusted p below 0.01, or a
99 % interval) or a false confirm decision (family-wise at most 0.04 given the selection, since the
fresh seeds are independent of the pilot's that selected and planned them). By the union bound the
family-wise rate is at most 0.01 + 0.04 = :data:`stats.ALPHA`. Pooling the pilot's seeds into the
confirm test would break this: the pilot's data chose the claims for being near a threshold, and
reusing them pushes the test across it (``tests/analysis/test_confirm.py`` plants that and sees
the rate rise). Equivalence claims are decided by their own intervals, as in a plain run (not in
a Holm family): each keeps its rate, 0.005 + 0.02 one-sided at the margin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from lnbench.analysis import stats
from lnbench.analysis.claims import Claim, ClaimResult, ClaimSamples, claim_verdicts

PILOT_ALPHA = stats.BORDERLINE_ALPHAS[0]  # a pilot decision is kept when it stands at 0.01
CONFIRM_ALPHA = stats.ALPHA - PILOT_ALPHA  # 0.04: the union of the two stages stays at 0.05
POWER = 0.8
#: ``--max-seeds``' default: a confirm of 20 seeds per regime trains as an ensemble in a few solo
#: runs' time, and past ~20 seeds an effect is small against the seed-to-seed spread (at 80 % power
#: a paired t-test at 0.04 then detects effects below ~0.7 sd), too small for a claim with a margin.
MAX_SEEDS = 20
MAX_N = 1000  # the search bound of the seed counts


def decided_in_pilot(result: ClaimResult) -> bool:
    """Whether the pilot's verdict stands: tested, not inconclusive, not borderline (the same
    verdict at 0.01, so a decision at :data:`PILOT_ALPHA`)."""
    return result.effect is not None and result.verdict != "inconclusive" and not result.borderline


def seeds_for_interval_power(
    effect: float, sd: float, margin: float, alpha: float, power: float = POWER, max_n: int = MAX_N
) -> int | None:
    """The fewest seeds at which the ``1 - alpha`` t interval of a paired mean (true mean
    ``effect``, sd ``sd`` of the differences) decides an equivalence question with probability
    ``power``: lies inside +-``margin`` when ``|effect| < margin`` (the two one-sided tests of
    Schuirmann 1987, power bounded below by P(T1 > t) + P(T2 > t) - 1 with T1, T2 noncentral t,
    df n - 1, noncentralities (margin -+ effect) sqrt(n) / sd), or wholly outside it when
    ``|effect| > margin`` (P(T > t), noncentrality (|effect| - margin) sqrt(n) / sd); t is
    t_{1 - alpha/2, n-1}. None: no spread, an effect at the margin, or more than ``max_n``."""
    if not (sd > 0 and math.isfinite(sd) and math.isfinite(effect)) or abs(effect) == margin:
        return None
    sp = stats._scipy_stats()

    def enough(n: int) -> bool:
        crit = sp.t.ppf(1 - alpha / 2, n - 1)
        root = math.sqrt(n) / sd
        if abs(effect) < margin:
            p = sp.nct.sf(crit, n - 1, (margin + effect) * root) + sp.nct.sf(crit, n - 1, (margin - effect) * root) - 1
        else:
            p = sp.nct.sf(crit, n - 1, (abs(effect) - margin) * root)
        return bool(p >= power)

    return stats.fewest(enough, max_n)


def seeds_to_decide(claim: Claim, sample: ClaimSamples, alpha: float, power: float = POWER) -> int | None:
    """The fresh seeds at which the confirm stage decides ``claim`` with probability ``power``,
    if its paired differences have the pilot's mean and the sd the test uses
    (:func:`lnbench.analysis.stats.paired_sd`, floored at the resolution):

    - directional: the fewer of the paired t-test's 80 % power at level ``alpha``
      (:func:`lnbench.analysis.stats.seeds_for_power`: significant, so held or the opposite or
      negligible) and the interval's (:func:`seeds_for_interval_power`: inside the margin, the
      effect shown negligible);
    - equivalence: the interval's (:func:`seeds_for_interval_power`).

    None: no number up to :data:`MAX_N` would (no spread, an effect of 0 or at the margin)."""
    sd = stats.paired_sd(sample.a, sample.b, sample.resolution)
    effect = float(np.mean(np.asarray(sample.a) - np.asarray(sample.b)))
    interval = seeds_for_interval_power(effect, sd, claim.margin, alpha, power)
    if claim.direction == "equal":
        return interval
    test = stats.seeds_for_power(effect, sd, power=power, alpha=alpha, max_n=MAX_N)
    found = [n for n in (test, interval) if n is not None]
    return min(found) if found else None


@dataclass(frozen=True)
class Plan:
    """What the confirm stage does with one claim.

    Attributes:
        action: ``"keep"`` (decided in the pilot), ``"confirm"`` (N fresh seeds), ``"undecidable"``
            (the seeds it needs exceed ``max_seeds``, or no number would), ``"untested"`` (the
            pilot had no test: fewer than 2 seeds with values, or a reference at chance).
        seeds: N, the fresh seeds the claim needs (``"confirm"``; for ``"undecidable"`` the number
            it would need, None if none would).
        alpha: the level N was planned at (:data:`CONFIRM_ALPHA` / the Holm family's size).
        why: one line.
    """

    action: str
    seeds: int | None = None
    alpha: float | None = None
    why: str = ""

    def to_dict(self) -> dict:
        return {"action": self.action, "seeds": self.seeds, "alpha": self.alpha, "why": self.why}


def plan_claims(
    claims: Sequence[Claim],
    pilot: Sequence[ClaimResult],
    samples: Sequence[ClaimSamples],
    max_seeds: int = MAX_SEEDS,
    power: float = POWER,
) -> list[Plan]:
    """The confirm stage's plan for each claim, from the pilot's verdicts and paired values.

    The Holm family of the confirm stage is the directional claims it confirms. Their N is
    planned at :data:`CONFIRM_ALPHA` / m: first with m = every directional candidate; those that
    need more than ``max_seeds`` drop out, and the rest are planned again at the m that is left
    (a smaller family needs fewer seeds; those that dropped out stay out, so m is the family
    the confirm stage will test)."""
    plans: list[Plan | None] = []
    for r, sample in zip(pilot, samples, strict=True):
        if decided_in_pilot(r):
            plans.append(Plan("keep", why=f"decided in the pilot ({r.verdict}, the same at level {PILOT_ALPHA:g})"))
        elif r.effect is None or sample.at_chance or len(sample.a) < 2:
            plans.append(Plan("untested", why=f"the pilot has no test of it ({r.reason})"))
        else:
            plans.append(None)
    candidates = [k for k, p in enumerate(plans) if p is None]

    def needed(k: int, m: int) -> tuple[int | None, float]:
        alpha = CONFIRM_ALPHA / max(m, 1) if claims[k].direction == "less" else CONFIRM_ALPHA
        return seeds_to_decide(claims[k], samples[k], alpha, power), alpha

    m_all = sum(claims[k].direction == "less" for k in candidates)
    first = {k: needed(k, m_all)[0] for k in candidates}
    kept = [k for k in candidates if first[k] is not None and first[k] <= max_seeds]  # type: ignore[operator]
    m = sum(claims[k].direction == "less" for k in kept)
    for k in candidates:
        if k in kept:
            n, alpha = needed(k, m)
            family = f"Holm over {m}" if claims[k].direction == "less" else "its own interval"
            what = "power" if claims[k].direction == "less" else "chance its interval decides it"
            plans[k] = Plan("confirm", n, alpha, f"{power:.0%} {what} at level {alpha:.2g} ({family})")
        else:
            n = first[k]
            plans[k] = Plan(
                "undecidable",
                n,
                None,
                f"not decidable within {max_seeds} seeds: "
                + (f"about {n} seeds would be needed" if n is not None else f"more than {MAX_N} seeds would be needed"),
            )
    return [p for p in plans if p is not None]


def regime_seeds(claims: Sequence[Claim], plans: Sequence[Plan]) -> dict[str, int]:
    """Regime -> the fresh seeds it trains: the largest N of its planned claims (a regime runs
    once for all of them)."""
    out: dict[str, int] = {}
    for c, p in zip(claims, plans, strict=True):
        if p.action == "confirm" and p.seeds is not None:
            out[c.regime] = max(out.get(c.regime, 0), p.seeds)
    return out


def fresh_seeds(pilot_seeds: Sequence[int], n: int) -> list[int]:
    """``n`` seeds disjoint from the pilot's: those after its largest (``max + 1 .. max + n``)."""
    start = max(pilot_seeds) + 1 if pilot_seeds else 0
    return list(range(start, start + n))


@dataclass
class TwoStage:
    """The result of the two-stage procedure for a set of claims: the pilot's verdicts, the plan,
    and the final verdicts (each with its ``stage``, ``pilot`` and ``plan`` filled in)."""

    pilot: list[ClaimResult]
    plans: list[Plan]
    final: list[ClaimResult] = field(default_factory=list)


def _stage_record(r: ClaimResult) -> dict:
    return {
        "seeds": r.seeds,
        "n_seeds": r.n_seeds,
        "effect": r.effect,
        "ci": r.ci95,
        "alpha": r.alpha,
        "p_value": r.p_value,
        "p_adjusted": r.p_adjusted,
        "verdict": r.verdict,
        "reason": r.reason,
        "borderline": r.borderline,
    }


def confirm_verdicts(
    claims: Sequence[Claim],
    pilot: Sequence[ClaimResult],
    plans: Sequence[Plan],
    confirm_samples: Sequence[ClaimSamples | None],
    fresh: Mapping[str, Sequence[int]] | None = None,
    hints: bool = True,
) -> list[ClaimResult]:
    """The final verdict of each claim: the pilot's where it was decided there (stage ``pilot``),
    the confirm stage's, on the fresh seeds alone, where it was planned (stage ``confirm``: Holm
    over the confirmed directional claims at :data:`CONFIRM_ALPHA`), and ``inconclusive`` where it
    was not decidable within the seeds allowed or the pilot had no test (stage ``not decidable``).

    ``confirm_samples``: each claim's paired values on its fresh seeds (None for a claim not
    planned); ``fresh``: regime -> its fresh seeds (recorded in the plan); ``hints``: see
    :func:`lnbench.analysis.claims.claim_verdicts`."""
    confirmed = [k for k, p in enumerate(plans) if p.action == "confirm"]
    tested: dict[int, ClaimResult] = {}
    if confirmed:
        results = claim_verdicts(
            [claims[k] for k in confirmed],
            [confirm_samples[k] or ClaimSamples([], [], why="no fresh seeds were run") for k in confirmed],
            CONFIRM_ALPHA,
            hints,
        )
        tested = dict(zip(confirmed, results, strict=True))
    out = []
    for k, (c, r, p) in enumerate(zip(claims, pilot, plans, strict=True)):
        plan = p.to_dict() | ({"fresh_seeds": list((fresh or {}).get(c.regime, []))} if p.action == "confirm" else {})
        common = {"pilot": _stage_record(r), "plan": plan}
        if p.action == "keep":
            out.append(_with(r, stage="pilot", **common))
        elif p.action == "confirm":
            out.append(_with(tested[k], stage="confirm", **common))
        else:
            reason = p.why if p.action == "undecidable" else r.reason
            out.append(
                _with(
                    r,
                    stage="not decidable",
                    verdict="inconclusive",
                    reason=reason,
                    seeds_needed=p.seeds if p.action == "undecidable" else r.seeds_needed,
                    **common,
                )
            )
    return out


def _with(r: ClaimResult, **changes: object) -> ClaimResult:
    from dataclasses import replace

    return replace(r, **changes)  # type: ignore[arg-type]
