"""The tasks' data: one module per task, named in the task registry (:data:`lnbench.names.TASKS`,
which also holds each task's shape, keys and sizes).

- :mod:`~lnbench.training.tasks.trend`: the default, :func:`lnbench.training.tasks.trend.make_trend_data`.
- :mod:`~lnbench.training.tasks.adding`: the adding problem (Hochreiter & Schmidhuber 1997;
  Le et al. 2015) as a 2-class task.
- :mod:`~lnbench.training.tasks.digits`: scikit-learn's 8x8 handwritten digits as sequences
  (sequential and permuted digits, the small offline form of Le et al. 2015's MNIST tasks).

Every run's data is a pure function of its ``data`` config and its seed.
"""

from __future__ import annotations

import pkgutil

from lnbench.config import DataConfig
from lnbench.names import TASKS
from lnbench.training.data import TaskData, carve_validation


def make_task_data(cfg: DataConfig, seed: int = 0) -> TaskData:
    """The train and test splits of ``cfg.task`` for one seed (its registry entry's maker), and
    with ``cfg.n_val`` > 0 the validation split carved out of the training split
    (:func:`lnbench.training.data.carve_validation`: fixed positions, the same for every seed).

    Args:
        cfg: the ``data`` section of a run's config.
        seed: the run's seed (a task that is not ``seeded`` returns the same data for every seed).

    Returns:
        :class:`~lnbench.training.data.TaskData` of shape ``cfg.shape()``: ``(N, T, D)`` inputs,
        labels in 0 .. C - 1; ``n_train - n_val`` training sequences.

    Raises:
        ValueError: the task's own (a size it cannot give; the config's checks catch these first).
    """
    return carve_validation(pkgutil.resolve_name(TASKS[cfg.task].maker)(cfg, seed), cfg.n_val)
