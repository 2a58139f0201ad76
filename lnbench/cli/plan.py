"""What an experiment says before it trains: the plan of ``--dry-run`` (:func:`print_plan`, the
runs in a :func:`plan_table`) and the line a run starts with (:func:`plan_line`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from rich.table import Table

from lnbench.cli.console import console, print_table
from lnbench.names import family_label, plural, seeds_phrase

if TYPE_CHECKING:
    from lnbench.config import RunConfig


def print_plan(cells: list, n_cells: int, resume: Optional[Path], copies: dict[str, str]) -> None:
    """``--dry-run``: the child runs the experiment would start (with --resume: only those), and
    which of them it would copy (``copies``: child run -> the child run it copies) instead of training."""
    planned = [c for cell in cells for c in cell.cfgs]
    n = len(planned)
    kept = f"; {plural(n_cells - len(cells), 'cell')} of {resume} kept" if resume is not None else ""
    if n == 0:
        console.print(f"would start no run (dry run: nothing is run or written{kept})", highlight=False, soft_wrap=True)
        return
    print_table(
        plan_table(planned, f"would start {plural(n, 'run')} (dry run: nothing is run or written{kept})", copies)
    )
    trained = [c for c in planned if c.name not in copies]
    line = f"{plural(len(trained), 'run')}, {plural(sum(c.train.epochs for c in trained), 'epoch')} in all"
    if copies:
        line = f"{plural(len(trained), 'run')} trained ({plural(sum(c.train.epochs for c in trained), 'epoch')}) and {_copies(len(copies))}"
    console.print(line, highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class PlanCounts:
    """What a plan does with its cells, counted once for every line that says it (:func:`plan_counts`)."""

    kept: int  #: cells a resumed folder keeps (their runs finished)
    train: list  #: the cells to train: "to run", "N runs in M cells"
    copied: int  #: cells whose runs are copied from an identical cell's, not trained
    copies: int  #: the runs of those cells


def plan_counts(cells: list, to_run: list, copies: dict[str, str]) -> PlanCounts:
    """The counts of a plan of ``cells`` of which ``to_run`` are not kept, ``copies`` (child run ->
    the child run it copies) their runs copied: a copied cell is all copies."""
    train = [cell for cell in to_run if cell.cfgs[0].name not in copies]
    return PlanCounts(len(cells) - len(to_run), train, len(to_run) - len(train), len(copies))


def resume_line(resume: Path, counts: PlanCounts) -> str:
    """``Resuming DIR: 7 cells kept, 7 to run, 1 copied from an identical cell`` (the cells to run are
    those :func:`plan_line` trains)."""
    copied = ""
    if counts.copied:
        copied = f", {counts.copied} copied from {'an identical cell' if counts.copied == 1 else 'identical cells'}"
    return f"Resuming {resume}: {plural(counts.kept, 'cell')} kept, {len(counts.train)} to run{copied}"


def workers_phrase(jobs: int) -> str:
    return f"{jobs} worker processes" if jobs > 1 else "1 process"


def _copies(n: int) -> str:
    """``6 copies of identical runs``: runs of the same effective config as another, copied, not trained."""
    return "1 copy of an identical run" if n == 1 else f"{n} copies of identical runs"


def plan_line(kind: str, cells: list, jobs: int, launcher: str, copies: int = 0) -> str:
    """The line an experiment starts with, at once (a log shows nothing else until a run finishes):
    the runs it trains, their cells, seeds and where they run, and how many runs it copies from
    identical ones (``copies``) instead of training them."""
    cfgs = [c for cell in cells for c in cell.cfgs]
    if not cfgs:  # --resume with only copies left
        return f"{kind}: {_copies(copies)}, no run to train"
    where = f"on {workers_phrase(jobs)}"
    if launcher != "local":
        where = f"as {plural(len(cells), 'job')} of {launcher}"
    what = f"{plural(len(cfgs), 'run')} in {plural(len(cells), 'cell')}" if len(cells) > 1 else plural(len(cfgs), "run")
    seeds = sorted({c.seed for c in cfgs})
    epochs = f"({plural(sum(c.train.epochs for c in cfgs), 'epoch')})"
    copied = f" and {_copies(copies)}" if copies else ""
    return f"{kind}: {what} {epochs}{copied}, {'seeds' if len(seeds) > 1 else 'seed'} {seeds_phrase(seeds)}, {where}"


def plan_table(planned: list[RunConfig], title: str, copies: Optional[dict[str, str]] = None) -> Table:
    """The runs of a plan (``--dry-run``): name, model, norm, batch size, seed, epochs, and with
    ``copies`` (child run -> the child run it copies) the run each copy is copied from."""
    copies = copies or {}
    table = Table(title=title, title_justify="left")
    columns = ("run", "model", "norm", "batch size", "seed", "epochs") + (("copy of",) if copies else ())
    for col in columns:
        table.add_column(col, justify="right" if col in ("batch size", "seed", "epochs") else "left")
    for c in planned:
        table.add_row(
            c.name,
            family_label(c.model.family),
            c.model.norm,
            str(c.train.batch_size),
            str(c.seed),
            str(c.train.epochs),
            *((copies.get(c.name, ""),) if copies else ()),
        )
    return table
