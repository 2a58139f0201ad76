"""The experiments: every command of the CLI is a function here that a notebook can call.

Each kind is one module implementing :class:`lnbench.experiments.base.Experiment`, registered
in :data:`lnbench.experiments.registry.EXPERIMENTS`; :mod:`lnbench.experiments.driver` runs
them all the same way. Each function returns an :class:`ExperimentResult` (the run folder, the
summary rows, the paired comparisons and the verdicts) and prints nothing; progress is reported
through the optional ``on_epoch(label, epoch, epochs, acc)`` callback (``acc`` None when a run
has none to give); a callback that also takes ``status`` is told ``kept`` or ``failed`` for a run that
did not train here (:func:`lnbench.experiments.base.epoch_callback`).
"""

from lnbench.experiments.base import ExperimentResult
from lnbench.experiments.batchsize_sweep import batchsize_sweep
from lnbench.experiments.card import card
from lnbench.experiments.checks import gradcheck, invariance
from lnbench.experiments.claims import claims, claims_spec
from lnbench.experiments.compare import compare
from lnbench.experiments.registry import EXPERIMENTS, redraw, report
from lnbench.experiments.sweep import sweep
from lnbench.experiments.train import train
from lnbench.experiments.two_stage import confirm

__all__ = [
    "EXPERIMENTS",
    "ExperimentResult",
    "batchsize_sweep",
    "card",
    "claims",
    "claims_spec",
    "compare",
    "confirm",
    "gradcheck",
    "invariance",
    "redraw",
    "report",
    "run_cell",
    "run_one",
    "sweep",
    "train",
]


def __getattr__(name: str):  # run_cell / run_one import torch: only when asked for
    if name in ("run_cell", "run_one"):
        from lnbench.experiments import cells

        return getattr(cells, name)
    raise AttributeError(f"module 'lnbench.experiments' has no attribute {name!r}")
