"""RMSNorm (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", eq. 4), from scratch.

LayerNorm without the re-centering: each sample is divided by the root mean square of its
features, no mean is subtracted::

    rms = sqrt(mean_i x_i^2 + eps)        y = gamma * x / rms

Backward (hand-written, the same x-hat form as LayerNorm without the mean term), with
``x_hat = x / rms`` and ``g = gamma * grad_y``::

    dx = (g - x_hat * mean(g * x_hat)) / rms        dgamma = sum(grad_y * x_hat)

Oracle: ``torch.nn.RMSNorm(D, eps=eps)`` (``tests/test_norms_rms_weight.py``).
"""

from __future__ import annotations

import torch
from torch import nn

_LOW_PRECISION = frozenset((torch.float16, torch.bfloat16))


class RMSNormalize(torch.autograd.Function):
    """``y = gamma * x * rsqrt(mean(x^2) + eps)`` over the last axis, with the backward above.

    Args (to ``apply``): x ``(*, D)``; gamma broadcastable to x (``(D,)`` or ``(S, 1, D)``); eps.
    Returns y like x (shape and dtype; float16/bfloat16 computed in float32).
    """

    @staticmethod
    def forward(ctx, x, gamma, eps):  # type: ignore[override]
        ctx.x_dtype, ctx.gamma_dtype = x.dtype, gamma.dtype
        if x.dtype in _LOW_PRECISION:
            x, gamma = x.float(), gamma.float()
        rrms = (x * x).mean(dim=-1, keepdim=True).add_(eps).rsqrt_()  # (*, 1)
        x_hat = x * rrms
        ctx.save_for_backward(x_hat, rrms, gamma)
        lead = x.dim() - gamma.dim()
        ctx.param_axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(gamma.shape) if n == 1 and x.shape[lead + i] != 1
        )
        return (x_hat * gamma).to(ctx.x_dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):  # type: ignore[override]
        x_hat, rrms, gamma = ctx.saved_tensors
        grad_y = grad_y.to(x_hat.dtype)
        g = grad_y * gamma
        dx = (g - x_hat * (g * x_hat).mean(dim=-1, keepdim=True)) * rrms
        dgamma = grad_y * x_hat
        if ctx.param_axes:
            dgamma = dgamma.sum(dim=ctx.param_axes)
        return dx.to(ctx.x_dtype), dgamma.reshape(gamma.shape).to(ctx.gamma_dtype), None


class RMSNorm(nn.Module):
    r"""Root mean square normalization over the last axis (Zhang & Sennrich 2019, eq. 4).

    .. math:: y = \gamma \odot \frac{x}{\sqrt{\frac{1}{D}\sum_i x_i^2 + \epsilon}}

    Mirrors ``torch.nn.RMSNorm(features, eps=eps)`` (no bias: RMSNorm has none).

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to the mean square inside the square root. Default: 1e-5.
        members: S for an ensemble of S models (input ``(S, B, D)``, gamma ``(S, 1, D)``).

    Attributes:
        gamma: learnable gain ``(D,)`` (or ``(S, 1, D)``), initialised to ones.

    Shape:
        Input ``(*, D)``, any floating dtype. Output: same shape and dtype.

    Raises:
        ValueError: if ``features < 1`` or the input's last axis is not D.
    """

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"RMSNorm: features must be >= 1, got {features}")
        self.features, self.eps, self.members = features, eps, members
        self.gamma = nn.Parameter(torch.ones((features,) if members is None else (members, 1, features)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.features:
            raise ValueError(f"RMSNorm: expected last axis {self.features}, got shape {tuple(x.shape)}")
        return RMSNormalize.apply(x, self.gamma, self.eps)

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}"
