"""An ablation's claims read together: a recipe's ingredients taken away or swapped one at a time
(:func:`lnbench.analysis.claim_catalogue.recipe_ablation`), each a divergence claim (k of n seeds
diverged, Fisher's exact test) and an accuracy claim (a diverged seed counted at chance).

:func:`condition_cells` gives each condition's cell (its seeds diverged, k of n, and its final
accuracy, over the finished seeds and with a diverged seed at chance); :func:`ingredient_sentences`
names, from the verdicts, the ingredients that keep the run finite and those it needs for accuracy.
Pure: rows and results in, dicts and sentences out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from lnbench.analysis.claim_catalogue import DIVERGED, Claim, Condition
from lnbench.analysis.metrics import format_amount
from lnbench.names import family_label
from lnbench.records.schema import SummaryRow

if TYPE_CHECKING:
    from lnbench.analysis.claims import ClaimResult
    from lnbench.config import RunConfig


def is_ablation(claim: Claim) -> bool:
    """Whether ``claim`` is an ablation's (it names the ingredient its b takes away)."""
    return bool(claim.ingredient)


def recipe_of(claim: Claim) -> Condition:
    """The full recipe's condition of an ablation's claim: a of a divergence claim (the recipe
    diverges less), b of an accuracy claim (the variant is less accurate than the recipe)."""
    return claim.a if claim.metric == DIVERGED else claim.b


def condition_cells(
    claims: Sequence[Claim], rows_by_setting: dict[tuple, list[SummaryRow]], regimes: dict[str, RunConfig]
) -> list[dict]:
    """Each condition of the ablation's ``claims`` once, per regime, in the claims' order: ``regime``,
    ``family``, ``condition`` (its label), ``n_seeds`` (its runs that finished or diverged),
    ``n_diverged``, ``mean_final_test_acc`` (over the finished seeds; None: none finished) and
    ``mean_final_test_acc_at_chance`` (over every seed, a diverged one at chance, 1 / its number of
    classes: what the accuracy claims compare; None: no seed).

    Args:
        claims: the claims (those of an ablation are read, :func:`is_ablation`, and their references).
        rows_by_setting: :func:`lnbench.analysis.claim_catalogue.setting_key` -> the rows of its seeds.
        regimes: the regime configs.
    """
    out: list[dict] = []
    seen: set[tuple] = set()
    for c in claims:
        if not (is_ablation(c) or c.diverged_at_chance):
            continue
        for cond in c.conditions:
            key = cond.setting(c.family, c.regime, regimes[c.regime])
            if key in seen:
                continue
            seen.add(key)
            rows = [r for r in rows_by_setting.get(key, []) if r.ok or r.status == "diverged"]
            finished = [r.final_test_acc for r in rows if r.ok and r.final_test_acc is not None]
            at_chance = finished + [1 / r.num_classes for r in rows if r.status == "diverged"]
            out.append(
                {
                    "regime": c.regime,
                    "family": c.family,
                    "condition": cond.label(),
                    "n_seeds": len(rows),
                    "n_diverged": sum(r.status == "diverged" for r in rows),
                    "mean_final_test_acc": float(np.mean(finished)) if finished else None,
                    "mean_final_test_acc_at_chance": float(np.mean(at_chance)) if at_chance else None,
                }
            )
    return out


def _diverged(r: ClaimResult, side: str) -> str:
    """``k of n``: the seeds of side ``a`` or ``b`` of a divergence claim that diverged."""
    mean = r.mean_a if side == "a" else r.mean_b
    return "-" if mean is None else f"{round(mean * r.n_seeds)} of {r.n_seeds}"


def _holm(r: ClaimResult) -> str:
    return "" if r.p_adjusted is None else f", Holm p = {r.p_adjusted:.2g}"


def _counted(pairs: Sequence[tuple[Claim, ClaimResult]]) -> str:
    """Each ingredient with the seeds of its variant that diverged: ``clipping (0 of 6); RMSProp (1 of 6)``."""
    return "; ".join(f"{c.ingredient} ({_diverged(r, 'b')})" for c, r in pairs)


