r"""Layer Normalization in NumPy with a hand-written backward pass.

Ba, Kiros, Hinton, "Layer Normalization", arXiv 1607.06450 (2016), section 3. For one sample
with H summed inputs ``a``::

    eq. 3   mu = 1/H sum_i a_i          sigma = sqrt(1/H sum_i (a_i - mu)^2)
    eq. 4   h  = f(g / sigma * (a - mu) + b)

As ``torch.nn.functional.layer_norm`` does, we take f as the identity, add eps inside the
square root and normalize the last axis (D = H) of an input with any leading axes::

    mean  = 1/D sum_j x_j
    var   = 1/D sum_j (x_j - mean)^2         biased, two-pass (never E[x^2] - E[x]^2)
    rstd  = 1 / sqrt(var + eps)
    x_hat = (x - mean) * rstd
    y     = gamma * x_hat + beta

- :func:`layer_norm_numpy`: eq. 3-4 for one sample of shape ``(H,)``, in the paper's notation.
- :func:`layernorm_forward` / :func:`layernorm_backward`: the same over ``(..., D)``, with a
  cache (llm.c style: ``x_hat``, ``mean``, ``rstd``, ``gamma``; never the variance).
- :func:`numerical_gradient`, :func:`gradcheck`: central finite differences, the oracle for the
  backward pass.

Backward, derived once. Per row, let ``g = gamma * dy`` (the gradient at ``x_hat``). Since
``d mean / dx_j = 1/D`` and ``d rstd / dx_j = -rstd^3 (x_j - mean) / D = -rstd^2 x_hat_j / D``::

    d x_hat_i / d x_j = rstd * (delta_ij - 1/D - x_hat_i x_hat_j / D)

so, summing ``g_i d x_hat_i / d x_j`` over i::

    dx     = rstd * (g - mean(g) - x_hat * mean(g * x_hat))        (means over the last axis)
    dgamma = sum over all rows of dy * x_hat,      dbeta = sum over all rows of dy

Dtypes: float64 is computed in float64 and float32 in float32; float16 (and integers) are
computed in float32 (float64 for integers) and the results cast back to the input's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = [
    "GradientError",
    "LayerNormCache",
    "gradcheck",
    "layer_norm_numpy",
    "layernorm_backward",
    "layernorm_forward",
    "max_abs_error",
    "numerical_gradient",
    "relative_error",
]


class LayerNormCache(NamedTuple):
    """What :func:`layernorm_backward` needs from the forward pass.

    ``x_hat``, ``mean`` and ``rstd`` are in the compute dtype (float32 or float64) with the
    leading axes of ``x`` flattened into N rows. Treat as read-only.
    """

    x_hat: np.ndarray  # (N, D)
    mean: np.ndarray  # (N,)
    rstd: np.ndarray  # (N,)
    gamma: np.ndarray  # (D,), compute dtype
    x_shape: tuple[int, ...]
    x_dtype: np.dtype  # dtype of y and dx
    gamma_dtype: np.dtype  # dtype of dgamma
    beta_dtype: np.dtype  # dtype of dbeta


class GradientError(NamedTuple):
    """Distance between an analytic and a numerical gradient (see :func:`relative_error`)."""

    max_abs_error: float
    rel_error: float


def _dtypes(x_dtype: np.dtype) -> tuple[np.dtype, np.dtype]:
    """(output dtype, compute dtype): float16 computes in float32, integers in float64."""
    out = x_dtype if np.issubdtype(x_dtype, np.floating) else np.dtype(np.float64)
    return out, np.promote_types(out, np.float32)


def _row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-row dot products of two (N, D) arrays without an (N, D) temporary."""
    if hasattr(np, "vecdot"):  # NumPy >= 2.0, BLAS-backed
        return np.vecdot(a, b)
    return np.einsum("nd,nd->n", a, b)


def _param_dtype(p: np.ndarray) -> np.dtype:
    return p.dtype if np.issubdtype(p.dtype, np.floating) else np.dtype(np.float64)


