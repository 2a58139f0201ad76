"""The tables of ``lnbench claims``: the claims with their verdicts, the claim x task verdicts,
and the baselines of each regime's data."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from lnbench.analysis.metrics import METRICS
from lnbench.names import family_label


def claims_table(claims: Sequence[dict], title: str = "lnbench claims") -> Table:
    """The claims of ``summary.json`` (:class:`lnbench.analysis.claims.ClaimResult` dicts) with
    their verdicts; a confirmed run (``--confirm``) adds the stage that decided each verdict."""
    from lnbench.analysis import claims as claims_mod

    staged = any(r.get("stage") for r in claims)
    levels = sorted({r.get("alpha", 0.05) for r in claims})
    ci = "a - b [95% CI]" if levels == [0.05] else "a - b [CI]"
    table = Table(title=title, title_justify="left", caption_justify="left")
    columns = ["model", "claim", "regime", "metric", ci, "seeds", "Holm p", "verdict"] + (["stage"] if staged else [])
    for col in columns:
        width = {"model": 11, "claim": 30, "metric": 16}.get(col)
        table.add_column(
            col,
            justify="right" if col in ("seeds", "Holm p") else "left",
            no_wrap=col in ("regime", ci, "verdict"),
            min_width=width,
        )
    style = {"held": "bold green", "not held": "bold red", "inconclusive": "yellow"}
    for r in claims:
        holm = "-" if r["p_adjusted"] is None else f"{r['p_adjusted']:.2g}"
        res = claims_mod.ClaimResult(**r)
        cells = [
            family_label(r["family"]).split(" (")[0],
            r["claim"],
            r["regime"],
            METRICS[r["metric"]].column,
            claims_mod.format_effect(res),
            str(r["n_seeds"]),
            holm,
            f"[{style[r['verdict']]}]{r['verdict']}[/]" + (", borderline" if r.get("borderline") else ""),
        ]
        if staged:
            cells.append(claims_mod.stage_label(res))
        table.add_row(*cells)
    table.caption = (
        "a - b: mean over seeds of the paired difference; less-than claims: held if Holm p < 0.05 with the claimed sign "
        "and the effect at least the margin; equivalence claims: held if the 95% CI lies within the margin (margins: lnbench claims --list); "
        "borderline: the verdict differs at level 0.01 or 0.1, so another machine's rounding can flip it"
    )
    if any(r["metric"] == "diverged" for r in claims):
        table.caption += (
            "; seeds diverged: k of n seeds of each side, held if Holm p < 0.05 (Fisher's exact test, one-sided) and "
            "the difference at least the margin, not held if Newcombe's 95% CI lies within it"
        )
    if staged:
        table.caption += (
            "; stage: 'pilot' (decided on the pilot's seeds, standing at level 0.01), 'confirm' (on fresh seeds alone: "
            "Holm at 0.04 and 96% CIs, so that both stages together keep 0.05), 'not decidable' (it needs more seeds "
            "than --max-seeds, or the pilot had no test)"
        )
    return table


def condition_cells_table(cells: Sequence[dict]) -> Table:
    """An ablation's conditions (``summary.json`` ``cells``,
    :func:`lnbench.analysis.ablation.condition_cells`): per regime and condition, the seeds that
    diverged (k of n) and the mean final test accuracy, over the finished seeds and with a diverged
    seed counted at chance."""
    table = Table(title="each condition's seeds", title_justify="left", caption_justify="left")
    for col in ("regime", "model", "condition", "diverged", "test acc (finished)", "test acc (diverged at chance)"):
        table.add_column(col, justify="right" if col.startswith(("diverged", "test")) else "left")
    show = lambda x: "-" if x is None else f"{x:.1%}"  # noqa: E731
    for c in cells:
        table.add_row(
            c["regime"],
            family_label(c["family"]).split(" (")[0],
            c["condition"],
            f"{c['n_diverged']} of {c['n_seeds']}",
            show(c["mean_final_test_acc"]),
            show(c["mean_final_test_acc_at_chance"]),
        )
    table.caption = (
        "test acc: the mean over seeds of the final test accuracy, over the seeds that finished, and over every seed "
        "with a diverged one counted at chance (1 / the number of classes), as the accuracy claims compare them"
    )
    return table


def claims_by_task_table(table: Sequence[dict], tasks: Sequence[str]) -> Table:
    """The claim x task verdicts (``summary.json`` ``claims_by_task``,
    :func:`lnbench.analysis.claim_tasks.by_task`): one row per claim, one column per task."""
    style = {"held": "bold green", "not held": "bold red", "inconclusive": "yellow", "n/a": "dim"}
    out = Table(title="claims x tasks", title_justify="left", caption_justify="left")
    out.add_column("model", min_width=11)
    out.add_column("claim", min_width=30)
    for task in tasks:
        out.add_column(task, no_wrap=True)
    for row in table:
        cells = []
        for task in tasks:
            v = row["tasks"].get(task)
            if v is None:
                cells.append("-")
                continue
            text = f"[{style[v['verdict']]}]{v['verdict']}[/]" + (", borderline" if v.get("borderline") else "")
            cells.append(text)
        out.add_row(family_label(row["family"]).split(" (")[0], row["claim"], *cells)
    out.caption = (
        "each claim in its regime with each task's data (lnbench.analysis.claim_tasks); Holm within each task; "
        "n/a: the task cannot measure the claim's metric (the input-scale claims need trend's per-sequence scale)"
    )
    return out


def regime_baselines_table(baselines: dict[str, Sequence[dict]]) -> Table:
    """``lnbench claims``: the baselines of each regime's data (mean over its seeds), one row per regime."""
    names = [b["label"] for b in next(iter(baselines.values()), [])]
    table = Table(title="baselines on each regime's data (mean over seeds)", title_justify="left")
    table.add_column("regime")
    for name in names:
        table.add_column(name, justify="right")
    for regime, bs in baselines.items():
        table.add_row(regime, *[f"{b['mean']:.1%}" for b in bs])
    return table
