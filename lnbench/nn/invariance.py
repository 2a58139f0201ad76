"""The invariance table of Ba, Kiros & Hinton (2016), section 5.1, Table 1, measured.

For each method, a layer computes the summed inputs ``a = W x`` of a batch (``x`` one row per
training case) and normalizes them; gain and bias are left out (gamma = 1, beta = 0, g = 1), as
in the paper's analysis. Each transformation of section 5.1 is applied and the largest change of
the normalized summed inputs over the batch is measured, in float64:

====================================  =============================================
weight matrix re-scaling              ``W -> delta W``
weight matrix re-centering            ``W -> W + 1 gamma^T`` (the same vector added to every row)
weight vector re-scaling              one row ``w_i -> delta w_i``
dataset re-scaling                    every ``x -> delta x``
dataset re-centering                  every ``x -> x + gamma``
single training case re-scaling       one case ``x_n -> delta x_n``
====================================  =============================================

with ``delta`` log-uniform in [0.1, 10] and ``gamma ~ N(0, I)``, several draws per cell.

The methods (:data:`METHODS`) are lnbench's own layers, one row per kind of the norm registry
(:data:`lnbench.names.NORM_REGISTRY`) that normalizes something: BatchNorm in training mode (batch
statistics), weight normalization with g = 1, GroupNorm with :data:`GROUPS` groups. The rows that are
not in the paper's table (:data:`ROW_SOURCES`) are derived below.

**Thresholds.** An exactly invariant method changes its output only through ``eps`` inside the
square root and through float64 rounding. With ``v`` the variance (or mean square) a method
divides by, ``|1/sqrt(v' + eps) - 1/sqrt(v')| sqrt(v') <= eps / (2 v')``, so the change of an
output of size ``|a_hat|`` is at most ``eps / (2 v_min) |a_hat|`` on each side of the comparison;
rounding adds ~1e-16 per operation, more where the mean is subtracted from values much larger
than their spread (an error growing with ``|mean| / std``): the 1e-10 term covers it at these sizes. The tolerance of a cell is therefore
``tol = (eps / v_min + 1e-10) * max(1, max |a_hat|)``, ``v_min`` the smallest such ``v`` before
or after the transformation (weight normalization has no eps: rounding only). A cell is
*invariant* (I) when the change is at most ``tol``, *not invariant* (N) when it exceeds
``1000 tol`` (and 1e-6), and *unclear* (?) in between, which counts as a disagreement. The
layers are built with ``eps = 1e-10`` (:data:`EPS`), not their default 1e-5, so that an invariant
cell reads ~1e-10 rather than ~1e-3: with eps = 1e-5 and delta = 0.1 the variance shrinks 100x
and eps alone moves the output by up to ~eps / (2 v) |a_hat|.

**RMSNorm's row** (Zhang & Sennrich 2019, Table 1), derived: ``a / sqrt(mean_i a_i^2)`` is unchanged when every ``a_i`` of a case
is multiplied by the same factor: weight matrix re-scaling (I), dataset re-scaling (I), single
case re-scaling (I). Nothing is subtracted, so the shifts of re-centering stay (N, N), and
re-scaling one unit changes the root mean square of every case (N).

**GroupNorm's row**, derived (G groups of H/G units, statistics per case and group): the same as
LayerNorm's, whose argument holds group by group. ``W -> delta W`` and ``x -> delta x`` multiply
every group's values, mean and standard deviation by delta (I, I); ``W -> W + 1 gamma^T`` adds
the same ``gamma^T x_n`` to every unit of case n, so to every group's mean, which is subtracted
(I); one case re-scaled is its own statistics (I). Re-scaling one row ``w_i`` changes the mean and
variance of unit i's group (N); re-centering the data adds ``w_i^T gamma``, a different amount to
each unit (N). Not in the paper (Wu & He 2018 came later). With G = H each group is one unit,
whose x_hat is 0 whatever happens: every cell would read I, a degenerate layer, not an invariance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.groupnorm import GroupNorm
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.rmsnorm import RMSNorm
from lnbench.nn.weightnorm import weight_normalize

EPS = 1e-10  # the layers' eps here: small, so the table shows the math (see "Thresholds")
GROUPS = 4  # GroupNorm's G here: 32 units in groups of 8
TRANSFORMATIONS = (
    ("weight_matrix_rescaling", "weight matrix re-scaling"),
    ("weight_matrix_recentering", "weight matrix re-centering"),
    ("weight_vector_rescaling", "weight vector re-scaling"),
    ("dataset_rescaling", "dataset re-scaling"),
    ("dataset_recentering", "dataset re-centering"),
    ("single_case_rescaling", "single training case re-scaling"),
)
#: Ba et al. 2016, Table 1 (I = invariant, N = not); RMSNorm's row: Zhang & Sennrich 2019, Table 1 (and derived, module docstring).
EXPECTED = {
    "batch": ("I", "N", "I", "I", "I", "N"),
    "weight": ("I", "N", "I", "N", "N", "N"),
    "layer": ("I", "I", "N", "I", "N", "I"),
    "rms": ("I", "N", "N", "I", "N", "I"),
    "group": ("I", "I", "N", "I", "N", "I"),  # derived (module docstring): LayerNorm's, group by group
}
IN_PAPER = ("batch", "weight", "layer")
#: where a row not in Ba et al.'s table comes from (the norm's paper; its row derived in the module docstring)
ROW_SOURCES = {"rms": "Zhang & Sennrich 2019, Table 1", "group": "Wu & He 2018; row derived"}

Normalized = tuple[torch.Tensor, float]  # the normalized summed inputs (N, H), and v_min


def _batch(W: torch.Tensor, X: torch.Tensor) -> Normalized:
    a = X @ W.T
    bn = BatchNorm1d(W.shape[0], eps=EPS).double().train()
    return bn(a), float(a.var(dim=0, unbiased=False).min())


def _weight(W: torch.Tensor, X: torch.Tensor) -> Normalized:
    return X @ weight_normalize(W, torch.ones(W.shape[0], dtype=W.dtype)).T, math.inf


def _layer(W: torch.Tensor, X: torch.Tensor) -> Normalized:
    a = X @ W.T
    return LayerNorm(W.shape[0], eps=EPS).double()(a), float(a.var(dim=1, unbiased=False).min())


def _rms(W: torch.Tensor, X: torch.Tensor) -> Normalized:
    a = X @ W.T
    return RMSNorm(W.shape[0], eps=EPS).double()(a), float(a.square().mean(dim=1).min())


def _group(W: torch.Tensor, X: torch.Tensor) -> Normalized:
    a = X @ W.T  # (N, H)
    groups = a.unflatten(1, (GROUPS, W.shape[0] // GROUPS))  # (N, G, H/G): the variance GroupNorm divides by
    return GroupNorm(W.shape[0], eps=EPS, groups=GROUPS).double()(a), float(groups.var(dim=2, unbiased=False).min())


#: method -> (label, the normalized summed inputs (and v_min) of the batch X under weights W)
METHODS: dict[str, tuple[str, Callable[[torch.Tensor, torch.Tensor], Normalized]]] = {
    "batch": ("batch norm", _batch),
    "weight": ("weight norm", _weight),
    "layer": ("layer norm", _layer),
    "rms": ("RMSNorm", _rms),
    "group": ("GroupNorm", _group),
}


#: each transformation of :data:`TRANSFORMATIONS` as the change it makes in place to ``(W, X)``,
#: given ``delta``, ``gamma`` and the generator that picks the row or the case
_CHANGES: dict[str, Callable[[torch.Tensor, torch.Tensor, float, torch.Tensor, np.random.Generator], object]] = {
    "weight_matrix_rescaling": lambda W, X, delta, gamma, rng: W.mul_(delta),
    "weight_matrix_recentering": lambda W, X, delta, gamma, rng: W.add_(gamma[None, :]),
    "weight_vector_rescaling": lambda W, X, delta, gamma, rng: W[rng.integers(W.shape[0])].mul_(delta),
    "dataset_rescaling": lambda W, X, delta, gamma, rng: X.mul_(delta),
    "dataset_recentering": lambda W, X, delta, gamma, rng: X.add_(gamma[None, :]),
    "single_case_rescaling": lambda W, X, delta, gamma, rng: X[rng.integers(X.shape[0])].mul_(delta),
}


def transform(
    name: str, W: torch.Tensor, X: torch.Tensor, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply one transformation of section 5.1 to ``(W (H, D), X (N, D))`` with a random delta,
    gamma, row or case; returns new tensors (the inputs are not modified)."""
    delta = float(np.exp(rng.uniform(np.log(0.1), np.log(10.0))))
    gamma = torch.from_numpy(rng.standard_normal(W.shape[1]))
    if name not in _CHANGES:
        raise ValueError(f"unknown transformation {name!r}; allowed: {', '.join(t for t, _ in TRANSFORMATIONS)}")
    W, X = W.clone(), X.clone()
    _CHANGES[name](W, X, delta, gamma, rng)
    return W, X