def layernorm_forward(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5
) -> tuple[np.ndarray, LayerNormCache]:
    r"""Layer Normalization forward over the last axis, returning the output and a cache.

    .. math:: y = \gamma \odot \frac{x - \mathrm{mean}(x)}{\sqrt{\mathrm{var}(x) + \epsilon}} + \beta

    with the mean and the biased variance over the last axis of each row.

    Args:
        x: input of shape ``(..., D)``; never written to (read-only arrays and views are fine).
        gamma: gain of shape ``(D,)``.
        beta: bias of shape ``(D,)``.
        eps: added to the variance inside the square root. Default: 1e-5.

    Returns:
        ``(y, cache)``: ``y`` has the shape and floating dtype of ``x`` (float16 is computed in
        float32 and rounded back); ``cache`` is a :class:`LayerNormCache` for
        :func:`layernorm_backward`.

    Shape:
        x: ``(..., D)``, any number of leading axes (including zero-sized ones). y: same.

    Raises:
        ValueError: if ``x`` is a scalar, if D = 0, or if gamma or beta is not of shape ``(D,)``.

    Source: Ba et al. 2016, eq. 3-4; mirrors ``torch.nn.functional.layer_norm(x, (D,), gamma,
    beta, eps)``.
    """
    x, gamma, beta = np.asarray(x), np.asarray(gamma), np.asarray(beta)
    if x.ndim == 0:
        raise ValueError("layernorm_forward: x must have shape (..., D) with at least one axis, got a scalar")
    D = x.shape[-1]
    if D == 0:
        raise ValueError(
            f"layernorm_forward: x of shape {x.shape} has D = 0 features; the mean and variance "
            "over an empty last axis are undefined"
        )
    if gamma.shape != (D,) or beta.shape != (D,):
        raise ValueError(
            f"layernorm_forward: gamma and beta must have shape ({D},) to match x of shape {x.shape}, "
            f"got gamma {gamma.shape} and beta {beta.shape}"
        )
    out_dtype, dtype = _dtypes(x.dtype)
    gamma_c = gamma.astype(dtype)  # a copy for the cache: the caller may update gamma in place
    beta_c = beta.astype(dtype, copy=False)

    x2 = x.reshape(-1, D)  # (N, D), a view when the layout allows
    converted = x2.dtype != dtype
    if converted:
        x2 = x2.astype(dtype)  # a fresh array we may overwrite

    # (N,): summed in float64 (pairwise), then rounded to dtype. A BLAS gemv (x2 @ ones) is faster
    # but sums float32 sequentially: at D = 2048 with an offset of 1000 its y was 2-4x further
    # from the exact result than PyTorch's
    mean = x2.sum(axis=1, dtype=np.float64)
    mean /= D
    mean = mean.astype(dtype, copy=False)
    # x_hat is built in a single fresh (N, D) buffer: x - mean, then scaled by rstd in place.
    x_hat = np.subtract(x2, mean[:, None], out=x2 if converted else None)
    var = _row_dot(x_hat, x_hat)  # (N,) sum of squares: the second pass
    var /= D
    var += eps
    rstd = np.sqrt(var, out=var)
    np.divide(1.0, rstd, out=rstd)
    np.multiply(x_hat, rstd[:, None], out=x_hat)

    y = np.multiply(x_hat, gamma_c)  # (N, D)
    y += beta_c
    if y.dtype != out_dtype:
        y = y.astype(out_dtype)
    cache = LayerNormCache(x_hat, mean, rstd, gamma_c, x.shape, out_dtype, _param_dtype(gamma), _param_dtype(beta))
    return y.reshape(x.shape), cache


