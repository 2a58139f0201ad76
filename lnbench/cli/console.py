"""The command line's console: where output goes, one-line errors, Ctrl-C, progress.

A mistake the user can fix is one line on stderr (``lnbench: error: ...``) and exit code 2; an
interrupt is one line and exit code 130 (:func:`guarded`); progress is a rich bar on a terminal
and plain lines in a log, its remaining time estimated from the training steps (:class:`Work`).
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from lnbench.config import ConfigError
from lnbench.launchers import interrupts

if TYPE_CHECKING:
    from rich.table import Table

# Not a terminal (a pipe, a CI log): 80 columns would wrap the tables; 120 keeps more of them on
# one line (COLUMNS, if set, wins). A table wider than the console is printed one block per row.
# emoji off: a user's text prints as given (a config named :x:.yaml is not shown as an emoji)
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120, emoji=False)
err_console = Console(stderr=True, emoji=False)


def fail(message: str, code: int = 2, kind: str = "error") -> NoReturn:
    """Print ``message`` as one ``lnbench: <kind>: ...`` line per problem and exit with ``code``."""
    for line in message.splitlines() or [""]:  # one line per problem, each saying what it is
        err_console.print(f"lnbench: {kind}: {line}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


class OneLineErrors(TyperGroup):
    """The ``lnbench`` command group, whose command-line mistakes that Typer catches (an unknown
    option, a value out of range, a missing argument) are one line, ``lnbench: error: <click's
    message>; see 'lnbench CMD --help'``, exit code 2, as lnbench's own errors are (:func:`fail`),
    not click's usage block and boxed message. ``lnbench`` alone still prints its help. Its own
    flags (``--version``, ``--help``) show no type, as a :class:`Command`'s."""

    def get_params(self, ctx: Any) -> list:
        return _help_types(super().get_params(ctx))

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, standalone_mode=False, **extra)  # Exit(n) comes back as n
        except typer.Abort:
            err_console.print("Aborted!", markup=False, highlight=False)
            sys.exit(1)
        except typer.TyperException as exc:  # click's errors (Typer vendors click: typer._click)
            if not hasattr(exc, "format_message"):
                raise
            if type(exc).__name__ == "NoArgsIsHelpError":  # `lnbench` alone: Typer's own, the help
                from typer import rich_utils

                rich_utils.rich_format_error(exc)  # type: ignore[arg-type]
            else:
                ctx = getattr(exc, "ctx", None)
                hint = f"; see '{ctx.command_path} --help'" if ctx is not None else ""
                message = " ".join(exc.format_message().split()).rstrip(".")  # one line
                err_console.print(f"lnbench: error: {message}{hint}", markup=False, highlight=False, soft_wrap=True)
            sys.exit(getattr(exc, "exit_code", 2))
        sys.exit(code if isinstance(code, int) else 0)


class _NamedArgument(TyperArgument):
    """An argument that ``--help`` shows by its metavar alone, ``RUN_DIR...`` (Typer would add its
    Python type, ``<list[Path]>``, and a second ``...`` in the usage line)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:  # Typer's, with the metavar's own "..." once
        name = str(self.metavar).removesuffix("...")
        name = f"{{{name}}}" if self.required else f"[{name}]"
        return f"{name}..." if self.nargs != 1 else name


class _Flag(TyperOption):
    """A flag (``--dry-run``): ``--help`` shows no type, as it takes no value (Typer shows ``<bool>``)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


def _help_types(params: list) -> list:
    """``params`` with each flag a :class:`_Flag` and each argument with a metavar a
    :class:`_NamedArgument`, for ``--help``; parsing is the same."""
    for param in params:
        if type(param) is TyperOption and param.is_flag:
            param.__class__ = _Flag
        elif type(param) is TyperArgument and param.metavar is not None:
            param.__class__ = _NamedArgument
    return params


#: the options that docs/cli.md's usage lines give as alternatives (``[--runs-dir DIR | --json PATH]``),
#: each pair with why it is one or the other: given together, one would be ignored or the two merged
ALTERNATIVES: tuple[tuple[str, str, str], ...] = (
    ("--runs-dir", "--json", "--json writes the report to that file and makes no run folder"),
    ("--task", "--tasks", "--task NAME is repeatable, --tasks A,B,C names several tasks at once"),
    ("--all", "--only", "--all evaluates every claim, --only the ones named"),
    ("--print-config", "--dry-run", "--print-config prints the resolved config, --dry-run the runs; each then exits"),
)


class Command(TyperCommand):
    """Every ``lnbench`` command (``app.command(cls=Command)``): its ``--help`` shows a flag without a
    type and an argument by its metavar (:class:`_Flag`, :class:`_NamedArgument`); two of its
    :data:`ALTERNATIVES` given together are one line, exit code 2, before the command runs."""

    def get_params(self, ctx: Any) -> list:
        return _help_types(super().get_params(ctx))  # with --help, made on first use

    def invoke(self, ctx: Any) -> Any:
        given = {
            flag
            for p in self.params
            if p.name is not None and getattr(ctx.get_parameter_source(p.name), "name", None) == "COMMANDLINE"
            for flag in p.opts
        }
        for first, second, why in ALTERNATIVES:
            if first in given and second in given:
                fail(f"{first} and {second}: give one of them ({why})")
        return super().invoke(ctx)


