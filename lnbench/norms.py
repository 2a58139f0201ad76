"""Layer Normalization and Batch Normalization written from scratch in torch ops.

Layer Normalization (Ba, Kiros, Hinton 2016, arXiv 1607.06450, eq. 4) normalizes each sample
over its ``features`` D (the last axis)::

    mean = 1/D sum_i x_i        var = 1/D sum_i (x_i - mean)^2        (biased)
    y    = gamma * (x - mean) / sqrt(var + eps) + beta

Batch Normalization (Ioffe & Szegedy 2015, Algorithm 1) normalizes each feature over the batch
(and, for sequences, over time) and keeps running statistics for inference.

Both mirror PyTorch's argument names and numerics (``torch.nn.LayerNorm``,
``torch.nn.BatchNorm1d``), which are the oracles in ``tests/test_norms.py``. The variance is
always computed in two passes, ``mean((x - mean)^2)``, never as ``E[x^2] - E[x]^2``: the latter
cancels catastrophically for inputs with a large mean (float32 ``40000 + [0, 1, 2, 3]`` gives NaN).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn


class SingleValueBatchWarning(UserWarning):
    """BatchNorm saw one value per feature in training: x_hat is 0 and the output is beta."""


class LayerNorm(nn.Module):
    r"""Layer Normalization over the last axis (Ba et al. 2016, eq. 4).

    .. math:: y = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta

    with :math:`\mu` and the biased :math:`\sigma^2` taken over the last axis of each sample.
    Mirrors ``torch.nn.LayerNorm(features, eps=eps)``.

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to the variance inside the square root. Default: 1e-5.

    Attributes:
        gamma: learnable gain of shape ``(D,)``, initialised to ones (the paper's g).
        beta: learnable bias of shape ``(D,)``, initialised to zeros (the paper's b).

    Shape:
        Input: ``(*, D)``, e.g. ``(B, H)`` or ``(B, T, H)``, any floating dtype.
        Output: same shape and dtype as the input.

    Raises:
        ValueError: if ``features < 1`` or the input's last axis is not D.

    Examples:
        >>> ln = LayerNorm(4)
        >>> ln(torch.tensor([[40000.0, 40001.0, 40002.0, 40003.0]]))
        tensor([[-1.3416, -0.4472,  0.4472,  1.3416]], grad_fn=<AddBackward0>)
    """

    def __init__(self, features: int, eps: float = 1e-5) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"LayerNorm: features must be >= 1, got {features}")
        self.features = features
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.features:
            raise ValueError(f"LayerNorm: expected last axis {self.features}, got shape {tuple(x.shape)}")
        mean = x.mean(dim=-1, keepdim=True)  # (*, 1)
        centered = x - mean  # (*, D); exactly 0 on a constant row, so y = beta there
        var = (centered * centered).mean(dim=-1, keepdim=True)  # (*, 1), biased, two-pass
        rstd = torch.rsqrt(var + self.eps)
        return centered * rstd * self.gamma + self.beta

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}"


class BatchNorm1d(nn.Module):
    r"""Batch Normalization with running statistics (Ioffe & Szegedy 2015, Algorithm 1).

    .. math:: y = \gamma \odot \frac{x - \mu_B}{\sqrt{\sigma_B^2 + \epsilon}} + \beta

    In training, :math:`\mu_B` and the biased :math:`\sigma_B^2` are taken per feature over
    dim 0 for ``(B, H)`` input and over dims (0, 1) for ``(B, T, H)`` input, and the buffers are
    updated as ``running = (1 - momentum) * running + momentum * batch``, with the *unbiased*
    batch variance going into ``running_var`` (PyTorch's convention). In eval mode the running
    statistics are used and nothing is updated. Mirrors ``torch.nn.BatchNorm1d`` (whose
    ``(B, C, L)`` layout is our ``(B, T, H)`` transposed).

    One departure from PyTorch, on purpose: with a single value per feature in training
    (batch size 1 on ``(B, H)``) PyTorch raises; here the forward follows the math
    (x_hat = 0, so y = beta), ``running_mean`` is updated, ``running_var`` is left alone (an
    unbiased variance of one value is undefined) and a :class:`SingleValueBatchWarning` is
    issued once per module. The batch-size sweep needs BatchNorm to train at batch size 1.

    Args:
        features: H, the number of features (the last axis).
        eps: added to the variance inside the square root. Default: 1e-5.
        momentum: weight of the new batch statistic in the running average. Default: 0.1.

    Attributes:
        gamma, beta: learnable gain (ones) and bias (zeros), shape ``(H,)``.
        running_mean, running_var: buffers of shape ``(H,)``, initialised to 0 and 1.
        use_batch_stats_in_eval: when True, eval mode normalizes with batch statistics and
            still updates nothing (see :func:`batch_statistics`).

    Shape:
        Input: ``(B, H)`` or ``(B, T, H)``. Output: same shape.

    Raises:
        ValueError: if ``features < 1``, the input is not 2-D or 3-D, or its last axis is not H.
    """

    def __init__(self, features: int, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"BatchNorm1d: features must be >= 1, got {features}")
        self.features = features
        self.eps = eps
        self.momentum = momentum
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.use_batch_stats_in_eval = False
        self._warned_single_value = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (2, 3) or x.shape[-1] != self.features:
            raise ValueError(
                f"BatchNorm1d: expected (B, {self.features}) or (B, T, {self.features}), got {tuple(x.shape)}"
            )
        dims = tuple(range(x.dim() - 1))  # (0,) or (0, 1): every axis but the features
        if not self.training and not self.use_batch_stats_in_eval:
            rstd = torch.rsqrt(self.running_var + self.eps)
            return (x - self.running_mean) * rstd * self.gamma + self.beta

        n = x.numel() // self.features  # values per feature in this batch
        mean = x.mean(dim=dims)  # (H,)
        centered = x - mean
        var = (centered * centered).mean(dim=dims)  # (H,), biased: used to normalize
        if self.training:
            self._update_running_stats(mean.detach(), var.detach(), n)
        return centered * torch.rsqrt(var + self.eps) * self.gamma + self.beta

    @torch.no_grad()
    def _update_running_stats(self, mean: torch.Tensor, var: torch.Tensor, n: int) -> None:
        m = self.momentum
        self.running_mean.mul_(1 - m).add_(m * mean)
        if n > 1:
            self.running_var.mul_(1 - m).add_(m * var * (n / (n - 1)))
        else:
            self._warn_single_value()

    def _warn_single_value(self) -> None:
        if not self._warned_single_value:
            self._warned_single_value = True
            warnings.warn(
                "BatchNorm1d got one value per feature in training: x_hat = 0, so the output is beta "
                "and running_var is not updated",
                SingleValueBatchWarning,
                stacklevel=4,
            )

    def extra_repr(self) -> str:
        return f"{self.features}, eps={self.eps}, momentum={self.momentum}"


@contextlib.contextmanager
def batch_statistics(model: nn.Module) -> Iterator[None]:
    """Within the block, every :class:`BatchNorm1d` in ``model`` normalizes with the statistics
    of the batch it is given, even in eval mode, without touching its running statistics.

    Used to measure BatchNorm's test accuracy "with batch statistics" next to the usual eval-mode
    accuracy with running statistics.
    """
    bns = [m for m in model.modules() if isinstance(m, BatchNorm1d)]
    for bn in bns:
        bn.use_batch_stats_in_eval = True
    try:
        yield
    finally:
        for bn in bns:
            bn.use_batch_stats_in_eval = False


class RecurrentBatchNorm1d(BatchNorm1d):
    r"""BatchNorm1d called once per timestep inside a recurrence, with running statistics that
    estimate what training normalizes with.

    Each call normalizes ``(B, H)`` summed inputs with the batch statistics of that timestep,
    :math:`\mu_t` and the biased :math:`\sigma_t^2`, exactly as :class:`BatchNorm1d` does. The
    running statistics are what differs from calling one BatchNorm1d T times (which would update
    them T times per training step, an effective momentum of ``1 - (1 - m)^T``, 0.88 for T = 20,
    weighted towards the last timesteps):

    - ``stats="pooled"`` (default): one update per training step, made by
      :meth:`update_running_stats` after the sequence, with the unbiased per-timestep variances
      :math:`s_t^2 = \sigma_t^2 \cdot B / (B - 1)`::

          running_mean = (1 - m) * running_mean + m * mean_t(mu_t)
          running_var  = (1 - m) * running_var  + m * mean_t(s_t^2)

    - ``stats="per_timestep"``: separate running statistics for every timestep, shared gamma and
      beta (Cooijmans et al. 2016, "Recurrent Batch Normalization", section 4); row t is updated
      once per step with PyTorch's rule. In eval mode a timestep beyond the trained length
      ``seq_len`` uses the last timestep's statistics.

    With B = 1 the variance is left alone (see :class:`BatchNorm1d`).

    Args:
        features: H.
        stats: ``pooled`` or ``per_timestep``.
        seq_len: T, the number of per-timestep rows (required for ``per_timestep``).
        eps, momentum: as :class:`BatchNorm1d`.

    Attributes:
        running_mean, running_var: ``(H,)`` (pooled) or ``(T, H)`` (per_timestep).

    Shape:
        Input: ``(B, H)`` and the timestep ``t`` (int, from 0). Output: ``(B, H)``.

    Raises:
        ValueError: for an unknown ``stats``, a missing ``seq_len`` with ``per_timestep``, or
            an input that is not ``(B, H)``.
    """

    STATS = ("pooled", "per_timestep")

    def __init__(self, features: int, stats: str = "pooled", seq_len: int | None = None, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__(features, eps, momentum)
        if stats not in self.STATS:
            raise ValueError(f"batch_norm_stats: unknown {stats!r}; allowed: {', '.join(self.STATS)}")
        if stats == "per_timestep":
            if seq_len is None or seq_len < 1:
                raise ValueError("batch_norm_stats=per_timestep needs seq_len >= 1")
            self.running_mean = torch.zeros(seq_len, features)
            self.running_var = torch.ones(seq_len, features)
        self.stats = stats
        self._pending: list[tuple[torch.Tensor, torch.Tensor, int]] = []  # (mu_t, s_t^2, B) per timestep

    def forward(self, x: torch.Tensor, t: int = 0) -> torch.Tensor:  # type: ignore[override]
        if x.dim() != 2 or x.shape[-1] != self.features:
            raise ValueError(f"RecurrentBatchNorm1d: expected (B, {self.features}), got {tuple(x.shape)}")
        row = min(t, self.running_mean.shape[0] - 1) if self.stats == "per_timestep" else None
        if not self.training and not self.use_batch_stats_in_eval:
            mean, var = (self.running_mean, self.running_var) if row is None else (self.running_mean[row], self.running_var[row])
            return (x - mean) * torch.rsqrt(var + self.eps) * self.gamma + self.beta
        mean = x.mean(dim=0)  # (H,)
        centered = x - mean
        var = (centered * centered).mean(dim=0)  # (H,), biased: used to normalize
        if self.training:
            n = x.shape[0]
            if t == 0:
                self._pending.clear()  # a new sequence (drops any left by an aborted forward)
            if row is None:
                self._pending.append((mean.detach(), var.detach(), n))
            else:
                self._update_row(row, mean.detach(), var.detach(), n)
        return centered * torch.rsqrt(var + self.eps) * self.gamma + self.beta

    @torch.no_grad()
    def _update_row(self, row: int, mean: torch.Tensor, var: torch.Tensor, n: int) -> None:
        m = self.momentum
        self.running_mean[row].mul_(1 - m).add_(m * mean)
        if n > 1:
            self.running_var[row].mul_(1 - m).add_(m * var * (n / (n - 1)))
        else:
            self._warn_single_value()

    @torch.no_grad()
    def update_running_stats(self) -> None:
        """Fold the timesteps seen since the last call into the pooled running statistics (one
        update per training step); a no-op for ``per_timestep`` or when nothing is pending."""
        if self.stats != "pooled" or not self._pending:
            return
        means, variances, sizes = zip(*self._pending)
        self._pending.clear()
        n = sizes[0]
        m = self.momentum
        self.running_mean.mul_(1 - m).add_(m * torch.stack(means).mean(dim=0))
        if n > 1:
            self.running_var.mul_(1 - m).add_(m * torch.stack(variances).mean(dim=0) * (n / (n - 1)))
        else:
            self._warn_single_value()

    def extra_repr(self) -> str:
        return super().extra_repr() + f", stats={self.stats!r}"


@dataclass(frozen=True)
class NormKind:
    """One norm kind: its config name, its label in tables and legends, its plot colour, and a
    factory ``(features) -> nn.Module``."""

    kind: str
    label: str
    color: str
    factory: Callable[[int], nn.Module]


#: The one registry of norm kinds; config, models, plots and tables read it.
NORMS: dict[str, NormKind] = {
    "none": NormKind("none", "NoNorm", "tab:gray", lambda features: nn.Identity()),
    "batch": NormKind("batch", "BatchNorm", "tab:orange", BatchNorm1d),
    "layer": NormKind("layer", "LayerNorm", "tab:blue", LayerNorm),
}
NORM_KINDS = tuple(NORMS)


def norm_label(kind: str) -> str:
    """The display name of a norm kind (``"layer"`` -> ``"LayerNorm"``); unknown kinds as given."""
    return NORMS[kind].label if kind in NORMS else kind


def norm_color(kind: str) -> str | None:
    """The plot colour of a norm kind (None for an unknown kind)."""
    return NORMS[kind].color if kind in NORMS else None


def build_norm(kind: str, features: int) -> nn.Module:
    """Return the normalization layer for ``kind`` from :data:`NORMS` (``none`` is the identity).

    Args:
        kind: one of :data:`NORM_KINDS`.
        features: the size of the normalized last axis.

    Raises:
        ValueError: for any other ``kind``, naming the allowed kinds.
    """
    if kind not in NORMS:
        raise ValueError(f"unknown norm {kind!r}; allowed: {', '.join(NORM_KINDS)}")
    return NORMS[kind].factory(features)
