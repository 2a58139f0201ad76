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
from collections import OrderedDict
from typing import Any

import torch

from lnbench.config import DataConfig
from lnbench.names import TASKS
from lnbench.training.data import TaskData, carve_validation

#: the most bytes of splits :func:`cell_task_data` keeps in one process (the default claims
#: regime's 5 seeds are ~155 MB)
CELL_DATA_CACHE_BYTES = 256 * 2**20
_kept: OrderedDict[tuple[str, int], TaskData] = OrderedDict()


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


def _nbytes(data: TaskData) -> int:
    return sum(v.nbytes for v in vars(data).values() if isinstance(v, torch.Tensor))


def _copy(data: TaskData) -> TaskData:
    fields: dict[str, Any] = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in vars(data).items()}
    return TaskData(**fields)


def cell_task_data(cfg: DataConfig, seed: int = 0) -> TaskData:
    """:func:`make_task_data`, kept for the next cell this process trains on the same data and seed:
    the cells of a claims regime (its families x norms x batch sizes) share each seed's data, and
    making the default regime's takes ~0.2 s a seed. The same values (a pure function of the
    config and seed); each call gets its own copy of the tensors. Up to
    :data:`CELL_DATA_CACHE_BYTES` are kept, the least recently used dropped first.

    Raises:
        ValueError: as :func:`make_task_data`.
    """
    key = (cfg.model_dump_json(), seed)
    if key in _kept:
        _kept.move_to_end(key)
        return _copy(_kept[key])
    data = make_task_data(cfg, seed)
    size = _nbytes(data)
    if size <= CELL_DATA_CACHE_BYTES:
        _kept[key] = data
        while sum(_nbytes(d) for d in _kept.values()) > CELL_DATA_CACHE_BYTES:
            _kept.popitem(last=False)
        return _copy(data)
    return data


def forget_cell_data() -> None:
    """Drop the splits :func:`cell_task_data` kept (an experiment that trained its cells in this
    process, ``--jobs 1`` or a notebook, does not hold them after it ends)."""
    _kept.clear()
