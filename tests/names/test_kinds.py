"""lnbench.names.kinds: the experiment kinds' torch-free list."""

from __future__ import annotations


def test_the_torch_free_list_of_run_kinds_is_the_experiment_registry():
    """lnbench.names.RUN_KINDS (read by ``ls --kind``'s help, which imports no torch) names every
    kind of lnbench.experiments.registry.EXPERIMENTS, in its order."""
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.names import RUN_KINDS

    assert RUN_KINDS == tuple(EXPERIMENTS)
