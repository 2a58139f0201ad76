"""Layer Normalization written from scratch in torch ops, and its hand-written backward.

Layer Normalization (Ba, Kiros, Hinton 2016, arXiv 1607.06450, eq. 4) normalizes each sample
over its ``features`` D (the last axis)::

    mean = 1/D sum_i x_i        var = 1/D sum_i (x_i - mean)^2        (biased)
    y    = gamma * (x - mean) / sqrt(var + eps) + beta

It mirrors PyTorch's argument names and numerics (``torch.nn.LayerNorm``,
``torch.nn.functional.layer_norm``), the oracles in ``tests/nn/test_layernorm.py``. The variance is
always computed in two passes, ``mean((x - mean)^2)``, never as ``E[x^2] - E[x]^2``: the latter
cancels catastrophically for inputs with a large mean (float32 ``40000 + [0, 1, 2, 3]`` gives NaN).

:class:`NormalizeAffine`, the autograd Function, takes the axes of the statistics as an argument,
so :class:`lnbench.nn.batchnorm.BatchNorm1d` uses it too (over the batch axes). The compiled
kernel of :mod:`lnbench.nn.kernels` is the same formula and backward as one C++ autograd node.
"""

from __future__ import annotations

import torch

from lnbench.nn.base import LOW_PRECISION, Norm, broadcast_axes
from lnbench.nn.kernels import layernorm_kernel

_KERNEL_DTYPES = frozenset((torch.float32, torch.float64))


class NormalizeAffine(torch.autograd.Function):
    r"""``y = gamma * (x - mean) * rstd + beta``, the statistics of ``x`` taken over ``dims``,
    with a hand-written backward from a cache of ``(x_hat, rstd, gamma)``.

    Forward (two-pass variance, biased)::

        mean, var = moments of x over dims      rstd = 1 / sqrt(var + eps)
        x_hat = (x - mean) * rstd               y = gamma * x_hat + beta

    Backward, the x-hat form shared by LayerNorm (``dims`` = the features) and BatchNorm (the
    batch axes), the same formula as :func:`lnbench.nn.numpy_layernorm.layernorm_backward`, with
    ``g = gamma * grad_y`` and means over ``dims``::

        dx     = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
        dgamma = sum(grad_y * x_hat)        dbeta = sum(grad_y)    (over every axis gamma broadcasts on)

    One graph node with one Python backward instead of ~8 autograd nodes per call. Mirrors
    ``torch.nn.functional.layer_norm`` (``dims = (-1,)``) and ``torch.nn.functional.batch_norm``
    with ``training=True`` (``dims`` = the batch axes).

    Second derivatives (a gradient penalty: ``torch.autograd.grad(..., create_graph=True)``):
    when the backward runs with grad mode on, a graph of the gradient is being built, so x_hat
    and rstd are recomputed from the saved input in differentiable torch ops and the same
    formula is differentiated through (as ``torch.nn.functional.layer_norm``'s double backward);
    a plain backward takes the cached values and builds no graph.

    Args (to ``apply``): x ``(*, D)`` floating; gamma, beta broadcastable to x (``(D,)``, or
    ``(S, 1, D)`` for an ensemble of S models), x's dtype or float32; eps (float); dims (tuple of ints).

    Returns:
        ``(y, mean, var)``: y like x (its shape and dtype); mean and the biased var over ``dims``
        (keepdim), detached, for running statistics. float16 and bfloat16 inputs are normalized
        in float32 (as PyTorch's CPU kernels accumulate them: 600^2 overflows float16), so mean
        and var are float32 for them.

    Raises:
        RuntimeError: if gamma and beta do not broadcast to x.
    """

    @staticmethod
    def forward(ctx, x, gamma, beta, eps, dims):
        ctx.x_dtype, ctx.gamma_dtype = x.dtype, gamma.dtype
        x_in, gamma_in = x, gamma  # saved: a second derivative recomputes x_hat from them
        if x.dtype in LOW_PRECISION:  # statistics and x_hat in float32, y back in x's dtype
            x, gamma, beta = x.float(), gamma.float(), beta.float()
        mean = x.mean(dim=dims, keepdim=True)
        x_hat = x - mean  # centered for now; exactly 0 on a constant row, so y = beta there
        var = (x_hat * x_hat).mean(dim=dims, keepdim=True)  # two-pass: no E[x^2] - E[x]^2 cancellation
        rstd = (var + eps).rsqrt_()
        x_hat.mul_(rstd)
        ctx.save_for_backward(x_hat, rstd, x_in, gamma_in)
        ctx.eps, ctx.dims, ctx.param_axes = eps, dims, broadcast_axes(x.shape, gamma.shape)
        ctx.mark_non_differentiable(mean, var)
        ctx.set_materialize_grads(False)  # mean and var get no gradient: no zero tensors for them
        return torch.addcmul(beta, x_hat, gamma).to(ctx.x_dtype), mean, var

    @staticmethod
    def backward(ctx, grad_y, _grad_mean, _grad_var):
        if grad_y is None:
            return None, None, None, None, None
        x_hat, rstd, x, gamma = ctx.saved_tensors
        dims, axes = ctx.dims, ctx.param_axes
        gamma = gamma.to(x_hat.dtype)  # float32 for a float16 input (see forward)
        if torch.is_grad_enabled():  # create_graph: the gradient must be a differentiable function of x
            centered = x.to(x_hat.dtype) - x.to(x_hat.dtype).mean(dim=dims, keepdim=True)
            rstd = ((centered * centered).mean(dim=dims, keepdim=True) + ctx.eps).rsqrt()
            x_hat = centered * rstd
        grad_y = grad_y.to(x_hat.dtype)
        g = grad_y * gamma
        inner = (g * x_hat).mean(dim=dims, keepdim=True)
        dx = torch.addcmul(g - g.mean(dim=dims, keepdim=True), x_hat, inner, value=-1) * rstd
        dgamma, dbeta = grad_y * x_hat, grad_y
        if axes:  # sum(dim=()) would sum everything
            dgamma, dbeta = dgamma.sum(dim=axes), dbeta.sum(dim=axes)
        dgamma, dbeta = dgamma.reshape(gamma.shape).to(ctx.gamma_dtype), dbeta.reshape(gamma.shape).to(ctx.gamma_dtype)
        return dx.to(ctx.x_dtype), dgamma, dbeta, None, None


