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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lnbench.analysis import comparisons, stats, verdicts
from lnbench.analysis.claims import Claim, ClaimResult, ClaimSamples, claim_verdicts
from lnbench.analysis.metrics import METRICS
from lnbench.records.schema import SummaryRow

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


def seeds_to_decide(claim: Claim, sample: ClaimSamples, alpha: float, power: float = POWER) -> tuple[int | None, str]:
    """The fresh seeds at which the confirm stage decides ``claim`` with probability ``power``,
    if its paired differences have the pilot's mean and the sd the test uses
    (:func:`lnbench.analysis.stats.paired_sd`, floored at the resolution), and how:

    - directional: the fewer of the paired t-test's 80 % power at level ``alpha``
      (:func:`lnbench.analysis.stats.seeds_for_power`: significant, so held or the opposite or
      negligible; route ``"the paired t-test"``) and the interval's
      (:func:`seeds_for_interval_power`: inside the margin, the effect shown negligible);
    - equivalence: the interval's (:func:`seeds_for_interval_power`).

    N is None when no number up to :data:`MAX_N` would (no spread, an effect of 0 or at the margin)."""
    sd = stats.paired_sd(sample.a, sample.b, sample.resolution)
    effect = float(np.mean(np.asarray(sample.a) - np.asarray(sample.b)))
    interval = seeds_for_interval_power(effect, sd, claim.margin, alpha, power)
    side = "inside" if abs(effect) < claim.margin else "outside"
    route = f"its {1 - alpha:.0%} interval {side} the margin"
    if claim.direction == "equal":
        return interval, route
    test = stats.seeds_for_power(effect, sd, power=power, alpha=alpha, max_n=MAX_N)
    if test is not None and (interval is None or test <= interval):
        return test, "the paired t-test"
    return interval, route


def choose_family(keys: Sequence[int], needed, max_seeds: int) -> list[int]:
    """The largest Holm family the confirm stage can decide within ``max_seeds``: the questions
    ``keys`` ordered by the seeds each needs alone (``needed(k, 1)``, None last), and of the first
    j of them the largest j at which each needs at most ``max_seeds`` at the family's level
    (``needed(k, j)``: a family of j tests each at alpha / j, Holm's strictest step)."""
    alone = {k: needed(k, 1) for k in keys}
    order = sorted(keys, key=lambda k: (alone[k] is None, alone[k] or 0))
    for j in range(len(order), 0, -1):
        top = order[:j]
        if all((n := needed(k, j)) is not None and n <= max_seeds for k in top):
            return top
    return []


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


@dataclass(frozen=True)
class Question:
    """One question a pilot leaves to the confirm stage (a claim, or a paired comparison), as
    :func:`plan_questions` plans it.

    Attributes:
        settled: its plan when the pilot settles it (``keep``: decided there; ``untested``: no
            test to plan from); None: open, to be planned.
        family: the Holm family it is confirmed in, each of its m members at
            :data:`CONFIRM_ALPHA` / m; None: decided by its own interval at :data:`CONFIRM_ALPHA`
            (an equivalence claim), in no family.
        needed: ``alpha -> (N, route)``: the fresh seeds that decide it at level ``alpha`` with the
            planned power (None: more than :data:`MAX_N`, or none would), and how (``the paired t-test``).
        why: ``(route, alpha, m) -> str``: the plan's line for a confirmed question.
    """

    settled: Plan | None
    family: str | None
    needed: Callable[[float], tuple[int | None, str]]
    why: Callable[[str, float, int], str]


