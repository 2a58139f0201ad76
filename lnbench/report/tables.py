"""Tables: the rich tables the CLI prints and report.html shows, reachable from the library.

``runs_table``, ``aggregate_table`` and ``comparisons_table`` return :class:`rich.table.Table`
objects a notebook can print with ``rich.print``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from lnbench.analysis import stats
from lnbench.analysis.aggregate import condition_label
from lnbench.analysis.comparisons import Comparison
from lnbench.analysis.grid import best_cell
from lnbench.analysis.metrics import METRICS, pair_column
from lnbench.names import family_label, group_label, model_label, norm_label, plural, seeds_train_together
from lnbench.records.schema import SummaryRow


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _num(x: float | None, fmt: str = ".3g") -> str:
    return "-" if x is None else format(x, fmt)


def _gains_differ(gains: Sequence[float | None]) -> bool:
    """Whether the rows' norms started at different gains (a column then says which)."""
    return len({g for g in gains if g is not None}) > 1


def split_note(splits: Sequence[str]) -> str:
    """Which split a selection read, for a column header: ``val``, ``test``, or, when the rows
    differ (a sweep over ``data.n_val``), ``val where n_val > 0, else test``."""
    kinds = set(splits) - {"mixed"}
    if "mixed" in splits or len(kinds) > 1:
        return "val where n_val > 0, else test"
    return kinds.pop() if kinds else "test"


class RunsTable(Table):
    """:func:`runs_table`'s: a row per run (see :func:`brief`)."""


class AggregateTable(Table):
    """:func:`aggregate_table`'s: a row per setting, over its seeds (see :func:`brief`)."""


class ComparisonsTable(Table):
    """:func:`comparisons_table`'s: a row per paired comparison (see :func:`brief`)."""


def brief(tables: Sequence[Table]) -> tuple[list[Table], list[Table]]:
    """The tables a command prints by default, and those it leaves to ``--verbose`` (report.html and
    ``lnbench show --all`` show them all): the paired comparisons (the verdicts say what they
    found), and the row of every run where the aggregate over seeds sums them up.

    Returns:
        ``(shown, left out)``, each in ``tables``' order.
    """
    over_seeds = any(isinstance(t, AggregateTable) for t in tables)
    detail: list[Table] = [
        t for t in tables if isinstance(t, ComparisonsTable) or (over_seeds and isinstance(t, RunsTable))
    ]
    return [t for t in tables if not any(t is d for d in detail)], detail


def runs_table(title: str, rows: Sequence[SummaryRow], target_acc: float, sweep: bool = False) -> Table:
    """One line per run: final test accuracy with its Wilson 95% interval over the test set (and the
    final validation accuracy when there is a validation split); the first epoch at the target, on
    the split its header names; an ``initial gain`` column when the rows' norm gains started at
    different values."""
    seeds = len({r.seed for r in rows}) > 1
    has_val = any(r.n_val for r in rows)
    split = split_note([r.selected_on for r in rows])
    has_bn = any(r.final_test_acc_batch_stats is not None for r in rows)
    gains = _gains_differ([r.initial_gain for r in rows])
    table = RunsTable(title=title, title_justify="left", caption_justify="left")
    columns = ["model", "norm"] + (["initial gain"] if gains else []) + (["batch"] if sweep else [])
    columns += ["seed"] if seeds else []
    columns += ["test acc [95% CI]"] + (["BN acc, batch stats"] if has_bn else []) + (["val acc"] if has_val else [])
    columns += ["train loss", "mean train loss"]
    columns += [] if sweep else [f"1st epoch >= {target_acc:.0%} ({split})"]
    columns += ["seconds", "status"]
    for col in columns:
        table.add_column(col, justify="left" if col in ("model", "norm", "status") else "right")
    for r in rows:
        acc = _pct(r.final_test_acc)
        if r.final_test_acc is not None and r.n_test:
            lo, hi = stats.accuracy_interval(r.final_test_acc, r.n_test)
            acc += f" [{lo:.1%}, {hi:.1%}]"
        cells = [
            model_label(r.family, r.norm_placement, r.norm_gain_init),
            condition_label(r.family, r.norm, r.batch_norm_stats),
        ]
        cells += [_num(r.initial_gain, "g")] if gains else []
        cells += [str(r.batch_size)] if sweep else []
        cells += [str(r.seed)] if seeds else []
        cells += [acc] + ([_pct(r.final_test_acc_batch_stats)] if has_bn else [])
        cells += [_pct(r.final_val_acc)] if has_val else []
        cells += [_num(r.final_train_loss), _num(r.mean_train_loss)]
        cells += [] if sweep else [str(r.first_epoch_at_target or "never")]
        status = "ok" if r.status == "completed" else f"[bold red]{r.status}[/]"
        cells += [_num(r.wall_seconds, ".1f"), status]
        table.add_row(*cells)
    n_test = rows[0].n_test if rows else None
    if n_test:
        table.caption = (
            f"test acc: eval mode (BatchNorm with running statistics), n_test = {n_test}, Wilson 95% interval; "
            "a diverged run has no final values"
        )
        if has_val:
            table.caption += (
                f"; val acc: the validation split (n_val = {max(r.n_val for r in rows)}, carved from the training data)"
            )
        if seeds and any(seeds_train_together(r.family, r.norm, r.batch_size) for r in rows):
            table.caption += "; the seeds of a cell that trains as one ensemble each show the ensemble's time"
    return table