class LayerNorm(Norm):
    r"""Layer Normalization over the last axis (Ba et al. 2016, eq. 4).

    .. math:: y = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta

    with :math:`\mu` and the biased :math:`\sigma^2` taken over the last axis of each sample.
    Mirrors ``torch.nn.LayerNorm(features, eps=eps)``.

    float32/float64 CPU inputs go through the compiled kernel of :mod:`lnbench.nn.kernels` when it
    is built (the same formula and backward, one C++ autograd node); other inputs, or
    ``use_kernel = False``, through :class:`NormalizeAffine`.

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to the variance inside the square root. Default: 1e-5.
        members: S for an ensemble of S models (input ``(S, B, D)``, gamma ``(S, 1, D)``). Default: None.

    Attributes:
        gamma: learnable gain of shape ``(D,)``, initialised to ones (the paper's g).
        beta: learnable bias of shape ``(D,)``, initialised to zeros (the paper's b).
        use_kernel: False: always the Python autograd Function. Default: True.

    Shape:
        Input: ``(*, D)``, e.g. ``(B, H)`` or ``(B, T, H)``, any floating dtype.
        Output: same shape and dtype as the input.

    Warns:
        SingleValueWarning: once, for ``features == 1`` (the output is beta whatever the input).

    Raises:
        ValueError: if ``features < 1`` or the input's last axis is not D.

    Examples:
        >>> ln = LayerNorm(4)
        >>> ln(torch.tensor([[40000.0, 40001.0, 40002.0, 40003.0]]))
        tensor([[-1.3416, -0.4472,  0.4472,  1.3416]], grad_fn=<AddBackward0>)
    """

    beta: torch.nn.Parameter

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__(features, eps, members)
        self.use_kernel = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        if self.features == 1:
            self._warn_single_value(
                "LayerNorm over one feature: x_hat = 0, so the output is beta whatever the input "
                "(a model with hidden_size 1 and LayerNorm cannot learn)"
            )
        if self.use_kernel and x.dtype in _KERNEL_DTYPES and not x.is_cuda:
            kernel = layernorm_kernel()
            if kernel is not None:  # the same formula as one C++ autograd node (lnbench.nn.kernels)
                return kernel.layer_norm(x, self.gamma, self.beta, self.eps)
        return NormalizeAffine.apply(x, self.gamma, self.beta, self.eps, (-1,))[0]  # (*, D)