def plan_questions(questions: Sequence[Question], max_seeds: int = MAX_SEEDS) -> list[Plan]:
    """The confirm stage's plan of each question, one rule for claims and comparisons: a settled
    question keeps its plan; in each Holm family the largest subfamily within ``max_seeds``
    (:func:`choose_family`) is confirmed, each member at :data:`CONFIRM_ALPHA` / m, and a member
    left out reports the seeds it would need as one more (m + 1); a question in no family is
    confirmed at :data:`CONFIRM_ALPHA` when its seeds fit within ``max_seeds``."""
    plans: list[Plan | None] = [q.settled for q in questions]
    families: dict[str | None, list[int]] = {}
    for k, q in enumerate(questions):
        if q.settled is None:
            families.setdefault(q.family, []).append(k)

    def needed(k: int, m: int) -> int | None:
        return questions[k].needed(CONFIRM_ALPHA / max(m, 1))[0]

    for family, members in families.items():
        kept = [] if family is None else choose_family(members, needed, max_seeds)
        m = len(kept)
        for k in members:
            if family is None:  # its own interval, at the stage's whole level
                n, route = questions[k].needed(CONFIRM_ALPHA)
                fits = n is not None and n <= max_seeds
                why = questions[k].why(route, CONFIRM_ALPHA, 1)
                plans[k] = Plan("confirm", n, CONFIRM_ALPHA, why) if fits else undecidable(n, max_seeds)
            elif k in kept:
                n, route = questions[k].needed(CONFIRM_ALPHA / m)
                plans[k] = Plan("confirm", n, CONFIRM_ALPHA / m, questions[k].why(route, CONFIRM_ALPHA / m, m))
            else:  # left out of its family: what it would need as one more member
                plans[k] = undecidable(needed(k, m + 1), max_seeds)
    assert all(p is not None for p in plans)
    return [p for p in plans if p is not None]


def plan_claims(
    claims: Sequence[Claim],
    pilot: Sequence[ClaimResult],
    samples: Sequence[ClaimSamples],
    max_seeds: int = MAX_SEEDS,
    power: float = POWER,
) -> list[Plan]:
    """The confirm stage's plan for each claim, from the pilot's verdicts and paired values
    (:func:`plan_questions`): the directional claims are one Holm family, each planned at
    :data:`CONFIRM_ALPHA` / m (the fewer seeds of the paired t-test and the interval,
    :func:`seeds_to_decide`); an equivalence claim is decided by its own interval at :data:`CONFIRM_ALPHA`."""

    def question(claim: Claim, r: ClaimResult, sample: ClaimSamples) -> Question:
        settled = None
        if decided_in_pilot(r):
            settled = Plan("keep", why=f"decided in the pilot ({r.verdict}, the same at level {PILOT_ALPHA:g})")
        elif r.effect is None or sample.at_chance or len(sample.a) < 2:
            settled = Plan("untested", why=f"the pilot has no test of it ({r.reason})")
        less = claim.direction == "less"

        def why(route: str, alpha: float, m: int) -> str:
            holm = f"Holm over {m}" if less else "its own interval, no Holm family"
            return f"{power:.0%} chance that {route} decides it at level {alpha:.2g} ({holm})"

        return Question(
            settled,
            "directional" if less else None,
            lambda alpha: seeds_to_decide(claim, sample, alpha, power),
            why,
        )

    return plan_questions([question(*q) for q in zip(claims, pilot, samples, strict=True)], max_seeds)


def undecidable(n: int | None, max_seeds: int) -> Plan:
    """The plan of a question that needs ``n`` seeds (None: more than :data:`MAX_N`), more than ``max_seeds``."""
    need = f"about {n} seeds would be needed" if n is not None else f"more than {MAX_N} seeds would be needed"
    return Plan("undecidable", n, None, f"not decidable within {max_seeds} seeds: {need}")


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


def stage_record(
    seeds: Any,
    n_seeds: int,
    effect: float | None,
    ci: Any,
    alpha: float,
    p_value: Any,
    p_adjusted: Any,
    **decision: Any,
) -> dict:
    """One stage's test of a question as the confirm record holds it (a claim's ``pilot`` record,
    a comparison's): its seeds, effect, interval, level and p values, then its decision
    (``verdict``, ``reason``, ``borderline`` for a claim; ``significant``, ``borderline`` for a comparison)."""
    return {
        "seeds": seeds,
        "n_seeds": n_seeds,
        "effect": effect,
        "ci": ci,
        "alpha": alpha,
        "p_value": p_value,
        "p_adjusted": p_adjusted,
        **decision,
    }


def _stage_record(r: ClaimResult) -> dict:
    return stage_record(
        r.seeds, r.n_seeds, r.effect, r.ci95, r.alpha, r.p_value, r.p_adjusted,
        verdict=r.verdict, reason=r.reason, borderline=r.borderline,
    )  # fmt: skip


