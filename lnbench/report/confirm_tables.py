"""The confirm stage's plans from the pilot (``--confirm``), printed before it runs: per claim of
``lnbench claims`` or per paired comparison of ``lnbench compare``, what the stage does with it
and why."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from lnbench.analysis.metrics import pair_column
from lnbench.names import family_label, group_label, norm_label


def confirm_plan_table(plan: Any, max_seeds: int) -> Table:
    """``lnbench claims --confirm``'s plan (:class:`lnbench.experiments.claims.ConfirmPlan`):
    per claim its pilot verdict and what the confirm stage does with it, and why."""
    from lnbench.analysis import claims as claims_mod

    table = Table(title="confirm stage: the plan from the pilot", title_justify="left", caption_justify="left")
    for col in ("model", "claim", "regime", "pilot: a - b [95% CI]", "pilot verdict", "plan", "why"):
        table.add_column(col, no_wrap=col in ("regime", "pilot: a - b [95% CI]", "pilot verdict", "plan"))
    words = {"keep": "kept", "untested": "not run", "undecidable": "not run"}
    for c, r, p in zip(plan.claims, plan.pilot, plan.plans):
        verdict = r.verdict + (", borderline" if r.borderline else "")
        what = f"{p.seeds} fresh seeds" if p.action == "confirm" else words[p.action]
        table.add_row(
            family_label(c.family).split(" (")[0], c.id, c.regime, claims_mod.format_effect(r), verdict, what, p.why
        )
    fresh = "; ".join(f"{regime}: seeds {s[0]}-{s[-1]}" for regime, s in plan.fresh.items()) or "none"
    table.caption = (
        f"fresh seeds (at most --max-seeds {max_seeds} per regime): {fresh}. N is planned from the pilot's effect and "
        "the sd its test used: for a less-than claim the paired t-test's power (or its interval's chance to lie inside "
        "the margin) at 0.04 / the number of less-than claims confirmed (Holm's strictest step); for an equivalence "
        "claim the chance that its 96% interval lies inside the margin (or outside it). Kept: the pilot's verdict "
        "stands at level 0.01."
    )
    return table


def compare_plan_table(plan: Any, max_seeds: int) -> Table:
    """``lnbench compare --confirm``'s plan (:class:`lnbench.experiments.compare.ComparePlan`):
    per paired comparison of the pilot its Holm p and what the confirm stage does with it."""
    table = Table(title="confirm stage: the plan from the pilot", title_justify="left", caption_justify="left")
    for col in ("model", "metric", "a vs b", "pilot: a - b", "Holm p", "plan", "why"):
        table.add_column(col, no_wrap=col in ("metric", "pilot: a - b", "Holm p", "plan"))
    words = {"keep": "kept", "untested": "not run", "undecidable": "not run"}
    for c, p in zip(plan.pilot, plan.plans):
        group, _, metric = c.holm_family.rpartition("/")
        effect = f"{c.mean_diff:+.3f} nats" if metric == "mean_train_loss" else f"{100 * c.mean_diff:+.1f} points"
        table.add_row(
            group_label(group),
            pair_column(metric),
            f"{norm_label(c.norm_a)} vs {norm_label(c.norm_b)}",
            effect,
            f"{c.p_adjusted:.2g}",
            f"{p.seeds} fresh seeds" if p.action == "confirm" else words[p.action],
            p.why,
        )
    fresh = "; ".join(
        f"{group_label(g)}: {', '.join(norm_label(n) for n in norms)} on seeds {s[0]}-{s[-1]}"
        for g, norms in plan.fresh.items()
        for s in [next(iter(norms.values()))]
    )
    table.caption = (
        f"fresh seeds (at most --max-seeds {max_seeds}): {fresh or 'none'}. Kept: Holm p < 0.01 in the pilot. N: the "
        "paired t-test's 80% power for the pilot's effect and sd at 0.04 / the comparisons its family confirms."
    )
    return table