def print_table(table: Table) -> None:
    """Print a table so that every column stays readable at the console's width
    (:func:`lnbench.report.table_fit.fit`: the table, or one block per row when it is too wide)."""
    from lnbench.report.table_fit import fit

    console.print(fit(table, console.width))


@dataclass
class Stop:
    """What :func:`guarded` says when the command is interrupted: ``folder`` once the run folder
    is known (the run finished; its tables are being printed), ``epochs``: whether the command
    trains (so that the line says whether finished epochs were kept)."""

    epochs: bool = True
    folder: Path | None = None


_NOTE = re.compile(r"^run folder: (?P<folder>.+) \([^()]*\)$")  # as Run and records.runs.record_failure add it


def epochs_kept(folder: Path) -> int:
    """The epochs recorded in the metrics.json files of ``folder`` and of its child runs."""
    from lnbench.records.folder import read_object

    n = 0
    for path in [folder / "metrics.json", *folder.glob("*/metrics.json")]:
        epochs = (read_object(path) or {}).get("epochs")
        n += len(epochs) if isinstance(epochs, list) else 0
    return n


def interrupted_line(exc: BaseException, stop: Stop) -> str:
    """The one line of an interrupt: what stopped the command, the run folder and its status
    (the last note of ``exc``, added by the outermost :class:`lnbench.records.runs.Run`), and
    whether finished epochs were kept, only when some were."""
    what = str(exc.args[0]) if exc.args and exc.args[0] else "Ctrl-C"
    matches = [m for m in map(_NOTE.match, getattr(exc, "__notes__", [])) if m]
    note, folder = (matches[-1][0], Path(matches[-1]["folder"])) if matches else (None, stop.folder)
    if folder is None:
        return f"stopped by {what} while starting; nothing was written"
    if note is None:
        from lnbench.records.folder import RunFolder

        manifest = RunFolder(folder).manifest() or {}
        note = f"run folder: {folder} (status: {manifest.get('status', 'unknown')})"
    if (
        folder / "confirm.json"
    ).is_file():  # a confirm stage: only --confirm resumes it (a plain resume is the pilot's)
        note += f"; its confirm stage goes on with --resume {folder} --confirm (with its own config)"
    if not stop.epochs:
        return f"stopped by {what}; {note}"
    kept = "finished epochs were kept" if epochs_kept(folder) else "no epoch had finished"
    return f"stopped by {what}; {note}; {kept}"


@contextmanager
def guarded(epochs: bool = True) -> Iterator[Stop]:
    """Ctrl-C or SIGTERM: one line saying where the partial results are (the run folder keeps
    them), exit code 130; a config problem found only when the experiment starts: one line, exit
    code 2. Signals are deferred out of imports and out of worker start-up
    (:mod:`lnbench.launchers.interrupts`); after the first, further ones are ignored. Yields a
    :class:`Stop` to set ``folder`` on once the run folder is known."""
    stop = Stop(epochs)
    with interrupts.handling():
        try:
            yield stop
        except ConfigError as exc:
            fail(str(exc))
        except KeyboardInterrupt as exc:
            fail(interrupted_line(exc, stop), code=130, kind="interrupted")
        except OSError as exc:  # a file of the run that could not be written (a full disk): one line, exit 1
            from lnbench.records.io import WriteError

            if not isinstance(exc, WriteError):
                raise
            fail("; ".join([str(exc), *getattr(exc, "__notes__", [])[-1:]]), code=1)
    if stop.folder is not None and interrupts.exiting_at_once():  # the console script: a late Ctrl-C says where
        interrupts.exit_at_once(f"lnbench: interrupted: {interrupted_line(KeyboardInterrupt(), stop)}")


