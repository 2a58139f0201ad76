"""The adding problem as a 2-class task (Hochreiter & Schmidhuber 1997, experiment 4; Le et al.
2015, section 4.1), generated offline from the seed.

Each sequence has T steps of two features, a value and a marker::

    x_t = (v_t, m_t)      v_t ~ U[0, 1] i.i.d.      m_t = 1 at two steps, 0 elsewhere
    one marked step a ~ U{0 .. h - 1}, the other b ~ U{h .. T - 1}, h = floor(T / 2)
    y = 1 if v_a + v_b > 1 else 0

The regression form asks for v_a + v_b; its classification form here asks whether the sum passes
1, the median of the sum of two U[0, 1] values, so the classes are balanced in expectation
(P(y = 1) = 1/2; each split's labels are binomial, not forced to balance). The distance to
remember is set by T (``data.seq_len``): the first marked value must be carried across up to
T - 1 steps.

No single step tells the class: x_T is marked with probability 1 / (T - h) (0.1 at T = 20), and
a marked last step alone gives 75 % (its value against 1/2), so a memoryless readout of x_T is at
best 1/2 + 1/4 / (T - h): 52.5 % at T = 20 (:mod:`lnbench.training.baselines`, tested). A linear
readout of the whole sequence cannot form the products v_t m_t either.
"""

from __future__ import annotations

import numpy as np
import torch

from lnbench.config import DataConfig
from lnbench.training.data import TaskData

FEATURES = 2  # (value, marker)


def make_adding_data(n_train: int, n_test: int, seq_len: int, seed: int = 0) -> TaskData:
    """The adding problem's splits (the module docstring gives the distribution).

    Args:
        n_train, n_test: sequences per split.
        seq_len: T >= 2 (one marked step in each half).
        seed: the data is a pure function of the arguments (NumPy ``default_rng(seed)``; the
            training split is drawn first, then the test split).

    Returns:
        TaskData with ``X_* (N, T, 2) float32`` (value, marker), ``y_* (N,) int64`` in {0, 1},
        ``s_*`` ones (no per-sequence scale), ``num_classes`` 2.

    Raises:
        ValueError: for ``n_train`` or ``n_test`` < 1, or ``seq_len`` < 2.
    """
    if min(n_train, n_test) < 1:
        raise ValueError("n_train and n_test must be >= 1")
    if seq_len < 2:
        raise ValueError("seq_len must be >= 2: one marked step in each half")
    rng = np.random.default_rng(seed)
    half = seq_len // 2

    def split(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        values = rng.uniform(0.0, 1.0, size=(n, seq_len))  # (N, T)
        first = rng.integers(0, half, size=n)  # (N,) in the first half
        second = rng.integers(half, seq_len, size=n)  # (N,) in the second half
        markers = np.zeros((n, seq_len))
        rows = np.arange(n)
        markers[rows, first] = 1.0
        markers[rows, second] = 1.0
        y = (values[rows, first] + values[rows, second] > 1.0).astype(np.int64)
        X = np.stack([values, markers], axis=-1).astype(np.float32)  # (N, T, 2)
        return torch.from_numpy(X), torch.from_numpy(y), torch.ones(n)

    X_train, y_train, s_train = split(n_train)
    X_test, y_test, s_test = split(n_test)
    return TaskData(X_train, y_train, X_test, y_test, s_train, s_test, num_classes=2)


def make(cfg: DataConfig, seed: int = 0) -> TaskData:
    """The adding problem of ``cfg`` (``n_train``, ``n_test``, ``seq_len``) for ``seed``."""
    return make_adding_data(cfg.n_train, cfg.n_test, cfg.seq_len, seed)