def aggregate_table(entries: Sequence[dict], target_acc: float, sweep: bool = False) -> Table:
    """The aggregate over seeds (see :func:`lnbench.analysis.aggregate.aggregate_over_seeds`) as a table."""
    n = max((e["n_seeds"] for e in entries), default=0)
    table = AggregateTable(title=f"over {plural(n, 'seed')}", title_justify="left", caption_justify="left")
    gains = _gains_differ([e.get("initial_gain") for e in entries])
    columns = ["model", "norm"] + (["initial gain"] if gains else []) + (["batch"] if sweep else [])
    has_bn = any(e["mean_final_test_acc_batch_stats"] is not None for e in entries)
    has_val = any(e.get("mean_final_val_acc") is not None for e in entries)
    split = split_note([e.get("selected_on", "test") for e in entries])
    columns += ["test acc mean ± sd", "95% CI of mean", "range"] + (["BN batch stats"] if has_bn else [])
    columns += ["val acc mean"] if has_val else []
    columns += ["mean train loss"] + ([] if sweep else [f"reached {target_acc:.0%} ({split})"]) + ["diverged"]
    has_memoryless = any(e.get("vs_memoryless") for e in entries)
    columns += ["vs memoryless baseline"] if has_memoryless else []
    for col in columns:
        table.add_column(col, justify="left" if col in ("model", "norm", "vs memoryless baseline") else "right")
    for e in entries:
        std = f" ± {e['std_final_test_acc']:.1%}" if e["std_final_test_acc"] is not None else ""
        ci = e["ci95_final_test_acc"]
        reach = f"{e['n_reached_target']}/{e['n_seeds']}"
        if e["median_first_epoch_at_target"] is not None:
            reach += f", median {e['median_first_epoch_at_target']:g} ({e['min_first_epoch_at_target']}-{e['max_first_epoch_at_target']})"
        cells = [
            model_label(e["family"], e.get("norm_placement"), e.get("norm_gain_init")),
            condition_label(e["family"], e["norm"], e["batch_norm_stats"]),
        ]
        cells += [_num(e.get("initial_gain"), "g")] if gains else []
        cells += [str(e["batch_size"])] if sweep else []
        cells += [_pct(e["mean_final_test_acc"]) + std, f"{ci[0]:.1%} - {ci[1]:.1%}" if ci else "-"]
        cells += [f"{_pct(e['min_final_test_acc'])} - {_pct(e['max_final_test_acc'])}"]
        if has_bn:
            cells += [_pct(e["mean_final_test_acc_batch_stats"])]
        cells += [_pct(e.get("mean_final_val_acc"))] if has_val else []
        cells += [_num(e["mean_mean_train_loss"])] + ([] if sweep else [reach]) + [str(e["n_diverged"])]
        if has_memoryless:
            cells += [_memoryless_cell(e.get("vs_memoryless"))]
        table.add_row(*cells)
    table.caption = (
        "95% CI of mean: t interval over seeds, clipped to [0, 100%] (one seed: Wilson interval over the test set)"
    )
    if not sweep:
        table.caption += f"; reached: seeds that reached the target on the {split} split, median first epoch (range)"
    if has_memoryless:
        table.caption += (
            "; vs memoryless baseline: test accuracy minus a linear readout of x_T alone, paired on the same seeds and "
            "test sets (95% CI, Holm over the rows); 'did not learn': significantly below it or the whole interval "
            "within 2 points of it; 'not shown': neither of the two; borderline: 0.01 <= Holm p < 0.1"
        )
    return table


