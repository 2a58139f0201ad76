"""``lnbench sweep``: every cell of ``sweep.grid`` (the product of its values) x seed.

One child run per cell and seed, named after the cell's values; per cell the aggregate over
seeds; each norm vs NoNorm paired at every other grid value (Holm over all); a figure of the
final accuracy against each swept key, one line per norm (:mod:`lnbench.analysis.grid`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from lnbench.analysis import grid
from lnbench.config import RunConfig
from lnbench.config.checks import check_grid_keys_apply, check_memory_of_families
from lnbench.experiments import driver
from lnbench.experiments.base import (
    Cell,
    Experiment,
    comparisons_of,
    copy_sources,
    run_name,
    seed_cells,
)
from lnbench.names import plural
from lnbench.records.folder import RunFolder
from lnbench.records.schema import SummaryRow
from lnbench.report import tables


class Sweep(Experiment):
    kind = "sweep"
    figure_group = "sweep"

    def check(self, spec: RunConfig) -> None:
        super().check(spec)
        cells = grid.check_grid(spec)  # first: the keys and values themselves
        check_grid_keys_apply(spec)
        for changes in cells:  # each cell's own memory: a grid over model.num_layers or hidden_size
            cfg = spec.with_changes(**changes)
            check_memory_of_families(cfg, [cfg.model.family])

    def plan(self, spec: RunConfig, parent: Path) -> list[Cell]:
        return seed_cells(spec, grid.check_grid(spec), parent, spec.compare.target_acc, grid.cell_name)

    def baselines(self, spec: RunConfig) -> Any:
        # a grid over the data has no one data set to fit a baseline on
        return None if any(k.startswith("data.") for k in spec.sweep.grid or {}) else super().baselines(spec)

    def analyse(self, spec: RunConfig, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        settings = list({repr(list(c.setting.items())): c.setting for c in cells}.values())  # in grid order
        setting_of_row = [settings.index(cell.setting) for cell in cells for _ in cell.cfgs]
        rows_by_setting = [[r for r, k in zip(rows, setting_of_row) if k == j] for j in range(len(settings))]
        entries = grid.aggregate(settings, rows_by_setting)
        for entry, same in zip(entries, same_settings(cells, settings)):
            entry["same_runs_as"] = None if same is None else entries[same]["values"]
        comparisons = grid.comparisons(settings, rows_by_setting)
        best = grid.best_cell(entries)
        chosen = [
            {"values": b["values"], "selected_on": "val" if b["mean_final_val_acc"] is not None else "test"}
            for b in grid.best_cells(entries)
        ]
        return {
            "target_acc": spec.compare.target_acc,
            "grid": spec.sweep.grid,
            "seeds": spec.seed_list,
            "baselines": baselines,
            "cells": entries,
            "best_cell": None if best is None else chosen[0],
            "best_cells": chosen,
            "comparisons": [c.to_dict() for c in comparisons],
            "verdicts": grid.sentences(entries, comparisons),
        }

    def annotate_rows(self, spec: RunConfig, cells: Sequence[Cell], summary_rows: list[dict]) -> None:
        values = [{k.replace("__", "."): v for k, v in cell.setting.items()} for cell in cells for _ in cell.cfgs]
        for row, v in zip(summary_rows, values):
            row["values"] = v

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        from lnbench.report import figures

        summary = RunFolder(path).summary() or {}
        entries = summary.get("cells") or []
        if not any(e["mean_final_test_acc"] is not None for e in entries):
            return []
        keys = [key for key in summary.get("grid", {}) if key != "model.norm"]
        return self.draw_figures(figures.SweepData(entries, keys), into or path)

    def tables(self, path: Path, summary: dict) -> list[Table]:
        out = []
        if summary.get("baselines"):
            out.append(tables.baselines_table(summary["baselines"]))
        if summary.get("cells"):
            n_seeds = len(summary.get("seeds") or [])
            title = (
                f"lnbench sweep: {run_name(path)}, {plural(len(summary['cells']), 'cell')} x {plural(n_seeds, 'seed')}"
            )
            out.append(tables.grid_table(summary["cells"], title))
        comparisons = comparisons_of(summary)
        shown = [c for c in comparisons if c.significant]
        if shown:
            title = f"significant paired comparisons ({len(shown)} of {len(comparisons)}; all in summary.json)"
            out.append(tables.comparisons_table(shown, title))
        return out


SWEEP = Sweep()


def same_settings(cells: Sequence[Cell], settings: list[dict]) -> list[int | None]:
    """Per setting (a grid cell), the earlier setting whose runs it copies, seed for seed
    (:func:`lnbench.experiments.base.copy_sources`: every run of the same effective config, as
    ``model.norm_gain_init`` with NoNorm), or None: a setting trained, or copied only in part."""
    index = [settings.index(cell.setting) for cell in cells]
    sources = copy_sources(cells)
    out: list[int | None] = []
    for j in range(len(settings)):
        mine = [k for k in range(len(cells)) if index[k] == j]
        of = {index[sources[k]] if k in sources else None for k in mine}
        out.append(of.pop() if len(of) == 1 else None)
    return out


sweep = driver.entry(
    SWEEP,
    """``lnbench sweep``: every cell of ``cfg.sweep.grid`` x seed; see the module docstring.

    summary.json: ``grid``, ``cells`` (the aggregate per cell), ``rows`` (each with its cell's
    ``values``), ``comparisons``, ``verdicts``. ``options``: :class:`lnbench.experiments.base.LaunchOptions`.

    Raises:
        ConfigError: a bad grid, bad seeds, ..., before anything is written.
    """,
)
