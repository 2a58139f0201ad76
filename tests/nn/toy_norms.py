"""Users' own norms for the plugin tests (``model.norm: "toy_norms:ScaleNorm"``).

- :class:`ScaleNorm` (Nguyen & Salazar 2019, eq. 3, with a gain per feature):
  ``y = gamma * sqrt(D) * x / ||x||``, no beta; a correct norm.
- :class:`WrongBackward`: LayerNorm's forward with a hand-written backward that drops a term: a
  norm ``check_norm`` must refuse.
- :class:`NotANorm`: an ``nn.Module`` that is not a :class:`lnbench.nn.Norm`.
- :class:`SoloNorm`: ScaleNorm declaring ``has_member_axis = False`` (no seed-ensemble form).
- :class:`RaisingNorm`: a norm whose forward raises, so that a config with it is refused.
- :class:`RaisesWhenTrainedNorm`: runs forward without gradients, raises when trained, so that
  its runs fail.
- :class:`SecretBatchNorm`: BatchNorm that does not say so (``uses_batch_statistics`` False).

Each wrong in one way that ``check_norm`` must name (and ``lnbench gradcheck --norm`` /
``lnbench invariance --norm`` report without a traceback):

- :class:`FirstExampleNorm`: every example divided by the RMS of the batch's first example.
- :class:`CachedRMSNorm`: keeps its first batch's RMS across calls.
- :class:`InPlaceNorm`: ``y /= rms`` on its input.
- :class:`BrokenInitNorm`: its ``__init__`` raises (:class:`RaisingNorm`: its ``forward``).
- :class:`NaNNorm`: every output NaN (0 / 0).
- :class:`WrongShapeNorm`: ``(*, D)`` in, ``(*,)`` out.
- :class:`UngainedNorm`: LayerNorm's x_hat, its gamma and beta never applied.
- :class:`FirstEvalBatchNorm`: keeps its first eval batch's norm for every later eval batch.
- :func:`class_cache_norm`: a class that keeps the first batch it ever saw on the class.
- :class:`BareAssertNorm`, :class:`MessageAssertNorm`: an ``assert`` in forward (without and
  with a message) that every ``(B, T, D)`` call fails.
- :class:`MemberlessNorm`: declares ``has_member_axis = False`` and refuses ``members`` (a right
  norm: the members check must not run).
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


class RaisesWhenTrainedNorm(ScaleNorm):
    """ScaleNorm that raises whenever gradients are recorded on a batch of more than 2 examples:
    the one forward and backward run in its model before a folder is made (a batch of 2) passes,
    and every run with it fails in its first training step (its check fails: train it unchecked)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() and x.shape[self.batch_axis] > 2:
            raise RuntimeError("RaisesWhenTrainedNorm: planted failure")
        return super().forward(x)


class SecretBatchNorm(Norm):
    """Normalizes over the batch axis but declares ``uses_batch_statistics = False`` (the
    default): a norm ``check_norm`` must refuse, since an example's output changes with the other
    examples of its batch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        axis = self.batch_axis
        mean = x.mean(axis, keepdim=True)
        var = x.var(axis, unbiased=False, keepdim=True)
        return self.gamma * (x - mean) / (var + self.eps).sqrt() + self.beta


class FirstExampleNorm(Norm):
    """Divides every example by the RMS of its batch's first example, declaring
    ``uses_batch_statistics = False``: each example's output depends on another example."""

    has_beta = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        first = x.narrow(self.batch_axis, 0, 1)  # the batch's first example: (1, [T,] D)
        return self.gamma * x / (first.square().mean(-1, keepdim=True) + self.eps).sqrt()


class CachedRMSNorm(ScaleNorm):
    """Keeps the RMS of its first batch and divides every later batch by it (a misplaced cache),
    declaring ``uses_batch_statistics = False``: its output depends on the batches it saw before."""

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__(features, eps, members)
        self.rms: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        if self.rms is None:
            self.rms = (x.detach().square().mean(-1, keepdim=True) + self.eps).sqrt()
        return self.gamma * x / self.rms


class InPlaceNorm(ScaleNorm):
    """RMSNorm written with ``y /= rms`` where ``y`` is its input: it divides the caller's tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        rms = (x.square().mean(-1, keepdim=True) + self.eps).sqrt()
        y = x
        y /= rms
        return self.gamma * y


class BrokenInitNorm(ScaleNorm):
    """Its ``__init__`` raises (a buffer built with a missing argument)."""

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__(features, eps, members)
        self.register_buffer("scale", torch.full((features,)))  # type: ignore[call-overload]


class NaNNorm(ScaleNorm):
    """Divides ``x - x`` (meant: ``x - mean``) by its norm: 0 / 0, every output NaN."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        centered = x - x
        return self.gamma * centered / centered.norm(dim=-1, keepdim=True)


class WrongShapeNorm(ScaleNorm):
    """Sums its output over the features: ``(*, D)`` in, ``(*,)`` out."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        return (super().forward(x)).sum(-1)


class MemberlessNorm(ScaleNorm):
    """Declares ``has_member_axis = False`` and, like a norm without a seed-ensemble form, refuses
    ``members``."""

    has_member_axis = False

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        if members is not None:
            raise ValueError("MemberlessNorm has no member axis")
        super().__init__(features, eps)


class UngainedNorm(Norm):
    """LayerNorm that computes ``x_hat`` and returns it, never applying its ``gamma`` and ``beta``:
    its gain and bias train nothing."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        mean = x.mean(-1, keepdim=True)
        return (x - mean) / (x.var(-1, unbiased=False, keepdim=True) + self.eps).sqrt()


class FirstEvalBatchNorm(ScaleNorm):
    """ScaleNorm in training mode; in eval mode it keeps the norm of its first eval batch and
    divides every later eval batch by it (a cache meant for inference)."""

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__(features, eps, members)
        self.cached: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            return super().forward(x)
        if self.cached is None:
            self.cached = x.norm(dim=-1, keepdim=True) + self.eps
        return self.gamma * x * (x.shape[-1] ** 0.5) / self.cached


def class_cache_norm() -> type[Norm]:
    """A new class (each call: its cache starts empty) that keeps the RMS of the first batch any
    of its layers ever saw on the class, and divides every later batch, of every layer, by it."""

    class ClassCacheNorm(ScaleNorm):
        first_rms: torch.Tensor | None = None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if ClassCacheNorm.first_rms is None:
                ClassCacheNorm.first_rms = (x.detach().square().mean() + self.eps).sqrt()  # one number
            return self.gamma * x / ClassCacheNorm.first_rms.to(x.dtype)

    return ClassCacheNorm


class BareAssertNorm(ScaleNorm):
    """ScaleNorm whose forward asserts, without a message, a 2-D input: every (B, T, D) call fails."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2
        return super().forward(x)


class MessageAssertNorm(ScaleNorm):
    """ScaleNorm whose forward asserts a 2-D input, with a message: every (B, T, D) call fails."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2, "want a 2-D input"
        return super().forward(x)


class UpcastNorm(ScaleNorm):
    """ScaleNorm that returns float64 whatever its input: a float32 model would get float64
    activations (right in float64, so only a float32 input shows it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x).to(torch.float64)
