"""A task's data splits (:class:`TaskData`) and the validation split carved from the training split.
The tasks themselves are :mod:`lnbench.training.tasks` (one module each)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch


@dataclass(frozen=True)
class TaskData:
    """Train, test and (optionally) validation splits of a task (:data:`lnbench.names.TASKS`).
    ``X_*``: ``(N, T, D)`` float32; ``y_*``: ``(N,)`` int64 in 0 .. C - 1; ``s_*``: ``(N,)``
    float32, each sequence's input scale s (the probes group samples by it; ones for a task
    without one); ``num_classes``: C (the models' outputs, even if a split lacks a class);
    ``X_val``, ``y_val``, ``s_val``: the validation split (:func:`carve_validation`), or None."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    s_train: torch.Tensor
    s_test: torch.Tensor
    num_classes: int = 2
    X_val: torch.Tensor | None = None
    y_val: torch.Tensor | None = None
    s_val: torch.Tensor | None = None

    @property
    def input_size(self) -> int:
        return self.X_train.shape[-1]

    @property
    def seq_len(self) -> int:
        return self.X_train.shape[1]


TrendData = TaskData  # the trend task's data (the name before the task registry)

VAL_SPLIT_SEED = 0  # the validation split's own generator: the same positions for every seed and config


def validation_positions(n_train: int, n_val: int) -> np.ndarray:
    """The positions in a training split of ``n_train`` sequences that :func:`carve_validation`
    takes for validation: the first ``n_val`` of ``default_rng(VAL_SPLIT_SEED).permutation(n_train)``,
    sorted; ``(n_val,)`` int64."""
    return np.sort(np.random.default_rng(VAL_SPLIT_SEED).permutation(n_train)[:n_val])


def carve_validation(data: TaskData, n_val: int) -> TaskData:
    """``data`` with ``n_val`` of its training sequences moved into a validation split.

    The positions come from a generator of their own (:func:`validation_positions`), not from the
    run's seed: the split depends on ``n_train`` and ``n_val`` only, so a config gives the same
    split every time, and every seed the same positions. For digits (one fixed data set) that is
    the same images for every seed; for trend and adding, whose sequences are drawn per seed, it is
    that seed's own held-out draws of the training distribution (any fixed positions are as random
    as the draws). The training split keeps the rest in its order; the test split is untouched.

    Args:
        data: the task's splits, without a validation split.
        n_val: sequences to carve out, 0 <= n_val < the training split's N (0: ``data`` itself).

    Returns:
        TaskData with ``X_train (N - n_val, T, D)`` and ``X_val (n_val, T, D)`` (likewise ``y``, ``s``).

    Raises:
        ValueError: ``n_val`` negative or not smaller than the training split.
    """
    n_train = data.X_train.shape[0]
    if not 0 <= n_val < n_train:
        raise ValueError(f"n_val must be >= 0 and < n_train ({n_train}); got {n_val}")
    if n_val == 0:
        return data
    val = torch.from_numpy(validation_positions(n_train, n_val))
    keep = torch.ones(n_train, dtype=torch.bool)
    keep[val] = False
    return replace(
        data,
        X_train=data.X_train[keep],
        y_train=data.y_train[keep],
        s_train=data.s_train[keep],
        X_val=data.X_train[val],
        y_val=data.y_train[val],
        s_val=data.s_train[val],
    )
