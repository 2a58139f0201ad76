"""``lnbench sweep``: any grid of config values, its cells, their aggregate and paired tests.

``sweep.grid`` maps config keys (``section.key``, e.g. ``data.seq_len``) to lists of values; the
cells are the product of the lists, each trained with every seed of the experiment, each a
child run folder named after its values (``seq_len-20_norm-layer_seed0``). Aggregation and
comparisons read the rows only:

- per cell: mean, sd and t interval over seeds of the final test accuracy, mean train loss,
  diverged seeds, and with a validation split (``data.n_val`` > 0) the mean final validation
  accuracy, which then picks the best cell (a choice made on the test set would report an
  optimistic test accuracy);
- with ``model.norm`` in the grid and ``none`` among its values: each norm against NoNorm at
  every combination of the other keys, paired over seeds (:func:`lnbench.analysis.stats.paired_over_seeds`,
  accuracy with its resolution 1 / n_test), Holm over all comparisons of the sweep.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from statistics import mean, stdev

from lnbench.analysis import stats
from lnbench.analysis.aggregate import selected_on
from lnbench.config import ConfigError, RunConfig
from lnbench.config.schema import GRID_SECTIONS, is_grid_key
from lnbench.names import norm_label
from lnbench.records.schema import SummaryRow


def _first_error(exc: Exception) -> str:
    """The first message of pydantic's ValidationError (or of any exception), without its prefix."""
    errors = exc.errors() if hasattr(exc, "errors") else [{"msg": str(exc)}]
    return str(errors[0]["msg"]).removeprefix("Value error, ")


def check_grid(cfg: RunConfig) -> list[dict]:
    """The grid's cells as ``section__key`` changes, in product order; each value checked.

    Raises:
        ConfigError: no grid, a key outside data/model/train or unknown, an empty list, or a
            value the schema refuses (naming the key and the value).
    """
    grid = cfg.sweep.grid
    alone: dict[tuple[str, str], str] = {}  # (key, repr(value)) -> why the base config refuses it alone
    if not grid:
        raise ConfigError(
            "sweep.grid: empty; give config keys and their values, e.g. sweep.grid: {data.seq_len: [10, 20], model.norm: [none, layer]}"
        )
    for key, values in grid.items():
        section, _, leaf = key.partition(".")
        if not is_grid_key(key):
            raise ConfigError(
                f"sweep.grid: {key!r}: expected section.key with section one of {', '.join(GRID_SECTIONS)}"
            )
        allowed = type(getattr(cfg, section)).model_fields
        if leaf not in allowed:
            raise ConfigError(f"sweep.grid: {key}: unknown key; allowed in {section}: {', '.join(allowed)}")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.grid: {key}: expected a non-empty list of values, got {values!r}")
        validated = []
        for v in values:
            try:
                validated.append(getattr(getattr(cfg.with_changes(**{f"{section}__{leaf}": v}), section), leaf))
            except Exception as exc:  # pydantic's ValidationError: one line naming the key
                # refused on the base config alone; it may be fine with the grid's other keys
                # (train.momentum with a grid over train.optimizer): judged with them below
                alone[(key, repr(v))] = f"sweep.grid: {key}: value {v!r}: {_first_error(exc)}"
                validated.append(v)
        if len({repr(v) for v in validated}) != len(values):  # 1 and 1.0 of a float key are one value
            raise ConfigError(f"sweep.grid: {key}: duplicate values in {values}")
    keys = [k.replace(".", "__") for k in grid]
    cells = [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())]
    refused: list[tuple[dict, str]] = []
    for changes in cells:  # a combination may be impossible even when each value is fine
        try:
            cfg.with_changes(**changes)
        except Exception as exc:  # noqa: BLE001
            refused.append((changes, f"sweep.grid: the cell {cell_label(changes)}: {_first_error(exc)}"))
    if refused:
        bad = {id(changes) for changes, _ in refused}
        for (key, value), message in alone.items():  # a value refused alone and in every cell it is in
            cells_with = [c for c in cells if repr(c[key.replace(".", "__")]) == value]
            if all(id(c) in bad for c in cells_with):
                raise ConfigError(message)
        raise ConfigError(refused[0][1])
    named: dict[str, dict] = {}
    for changes in cells:  # each cell its own run folder, whatever the grid
        other = named.setdefault(cell_name(changes), changes)
        if other is not changes:
            raise ConfigError(
                f"sweep.grid: the cells {cell_label(other)} and {cell_label(changes)} would share the run folder"
                f" {cell_name(changes)!r}; give values that differ as text"
            )
    return cells


