"""What a finished experiment prints, after its run and again with ``lnbench show``: its tables
(by default the brief ones; every one with ``--verbose`` or ``show --all``), its notes, its
diverged runs and its verdicts (:func:`print_results`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from lnbench.cli.console import console, print_table

if TYPE_CHECKING:
    from lnbench.records.schema import SummaryRow


VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Also print the table of every run and the paired comparisons (by default: the table over seeds and the "
        "verdicts; report.html and lnbench show --all have them all).",
    ),
]


def print_results(
    tables: list[Table],
    verdicts: list[str],
    rows: Sequence[SummaryRow],
    folder: Path,
    status: Optional[str],
    everything: bool,
) -> None:
    """A finished experiment's results, as its run prints them and ``lnbench show`` again: its
    tables (all of them with ``everything``, else :func:`lnbench.report.tables.brief`'s and one line
    naming the others), the notes of its ``rows`` and a line per diverged run
    (:mod:`lnbench.report.notes`)
    and its verdicts, each verdict wrapped to the console's width under its dash; then the folder
    with its ``status`` (run.json's), and its report.html if there is one."""
    import textwrap

    from lnbench.report.notes import divergences, notes
    from lnbench.report.tables import RunsTable, brief

    shown, left = (tables, []) if everything else brief(tables)
    for table in shown:
        print_table(table)
    for line in notes(folder, rows):
        console.print(line, style="dim", markup=False, highlight=False)
    for line in divergences(folder, rows):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    width = max(console.width, 40)
    for verdict in verdicts:
        console.print(
            textwrap.fill(verdict, width, initial_indent="- ", subsequent_indent="  ", break_long_words=False),
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    if left:
        what = " and ".join(
            dict.fromkeys("every run's table" if isinstance(t, RunsTable) else "the paired comparisons" for t in left)
        )
        console.print(
            f"Not printed: {what} (--verbose; lnbench show --all {folder}; report.html)",
            style="dim",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"Run folder: {folder}  (status: {status})", highlight=False, soft_wrap=True)
    if (folder / "report.html").exists():
        console.print(f"Report: {folder / 'report.html'}", highlight=False, soft_wrap=True)
