"""The command line's console: where output goes, one-line errors, Ctrl-C, progress.

A mistake the user can fix is one line on stderr (``lnbench: error: ...``) and exit code 2; an
interrupt is one line and exit code 130; progress is a rich bar on a terminal and plain lines
in a log.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from lnbench.config import ConfigError

# Not a terminal (a pipe, a CI log): 80 columns would wrap the tables; 120 keeps them whole
# (COLUMNS, if set, wins).
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120)
err_console = Console(stderr=True)


def fail(message: str, code: int = 2, kind: str = "error") -> NoReturn:
    """Print ``message`` as one ``lnbench: <kind>: ...`` line per problem and exit with ``code``."""
    for line in message.splitlines() or [""]:  # one line per problem, each saying what it is
        err_console.print(f"lnbench: {kind}: {line}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def guarded() -> Iterator[None]:
    """Ctrl-C or SIGTERM: say where the partial results are (the run folder keeps them),
    exit 130. A config problem found only when the experiment starts: one line, exit 2."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    except ConfigError as exc:
        fail(str(exc))
    except KeyboardInterrupt as exc:
        notes = getattr(exc, "__notes__", [])
        where = f"; {notes[-1]}" if notes else ""
        fail(
            f"stopped by {exc.args[0] if exc.args else 'Ctrl-C'}{where}; finished epochs were kept",
            code=130,
            kind="interrupted",
        )
    except OSError as exc:  # a file of the run that could not be written (a full disk): one line, exit 1
        from lnbench.records.runs import WriteError

        if not isinstance(exc, WriteError):
            raise
        fail("; ".join([str(exc), *getattr(exc, "__notes__", [])[-1:]]), code=1)
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def progress(total_epochs: int) -> Iterator:
    """Progress over all epochs of all runs; yields the ``on_epoch(label, epoch, epochs,
    acc=None)`` callback. With stdout a terminal: rich's live bar (on stderr). Otherwise (a pipe,
    ``make run > log``, CI): plain lines on stdout, one per finished run and one every
    :func:`_every` epochs of a long run, with the test accuracy and elapsed and remaining time."""
    if sys.stdout.isatty():
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("epochs"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with guarded(), Progress(*columns, console=err_console, transient=False) as progress:
            task = progress.add_task("training", total=total_epochs)
            seen: dict[str, int] = {}

            def on_epoch(label: str, epoch: int, epochs: int, acc: float | None = None) -> None:
                progress.advance(task, epoch - seen.get(label, 0))
                seen[label] = epoch
                progress.update(task, description=f"{label} epoch {epoch}/{epochs}")

            yield on_epoch
        return
    with guarded():
        yield _LogProgress(total_epochs)


def _every(epochs: int) -> int:
    """A long run reports every this many epochs (about five lines a run), a short one only at its end."""
    return max(10, -(-epochs // 5))


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


class _LogProgress:
    """Plain progress lines for a log (see :func:`progress`)."""

    def __init__(self, total_epochs: int) -> None:
        self.total, self.done, self.t0 = total_epochs, 0, time.monotonic()
        self.seen: dict[str, int] = {}

    def __call__(self, label: str, epoch: int, epochs: int, acc: float | None = None) -> None:
        self.done += epoch - self.seen.get(label, 0)
        self.seen[label] = epoch
        if epoch != epochs and epoch % _every(epochs):
            return
        elapsed = time.monotonic() - self.t0
        remaining = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        what = "finished" if epoch == epochs else f"epoch {epoch}/{epochs}"
        accuracy = f", test acc {acc:.1%}" if acc is not None else ""
        console.print(
            f"[{self.done}/{self.total} epochs] {label} {what}{accuracy}; elapsed {_clock(elapsed)}, remaining ~{_clock(remaining)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