def _memoryless_cell(test: dict | None) -> str:
    """``+18.4 [+9.5, +27.3] learned``, ``+0.6 [-1.1, +1.3] did not learn`` or ``+13.2 [+0.6, +25.8]
    not shown`` (points; :func:`lnbench.analysis.comparisons.memoryless_tests`), ``, borderline`` when
    its Holm p is in [0.01, 0.1)."""
    if not test:
        return "-"
    effect = f"{100 * test['diff']:+.1f} [{100 * test['ci95'][0]:+.1f}, {100 * test['ci95'][1]:+.1f}]"
    borderline = ", borderline" if test.get("borderline") else ""
    if test["learned"]:
        return f"{effect} learned{borderline}"
    if test.get("did_not_learn"):
        return f"[bold yellow]{effect} did not learn{borderline}[/]"
    return f"{effect} not shown{borderline}"


def comparisons_table(comparisons: Sequence[Comparison], title: str = "paired comparisons") -> Table:
    """Every tested pair: effect (a minus b) with its 95% interval, test, raw and Holm p; a
    confirmed compare (``--confirm``) adds the stage that decided each."""
    staged = any(c.stage for c in comparisons)
    table = ComparisonsTable(title=title, title_justify="left", caption_justify="left")
    columns = ["model", "a", "b", "metric", r"a - b \[unadjusted 95% CI]", "test", "p", "Holm p", "verdict"]
    for col in columns + (["stage"] if staged else []):
        table.add_column(col, justify="right" if col in ("p", "Holm p") else "left")  # \[: not a markup tag
    for c in comparisons:
        if c.metric == "mean_train_loss":
            eff = f"{c.mean_diff:+.3f} [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}] nats"
        else:
            eff = f"{100 * c.mean_diff:+.1f} [{100 * c.ci95[0]:+.1f}, {100 * c.ci95[1]:+.1f}] pts"
        a = norm_label(c.norm_a) + (f" {c.condition_a}" if c.condition_a else "")
        b = norm_label(c.norm_b) + (f" {c.condition_b}" if c.condition_b else "")
        verdict = ("[bold]differs[/]" if c.significant else "n.s.") + (", borderline" if c.borderline else "")
        cells = [
            family_label(c.holm_family.split("/")[0]),
            a,
            b,
            pair_column(c.metric),
            eff,
            c.test,
            f"{c.p_value:.2g}",
            f"{c.p_adjusted:.2g}",
            verdict,
        ]
        if staged:
            cells.append(f"confirm ({c.n_seeds} fresh seeds)" if c.stage == "confirm" else c.stage)
        table.add_row(*cells)
    table.caption = f"Holm-Bonferroni within each family; differs: Holm p < {stats.ALPHA:g}"
    if staged:
        table.caption += (
            " (the confirm stage: < 0.04, on fresh seeds alone; 'pilot': Holm p < 0.01 on the pilot's seeds; "
            "'not decidable': it needs more seeds than --max-seeds)"
        )
    if any(c.borderline for c in comparisons):
        low, high = stats.BORDERLINE_ALPHAS
        table.caption += f"; borderline: {low:g} <= Holm p < {high:g}, another machine's rounding can flip it"
    return table


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


