"""The experiments' registry: a kind's name (a run.json ``kind``, a CLI command) -> its experiment.

A new experiment kind is one module in :mod:`lnbench.experiments` implementing
:class:`lnbench.experiments.base.Experiment`, plus one line here and its command's entry in
:data:`lnbench.names.EXPERIMENT_KINDS` (its help, default config and shared options: the command
line builds ``lnbench KIND`` from it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lnbench.experiments.base import Experiment
from lnbench.experiments.batchsize_sweep import BATCHSIZE_SWEEP
from lnbench.experiments.card import CARD
from lnbench.experiments.checks import GRADCHECK, INVARIANCE
from lnbench.experiments.claims import CLAIMS
from lnbench.experiments.compare import COMPARE
from lnbench.experiments.sweep import SWEEP
from lnbench.experiments.train import TRAIN
from lnbench.names import EXPERIMENT_KINDS, KindInfo
from lnbench.records import index as records_index
from lnbench.records.folder import RunFolder
from lnbench.records.index import Entry
from lnbench.report.captions import FigureRecord

EXPERIMENTS: dict[str, Experiment] = {
    e.kind: e for e in (TRAIN, COMPARE, BATCHSIZE_SWEEP, SWEEP, CLAIMS, INVARIANCE, GRADCHECK, CARD)
}


def check_commands(experiments: dict[str, Experiment], kinds: dict[str, KindInfo]) -> None:
    """Every kind with a command (:data:`lnbench.names.EXPERIMENT_KINDS`, which the command line
    reads without importing this module) has its experiment here, and they agree on ``seeded``.

    Raises:
        RuntimeError: a kind without an experiment, or the two disagreeing (one line naming it).
    """
    for kind, info in kinds.items():
        if kind not in experiments:
            raise RuntimeError(f"{kind}: a command (lnbench.names.EXPERIMENT_KINDS) but no experiment in EXPERIMENTS")
        if experiments[kind].seeded != info.seeded:
            raise RuntimeError(
                f"{kind}: seeded is {experiments[kind].seeded} in its Experiment, {info.seeded} in its entry"
            )


check_commands(EXPERIMENTS, EXPERIMENT_KINDS)


def experiment_of(path: Path) -> Experiment | None:
    """The experiment that wrote the run folder ``path`` (its run.json ``kind``), or None."""
    return EXPERIMENTS.get(str(RunFolder(path).kind))


def index(
    runs_dir: str | Path, kind: str | None = None, status: str | None = None, limit: int | None = None
) -> list[Entry]:
    """``lnbench ls``: the run folders under ``runs_dir`` (or that one folder), newest first, each
    with the headline of its kind (:func:`lnbench.records.index.index` over :data:`EXPERIMENTS`).

    Raises:
        FileNotFoundError: ``runs_dir`` is not a folder.
    """
    return records_index.index(runs_dir, kind, status, limit, kinds=EXPERIMENTS)


def redraw(path: Path, into: Path | None = None) -> list[str]:
    """Draw a run folder's figures again from its files, exactly as its experiment drew them
    (same files, same titles), whatever state it ended in, into the folder ``into`` (default:
    ``path``); returns the files drawn."""
    exp = experiment_of(path)
    return exp.figures(path, into) if exp is not None else []


def report(run_dirs: list[Path], out: Path | None = None, figures: dict[Path, Path] | None = None) -> Path:
    """``lnbench report``: write report.html for run folders (one, or several side by side into
    ``out``) with each experiment's own tables. Reads the folders' files only; ``figures``: per
    run folder, a folder of its figures drawn elsewhere (:func:`redraw` ``into``), shown instead
    of the folder's own PNGs of the same names.

    Raises:
        ValueError: no folder, or several folders and no ``out``.
    """
    from lnbench.report.html import write_report

    tables: dict[Path, list] = {}
    records: dict[Path, Sequence[FigureRecord]] = {}
    for d in run_dirs:
        exp = experiment_of(d)
        tables[d] = exp.tables(d, RunFolder(d).summary() or {}) if exp is not None else []
        if exp is not None:
            records[d] = exp.figure_records
    return write_report(list(run_dirs), out, tables=tables, figures=figures, figure_records=records)