def layernorm_backward(grad_y: np.ndarray, cache: LayerNormCache) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Layer Normalization backward: gradients of a loss with respect to x, gamma and beta.

    .. math::
        dx = \mathrm{rstd} \, (g - \mathrm{mean}(g) - \hat{x} \, \mathrm{mean}(g \hat{x})),
        \quad g = \gamma \odot dy

    with means over the last axis; ``dgamma`` and ``dbeta`` are ``dy * x_hat`` and ``dy``
    summed over every axis but the last.

    Args:
        grad_y: dL/dy, the same shape as ``x``; never written to (broadcast views such as
            ``np.broadcast_to(1.0, x.shape)`` are fine). Cast to the compute dtype.
        cache: the :class:`LayerNormCache` returned by :func:`layernorm_forward`; not modified,
            so the backward can be run again.

    Returns:
        ``(dx, dgamma, dbeta)`` with the shapes of x, gamma and beta and their dtypes.

    Shape:
        grad_y: ``(..., D)``. dx: ``(..., D)``. dgamma, dbeta: ``(D,)``.

    Raises:
        ValueError: if ``grad_y`` does not have the shape of ``x``.

    Source: the x-hat form of the backward pass (module docstring); matches autograd through
    ``torch.nn.functional.layer_norm``.
    """
    x_hat, rstd, gamma = cache.x_hat, cache.rstd, cache.gamma
    N, D = x_hat.shape
    grad_y = np.asarray(grad_y)
    if grad_y.shape != cache.x_shape:
        raise ValueError(f"layernorm_backward: grad_y must have the shape of x {cache.x_shape}, got {grad_y.shape}")
    dtype = x_hat.dtype
    dy = grad_y.reshape(N, D)
    if dy.dtype != dtype:
        dy = dy.astype(dtype)

    ones_n = np.ones(N, dtype)
    dbeta = ones_n @ dy  # (D,); BLAS gemv sums the rows
    mean_g = dy @ gamma  # (N,), mean(g) * D
    mean_g /= D
    # One (N, D) scratch buffer: first dy * x_hat for dgamma and mean(g * x_hat), then
    # x_hat * mean(g * x_hat) for dx.
    scratch = np.multiply(dy, x_hat)
    dgamma = ones_n @ scratch  # (D,)
    mean_gx = scratch @ gamma  # (N,), mean(g * x_hat) * D
    mean_gx /= D
    np.multiply(x_hat, mean_gx[:, None], out=scratch)

    dx = np.multiply(dy, gamma)  # g, (N, D), turned into dx in place
    dx -= mean_g[:, None]
    dx -= scratch
    dx *= rstd[:, None]

    if dx.dtype != cache.x_dtype:
        dx = dx.astype(cache.x_dtype)
    return (
        dx.reshape(cache.x_shape),
        dgamma.astype(cache.gamma_dtype, copy=False),
        dbeta.astype(cache.beta_dtype, copy=False),
    )


def layer_norm_numpy(a: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    r"""Layer Normalization of the H summed inputs of one sample, in the paper's notation.

    .. math::
        \mu = \frac{1}{H} \sum_i a_i, \quad
        \sigma = \sqrt{\frac{1}{H} \sum_i (a_i - \mu)^2 + \epsilon}, \quad
        h = \frac{g}{\sigma} \odot (a - \mu) + b

    (f is the identity; eps is added under the square root as in PyTorch.)

    Args:
        a: the summed inputs of one layer for one sample, shape ``(H,)``.
        gain: g, shape ``(H,)``.
        bias: b, shape ``(H,)``.
        eps: added to the variance inside the square root. Default: 1e-5.

    Returns:
        h of shape ``(H,)``, in float64 for float64 input (float32 otherwise, float16 rounded back).

    Shape:
        a, gain, bias, output: ``(H,)``.

    Raises:
        ValueError: if ``a`` is not 1-D, H = 0, or gain or bias is not of shape ``(H,)``.

    Source: Ba et al. 2016, section 3.1, eq. 3-4.
    """
    a, gain, bias = np.asarray(a), np.asarray(gain), np.asarray(bias)
    if a.ndim != 1:
        raise ValueError(f"layer_norm_numpy: a must be 1-D of shape (H,), got shape {a.shape}")
    H = a.shape[0]
    if H == 0:
        raise ValueError("layer_norm_numpy: a has H = 0 summed inputs; mu and sigma are undefined")
    if gain.shape != (H,) or bias.shape != (H,):
        raise ValueError(f"layer_norm_numpy: gain and bias must have shape ({H},), got {gain.shape} and {bias.shape}")
    out_dtype, dtype = _dtypes(a.dtype)
    a = a.astype(dtype, copy=False)
    mu = a.sum() / H  # eq. 3
    sigma = np.sqrt(np.square(a - mu).sum() / H + eps)  # eq. 4, two-pass
    h = gain.astype(dtype, copy=False) / sigma * (a - mu) + bias.astype(dtype, copy=False)
    return h.astype(out_dtype, copy=False)


def numerical_gradient(
    f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, grad_out: np.ndarray, h: float = 1e-6
) -> np.ndarray:
    r"""Gradient of ``L(x) = sum(f(x) * grad_out)`` by central finite differences, in float64.

    .. math::
        \frac{\partial L}{\partial x_i} \approx \frac{L(x + h e_i) - L(x - h e_i)}{(x_i + h) - (x_i - h)}

    The denominator is the step actually taken in floating point, which keeps the estimate
    accurate when ``|x_i|`` is large compared with h.

    Args:
        f: function of an array shaped like ``x``; called ``2 * x.size`` times.
        x: the point, any shape; copied to float64, never written to.
        grad_out: dL/df, the shape of ``f(x)``.
        h: the step. Default: 1e-6 (truncation error ~h^2, rounding ~1e-16 / h).

    Returns:
        dL/dx, float64, the shape of ``x``.

    Source: the check used in llm.c ``doc/layernorm`` and by ``torch.autograd.gradcheck``.
    """
    x = np.array(x, dtype=np.float64)  # our own copy, perturbed in place
    grad_out = np.asarray(grad_out, dtype=np.float64)
    grad = np.empty_like(x)
    flat, grad_flat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):  # one coordinate per pair of calls: inherent to finite differences
        old = flat[i]
        flat[i] = x_plus = old + h
        loss_plus = np.vdot(f(x), grad_out)
        flat[i] = x_minus = old - h
        loss_minus = np.vdot(f(x), grad_out)
        flat[i] = old
        grad_flat[i] = (loss_plus - loss_minus) / (x_plus - x_minus)
    return grad


def max_abs_error(a: np.ndarray, b: np.ndarray) -> float:
    """``max |a - b|`` in float64; 0.0 for empty arrays, NaN if either holds a NaN."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """``max|a - b| / max(max(|a| + |b|), tiny)`` in float64; 0.0 for empty arrays.

    A single number for the whole array, so entries near zero do not blow it up; ``tiny`` is
    the smallest normal float64, so two all-zero arrays give 0.0.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(a) + np.abs(b))), np.finfo(np.float64).tiny)
    return float(np.max(np.abs(a - b))) / scale


