"""The figures as records: :func:`figure` declares a figure of a group (file, caption, when it
applies), :func:`draw` draws a group's, :func:`save` writes a PNG; the groups' data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lnbench.records.io import atomic_write
from lnbench.records.schema import Metrics
from lnbench.report.captions import FigureRecord


def save(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as a PNG at 120 dpi (integer ticks on epoch and timestep axes; one tick where they
    span one value), atomically
    (:func:`lnbench.records.io.atomic_write`): a full disk leaves no truncated PNG behind.

    Raises:
        WriteError: the file could not be written (it names the file and its folder).
    """
    for ax in fig.axes:
        if ax.get_xlabel() in ("epoch", "timestep t"):
            low, high = ax.get_xlim()
            if high - low < 1:  # one epoch: a tick at it, not 0.945 ... 1.050
                at = round((low + high) / 2)
                ax.set_xlim(at - 0.5, at + 0.5)
                ax.set_xticks([at])
            else:
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))


# -- The figures each group draws, as records -------------------------------------------------
#
# A figure is one function below declared with its record by @figure: its file, its caption, the
# figure group that draws it (the kinds that draw the group name it: train and compare draw "run")
# and when it applies. It takes the group's data (RunData, ...) and returns a Figure; the group's
# drawing (draw) saves every figure of the group that applies, in the order declared here, which
# is also the order report.html shows them in and docs/figures.md lists them in.

#: figure group -> its records, in the order declared (:func:`figure`)
#: (the built-in groups first, in the order docs/figures.md lists them, whatever order their
#: modules are imported in; a new group goes after them)
FIGURES: dict[str, list[FigureRecord]] = {group: [] for group in ("run", "batchsize-sweep", "sweep", "claims")}

_F = TypeVar("_F", bound=Callable[..., Any])


def figure(file: str, *, group: str, caption: str, when: Callable[[Any], bool] | None = None) -> Callable[[_F], _F]:
    """Declare the decorated function as the figure ``file`` of ``group`` with its ``caption``
    (:class:`lnbench.report.captions.FigureRecord`), drawn when ``when(data)`` is true (None: always).

    The function takes the group's data (``run``: :class:`RunData`; ``batchsize-sweep``:
    :class:`BatchSizeData`; ``sweep``: :class:`SweepData`; ``claims``: :class:`ClaimsData`) and
    returns a :class:`matplotlib.figure.Figure`, or for a ``file`` with ``*`` yields
    ``(part, Figure)`` pairs, saved as ``file`` with ``part`` for the ``*``.

    Raises:
        ValueError: ``file`` is already a figure of ``group``.
    """

    def register(function: _F) -> _F:
        shelf = FIGURES.setdefault(group, [])
        if any(r.file == file for r in shelf):
            raise ValueError(f"figure {file} is already a figure of the group {group!r}")
        shelf.append(FigureRecord(file, caption, group, function, when))
        return function

    return register


def records(group: str) -> tuple[FigureRecord, ...]:
    """The figures of ``group`` (:data:`FIGURES`), in the order declared; () for a group with none."""
    return tuple(FIGURES.get(group, ()))


def draw(group: str, data: Any, into: Path) -> list[str]:
    """Draw every figure of ``group`` that applies to ``data`` (its record's ``when``) into the
    folder ``into``, in the order declared; returns the file names drawn.

    Raises:
        WriteError: a figure could not be written (:func:`save`).
    """
    drawn = []
    for record in records(group):
        if record.when is not None and not record.when(data):
            continue
        made = record.function(data)  # a Figure, or for a pattern (part, Figure) pairs: saved as each comes
        pairs = [("", made)] if isinstance(made, Figure) else made
        drawn += [save(fig, into / record.file.replace("*", part)).name for part, fig in pairs]
    return drawn


@dataclass(frozen=True)
class RunData:
    """What the ``run`` figures (train, compare) are drawn from: the runs' metrics, the target
    accuracy, and the memoryless baseline's mean accuracy (None: not drawn)."""

    metrics: Sequence[Metrics]
    target_acc: float = 0.9
    memoryless: float | None = None


@dataclass(frozen=True)
class BatchSizeData:
    """What the ``batchsize-sweep`` figures are drawn from: the aggregate over seeds
    (:func:`lnbench.analysis.aggregate.aggregate_over_seeds`), the family's label, the epochs as
    text (``2 epochs``) and chance (1 / C)."""

    aggregate: Sequence[dict]
    family: str
    epochs: str
    chance: float = 0.5


@dataclass(frozen=True)
class SweepData:
    """What the ``sweep`` figures are drawn from: summary.json's ``cells`` and the swept keys
    drawn against (not ``model.norm``: a line per norm)."""

    entries: Sequence[dict]
    keys: Sequence[str]


@dataclass(frozen=True)
class ClaimsData:
    """What the ``claims`` figures are drawn from: the claims' results
    (:class:`lnbench.analysis.claims.ClaimResult`), summary.json's ``claims_by_task`` (None:
    one task), its ``tasks``, and the ``figure6`` regime's runs."""

    results: Sequence
    by_task: Sequence[dict] | None = None
    tasks: Sequence[str] = ()
    #: the learning curves of the ``figure6`` regime (Ba et al.'s Figure 6): its runs' metrics,
    #: a line saying what was trained (sizes, budget) and the optimizer's name; () and "" without that regime
    figure6: Sequence[Metrics] = ()
    figure6_setting: str = ""
    figure6_optimizer: str = ""