def cell_label(changes: dict) -> str:
    """``seq_len=20, norm=layer``."""
    return ", ".join(f"{k.partition('__')[2]}={v}" for k, v in changes.items())


CELL_NAME_MAX = 70  # characters of a cell's run-folder name (a seed's adds ``_seed<k>``)


def cell_name(changes: dict) -> str:
    """A child-run name from the cell's values: ``seq_len-20_norm-layer`` (safe characters only).

    A name that is cut to :data:`CELL_NAME_MAX` characters, or whose values held other characters
    than ``A-Za-z0-9_.-``, ends in ``-`` and 8 hex digits of the SHA-256 of the cell's keys and
    values, so that cells cut or cleaned alike keep their own folders (the same for every run of
    the same grid, as ``--resume`` needs). :func:`check_grid` refuses a grid whose names still clash.
    """
    name = "_".join(f"{k.partition('__')[2]}-{v}" for k, v in changes.items())
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", name)
    if safe == name and len(name) <= CELL_NAME_MAX:
        return name
    digest = hashlib.sha256(repr(list(changes.items())).encode()).hexdigest()[:8]
    return f"{safe[: CELL_NAME_MAX - 9]}-{digest}"


def aggregate(cells: Sequence[dict], rows_by_cell: Sequence[Sequence[SummaryRow]]) -> list[dict]:
    """One entry per cell over its seeds: ``values`` (key -> value), ``n_seeds``, ``n_diverged``,
    ``mean_final_test_acc``, ``std_final_test_acc``, ``ci95_final_test_acc`` (t interval, its sd
    floored at the resolution 1 / n_test, clipped to [0, 1]), ``mean_mean_train_loss``, ``mean_final_val_acc`` (None without a validation split),
    ``selected_on`` (``val``, ``test`` or ``mixed``: :func:`lnbench.analysis.aggregate.selected_on`)."""
    out = []
    for changes, rows in zip(cells, rows_by_cell):
        accs = [r.final_test_acc for r in rows if r.ok and r.final_test_acc is not None]  # ok implies a value
        losses = [r.mean_train_loss for r in rows if r.ok and r.mean_train_loss is not None]
        val_accs = [r.final_val_acc for r in rows if r.ok and r.final_val_acc is not None]
        ci = None
        if len(accs) > 1:
            ci = list(stats.accuracy_mean_interval(accs, min(r.n_test for r in rows if r.ok)))
        out.append(
            {
                "values": {k.replace("__", "."): v for k, v in changes.items()},
                "n_seeds": len(rows),
                "n_diverged": sum(r.status == "diverged" for r in rows),
                "mean_final_test_acc": mean(accs) if accs else None,
                "std_final_test_acc": stdev(accs) if len(accs) > 1 else None,
                "ci95_final_test_acc": ci,
                "mean_mean_train_loss": mean(losses) if losses else None,
                "mean_final_val_acc": mean(val_accs) if val_accs else None,
                "selected_on": selected_on(rows),
            }
        )
    return out


