"""Tables: the rich tables the CLI prints and report.html shows, reachable from the library: those
of the runs of train, compare and the sweeps (each run, the aggregate over seeds, the paired
comparisons, the baselines, a sweep's grid cells), and which of them a command prints by default
(:func:`brief`). The claims' are :mod:`lnbench.report.claim_tables`', the confirm stage's plans
:mod:`lnbench.report.confirm_tables`', the checks' :mod:`lnbench.report.check_tables`'; each is
printed at the terminal's width by :func:`lnbench.report.table_fit.fit`.

``runs_table``, ``aggregate_table`` and ``comparisons_table`` return :class:`rich.table.Table`
objects a notebook can print with ``rich.print``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from lnbench.analysis import stats
from lnbench.analysis.aggregate import condition_label
from lnbench.analysis.comparisons import Comparison
from lnbench.analysis.grid import best_cell
from lnbench.analysis.metrics import pair_column
from lnbench.names import family_label, model_label, norm_label, plural
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
        if seeds and any(r.shares_ensemble_time for r in rows):
            table.caption += "; the seeds of a cell that trains as one ensemble each show about the ensemble's time (its members' folders close in turn)"
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


def comparisons_table(
    comparisons: Sequence[Comparison], title: str = "paired comparisons", detail: bool = True
) -> Table:
    """Every tested pair: effect (a minus b) with its 95% interval, test, raw and Holm p; a
    confirmed compare (``--confirm``) adds the stage that decided each. ``detail``: a
    :class:`ComparisonsTable`, which the console leaves to ``--verbose`` (:func:`brief`); else
    a table printed by default (the answer of a confirm stage)."""
    staged = any(c.stage for c in comparisons)
    table = (ComparisonsTable if detail else Table)(title=title, title_justify="left", caption_justify="left")
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
