"""S independent linear layers applied to S inputs at once: the seed ensemble's head and the
Transformer's projections (the member axis first; shapes: S members)."""

from __future__ import annotations

import torch
from torch import nn


class EnsembleLinear(nn.Module):
    """S independent ``nn.Linear`` layers applied to S inputs at once: ``y[s] = x[s] W[s]^T + b[s]``
    (``torch.baddbmm``, or ``torch.bmm`` without a bias; each member as
    ``torch.nn.functional.linear`` on its own input, up to float rounding).

    Args:
        members: S.
        in_features, out_features: as ``nn.Linear``.
        bias: as ``nn.Linear``. Default: True.

    Attributes:
        weight: ``(S, out, in)``; bias: ``(S, 1, out)`` or None, zeros until a ``stack`` fills them.

    Shape:
        ``(S, *, in_features)`` -> ``(S, *, out_features)``, float32.
    """

    grouped_as_layer = True  # weight and bias are one layer in grad_norm_layer

    def __init__(self, members: int, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(members, out_features, in_features))
        self.bias: nn.Parameter | None
        if bias:
            self.bias = nn.Parameter(torch.zeros(members, 1, out_features))
        else:
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1, x.shape[-1])  # (S, N, in)
        weight = self.weight.transpose(1, 2)
        y = torch.bmm(flat, weight) if self.bias is None else torch.baddbmm(self.bias, flat, weight)  # (S, N, out)
        return y.view(*x.shape[:-1], y.shape[-1])