def confirm_verdicts(
    claims: Sequence[Claim],
    pilot: Sequence[ClaimResult],
    plans: Sequence[Plan],
    confirm_samples: Sequence[ClaimSamples | None],
    fresh: Mapping[str, Sequence[int]] | None = None,
) -> list[ClaimResult]:
    """The final verdict of each claim: the pilot's where it was decided there (stage ``pilot``),
    the confirm stage's, on the fresh seeds alone, where it was planned (stage ``confirm``: Holm
    over the confirmed directional claims at :data:`CONFIRM_ALPHA`), and ``inconclusive`` where it
    was not decidable within the seeds allowed or the pilot had no test (stage ``not decidable``).

    ``confirm_samples``: each claim's paired values on its fresh seeds (None for a claim not
    planned); ``fresh``: regime -> its fresh seeds (recorded in the plan). A confirm-stage verdict
    carries no "about N seeds would decide it" hint: more seeds would have to be fresh again."""
    confirmed = [k for k, p in enumerate(plans) if p.action == "confirm"]
    tested: dict[int, ClaimResult] = {}
    if confirmed:
        results = claim_verdicts(
            [claims[k] for k in confirmed],
            [confirm_samples[k] or ClaimSamples([], [], why="no fresh seeds were run") for k in confirmed],
            CONFIRM_ALPHA,
            hints=False,  # "about N seeds would decide it" would invite a rerun that pools the seeds looked at
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
    return replace(r, **changes)  # type: ignore[arg-type]


# ---- lnbench compare --confirm: the same design over the paired comparisons of a compare ----


def _rows_of(rows: Sequence[SummaryRow], group: str, norm: str) -> list[SummaryRow]:
    return [r for r in rows if comparisons.model_group(r) == group and r.norm == norm]


def _comparison_key(c: comparisons.Comparison) -> tuple[str, str, str]:
    return c.holm_family, c.norm_a, c.norm_b


def decided_comparison(c: comparisons.Comparison) -> bool:
    """Whether a pilot's comparison stands: significant and not borderline (Holm p < 0.01). A
    pair "not distinguishable" is an open question, not a decision that the two are equal."""
    return c.significant and not c.borderline


def plan_comparisons(
    pilot_rows: Sequence[SummaryRow],
    pilot: Sequence[comparisons.Comparison],
    max_seeds: int = MAX_SEEDS,
    power: float = POWER,
) -> list[Plan]:
    """The confirm stage's plan for each comparison of a pilot compare (``pilot``, from
    :func:`lnbench.analysis.comparisons.compare_comparisons` of ``pilot_rows``), by
    :func:`plan_questions`: ``keep`` where it was decided (:func:`decided_comparison`); else the
    fresh seeds at which the paired t-test of the pilot's effect, with the sd that test used, has
    ``power`` at level :data:`CONFIRM_ALPHA` / m, m the comparisons its Holm family (a model group
    and metric) confirms; ``untested`` for a one-seed pilot (no seed-to-seed sd to plan from)."""

    def question(c: comparisons.Comparison) -> Question:
        group = c.holm_family.rpartition("/")[0]
        pairs = comparisons.pair_by_seed(
            _rows_of(pilot_rows, group, c.norm_a), _rows_of(pilot_rows, group, c.norm_b), c.metric
        )
        sd = stats.paired_sd(*comparisons.seed_values(pairs, c.metric)) if len(pairs) >= 2 else float("nan")
        settled = None
        if decided_comparison(c):
            settled = Plan("keep", why=f"decided in the pilot (Holm p {c.p_adjusted:.2g} < {PILOT_ALPHA:g})")
        elif not math.isfinite(sd):
            settled = Plan("untested", why="one seed: no seed-to-seed sd to plan from (run the pilot with seeds)")
        return Question(
            settled,
            c.holm_family,
            lambda alpha: (stats.seeds_for_power(c.mean_diff, sd, power=power, alpha=alpha, max_n=MAX_N), ""),
            lambda route, alpha, m: f"{power:.0%} power at level {alpha:.2g} (Holm over {m})",
        )

    return plan_questions([question(c) for c in pilot], max_seeds)


def group_seeds(pilot: Sequence[comparisons.Comparison], plans: Sequence[Plan]) -> dict[str, dict[str, int]]:
    """Model group -> {norm: fresh seeds}: every norm of a confirmed comparison trains the largest
    N of its group's confirmed comparisons (both metrics), so that its pairs share their seeds."""
    n_group: dict[str, int] = {}
    norms: dict[str, set[str]] = {}
    for c, p in zip(pilot, plans, strict=True):
        if p.action == "confirm" and p.seeds is not None:
            group = c.holm_family.rpartition("/")[0]
            n_group[group] = max(n_group.get(group, 0), p.seeds)
            norms.setdefault(group, set()).update((c.norm_a, c.norm_b))
    return {group: {norm: n_group[group] for norm in sorted(norms[group])} for group in n_group}


def _comparison_record(c: comparisons.Comparison, seeds: Sequence[int]) -> dict:
    return stage_record(
        list(seeds), c.n_seeds, c.mean_diff, list(c.ci95), c.alpha, c.p_value, c.p_adjusted,
        significant=c.significant, borderline=c.borderline,
    )  # fmt: skip


def confirm_comparisons(
    pilot: Sequence[comparisons.Comparison],
    plans: Sequence[Plan],
    fresh_rows: Sequence[SummaryRow],
    pilot_seeds: Sequence[int],
    fresh: Sequence[int],
) -> list[comparisons.Comparison]:
    """The final comparisons of a confirmed compare: the pilot's where it decided (stage
    ``pilot``); the confirm stage's where it was planned, a paired test on ``fresh_rows`` alone
    (the rows of the fresh seeds), Holm over the confirmed comparisons of each family at
    :data:`CONFIRM_ALPHA` (stage ``confirm``); the pilot's numbers, not significant, where it was
    not decidable (stage ``not decidable``)."""
    tests: dict[str, list[tuple[int, dict, stats.PairedResult]]] = {}
    for k, (c, p) in enumerate(zip(pilot, plans, strict=True)):
        if p.action != "confirm":
            continue
        group = c.holm_family.rpartition("/")[0]
        pairs = comparisons.pair_by_seed(
            _rows_of(fresh_rows, group, c.norm_a), _rows_of(fresh_rows, group, c.norm_b), c.metric
        )
        result = comparisons.paired_test(pairs, c.metric) if len(pairs) >= 2 else None
        if result is not None:
            spec = comparisons.pair_spec(pairs, c.metric, norm_a=c.norm_a, norm_b=c.norm_b)
            tests.setdefault(c.holm_family, []).append((k, spec, result))
    confirmed: dict[int, tuple[comparisons.Comparison, list[int]]] = {}
    for family, family_tests in tests.items():
        results = comparisons.holm_family(family, [(spec, t) for _, spec, t in family_tests], CONFIRM_ALPHA)
        for (k, _, _), tested in zip(family_tests, results, strict=True):
            group = family.rpartition("/")[0]
            used = sorted(r.seed for r in _rows_of(fresh_rows, group, pilot[k].norm_a) if r.seed in set(fresh))
            confirmed[k] = (tested, used)
    out = []
    for k, (c, p) in enumerate(zip(pilot, plans, strict=True)):
        plan = p.to_dict() | ({"fresh_seeds": list(fresh)} if p.action == "confirm" else {})
        record = _comparison_record(c, pilot_seeds)
        if p.action == "keep":
            out.append(replace(c, stage="pilot", seeds=list(pilot_seeds), pilot=record, plan=plan))
        elif k in confirmed:
            final, used = confirmed[k]
            out.append(replace(final, stage="confirm", seeds=used, pilot=record, plan=plan, seeds_to_settle=None))
        else:
            out.append(
                replace(c, stage="not decidable", significant=False, seeds=list(pilot_seeds), pilot=record, plan=plan)
            )
    return out


def comparison_sentences(final: Sequence[comparisons.Comparison]) -> list[str]:
    """The confirm stage of a compare in words: each comparison it tested (on which fresh seeds,
    at which level, against the pilot's Holm p) and each it could not decide (why); the pilot's
    decided comparisons are in the pilot's own sentences."""
    from lnbench.names import group_label, norm_label

    out = []
    for c in final:
        if c.stage not in ("confirm", "not decidable"):
            continue
        group, _, metric = c.holm_family.rpartition("/")
        head = f"Confirm stage, {group_label(group)}, {METRICS[metric].label}: "
        before = (c.pilot or {}).get("p_adjusted")
        pilot = f"the pilot: Holm p = {before:.2g}" if before is not None else "the pilot"
        if c.stage == "confirm":
            seeds = f"{c.seeds[0]}-{c.seeds[-1]}" if c.seeds else "-"
            words = verdicts.describe_in_words(c).rstrip(".")
            out.append(
                f"{head}{words}; tested on {c.n_seeds} fresh seeds ({seeds}) alone at level {c.alpha:g} ({pilot})."
            )
        else:
            why = (c.plan or {}).get("why") or "no test"
            out.append(f"{head}{norm_label(c.norm_a)} vs {norm_label(c.norm_b)}: {why} ({pilot}).")
    return out
