"""A Linear layer applied to a few rows: ``torch.nn.functional.linear`` with the C++ kernel of
``lnbench/nn/csrc/linear.cpp`` where it pays.

At a small batch each product reads all of a large weight matrix for a few multiply-adds per
weight. MKL packs the matrix into its own layout before it multiplies; the kernel streams it once
(forward: ``y = x W^T + b``; backward: ``dW``, ``dx`` and ``db`` in one pass over ``W``). Ba et
al.'s Figure 6 network (784-1000-1000-10) at batch size 4 is where it was measured
(docs/speed.md, "A Linear on a few rows").
"""

from __future__ import annotations

import torch
from torch import nn

from lnbench.nn.kernels import linear_kernel

#: the most rows (examples, or examples x timesteps) the kernel is used for (it takes at most 8):
#: measured on Figure 6's network, one thread, its step took 0.68-0.72x F.linear's time at 2 and 4
#: rows, 0.92x at 8, 1.07x at 12 and 1.21x at 16, where the kernel's products are bound by their
#: arithmetic (mul then add, no contraction) rather than by the weights' traffic
MAX_ROWS = 8


def uses_kernel(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether :func:`linear` runs the C++ kernel for ``x`` (``(*, in)``) and ``weight``
    (``(out, in)``): float32 or float64 CPU tensors of one dtype, 1 to :data:`MAX_ROWS` rows,
    and the kernel built (not with ``LNBENCH_KERNELS=0``)."""
    return _fits(x, weight) and linear_kernel() is not None


def _fits(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> bool:
    """Whether the kernel takes ``x @ weight.T + bias``: on the CPU, float32 or float64 alike, a
    2-d weight, a few rows, and no bias or one of shape ``(out,)`` (a bias of shape ``()`` or
    ``(1,)``, which ``F.linear`` broadcasts, goes to ``F.linear``)."""
    return (
        x.device.type == "cpu"
        and weight.device.type == "cpu"
        and x.dtype in (torch.float32, torch.float64)
        and weight.dtype == x.dtype
        and weight.dim() == 2
        and 0 < x.numel() <= MAX_ROWS * weight.shape[1]
        and (bias is None or (bias.shape == (weight.shape[0],) and bias.dtype == x.dtype and bias.device.type == "cpu"))
    )


def linear(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)`` for a Linear ``layer``; for a plain ``torch.nn.Linear`` on a few rows
    (:func:`uses_kernel`), the C++ kernel: the same function and gradients as
    ``torch.nn.functional.linear`` (its sums ordered otherwise: the last bits differ).

    Shape: ``(*, in)`` -> ``(*, out)``, float32 or float64.
    """
    # a subclass (weight norm's Linear) has a forward of its own: it is called as it is
    if isinstance(layer, nn.Linear) and type(layer) is nn.Linear and _fits(x, layer.weight, layer.bias):
        kernel = linear_kernel()
        if kernel is not None:
            return kernel.few_row_linear(x, layer.weight, layer.bias)
    return layer(x)
