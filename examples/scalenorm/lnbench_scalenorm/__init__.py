"""ScaleNorm (Nguyen & Salazar 2019, "Transformers without Tears", eq. 3), with a gain per feature:

    y = gamma * sqrt(D) * x / max(||x||, eps)        over the last axis D

an lnbench norm: a subclass of :class:`lnbench.nn.Norm` that declares what it can do with class
attributes, and defines ``forward``. The base class makes gamma (``(D,)``, or ``(S, 1, D)`` for a
seed ensemble of S members) and checks the input's shape.
"""

from __future__ import annotations

import torch

from lnbench.nn import Norm


class ScaleNorm(Norm):
    """ScaleNorm: ``(*, D)`` -> ``(*, D)``, float32 or float64; one gain per feature, no beta."""

    has_beta = False  # the layer before it keeps its bias
    uses_batch_statistics = False  # per example: training and eval are the same
    takes_timestep = False  # called as norm(a), not norm(a, t), inside a recurrence
    grouped_as_layer = True  # its gain is one layer in the per-layer gradient norms

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        norm = x.norm(dim=-1, keepdim=True).clamp_min(self.eps)
        return self.gamma * x * (x.shape[-1] ** 0.5) / norm
