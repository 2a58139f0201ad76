"""Figures as records: each figure an experiment kind draws is a :class:`FigureRecord` (its file,
its caption, the figure group that draws it, the function that draws it, when it applies).

The records are declared where the figures are drawn, by the ``@figure`` decorator of
:mod:`lnbench.report.figures` (its registry, :func:`lnbench.report.figures.records`); a kind names
its group (:attr:`lnbench.experiments.base.Experiment.figure_group`) and reads its records on first
use. report.html asks the kind of a folder for each figure's caption, so two kinds that draw the
same file name (a sweep over ``train.batch_size`` and the batch-size sweep both draw
``accuracy_vs_batch_size.png``) each show their own. Torch- and matplotlib-free: the kinds and
report.html import it at start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any


@dataclass(frozen=True)
class FigureRecord:
    """One figure of a figure group (the figures a kind draws: ``run`` for train and compare).

    Attributes:
        file: its file name (``test_accuracy.png``), or a pattern with ``*`` for a family of
            files (a sweep's ``accuracy_vs_*.png``, one per swept key).
        caption: how to read it (one line, shown under the figure in report.html).
        group: the figure group that draws it (``run``, ``batchsize-sweep``, ``sweep``, ``claims``).
        function: draws it from the group's data (:mod:`lnbench.report.figures`: ``RunData``, ...):
            returns a matplotlib ``Figure``, or for a pattern ``(part, Figure)`` pairs, ``part``
            standing for the ``*``.
        when: whether it applies to the group's data (``hidden_norm.png``: every run's task has an
            input scale); None: always.
    """

    file: str
    caption: str
    group: str
    function: Callable[[Any], Any]
    when: Callable[[Any], bool] | None = None

    @property
    def draw(self) -> str:
        """The name of the function that draws it (``_grad_norm``)."""
        return self.function.__name__

    def names(self, name: str) -> bool:
        """Whether the file ``name`` is this figure's."""
        return fnmatchcase(name, self.file)


def place_of(records: Sequence[FigureRecord], name: str) -> int:
    """The place of the file ``name`` among ``records`` (of the first that names it; ``len(records)`` if none does)."""
    return next((k for k, r in enumerate(records) if r.names(name)), len(records))


def caption_of(records: Sequence[FigureRecord], name: str) -> str:
    """The caption of the file ``name`` among a kind's ``records`` (the first that names it); "" if none does."""
    return next((r.caption for r in records if r.names(name)), "")