class Work:
    """The work of an experiment, in training steps weighted by their cost, and the remaining
    time estimated from the work done.

    An epoch of a run costs ``ceil(n_train / batch_size)`` steps: a batch-size-1 epoch is 64 steps
    of a batch-size-64 one, so counting epochs misjudges a batch-size sweep many times over. A step
    of one model costs more than a step of another (a Transformer run's ~4x an RNN ensemble member's,
    :func:`lnbench.experiments.cells.step_cost`), so each run's steps count with its weight: an
    estimate made while the RNN cells run does not take the Transformer's steps left for RNN steps.
    The remaining time is the (weighted) steps left over the speed of the steps reported after the first report:
    the time before it (starting the workers, importing torch, loading or building a C++ kernel)
    and the first epochs, which include it, are not step time. The first report is every report
    within :attr:`BURST` seconds of it: the members of an ensemble report an epoch together, and
    workers' reports arrive together; counted as done after the first, they would be steps done
    in no time.

    Args:
        runs: per run label, ``(epochs, steps per epoch)``, the steps weighted by their relative
            cost (:func:`work_of`); reports of other labels (a resumed experiment's kept runs) are
            not work done now and are ignored.
        clock: seconds, monotonic (:func:`time.monotonic`; a test passes a fake one).
    """

    BURST = 1.0

    def __init__(self, runs: Mapping[str, tuple[int, float]], clock: Callable[[], float] = time.monotonic) -> None:
        self.runs, self.clock, self.t0 = dict(runs), clock, clock()
        self.total_epochs = sum(e for e, _ in self.runs.values())
        self.total_steps = sum(e * s for e, s in self.runs.values())
        self.epochs, self.steps = 0, 0.0
        self.seen: dict[str, int] = {}
        self.first: tuple[float, float] | None = None  # (time, steps) of the first report
        self.last = self.t0  # time of the latest report

    def report(self, label: str, epoch: int) -> bool:
        """Count ``label``'s epochs up to ``epoch`` as done; False if ``label`` is not a run of this work."""
        if label not in self.runs:
            return False
        new = max(0, epoch - self.seen.get(label, 0))
        self.seen[label] = max(epoch, self.seen.get(label, 0))
        self.epochs += new
        self.steps += new * self.runs[label][1]
        self.last = self.clock()
        if self.first is None or self.last - self.first[0] < self.BURST:
            self.first = (self.first[0] if self.first else self.last, self.steps)
        return True

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def remaining(self) -> float | None:
        """Estimated seconds left: 0 when all is done, None before a report after the first."""
        if self.steps >= self.total_steps:
            return 0.0
        if self.first is None or self.steps == self.first[1]:
            return None
        speed = (self.steps - self.first[1]) / (self.last - self.first[0])  # steps per second
        return (self.total_steps - self.steps) / speed


def work_of(cfgs, weights: Mapping[str, float] | None = None) -> dict[str, tuple[int, float]]:
    """Per child run (its label, the run's name): ``(epochs, steps per epoch)``, the steps times
    the run's weight in ``weights`` (by name; default 1: its relative cost per step,
    :func:`lnbench.experiments.cells.step_cost`)."""
    weights = weights or {}
    return {
        c.name: (
            c.train.epochs,
            math.ceil((c.data.n_train - c.data.n_val) / c.train.batch_size) * weights.get(c.name, 1),
        )
        for c in cfgs
    }


@contextmanager
def progress(runs: Mapping[str, tuple[int, float]], clock: Callable[[], float] = time.monotonic) -> Iterator:
    """Progress over the runs' epochs (see :class:`Work`); yields the ``on_epoch(label, epoch,
    epochs, acc=None, status=None)`` callback (``status``: what became of a run that did not train
    to its end here, ``failed`` or ``kept``, said instead of ``finished``). With stdout a terminal: rich's live bar (on stderr). Otherwise (a
    pipe, ``make run > log``, CI): plain lines on stdout, one per finished run and one every
    :func:`_every` epochs of a long run, with the test accuracy and elapsed and remaining time."""
    work = Work(runs, clock)
    if sys.stdout.isatty():
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[epochs]}"),
            TimeElapsedColumn(),
            TextColumn("remaining {task.fields[remaining]}"),
        )
        with Progress(*columns, console=err_console, transient=False, get_time=clock) as bar:
            task = bar.add_task("training", total=max(work.total_steps, 1), epochs="", remaining="?")

            def on_epoch(
                label: str, epoch: int, epochs: int, acc: float | None = None, status: str | None = None
            ) -> None:
                if work.report(label, epoch):
                    bar.update(
                        task,
                        completed=work.steps,
                        description=f"{label} {status}" if status else f"{label} epoch {epoch}/{epochs}",
                        epochs=f"{work.epochs}/{work.total_epochs} epochs",
                        remaining=_about(work.remaining()),
                    )

            yield on_epoch
        return
    yield _LogProgress(work)


def _every(epochs: int) -> int:
    """A long run reports every this many epochs (about five lines a run), a short one only at its end."""
    return max(10, -(-epochs // 5))


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def _about(seconds: float | None) -> str:
    """An estimate: ``~1:05``, or ``?`` while there is none."""
    return "?" if seconds is None else f"~{_clock(seconds)}"


class _LogProgress:
    """Plain progress lines for a log (see :func:`progress`)."""

    def __init__(self, work: Work) -> None:
        self.work = work

    def __call__(
        self, label: str, epoch: int, epochs: int, acc: float | None = None, status: str | None = None
    ) -> None:
        if not self.work.report(label, epoch) or (epoch != epochs and epoch % _every(epochs)):
            return
        w = self.work
        what = status or ("finished" if epoch == epochs else f"epoch {epoch}/{epochs}")
        accuracy = f", test acc {acc:.1%}" if acc is not None else ""
        console.print(
            f"[{w.epochs}/{w.total_epochs} epochs] {label} {what}{accuracy}; "
            f"elapsed {_clock(w.elapsed())}, remaining {_about(w.remaining())}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
