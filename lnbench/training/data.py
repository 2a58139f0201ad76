"""Synthetic trend-classification sequences.

Each sample is a sequence of T vectors of H features. Class 1 drifts *up* along a fixed
direction ``d`` (one per data seed, shared by both classes), class 0 drifts *down*::

    x_t = s * (offset + c * trend_strength * tau_t * d + noise_std * eps_t)

    c = +1 (class 1) or -1 (class 0)     tau_t = linspace(-1/2, 1/2, T)
    d: unit-RMS direction (|d|^2 = H)    offset ~ N(0, offset_std^2 I), constant over time
    eps_t ~ N(0, I)                      s ~ log-uniform[scale_min, scale_max], per sample

The random ``offset`` means no single timestep reveals the class: the model has to compare
timesteps. With the default ``offset_std = 4`` a linear classifier of the last timestep alone
scores about 66 % (5 seeds, n_test = 1000), far below the 90 % target, while a linear readout
of the whole sequence scores 100 % (:mod:`lnbench.training.baselines`); with the seed's
``offset_std = 1`` the last timestep alone scored 89 %, a memoryless shortcut past the target. The per-sample scale ``s`` spreads the input magnitudes over a factor of
``scale_max / scale_min``, which is where a norm on the summed inputs earns its keep.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from lnbench.config import DataConfig

_D = DataConfig()  # the defaults live in the schema only


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


def make_trend_data(
    n_train: int = _D.n_train,
    n_test: int = _D.n_test,
    seq_len: int = _D.seq_len,
    features: int = _D.features,
    trend_strength: float = _D.trend_strength,
    noise_std: float = _D.noise_std,
    offset_std: float = _D.offset_std,
    scale_min: float = _D.scale_min,
    scale_max: float = _D.scale_max,
    seed: int = 0,
) -> TrendData:
    """Make the increasing-vs-decreasing trend task (see the module docstring for the formula).

    Args:
        n_train, n_test: number of sequences per split (classes balanced to within one).
        seq_len: T. features: H.
        trend_strength: total drift along ``d`` from the first to the last step, per unit of ``d``.
        noise_std: standard deviation of the i.i.d. Gaussian noise per value.
        offset_std: standard deviation of the per-sample constant offset.
        scale_min, scale_max: range of the per-sample log-uniform scale (equal: no scaling).
        seed: the data is a pure function of the arguments (NumPy ``default_rng(seed)``).

    Returns:
        TrendData with ``X_train (n_train, T, H) float32``, ``y_train (n_train,) int64``,
        ``s_train (n_train,) float32`` and the test split likewise.

    Raises:
        ValueError: for non-positive sizes, negative noise, or ``0 < scale_min <= scale_max`` violated.
    """
    if min(n_train, n_test, seq_len, features) < 1:
        raise ValueError("n_train, n_test, seq_len and features must all be >= 1")
    if seq_len < 2:
        raise ValueError("seq_len must be >= 2: a trend needs two timesteps")
    if noise_std < 0 or offset_std < 0:
        raise ValueError("noise_std and offset_std must be >= 0")
    if not 0 < scale_min <= scale_max:
        raise ValueError("need 0 < scale_min <= scale_max")
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(features)
    direction *= np.sqrt(features) / np.linalg.norm(direction)  # (H,), RMS 1
    tau = np.linspace(-0.5, 0.5, seq_len)  # (T,)

    def split(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = rng.permutation(np.arange(n) % 2)  # (N,) balanced
        sign = 2.0 * y - 1.0  # class 1 increases
        offset = offset_std * rng.standard_normal((n, 1, features))  # (N, 1, H)
        trend = trend_strength * sign[:, None, None] * tau[None, :, None] * direction  # (N, T, H)
        noise = noise_std * rng.standard_normal((n, seq_len, features))  # (N, T, H)
        scale = np.exp(rng.uniform(np.log(scale_min), np.log(scale_max), size=(n, 1, 1)))
        X = scale * (offset + trend + noise)
        as_tensor = lambda a, dtype: torch.from_numpy(a.astype(dtype))  # noqa: E731
        return as_tensor(X, np.float32), as_tensor(y, np.int64), as_tensor(scale.reshape(n), np.float32)

    X_train, y_train, s_train = split(n_train)
    X_test, y_test, s_test = split(n_test)
    return TrendData(X_train, y_train, X_test, y_test, s_train, s_test)
