"""Users' own norms for the plugin tests (``model.norm: "toy_norms:ScaleNorm"``).

- :class:`ScaleNorm` (Nguyen & Salazar 2019, eq. 3, with a gain per feature):
  ``y = gamma * sqrt(D) * x / ||x||``, no beta; a correct norm.
- :class:`WrongBackward`: LayerNorm's forward with a hand-written backward that drops a term: a
  norm ``check_norm`` must refuse.
- :class:`NotANorm`: an ``nn.Module`` that is not a :class:`lnbench.nn.Norm`.
- :class:`SoloNorm`: ScaleNorm declaring ``has_member_axis = False`` (no seed-ensemble form).
- :class:`RaisingNorm`: a norm whose forward raises, so that its runs fail.
- :class:`SecretBatchNorm`: BatchNorm that does not say so (``uses_batch_statistics`` False).
"""

from __future__ import annotations

import torch
from torch import nn

from lnbench.nn import Norm


class ScaleNorm(Norm):
    has_beta = False
    grouped_as_layer = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        D = x.shape[-1]
        return self.gamma * x * (D**0.5) / (x.norm(dim=-1, keepdim=True) + self.eps)


class SoloNorm(ScaleNorm):
    has_member_axis = False


class _Dropped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        mean = x.mean(-1, keepdim=True)
        rstd = (x.var(-1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
        ctx.save_for_backward(rstd)
        return (x - mean) * rstd

    @staticmethod
    def backward(ctx, g):
        (rstd,) = ctx.saved_tensors
        return (g - g.mean(-1, keepdim=True)) * rstd  # the x_hat term is missing


class WrongBackward(Norm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        return self.gamma * _Dropped.apply(x) + self.beta


class NotANorm(nn.Module):
    def forward(self, x):
        return x


class RaisingNorm(ScaleNorm):
    """A norm whose forward raises: every run with it fails (the progress and status tests)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("RaisingNorm: planted failure")


class SecretBatchNorm(Norm):
    """Normalizes over the batch axis but declares ``uses_batch_statistics = False`` (the
    default): a norm ``check_norm`` must refuse (a new user's trial: it passed)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        axis = self.batch_axis
        mean = x.mean(axis, keepdim=True)
        var = x.var(axis, unbiased=False, keepdim=True)
        return self.gamma * (x - mean) / (var + self.eps).sqrt() + self.beta