def baselines_table(baselines: Sequence[dict]) -> Table:
    """The baselines of :mod:`lnbench.training.baselines` (mean ± sd and range over seeds)."""
    n = len(baselines[0]["seeds"]) if baselines else 0
    table = Table(
        title=f"baselines on the same data (over {plural(n, 'seed')})", title_justify="left", caption_justify="left"
    )
    for col in ("baseline", "test acc mean ± sd", "range", "what it is"):
        table.add_column(col, justify="right" if col in ("test acc mean ± sd", "range") else "left")
    for b in baselines:
        sd = f" ± {b['sd']:.1%}" if b["sd"] is not None else ""
        table.add_row(
            b["label"],
            f"{b['mean']:.1%}{sd}",
            f"{min(b['acc_per_seed']):.1%} - {max(b['acc_per_seed']):.1%}",
            b["description"],
        )
    table.caption = "fit on each seed's training split, scored on its test split (scikit-learn LogisticRegression)"
    return table


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
    if staged:
        table.caption += (
            "; stage: 'pilot' (decided on the pilot's seeds, standing at level 0.01), 'confirm' (on fresh seeds alone: "
            "Holm at 0.04 and 96% CIs, so that both stages together keep 0.05), 'not decidable' (it needs more seeds "
            "than --max-seeds, or the pilot had no test)"
        )
    return table


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


