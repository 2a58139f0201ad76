"""What happened to an experiment's runs beyond their numbers, in the lines the console, ``lnbench
show`` and report.html all print (:func:`run_notes`): one line per diverged run, and the runs'
notes (``Metrics.warnings``), each naming its run, with an explanation that several runs share
written once.

A note is written ``<fact><NOTE_WHY><explanation>`` (:data:`lnbench.records.schema.NOTE_WHY`;
:func:`lnbench.training.gradients.large_gradient_warning`): the fact (which tensor, how large,
when) belongs to one run, the explanation (what the optimizer does with it) to every run alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lnbench.names import plural
from lnbench.records.folder import RunFolder
from lnbench.records.schema import NOTE_WHY, SummaryRow


def split_note(note: str) -> tuple[str, str]:
    """A note as its fact and its explanation (``""`` for a note written without one)."""
    fact, _, why = note.partition(NOTE_WHY)
    return fact, why


def _run_of(folder: Path, row: SummaryRow) -> RunFolder:
    child = folder / row.run_dir if row.run_dir else folder
    return RunFolder(child if child.is_dir() else folder)  # a train folder is its one run


def divergences(folder: Path, rows: Sequence[SummaryRow]) -> list[str]:
    """One line per diverged run of the experiment folder ``folder``: its name, the epoch and the
    cause (the row's, else, in a summary.json written before rows carried them, its metrics.json's)."""
    lines = []
    for row in rows:
        if row.status != "diverged":
            continue
        run = _run_of(folder, row)
        epoch, reason = row.diverged_at_epoch, row.divergence_reason
        if reason is None:
            raw = run.raw_metrics() or {}
            epoch, reason = raw.get("diverged_at_epoch"), raw.get("divergence_reason")
        lines.append(
            f"{run.name} diverged at epoch {epoch if epoch is not None else '?'}: {reason or 'no cause recorded'}"
        )
    return lines


def notes(folder: Path, rows: Sequence[SummaryRow]) -> list[str]:
    """The runs' notes, ``note: <run>: <fact>``, grouped by explanation (in the order first met):
    a note alone is one line with its explanation; several that share one are a line each, then
    ``  (the N notes above) <explanation>`` once."""
    by_why: dict[str, list[str]] = {}
    for row in rows:
        name = _run_of(folder, row).name
        for note in dict.fromkeys(row.warnings):
            fact, why = split_note(note)
            by_why.setdefault(why, []).append(f"note: {name}: {fact}")
    lines = []
    for why, facts in by_why.items():
        if len(facts) == 1 and why:
            lines.append(f"{facts[0]}{NOTE_WHY}{why}")
            continue
        lines += facts
        if why:
            lines.append(f"  ({plural(len(facts), 'note')} above) {why}")
    return lines


def run_notes(folder: Path, rows: Sequence[SummaryRow]) -> list[str]:
    """:func:`notes`, then :func:`divergences`: what the console prints after the tables."""
    return notes(folder, rows) + divergences(folder, rows)
