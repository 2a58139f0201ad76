"""``lnbench batchsize-sweep``: every norm x batch size x seed of one model family.

Every cell of one seed uses the same data, initial weights and number of epochs (so the same
number of training samples; smaller batches take more, noisier steps). The cells come from the
grid engine (:func:`lnbench.analysis.grid.batch_size_grid`: the sweep is a preset grid, see
configs/sweep_batch_size.yaml). Comparisons (Holm over the whole sweep): each norm vs NoNorm at
each batch size, each batch size vs the reference batch size, BatchNorm's batch statistics vs
its running statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from lnbench.analysis import grid, verdicts
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.analysis.comparisons import sweep_comparisons
from lnbench.config import RunConfig
from lnbench.config.checks import check_keys_apply, check_not_overridden, check_sweep
from lnbench.experiments import driver
from lnbench.experiments.base import (
    Cell,
    Experiment,
    rows_of,
    seed_cells,
)
from lnbench.experiments.compare import printed_tables
from lnbench.names import family_label, norm_slug, plural
from lnbench.records.folder import RunFolder
from lnbench.records.schema import SummaryRow


class BatchSizeSweep(Experiment):
    kind = "batchsize-sweep"
    figure_group = "batchsize-sweep"

    def check(self, spec: RunConfig) -> None:
        check_sweep(spec)  # first: the memory check sizes the largest of sweep.batch_sizes
        super().check(spec)
        check_keys_apply(spec, [spec.sweep.family])
        check_not_overridden(spec, {"family": "sweep.family", "norm": "sweep.norms"})

    def trained(self, cfg: RunConfig) -> tuple[list[str], list[int]]:
        return [cfg.sweep.family], list(cfg.sweep.batch_sizes)

    def plan(self, spec: RunConfig, parent: Path) -> list[Cell]:
        settings = grid.check_grid(spec.with_changes(sweep__grid=grid.batch_size_grid(spec)))
        family = spec.sweep.family
        return seed_cells(
            spec,
            settings,
            parent,
            spec.compare.target_acc,
            lambda c: f"{family}_{norm_slug(c['model__norm'])}_bs{c['train__batch_size']}",
        )

    def analyse(self, spec: RunConfig, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        ref = spec.reference_batch_size
        comparisons = sweep_comparisons(rows, ref)
        return {
            "target_acc": spec.compare.target_acc,
            "family": spec.sweep.family,
            "epochs": spec.train.epochs,
            "lr": spec.train.lr,
            "lr_by_batch_size": {str(b): lr for b, lr in (spec.train.lr_by_batch_size or {}).items()} or None,
            "seeds": spec.seed_list,
            "reference_batch_size": ref,
            "baselines": baselines,
            "aggregate": aggregate_over_seeds(rows),
            "comparisons": [c.to_dict() for c in comparisons],
            "verdicts": verdicts.sweep_verdicts(rows, comparisons, ref),
        }

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        from lnbench.report import figures

        summary = RunFolder(path).summary() or {}
        rows = rows_of(summary)
        if not any(r.ok for r in rows):
            return []
        data = figures.BatchSizeData(
            aggregate_over_seeds(rows),
            family_label(summary.get("family", rows[0].family)),
            plural(summary["epochs"], "epoch") if summary.get("epochs") else "the epochs",
            chance=1 / rows[0].num_classes,
        )
        return self.draw_figures(data, into or path)

    def entry_label(self, entry: dict) -> str:
        """An aggregate entry by family, placement, norm and batch size (``rnn joint none B=8``)."""
        return f"{super().entry_label(entry)} B={entry.get('batch_size')}"

    def tables(self, path: Path, summary: dict) -> list[Table]:
        title = "lnbench batchsize-sweep"
        if summary.get("family"):
            title += f": {summary['family']}, {plural(summary['epochs'], 'epoch')}, lr {summary['lr']:g}"
            by_batch = summary.get("lr_by_batch_size") or {}
            if by_batch:
                title += " (" + ", ".join(f"batch size {b}: {lr:g}" for b, lr in by_batch.items()) + ")"
        return printed_tables(title, path, summary, sweep=True)


BATCHSIZE_SWEEP = BatchSizeSweep()


batchsize_sweep = driver.entry(
    BATCHSIZE_SWEEP,
    """``lnbench batchsize-sweep``: every norm (``sweep.norms``) x batch size
    (``sweep.batch_sizes``) x seed of ``sweep.family``; see the module docstring. ``options``:
    :class:`lnbench.experiments.base.LaunchOptions`.

    Raises:
        ConfigError: a batch size above ``data.n_train``, bad seeds, ..., before anything is written.
    """,
)