def invariance_table(cells: Sequence[dict], draws: int) -> Table:
    """``invariance.json``'s cells as the paper's Table 1: measured verdict and largest change."""
    from lnbench.nn import invariance as inv

    table = Table(
        title=f"lnbench invariance: Ba et al. 2016, Table 1, measured (float64, eps {inv.EPS:g}, {draws} draws per cell)",
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("method")
    for _, label in inv.TRANSFORMATIONS:
        table.add_column(label, justify="center")
    users = [m for m in dict.fromkeys(c["method"] for c in cells) if m not in inv.METHODS]  # --norm's
    for method in [*inv.METHODS, *users]:
        if method in inv.METHODS:
            source = inv.ROW_SOURCES.get(method)
            label = inv.METHODS[method][0] + (f" ({source})" if source else "")
        else:
            label = f"{norm_label(method)} (yours: measured)"
        row = [label]
        for c in [c for c in cells if c["method"] == method]:
            mark = "" if c["agrees"] else f" [bold red]expected {c['expected']}[/]"
            color = "green" if c["agrees"] else "red"
            color = color if method in inv.EXPECTED else "default"
            row.append(f"[{color}]{c['measured']}[/] {c['max_change']:.0e}{mark}")
        table.add_row(*row)
    table.caption = (
        "each cell: measured verdict (I invariant, N not, ? unclear) and the largest change of the normalized summed inputs; "
        "green: as Ba et al.'s Table 1 (RMSNorm: as Zhang & Sennrich's Table 1; GroupNorm: as derived; both derived in "
        "lnbench/nn/invariance.py)"
    )
    return table


def table_data(table: Table) -> dict:
    """A rich table as plain data for HTML: ``{"title", "columns", "right", "rows", "caption"}``,
    rich markup removed (``right``: the right-aligned columns' indices)."""
    from rich.text import Text

    def plain(x) -> str:
        return Text.from_markup(x).plain if isinstance(x, str) else str(x)

    columns = [plain(c.header) for c in table.columns]
    cells = [[plain(x) for x in c.cells] for c in table.columns]
    rows = [list(r) for r in zip(*cells)] if cells else []
    right = [k for k, c in enumerate(table.columns) if c.justify == "right"]
    return {
        "title": plain(table.title or ""),
        "columns": columns,
        "right": right,
        "rows": rows,
        "caption": plain(table.caption or ""),
    }


def grid_table(entries: Sequence[dict], title: str = "cells over seeds") -> Table:
    """``lnbench sweep``: one line per grid cell, the final test accuracy over seeds (and the
    validation accuracy, with a validation split); the best cell (:func:`lnbench.analysis.grid.best_cell`)
    is marked, and the caption names the split it was chosen on; a cell with the same runs as an
    earlier one (``same_runs_as``) is marked ``=``."""
    keys = list(entries[0]["values"]) if entries else []
    has_val = any(e.get("mean_final_val_acc") is not None for e in entries)
    best = best_cell(entries)
    on_val = best is not None and best.get("mean_final_val_acc") is not None
    table = Table(title=title, title_justify="left", caption_justify="left")
    columns = [*keys, "test acc mean ± sd", "95% CI of mean"] + (["val acc mean"] if has_val else [])
    for col in [*columns, "mean train loss", "diverged", "best"]:
        table.add_column(col, justify="left" if col in keys else "right")
    for e in entries:
        sd = f" ± {e['std_final_test_acc']:.1%}" if e["std_final_test_acc"] is not None else ""
        ci = e["ci95_final_test_acc"]
        table.add_row(
            *[str(e["values"][k]) for k in keys],
            _pct(e["mean_final_test_acc"]) + sd,
            f"{ci[0]:.1%} - {ci[1]:.1%}" if ci else "-",
            *([_pct(e.get("mean_final_val_acc"))] if has_val else []),
            _num(e["mean_mean_train_loss"]),
            f"{e['n_diverged']}/{e['n_seeds']}",
            "*" if e is best else "=" if e.get("same_runs_as") else "",
        )
    table.caption = "95% CI of mean: t interval over seeds, clipped to [0, 100%]; best (*): the highest mean final " + (
        "val accuracy (chosen on the validation split)" if on_val else "test accuracy (chosen on the test split)"
    )
    if any(e.get("same_runs_as") for e in entries):
        table.caption += "; =: the same runs as an earlier cell (trained once; see the verdicts)"
    return table


def gradcheck_table(report: dict) -> Table:
    """``gradcheck.json`` as a table: each check's errors against its tolerance, PASS or FAIL."""
    import math

    shape = ",".join(str(n) for n in report.get("shape", []))
    table = Table(
        title=f"lnbench gradcheck: dtype {report.get('dtype')}, shape {shape}, seed {report.get('seed')}",
        title_justify="left",
        caption="rel error = max|a - b| / max(max(|a| + |b|), tiny)",
    )
    for col, justify in [
        ("group", "left"),
        ("check", "left"),
        ("max abs error", "right"),
        ("rel error", "right"),
        ("tolerance", "right"),
        ("result", "left"),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in report.get("checks", []):
        result = "[green]PASS[/]" if c["passed"] else "[bold red]FAIL[/]"
        errors = [
            f"{e:.2e}" if e is not None and math.isfinite(e) else "-" for e in (c["max_abs_error"], c["rel_error"])
        ]
        table.add_row(c["group"], c["name"], *errors, f"{c['tolerance']:.0e}", result)
    return table


def _cell_text(x) -> Text:
    return Text.from_markup(x) if isinstance(x, str) else x if isinstance(x, Text) else Text(str(x))


def _wrapped_lines(text: str, width: int) -> int:
    """The lines ``text`` takes wrapped greedily at its spaces into ``width`` columns (as rich wraps it)."""
    from rich.cells import cell_len

    n = 0
    for line in text.splitlines() or [""]:
        n, used = n + 1, 0
        for word in line.split():
            w = cell_len(word)
            if used and used + 1 + w > width:
                n, used = n + 1, w
            else:
                used += w + (1 if used else 0)
    return n


def _widths(column) -> tuple[int, int, int, int]:
    """A column's content widths: the narrowest (a wrapping column: its longest word, so that no
    word is ever cut; a no-wrap one: its longest line), the narrowest at which every value takes at
    most two lines, its values' longest line, and its longest line with the header."""
    from rich.cells import cell_len

    header, *cells = [_cell_text(x).plain for x in [column.header, *column.cells]]
    lines = lambda texts: max((cell_len(line) for t in texts for line in t.splitlines()), default=1)  # noqa: E731
    words = max((cell_len(word) for t in [header, *cells] for word in t.split()), default=1)
    narrowest = max(lines([header, *cells]) if column.no_wrap else words, column.min_width or 0)
    values = max(narrowest, lines(cells))
    two = next(w for w in range(narrowest, values + 1) if all(_wrapped_lines(c, w) <= 2 for c in cells))
    return narrowest, two, values, max(values, lines([header]))


def _compact(table: Table, gap: int) -> Table:
    """``table`` without its outer edge and column rules (a rule under the header stays): ``gap``
    + 1 spaces between columns, for a width its boxed layout would wrap past two lines a row."""
    import copy

    from rich import box

    compact = copy.copy(table)
    compact.box, compact.show_edge, compact.pad_edge = box.SIMPLE_HEAD, False, False
    compact.padding = (0, gap, 0, 0)
    return compact


def fit(table: Table, width: int) -> RenderableType:
    """``table`` laid out for ``width`` columns with every cell readable: each column at least as
    wide as its longest word (a no-wrap column: its longest line); the rest of the width goes first
    to keeping every value within two lines, then as many columns' values on one line as it can,
    then their headers, then shared out. Where the boxed table's values would need more than two
    lines, it loses its column rules, and then one of the two spaces between columns (:func:`_compact`). One block per row (``header: value``
    lines) when even the narrowest layout is wider than ``width``. rich alone shrinks columns
    below their words and cuts them ("Transform…"), or squeezes whole columns away.

    Returns:
        ``table`` itself when it fits as it is, a copy with column widths set, or a
        :class:`rich.console.Group` of blocks.
    """
    import copy

    ranges = [_widths(c) for c in table.columns]

    def extra_of(t: Table) -> int:
        return t._extra_width + sum(t._get_padding_width(k) for k in range(len(t.columns)))

    if sum(hi for *_, hi in ranges) + extra_of(table) <= width:
        return table
    two_lines = sum(two for _, two, *_ in ranges)
    for gap in (1, 0):  # the boxed table's values need more than two lines: two spaces between columns, then one
        if two_lines + extra_of(table) > width:
            table = _compact(table, gap)
    extra = extra_of(table)
    spare = width - extra - sum(lo for lo, *_ in ranges)
    if spare < 0:
        return _blocks(table, width)
    widths = [lo for lo, *_ in ranges]
    for stage in (1, 2, 3):  # every value within two lines, then on one line, then the headers, smallest needs first
        for k in sorted(range(len(ranges)), key=lambda k: ranges[k][stage] - widths[k]):
            if 0 < ranges[k][stage] - widths[k] <= spare:
                spare -= ranges[k][stage] - widths[k]
                widths[k] = ranges[k][stage]
    slack = sum(hi - w for w, (*_, hi) in zip(widths, ranges))
    widths = [w + spare * (hi - w) // slack for w, (*_, hi) in zip(widths, ranges)]  # slack > 0: it did not fit
    fitted = copy.copy(table)
    fitted.columns = [copy.copy(c) for c in table.columns]
    for column, w in zip(fitted.columns, widths):
        column.width = w
        column.overflow = "fold"  # never used: no column is narrower than its longest word
    return fitted


def _blocks(table: Table, width: int) -> RenderableType:
    """One block per row, ``header  value`` lines (values wrap under themselves), between the
    table's title and caption."""
    from rich.console import Group
    from rich.padding import Padding

    headers = [_cell_text(c.header).plain for c in table.columns]
    key_width = min(max((len(h) for h in headers), default=1) + 1, max(8, width // 3))
    parts: list[RenderableType] = []
    if table.title:
        parts.append(_cell_text(table.title))
    columns = [list(c.cells) for c in table.columns]
    for r in range(table.row_count):
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=key_width, overflow="fold")
        grid.add_column(overflow="fold")
        for header, cells in zip(headers, columns):
            grid.add_row(Text(f"{header}:", style="dim"), _cell_text(cells[r]))
        parts.append(Padding(grid, (1 if r else 0, 0, 0, 2)))
    if table.caption:
        parts.append(_cell_text(table.caption))
    return Group(*parts)