def _finite_sentence(model: str, pairs: Sequence[tuple[Claim, ClaimResult]]) -> str:
    """What keeps ``model`` finite, from its divergence claims' verdicts."""
    held = [(c, r) for c, r in pairs if r.verdict == "held"]
    not_held = [(c, r) for c, r in pairs if r.verdict == "not held"]
    undecided = [(c, r) for c, r in pairs if r.verdict == "inconclusive"]
    recipe = next((_diverged(r, "a") for _, r in pairs if r.effect is not None), "-")
    if len(held) == 1:
        c, r = held[0]
        head = (
            f"of the {len(pairs)} ingredients taken away or swapped one at a time, only {c.ingredient} keeps it "
            f"finite: {r.b} {_diverged(r, 'b')} seeds diverged, the full recipe {recipe} ({r.test}{_holm(r)})"
        )
    elif held:
        head = (
            f"each of {'; '.join(c.ingredient for c, _ in held)} keeps it finite (seeds diverged without it: "
            + "; ".join(f"{c.ingredient} {_diverged(r, 'b')}{_holm(r)}" for c, r in held)
            + f"; the full recipe {recipe})"
        )
    else:
        head = f"no ingredient taken away alone is shown to keep it finite (the full recipe: {recipe} diverged)"
    tail = ""
    if not_held:
        tail += f" Not what keeps it finite (seeds diverged without it): {_counted(not_held)}."
    if undecided:
        tail += f" Undecided: {_counted(undecided)}."
    return f"{model}, what keeps it finite: {head}.{tail}"


def _accuracy_sentence(model: str, pairs: Sequence[tuple[Claim, ClaimResult]]) -> str:
    """What ``model`` needs for accuracy, from its accuracy claims' verdicts."""

    def effects(ps: Sequence[tuple[Claim, ClaimResult]]) -> str:
        return "; ".join(
            f"{c.ingredient} ({'untested' if r.effect is None else format_amount(r.metric, r.effect)}{_holm(r)})"
            for c, r in ps
        )

    needed = [(c, r) for c, r in pairs if r.verdict == "held"]
    # not held because the variant is significantly more accurate: the recipe does better without it
    better = [(c, r) for c, r in pairs if r.verdict == "not held" and (r.effect or 0) > 0 and _significant(r)]
    not_needed = [(c, r) for c, r in pairs if r.verdict == "not held" and (c, r) not in better]
    undecided = [(c, r) for c, r in pairs if r.verdict == "inconclusive"]
    parts = [f"Needed: {effects(needed) or 'none shown'}"]
    if not_needed:
        parts.append(f"Not needed: {effects(not_needed)}")
    if better:
        parts.append(f"Better without it (its variant more accurate): {effects(better)}")
    if undecided:
        parts.append(f"Undecided: {effects(undecided)}")
    return (
        f"{model}, what it needs for accuracy (the recipe without the ingredient minus the full recipe, final test "
        f"accuracy, a diverged seed counted at chance). {'. '.join(parts)}."
    )


def _significant(r: ClaimResult) -> bool:
    return r.p_adjusted is not None and r.p_adjusted < r.alpha


def ingredient_sentences(claims: Sequence[Claim], results: Sequence[ClaimResult]) -> list[str]:
    """Per regime and normalized model of an ablation, two sentences computed from its claims'
    verdicts that name the ingredients: which keep the run finite (its divergence claims held:
    "only X keeps it finite" when one is), and which it needs for accuracy (its accuracy claims
    held), with the counts, effects and Holm p-values behind them. Claims without an ingredient
    are left out; ``results`` are matched to ``claims`` by id and regime. Empty without an ablation."""
    by_key = {(r.id, r.regime): r for r in results}
    groups: dict[tuple, dict[str, list]] = {}
    for c in claims:
        r = by_key.get((c.id, c.regime))
        if not is_ablation(c) or r is None:
            continue
        model = f"{family_label(c.family)} with {recipe_of(c).label()} ({c.regime})"
        group = groups.setdefault((c.regime, model), {"finite": [], "accuracy": []})
        group["finite" if c.metric == DIVERGED else "accuracy"].append((c, r))
    out = []
    for (_, model), group in groups.items():
        if group["finite"]:
            out.append(_finite_sentence(model, group["finite"]))
        if group["accuracy"]:
            out.append(_accuracy_sentence(model, group["accuracy"]))
    return out
