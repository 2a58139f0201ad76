"""The experiments: every command of the CLI is a function here that a notebook can call."""

from lnbench.experiments.driver import (
    ExperimentResult,
    batchsize_sweep,
    claims,
    compare,
    gradcheck,
    invariance,
    run_cell,
    run_one,
    sweep,
    train,
)

__all__ = [
    "ExperimentResult",
    "batchsize_sweep",
    "claims",
    "compare",
    "gradcheck",
    "invariance",
    "run_cell",
    "run_one",
    "sweep",
    "train",
]
