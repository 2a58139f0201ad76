"""The trend task (the default): synthetic trend-classification sequences.

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

import numpy as np
import torch

from lnbench.config import DataConfig
from lnbench.names import TASKS
from lnbench.training.data import TaskData, TrendData

_D = DataConfig()  # the defaults live in the schema only


def make(cfg: DataConfig, seed: int = 0) -> TaskData:
    """The trend sequences of ``cfg`` (its trend keys, ``n_train``, ``n_test``) for ``seed``."""
    keys = ("n_train", "n_test", *TASKS["trend"].keys)
    return make_trend_data(**{k: getattr(cfg, k) for k in keys}, seed=seed)


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