def classify(change: float, tol: float) -> str:
    """``I`` if ``change <= tol``, ``N`` if it exceeds ``1000 tol`` and 1e-6, else ``?``."""
    return "I" if change <= tol else "N" if change > max(1000 * tol, 1e-6) else "?"


@dataclass
class Cell:
    """One measured cell of the table (``invariance.json`` ``cells``)."""

    method: str
    transformation: str
    max_change: float
    tolerance: float
    measured: str  # "I", "N" or "?"
    paper: str | None  # the paper's verdict; None for RMSNorm and GroupNorm (not in the paper)
    expected: str  # the paper's, or the derived one
    agrees: bool

    def to_dict(self) -> dict:
        return asdict(self)


def measure(
    seed: int = 0, draws: int = 5, cases: int = 64, inputs: int = 16, units: int = 32, methods: dict | None = None
) -> list[Cell]:
    """Measure every method x transformation cell (see the module docstring).

    Args:
        seed: seeds W, X and the draws (NumPy ``default_rng``).
        draws: random (delta, gamma, row, case) draws per cell; the largest change counts.
        cases, inputs, units: N, D and H of the batch ``X (N, D)`` and the weights ``W (H, D)``.
        methods: ``name -> (label, fn)``, default :data:`METHODS` (a test passes a wrong norm).

    Returns:
        One :class:`Cell` per method and transformation, in table order. An output that is NaN
        makes its cell's change NaN, measured ``?``, and a disagreement (a method not in
        :data:`EXPECTED`, a user's norm, agrees whenever its change is finite).
    """
    methods = METHODS if methods is None else methods
    rng = np.random.default_rng(seed)
    W = torch.from_numpy(rng.standard_normal((units, inputs)) / math.sqrt(inputs))
    X = torch.from_numpy(rng.standard_normal((cases, inputs)))
    cells = []
    with torch.no_grad():
        for method, (_, fn) in methods.items():
            base, v_base = fn(W, X)
            for k, (name, _) in enumerate(TRANSFORMATIONS):
                change, tol = 0.0, 0.0
                for _ in range(draws):
                    out, v = fn(*transform(name, W, X, rng))
                    scale = max(1.0, float(base.abs().max()), float(out.abs().max()))
                    tol = max(tol, (EPS / min(v_base, v) + 1e-10) * scale)
                    moved = float((out - base).abs().max())
                    change = moved if math.isnan(moved) else max(change, moved)  # a NaN stays (max(0.0, nan) is 0.0)
                measured = classify(change, tol)
                expected = EXPECTED[method][k] if method in EXPECTED else "?"
                paper = EXPECTED[method][k] if method in IN_PAPER else None
                # a user's norm: measured only, but an output that is NaN or inf is no measurement
                agrees = measured == expected if method in EXPECTED else math.isfinite(change)
                cells.append(Cell(method, name, change, tol, measured, paper, expected, agrees))
    return cells