def gradcheck(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    eps: float = 1e-5,
    grad_y: np.ndarray | None = None,
    h: float = 1e-6,
    seed: int = 0,
) -> dict[str, GradientError]:
    r"""Compare :func:`layernorm_backward` with central finite differences, in float64.

    .. math:: \mathrm{rel} = \frac{\max |a - n|}{\max(\max(|a| + |n|), \mathrm{tiny})}

    for the analytic gradient a and the numerical one n (:func:`relative_error`). A correct
    backward gives rel < 1e-5 (typically ~1e-9).

    Args:
        x: input of shape ``(..., D)``; all inputs are cast to float64 and never written to.
        gamma, beta: shape ``(D,)``.
        eps: as in :func:`layernorm_forward`. Default: 1e-5.
        grad_y: dL/dy; default: standard normal draws from ``seed`` (all-ones would make dx
            vanish and test nothing).
        h: finite-difference step. Default: 1e-6.
        seed: seed for the default ``grad_y``. Default: 0.

    Returns:
        ``{"dx": GradientError, "dgamma": ..., "dbeta": ...}``.

    Raises:
        ValueError: as :func:`layernorm_forward`, or if ``grad_y`` is not the shape of ``x``.

    Source: llm.c ``doc/layernorm/layernorm.py`` checks; ``torch.autograd.gradcheck``.
    """
    x = np.asarray(x, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    if grad_y is None:
        grad_y = np.random.default_rng(seed).standard_normal(x.shape)
    grad_y = np.asarray(grad_y, dtype=np.float64)

    _, cache = layernorm_forward(x, gamma, beta, eps)
    analytic = dict(zip(("dx", "dgamma", "dbeta"), layernorm_backward(grad_y, cache)))
    numerical = {
        "dx": numerical_gradient(lambda v: layernorm_forward(v, gamma, beta, eps)[0], x, grad_y, h),
        "dgamma": numerical_gradient(lambda v: layernorm_forward(x, v, beta, eps)[0], gamma, grad_y, h),
        "dbeta": numerical_gradient(lambda v: layernorm_forward(x, gamma, v, eps)[0], beta, grad_y, h),
    }
    return {
        name: GradientError(max_abs_error(a, numerical[name]), relative_error(a, numerical[name]))
        for name, a in analytic.items()
    }
