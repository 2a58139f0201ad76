"""RMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", eq. 4), from scratch.

LayerNorm without the re-centering: each sample is divided by the root mean square of its
features, no mean is subtracted::

    rms = sqrt(mean_i x_i^2 + eps)        y = gamma * x / rms

Backward (hand-written, the same x-hat form as LayerNorm without the mean term), with
``x_hat = x / rms`` and ``g = gamma * grad_y``::

    dx = (g - x_hat * mean(g * x_hat)) / rms        dgamma = sum(grad_y * x_hat)

Oracle: ``torch.nn.RMSNorm(D, eps=eps)`` (``tests/nn/test_rmsnorm.py``).
"""

from __future__ import annotations

import torch

from lnbench.nn.base import LOW_PRECISION, Norm, broadcast_axes


class RMSNormalize(torch.autograd.Function):
    """``y = gamma * x * rsqrt(mean(x^2) + eps)`` over the last axis, with the backward above.

    Mirrors ``torch.nn.functional.rms_norm(x, (D,), gamma, eps)``.

    Args (to ``apply``): x ``(*, D)`` floating; gamma broadcastable to x (``(D,)`` or ``(S, 1, D)``); eps (float).

    Returns:
        y like x (shape and dtype; float16/bfloat16 computed in float32).

    Second derivatives: with grad mode on in the backward (``create_graph=True``), x_hat and
    1/rms are recomputed from the saved input in differentiable torch ops, as in
    :class:`lnbench.nn.layernorm.NormalizeAffine`; a plain backward uses the cached values.

    Raises:
        RuntimeError: if gamma does not broadcast to x.
    """

    @staticmethod
    def forward(ctx, x, gamma, eps):
        ctx.x_dtype, ctx.gamma_dtype = x.dtype, gamma.dtype
        x_in, gamma_in = x, gamma  # saved: a second derivative recomputes x_hat from them
        if x.dtype in LOW_PRECISION:
            x, gamma = x.float(), gamma.float()
        rrms = (x * x).mean(dim=-1, keepdim=True).add_(eps).rsqrt_()  # (*, 1)
        x_hat = x * rrms
        ctx.save_for_backward(x_hat, rrms, x_in, gamma_in)
        ctx.eps, ctx.param_axes = eps, broadcast_axes(x.shape, gamma.shape)
        return (x_hat * gamma).to(ctx.x_dtype)

    @staticmethod
    def backward(ctx, grad_y):
        x_hat, rrms, x, gamma = ctx.saved_tensors
        gamma = gamma.to(x_hat.dtype)
        if torch.is_grad_enabled():  # create_graph: the gradient must be a differentiable function of x
            x = x.to(x_hat.dtype)
            rrms = ((x * x).mean(dim=-1, keepdim=True) + ctx.eps).rsqrt()
            x_hat = x * rrms
        grad_y = grad_y.to(x_hat.dtype)
        g = grad_y * gamma
        dx = (g - x_hat * (g * x_hat).mean(dim=-1, keepdim=True)) * rrms
        dgamma = grad_y * x_hat
        if ctx.param_axes:
            dgamma = dgamma.sum(dim=ctx.param_axes)
        return dx.to(ctx.x_dtype), dgamma.reshape(gamma.shape).to(ctx.gamma_dtype), None


class RMSNorm(Norm):
    r"""Root mean square normalization over the last axis (Zhang & Sennrich 2019, eq. 4).

    .. math:: y = \gamma \odot \frac{x}{\sqrt{\frac{1}{D}\sum_i x_i^2 + \epsilon}}

    Mirrors ``torch.nn.RMSNorm(features, eps=eps)`` (no bias: RMSNorm has none, ``has_beta`` is
    False and ``beta`` is None).

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to the mean square inside the square root. Default: 1e-5.
        members: S for an ensemble of S models (input ``(S, B, D)``, gamma ``(S, 1, D)``). Default: None.

    Attributes:
        gamma: learnable gain ``(D,)`` (or ``(S, 1, D)``), initialised to ones.

    Shape:
        Input ``(*, D)``, any floating dtype. Output: same shape and dtype.

    Raises:
        ValueError: if ``features < 1`` or the input's last axis is not D.

    Examples:
        >>> RMSNorm(2)(torch.tensor([[3.0, 4.0]]))  # rms = sqrt(12.5)
        tensor([[0.8485, 1.1314]], grad_fn=<RMSNormalizeBackward>)
    """

    has_beta = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        return RMSNormalize.apply(x, self.gamma, self.eps)