def comparisons(cells: Sequence[dict], rows_by_cell: Sequence[Sequence[SummaryRow]]):
    """Each norm against NoNorm at every combination of the other keys (module docstring), for
    final test accuracy and mean train loss; Holm over all of them. Empty without a norm axis."""
    from lnbench.analysis.comparisons import holm_family, pair_by_seed, paired_test

    if not cells or "model__norm" not in cells[0]:
        return []
    by_key = {tuple(sorted(c.items())): rows for c, rows in zip(cells, rows_by_cell)}
    tests = []
    for c, rows in zip(cells, rows_by_cell):
        if c["model__norm"] == "none":
            continue
        base = tuple(sorted({**c, "model__norm": "none"}.items()))
        if base not in by_key:
            continue
        others = cell_label({k: v for k, v in c.items() if k != "model__norm"})
        for metric in ("final_test_acc", "mean_train_loss"):
            pairs = pair_by_seed(rows, by_key[base], metric)
            result = paired_test(pairs, metric) if len(pairs) > 1 else None
            if result is not None:
                spec = {
                    "norm_a": c["model__norm"],
                    "norm_b": "none",
                    "metric": metric,
                    "condition_a": others,
                    "condition_b": others,
                    "n_seeds": len(pairs),
                }
                tests.append((spec, result))
    return holm_family("sweep", tests)


def sentences(entries: Sequence[dict], comps: Sequence) -> list[str]:
    """The sweep's verdicts: the best and worst cell (of each task, when the grid varies
    ``data.task``), each cell with the same runs as an earlier one (``same_runs_as``), and each
    significant comparison.

    With a validation split in every cell, the best cell is the one of the highest mean final
    validation accuracy, reported with its test accuracy (:func:`best_cells`)."""
    out = []
    fmt = lambda e: ", ".join(f"{k.partition('.')[2]}={v}" for k, v in e["values"].items())  # noqa: E731
    for task, cells in by_task(entries).items():  # a task's accuracies against its own only
        on = "" if task is None else f" on {task}"
        done = [e for e in cells if e["mean_final_test_acc"] is not None]
        if done:
            best = max(done, key=lambda e: e["mean_final_test_acc"])
            worst = min(done, key=lambda e: e["mean_final_test_acc"])
            out.append(
                f"Final test accuracy{on} (mean over seeds) ranges from {worst['mean_final_test_acc']:.1%} "
                f"({fmt(worst)}) to {best['mean_final_test_acc']:.1%} ({fmt(best)})."
            )
        chosen = best_cells(cells)
        if chosen and chosen[0].get("mean_final_val_acc") is not None:
            out.append(
                f"Chosen on the validation split: the best cell{on} is {fmt(chosen[0])} (final validation accuracy "
                f"{chosen[0]['mean_final_val_acc']:.1%}, mean over seeds), whose final test accuracy is "
                f"{chosen[0]['mean_final_test_acc']:.1%}."
            )
    for e in entries:
        same = e.get("same_runs_as")
        if same:
            keys = [k for k in e["values"] if e["values"][k] != same.get(k)]
            out.append(
                f"{fmt(e)} gives the same runs as {fmt({'values': same})}, seed for seed: {', '.join(keys)} "
                f"{'changes' if len(keys) == 1 else 'change'} nothing in its model, so it was trained once and is "
                "shown in both cells, not a replicate (a tie, never chosen over the first)."
            )
    dead = [e for e in entries if e["n_seeds"] and e["n_diverged"] == e["n_seeds"]]
    if dead:
        out.append(
            "Every seed diverged in: "
            + "; ".join(", ".join(f"{k}={v}" for k, v in e["values"].items()) for e in dead)
            + "."
        )
    if not comps:
        out.append(
            "No paired comparisons: the grid has no model.norm axis with none among its values (or too few seeds)."
        )
        return out
    sig = [c for c in comps if c.significant]
    out.append(
        f"Each norm vs NoNorm at every other grid value, paired over seeds, on final test accuracy and mean train loss; "
        f"Holm over all {len(comps)} comparisons ({len(comps) // 2} per metric): "
        f"{len(sig)} significant at {stats.ALPHA:g}."
    )
    for c in sig:
        size = (
            f"{100 * c.mean_diff:+.1f} points [{100 * c.ci95[0]:+.1f}, {100 * c.ci95[1]:+.1f}]"
            if c.metric == "final_test_acc"
            else f"{c.mean_diff:+.3f} nats [{c.ci95[0]:+.3f}, {c.ci95[1]:+.3f}]"
        )
        what = "final test accuracy" if c.metric == "final_test_acc" else "mean train loss"
        out.append(
            f"{norm_label(c.norm_a)} minus NoNorm at {c.condition_a or 'every cell'}, {what}: {size}, Holm p = {c.p_adjusted:.2g}."
        )
    return out


