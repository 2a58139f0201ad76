"""The checks behind ``lnbench gradcheck``: are the LayerNorm forward and gradients right?

:func:`run_checks` is a pure function (no printing, no files) returning one :class:`Check` per
comparison, in four groups:

- ``finite-diff``: the NumPy backward (:mod:`lnbench.nn.numpy_layernorm`) against central finite
  differences for dx, dgamma, dbeta, in float64, on the requested shape and on (3, 7) and
  (2, 3, 4, 5). Passes when ``rel_error <= 1e-5``. Finite differences cost 2 forward passes
  per input element, so for a shape with more than 4096 elements only the first
  ``4096 // D`` rows are checked (said in ``detail``); D > 4096 is rejected. A gradient that
  is ~0 (dx when D <= 2) passes on ``max_abs_error <= 1e-8`` instead.
- ``vs-torch``: NumPy against ``torch.nn.functional.layer_norm`` forward and autograd backward
  in the requested dtype, on the requested shape, every row with mean 100 and std 10. Passes
  when ``rel_error`` or ``max_abs_error`` is within 1e-10 (float64), 1e-5 (float32) or 1e-2
  (float16), or, where they disagree by more, when NumPy is the closer of the two to torch in
  float64 on the same rounded inputs (said in ``detail``). Torch is not always the more
  accurate one: its float16 CPU backward sums dgamma and dbeta with an error that grows with
  the number of rows (rel 4e-4 at 16 rows, 7e-3 at 8192, 2e-2 at 100000; NumPy stays ~1e-4),
  and in float32 it computes y as ``x * rstd - mean * rstd``, so a constant row of 100 gives
  x_hat ~ 1e-3 instead of 0. For float32 and float16 there are also ``<name> vs float64``
  checks against that float64 answer, within 1e-5 and 1e-3.
- ``autograd``: ``torch.autograd.gradcheck`` in float64 on :class:`lnbench.nn.layernorm.LayerNorm`,
  :class:`lnbench.nn.batchnorm.BatchNorm1d` (training mode; running statistics get updated,
  which does not change the training-mode output) and :class:`lnbench.nn.groupnorm.GroupNorm`
  (two groups, or one for an odd D), with gamma and beta as inputs too; and each module's forward
  and gradients against ``F.layer_norm`` / ``F.batch_norm`` / ``F.group_norm`` (the (B, T, D)
  input as B * T rows, D its channel axis)
  (``rel_error <= 1e-10``). Input ``(2, 3, min(D, 16))``: the Jacobian is dense, so cost grows
  with the square of the input size.
- ``edge-cases``: float32 cancellation (40000 + [0, 1, 2, 3]), a constant row, D = 1, an empty
  leading axis, ``arange(24).reshape(2, 3, 4)``, and read-only, non-contiguous and broadcast
  inputs, each against values computed by hand. Passes when ``max_abs_error`` is within the
  tolerance (expected values are often exactly 0, where a relative error means nothing).

Relative error everywhere: ``max|a - b| / max(max(|a| + |b|), tiny)``
(:func:`lnbench.nn.numpy_layernorm.relative_error`). Random inputs have every row standardized
(exact mean and std before rounding), so no row is ill-conditioned whatever the seed.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from lnbench.nn.numpy_layernorm import (
    gradcheck,
    layernorm_backward,
    layernorm_forward,
    max_abs_error,
    relative_error,
)

DTYPES = ("float16", "float32", "float64")
FINITE_DIFF_TOLERANCE = 1e-5
FINITE_DIFF_MAX_ELEMENTS = 4096
FINITE_DIFF_SHAPES = ((3, 7), (2, 3, 4, 5))
FINITE_DIFF_ABS_FLOOR = 1e-8
TORCH_TOLERANCE = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2}
FLOAT64_ORACLE_TOLERANCE = {"float32": 1e-5, "float16": 1e-3}
AUTOGRAD_MAX_FEATURES = 16
MAX_ELEMENTS = 1 << 24
EPS = 1e-5


@dataclass(frozen=True)
class Check:
    """One comparison and its verdict.

    Attributes:
        name: what was compared, e.g. ``"dx (4, 5, 8)"``.
        group: ``finite-diff``, ``vs-torch``, ``autograd`` or ``edge-cases``.
        max_abs_error: ``max|a - b|`` over the compared arrays (NaN when not measured).
        rel_error: ``max|a - b| / max(max(|a| + |b|), tiny)``.
        tolerance: the bar on ``rel_error``; in ``edge-cases`` the bar on ``max_abs_error``
            (expected values there are often exactly 0). ``finite-diff``, ``vs-torch`` and
            ``autograd`` checks also pass when ``max_abs_error`` is below an absolute floor
            (see the module docstring), for outputs that are ~0.
        passed: whether the bar was met (and any extra condition named in ``detail``).
        detail: inputs, or why the check failed.
    """

    name: str
    group: str
    max_abs_error: float
    rel_error: float
    tolerance: float
    passed: bool
    detail: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _compare(name, group, actual, expected, *, rtol=None, atol=None, extra_ok=True, detail=""):
    """A :class:`Check` of arrays (or lists of arrays, concatenated) against an oracle.

    Passes when ``rel_error <= rtol`` or ``max_abs_error <= atol`` (a None bar is not used),
    and ``extra_ok``.
    """
    if isinstance(actual, (list, tuple)):
        actual = np.concatenate([np.ravel(np.asarray(a, dtype=np.float64)) for a in actual])
        expected = np.concatenate([np.ravel(np.asarray(e, dtype=np.float64)) for e in expected])
    abs_err, rel_err = max_abs_error(actual, expected), relative_error(actual, expected)
    ok = (rtol is not None and rel_err <= rtol) or (atol is not None and abs_err <= atol)
    tolerance = rtol if rtol is not None else atol
    return Check(name, group, abs_err, rel_err, tolerance, bool(ok and extra_ok), detail)


def check_arguments(dtype: object, shape: object) -> tuple[str, tuple[int, ...]]:
    """The dtype name and shape :func:`run_checks` runs with, checked before anything runs.

    Raises:
        ValueError: the problem :func:`run_checks` documents, naming ``dtype`` or ``shape``.
    """
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if name not in DTYPES:
        raise ValueError(f"dtype: {dtype!r} is not supported; choose one of {', '.join(DTYPES)}")
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or len(shape) == 0:
        raise ValueError(f"shape: expected a sequence of positive ints such as (4, 5, 8), got {shape!r}")
    if not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) and int(n) >= 1 for n in shape):
        raise ValueError(f"shape: every axis must be an int >= 1, got {tuple(shape)!r}")
    shape = tuple(int(n) for n in shape)
    if shape[-1] > FINITE_DIFF_MAX_ELEMENTS:
        raise ValueError(
            f"shape: D = {shape[-1]} features; the finite-difference check supports D <= {FINITE_DIFF_MAX_ELEMENTS}"
        )
    if math.prod(shape) > MAX_ELEMENTS:
        raise ValueError(f"shape: {shape} has {math.prod(shape)} elements; at most {MAX_ELEMENTS} are allowed")
    return name, shape


def run_checks(dtype: str = "float64", shape: Sequence[int] = (4, 5, 8), seed: int = 0) -> list[Check]:
    """Run every gradient check and return the results; prints and writes nothing.

    Args:
        dtype: dtype of the ``vs-torch`` group: ``float16``, ``float32`` or ``float64``. The
            finite-difference and autograd groups always run in float64. Default: float64.
        shape: input shape ``(..., D)`` for the ``finite-diff`` and ``vs-torch`` groups; D
            also sizes the ``autograd`` group. Default: (4, 5, 8).
        seed: seed of every random input. Default: 0.

    Returns:
        A list of :class:`Check`, grouped as described in the module docstring.

    Raises:
        ValueError: for an unsupported dtype, an empty shape, an axis < 1, D > 4096 or more
            than 2**24 elements; the message names ``dtype`` or ``shape``.
    """
    dtype, shape = check_arguments(dtype, shape)
    rng = np.random.default_rng(seed)
    return [
        *finite_difference_checks(shape, rng),
        *torch_checks(dtype, shape, rng),
        *autograd_checks(shape[-1], rng),
        *edge_case_checks(),
    ]


def _normal_inputs(shape, rng, mean, std):
    """x whose every row has exactly this mean and std (constant rows when D = 1),
    gamma ~ 1 + 0.5 N(0, 1), beta ~ N(0, 1), grad_y ~ N(0, 1); float64."""
    D = shape[-1]
    z = rng.standard_normal(shape)
    z -= z.mean(axis=-1, keepdims=True)
    z_std = z.std(axis=-1, keepdims=True)
    z = np.divide(z, z_std, out=np.zeros_like(z), where=z_std > 0)
    x = mean + std * z
    return x, 1.0 + 0.5 * rng.standard_normal(D), rng.standard_normal(D), rng.standard_normal(shape)


def finite_difference_checks(shape: tuple[int, ...], rng: np.random.Generator) -> list[Check]:
    """NumPy dx, dgamma, dbeta against central finite differences, float64 (group ``finite-diff``)."""
    checks = []
    for s in dict.fromkeys((shape, *FINITE_DIFF_SHAPES)):  # the user's shape first, no duplicates
        x, gamma, beta, grad_y = _normal_inputs(s, rng, mean=3.0, std=2.0)
        detail = f"float64, x of shape {s}, rows of mean 3 and std 2"
        if x.size > FINITE_DIFF_MAX_ELEMENTS:
            rows = FINITE_DIFF_MAX_ELEMENTS // s[-1]
            x, grad_y = x.reshape(-1, s[-1])[:rows], grad_y.reshape(-1, s[-1])[:rows]
            detail += f", first {rows} of {math.prod(s[:-1])} rows (finite differences are O(size^2))"
        for grad, err in gradcheck(x, gamma, beta, EPS, grad_y=grad_y).items():
            passed = err.rel_error <= FINITE_DIFF_TOLERANCE or err.max_abs_error <= FINITE_DIFF_ABS_FLOOR
            checks.append(
                Check(
                    f"{grad} {s}",
                    "finite-diff",
                    err.max_abs_error,
                    err.rel_error,
                    FINITE_DIFF_TOLERANCE,
                    passed,
                    detail,
                )
            )
    return checks


def torch_checks(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> list[Check]:
    """NumPy y, dx, dgamma, dbeta against F.layer_norm and autograd in ``dtype`` (group ``vs-torch``)."""
    import torch
    import torch.nn.functional as F

    inputs = [a.astype(dtype) for a in _normal_inputs(shape, rng, mean=100.0, std=10.0)]
    y, cache = layernorm_forward(inputs[0], inputs[1], inputs[2], EPS)
    ours = (y, *layernorm_backward(inputs[3], cache))

    def torch_outputs(torch_dtype):
        x, gamma, beta, grad_y = (torch.from_numpy(a).to(torch_dtype) for a in inputs)
        leaves = [t.requires_grad_(True) for t in (x, gamma, beta)]
        y = F.layer_norm(x, (shape[-1],), gamma, beta, EPS)
        return [t.detach().numpy() for t in (y, *torch.autograd.grad(y, leaves, grad_y))]

    names = ("y", "dx", "dgamma", "dbeta")
    detail = f"{dtype}, x of shape {shape}, rows of mean 100 and std 10; F.layer_norm + autograd"
    tol = TORCH_TOLERANCE[dtype]
    theirs = torch_outputs(getattr(torch, dtype))
    checks = [
        _compare(
            name,
            "vs-torch",
            a,
            t,
            rtol=tol,
            atol=tol,
            extra_ok=a.dtype == np.dtype(dtype),
            detail=f"{detail} in {dtype}",
        )
        for name, a, t in zip(names, ours, theirs)
    ]
    if dtype == "float64":
        return checks
    # How close is NumPy to the exact answer, torch's own rounding aside? Where NumPy and torch
    # disagree, NumPy passes if it is the closer of the two to float64.
    exact = torch_outputs(torch.float64)
    for i, (a, t, e) in enumerate(zip(ours, theirs, exact)):
        ours_error, theirs_error = max_abs_error(a, e), max_abs_error(t, e)
        if not checks[i].passed and a.dtype == np.dtype(dtype) and ours_error <= theirs_error:
            checks[i] = replace(
                checks[i],
                passed=True,
                detail=f"{checks[i].detail}; closer to float64 than torch {dtype} is "
                f"(max abs error {ours_error:.1e} vs {theirs_error:.1e})",
            )
    tol = FLOAT64_ORACLE_TOLERANCE[dtype]
    checks += [
        _compare(f"{name} vs float64", "vs-torch", a, e, rtol=tol, atol=tol, detail=f"{detail} in float64")
        for name, a, e in zip(names, ours, exact)
    ]
    return checks


def autograd_checks(features: int, rng: np.random.Generator) -> list[Check]:
    """torch.autograd.gradcheck and F.* references for lnbench.nn.layernorm and lnbench.nn.batchnorm, float64 (group ``autograd``)."""
    import torch
    import torch.nn.functional as F
    from torch.func import functional_call

    try:
        from lnbench.nn.batchnorm import BatchNorm1d
        from lnbench.nn.groupnorm import GroupNorm
        from lnbench.nn.layernorm import LayerNorm
    except ImportError as exc:  # norms.py is optional for the NumPy checks
        detail = f"cannot import lnbench.nn.layernorm or lnbench.nn.batchnorm: {exc}"
        return [Check("lnbench.nn.layernorm, batchnorm", "autograd", 0.0, 0.0, 0.0, False, detail)]

    D = min(features, AUTOGRAD_MAX_FEATURES)
    shape = (2, 3, D)  # (B, T, D)
    x, gamma, beta, _ = _normal_inputs(shape, rng, mean=3.0, std=2.0)
    inputs = [torch.from_numpy(a).requires_grad_(True) for a in (x, gamma, beta)]
    grad_y = torch.from_numpy(rng.standard_normal(shape))

    def batch_norm_reference(x, gamma, beta):  # BatchNorm1d normalizes every axis but the last
        y = F.batch_norm(x.reshape(-1, D), None, None, gamma, beta, training=True, eps=EPS)
        return y.reshape(x.shape)

    groups = 2 if D % 2 == 0 else 1

    def group_norm_reference(x, gamma, beta):  # torch normalizes (N, C, *): our D as C, each (b, t) a sample
        return F.group_norm(x.reshape(-1, D), groups, gamma, beta, EPS).reshape(x.shape)

    references = {
        "LayerNorm": (LayerNorm(D, eps=EPS), lambda x, g, b: F.layer_norm(x, (D,), g, b, EPS), "F.layer_norm"),
        "BatchNorm1d": (BatchNorm1d(D, eps=EPS), batch_norm_reference, "F.batch_norm(training=True)"),
        "GroupNorm": (GroupNorm(D, eps=EPS, groups=groups), group_norm_reference, f"F.group_norm({groups} groups)"),
    }
    checks = []
    for name, (layer, reference, reference_name) in references.items():
        module = layer.double().train()
        module._warned_single_value = True  # D = 1 is checked on purpose: no "one feature" warning

        def fn(x, gamma, beta, module=module):
            return functional_call(module, {"gamma": gamma, "beta": beta}, (x,))

        settings = "eps=1e-6, atol=1e-5, rtol=1e-3"
        try:
            ok = torch.autograd.gradcheck(fn, tuple(inputs), eps=1e-6, atol=1e-5, rtol=1e-3)
            detail = f"torch.autograd.gradcheck({settings}) on x, gamma, beta of {shape}, float64"
        except Exception as exc:  # GradcheckError, or the module failing outright
            ok, detail = False, f"torch.autograd.gradcheck({settings}) failed: {str(exc).splitlines()[0]}"
        # gradcheck answers pass/fail only: its errors are not measured (NaN, shown as "-")
        checks.append(Check(f"{name} gradcheck", "autograd", math.nan, math.nan, 1e-5, bool(ok), detail))

        ours = [fn(*inputs)]
        ours += torch.autograd.grad(ours[0], inputs, grad_y)
        theirs = [reference(*inputs)]
        theirs += torch.autograd.grad(theirs[0], inputs, grad_y)
        checks.append(
            _compare(
                f"{name} vs {reference_name}",
                "autograd",
                [t.detach().numpy() for t in ours],
                [t.detach().numpy() for t in theirs],
                rtol=1e-10,
                atol=1e-10,
                detail=f"y, dx, dgamma, dbeta on {shape}, float64",
            )
        )
    return checks


def _forward_backward(x, gamma, beta, grad_y):
    y, cache = layernorm_forward(x, gamma, beta, EPS)
    return (y, *layernorm_backward(grad_y, cache))


def edge_case_checks() -> list[Check]:
    """Awkward inputs against values computed by hand (group ``edge-cases``)."""
    group = "edge-cases"
    checks = []
    row = np.array([-1.5, -0.5, 0.5, 1.5])  # x - mean for any row of 4 evenly spaced values

    # Cancellation: E[x^2] - E[x]^2 in float32 loses every digit here; two-pass does not.
    x = np.arange(40000, 40004, dtype=np.float32)
    y, _ = layernorm_forward(x, np.ones(4, np.float32), np.zeros(4, np.float32), EPS)
    checks.append(
        _compare(
            "float32 40000 + [0, 1, 2, 3]",
            group,
            y,
            row / np.sqrt(1.25 + EPS),
            atol=1e-6,
            extra_ok=y.dtype == np.float32,
            detail="y = [-1.3416355, -0.4472118, 0.4472118, 1.3416355] in float32",
        )
    )

    # Constant row: var = 0, rstd = 1/sqrt(eps); y is exactly 0 and dx stays finite.
    grad_y = np.array([1.0, 2.0, 3.0, 4.0])
    out = _forward_backward(np.full(4, 1234.0), np.ones(4), np.zeros(4), grad_y)
    expected = (np.zeros(4), (grad_y - 2.5) / np.sqrt(EPS), np.zeros(4), grad_y)
    checks.append(
        _compare(
            "constant row [1234] * 4",
            group,
            list(out),
            list(expected),
            atol=1e-9,
            extra_ok=bool(np.all(out[0] == 0.0)),
            detail="y == 0 exactly, dx = (dy - mean(dy)) / sqrt(eps)",
        )
    )

    # D = 1: x_hat = 0, so y = beta, dx = 0, dgamma = 0, dbeta = sum(dy).
    x, grad_y = np.array([[3.0], [-7.0]]), np.array([[1.0], [2.0]])
    out = _forward_backward(x, np.array([2.0]), np.array([0.5]), grad_y)
    expected = (np.full((2, 1), 0.5), np.zeros((2, 1)), np.zeros(1), np.array([3.0]))
    checks.append(_compare("D = 1", group, list(out), list(expected), atol=1e-12, detail="y = beta, dx = 0"))

    # Empty leading axis: right shapes, zero parameter gradients, no warnings.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _forward_backward(np.zeros((0, 4)), np.ones(4), np.zeros(4), np.zeros((0, 4)))
    shapes_ok = out[0].shape == out[1].shape == (0, 4)
    checks.append(
        _compare(
            "empty leading axis (0, 4)",
            group,
            list(out[2:]),
            [np.zeros(4)] * 2,
            atol=0.0,
            extra_ok=shapes_ok and not caught,
            detail=f"y, dx shape (0, 4): {shapes_ok}; warnings: {[str(w.message) for w in caught]}",
        )
    )

    # arange(24).reshape(2, 3, 4), dy = 1: every row normalizes to row / sqrt(1.25 + eps); dx = 0.
    x_hat = row / np.sqrt(1.25 + EPS)
    out = _forward_backward(np.arange(24.0).reshape(2, 3, 4), np.ones(4), np.zeros(4), np.ones((2, 3, 4)))
    expected = (np.broadcast_to(x_hat, (2, 3, 4)), np.zeros((2, 3, 4)), 6 * x_hat, np.full(4, 6.0))
    checks.append(
        _compare(
            "arange(24).reshape(2, 3, 4)",
            group,
            list(out),
            list(expected),
            atol=1e-12,
            detail="dgamma = 6 x_hat row, dbeta = 6",
        )
    )

    # Read-only, transposed (non-contiguous) x and a broadcast (zero-stride) dy; nothing mutated.
    x_t = np.arange(24.0).reshape(4, 3, 2).T  # (2, 3, 4); each row is i + 2j + 6 * [0, 1, 2, 3]
    gamma, beta = np.ones(4), np.zeros(4)
    for a in (x_t, gamma, beta):
        a.setflags(write=False)
    copies = [a.copy() for a in (x_t, gamma, beta)]
    out = _forward_backward(x_t, gamma, beta, np.broadcast_to(1.0, x_t.shape))
    x_hat = 6 * row / np.sqrt(45.0 + EPS)  # var = 36 * 1.25
    expected = (np.broadcast_to(x_hat, (2, 3, 4)), np.zeros((2, 3, 4)), 6 * x_hat, np.full(4, 6.0))
    unchanged = all(np.array_equal(a, c) for a, c in zip((x_t, gamma, beta), copies))
    checks.append(
        _compare(
            "read-only transposed x, broadcast dy",
            group,
            list(out),
            list(expected),
            atol=1e-12,
            extra_ok=unchanged,
            detail=f"inputs unchanged: {unchanged}",
        )
    )
    return checks
