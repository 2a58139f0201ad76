"""Weight normalization (Salimans & Kingma 2016, eq. 2), from scratch.

Weight normalization re-parametrizes the layer that produces the summed inputs instead of
normalizing the summed inputs themselves: each output unit i has a direction ``v_i`` and a
length ``g_i``::

    w_i = g_i * v_i / ||v_i||          a_i = w_i . x (+ b_i)

so ``a_i = g_i * (v_i . x) / ||v_i||``: the summed input is normalized by the weights' norm, not
by statistics of the data (it does not depend on the batch, and it is not invariant to the
data's scale: Ba et al. 2016, Table 1). Gradients flow through the formula (torch autograd).

Oracle: ``torch.nn.utils.parametrizations.weight_norm(nn.Linear(...), dim=0)``
(``tests/nn/test_weightnorm.py``). In the norm registry (:mod:`lnbench.nn.registry`) the kind
``weight`` ``reparametrizes_weights``: the models build these layers, and their norm positions are
the identity.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def weight_normalize(v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """The weight-normalized matrix ``w_i = g_i * v_i / ||v_i||`` for every row i of the last two
    axes (Salimans & Kingma 2016, eq. 2; ``torch._weight_norm(v, g, dim=0)`` for one matrix).

    Args:
        v: directions ``(*, out, in)``, floating.
        g: lengths ``(*, out)``, v's dtype.

    Returns:
        ``(*, out, in)``, v's dtype. A zero row gives NaN, as PyTorch's weight_norm does (no raise).
    """
    return v * (g / torch.linalg.vector_norm(v, dim=-1)).unsqueeze(-1)


class WeightNormLinear(nn.Module):
    """``nn.Linear`` with its weight re-parametrized as ``g_i * v_i / ||v_i||`` (Salimans &
    Kingma 2016, eq. 2). Mirrors ``torch.nn.utils.parametrizations.weight_norm(nn.Linear(in, out), dim=0)``.

    Initialised from ``nn.Linear``'s init (the same random draws): ``v`` = its weight, ``g`` = the
    norms of its rows, so at initialisation it computes exactly what the Linear would.

    Args:
        in_features, out_features, bias: as ``nn.Linear``.

    Attributes:
        v: direction ``(out, in)``; g: length ``(out,)``; bias: ``(out,)`` or None; all float32.
        weight: the effective weight ``(out, in)`` (a property, recomputed at each call).

    Shape:
        Input ``(*, in)`` -> output ``(*, out)``, the layer's dtype.
    """

    grouped_as_layer = True  # v, g and bias are one layer in grad_norm_layer (lnbench.nn.base.grouped_as_layer)

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        linear = nn.Linear(in_features, out_features, bias=bias)  # the same init as the plain model
        self.in_features, self.out_features = in_features, out_features
        self.v = nn.Parameter(linear.weight.detach().clone())
        self.g = nn.Parameter(torch.linalg.vector_norm(self.v.detach(), dim=1))
        self.bias = nn.Parameter(linear.bias.detach().clone()) if bias else None

    @property
    def weight(self) -> torch.Tensor:
        """The effective weight ``g_i v_i / ||v_i||``, ``(out, in)``."""
        return weight_normalize(self.v, self.g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def linear(in_features: int, out_features: int, weight_norm: bool, bias: bool = True) -> nn.Module:
    """The Transformer's linear layers: a :class:`WeightNormLinear` if ``weight_norm`` else an
    ``nn.Linear`` (the same random draws either way). Shape: ``(*, in)`` -> ``(*, out)``."""
    return (
        WeightNormLinear(in_features, out_features, bias)
        if weight_norm
        else nn.Linear(in_features, out_features, bias=bias)
    )


def row_norms(w: torch.Tensor) -> torch.Tensor:
    """``||w_i||`` of every row of the last two axes, ``(*, out, in)`` -> ``(*, out)``: the initial g
    of a weight-normalized matrix (``torch.linalg.vector_norm(w, dim=-1)``)."""
    return torch.linalg.vector_norm(w, dim=-1)