def task_of(entry: dict) -> str | None:
    """The task of a cell (its ``data.task`` value), None when the grid does not vary the task."""
    return entry["values"].get("data.task")


def by_task(entries: Sequence[dict]) -> dict[str | None, list[dict]]:
    """The cells grouped by :func:`task_of`, tasks in grid order: accuracies and losses of
    different tasks (2 classes against 10, cross-entropy over other labels) are not compared."""
    out: dict[str | None, list[dict]] = {}
    for e in entries:
        out.setdefault(task_of(e), []).append(e)
    return out


def best_cells(entries: Sequence[dict]) -> list[dict]:
    """The best cell of each task (:func:`by_task`; one when the grid does not vary ``data.task``):
    the highest mean final validation accuracy when every cell of the task with a result has one
    (``data.n_val`` > 0), else the highest mean final test accuracy (as without a validation
    split); a task none of whose cells has a result has none. Ties: the first in grid order, so a
    cell with the same runs as an earlier one (``same_runs_as``) is never chosen over it."""
    out = []
    for cells in by_task(entries).values():
        done = [e for e in cells if e["mean_final_test_acc"] is not None]
        if done:
            on_val = all(e.get("mean_final_val_acc") is not None for e in done)
            key = "mean_final_val_acc" if on_val else "mean_final_test_acc"
            out.append(max(done, key=lambda e: e[key]))
    return out


def best_cell(entries: Sequence[dict]) -> dict | None:
    """The sweep's best cell (:func:`best_cells`) when its cells are of one task; None when no
    cell has a result, or when the grid varies ``data.task``: there is no best across tasks, only
    one per task (:func:`best_cells`)."""
    if len(by_task(entries)) > 1:
        return None
    best = best_cells(entries)
    return best[0] if best else None


def by_key(entries: Sequence[dict], key: str) -> dict[str, list[tuple]]:
    """For a figure of the final accuracy against ``key``: per norm (or ``all``), the points
    ``(value, mean accuracy, (ci low, ci high))`` averaged over the cells at that value."""
    lines: dict[str, dict] = {}
    for e in entries:
        if e["mean_final_test_acc"] is None:
            continue
        norm = e["values"].get("model.norm", "all")
        lines.setdefault(norm, {}).setdefault(e["values"][key], []).append(e)
    out: dict[str, list[tuple]] = {}
    for norm, points in lines.items():
        out[norm] = []
        for value, es in points.items():
            m = mean(x["mean_final_test_acc"] for x in es)
            cis = [x["ci95_final_test_acc"] for x in es if x["ci95_final_test_acc"]]
            ci = (mean(c[0] for c in cis), mean(c[1] for c in cis)) if cis else (math.nan, math.nan)
            out[norm].append((value, m, ci))
    return out


def batch_size_grid(cfg: RunConfig) -> dict[str, list]:
    """``lnbench batchsize-sweep`` as a grid: ``{model.family: [sweep.family], model.norm:
    sweep.norms, train.batch_size: sweep.batch_sizes}`` (its cells are this grid's cells)."""
    return {
        "model.family": [cfg.sweep.family],
        "model.norm": list(cfg.sweep.norms),
        "train.batch_size": list(cfg.sweep.batch_sizes),
    }
