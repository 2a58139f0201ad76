"""Batch Normalization written from scratch in torch ops: BatchNorm1d, its recurrent form, and a
switch to batch statistics in eval mode.

Batch Normalization (Ioffe & Szegedy 2015, Algorithm 1) normalizes each feature over the batch
(and, for sequences, over time) and keeps running statistics for inference::

    mean_B, var_B = moments of x over the batch axes (var biased)
    y = gamma * (x - mean_B) / sqrt(var_B + eps) + beta                        (training)
    y = gamma * (x - running_mean) / sqrt(running_var + eps) + beta            (eval)
    running = (1 - momentum) * running + momentum * batch   (running_var: the unbiased batch variance)

Mirrors ``torch.nn.BatchNorm1d`` (argument names, running-statistics rule), the oracle in
``tests/nn/test_batchnorm.py``. The forward and backward in training are
:class:`lnbench.nn.layernorm.NormalizeAffine` over the batch axes (two-pass variance).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, Self

import torch
from torch import nn

from lnbench.nn.base import Norm, SingleValueWarning
from lnbench.nn.layernorm import NormalizeAffine

if TYPE_CHECKING:
    from lnbench.config import ModelConfig


class SingleValueBatchWarning(SingleValueWarning):
    """BatchNorm saw one value per feature in training: x_hat is 0 and the output is beta."""


class BatchNorm1d(Norm):
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

    With ``unbiased=True`` (``model.batch_norm_unbiased``) training normalizes with the unbiased
    batch variance :math:`s_B^2 = \sigma_B^2 \cdot n / (n - 1)` of its n values per feature, as Ba et
    al. 2016 (section 6.7) did for BatchNorm at batch size 4, where the biased estimate is 25 % small.
    It is computed as ``gamma * c * x_hat' + beta`` with ``c = sqrt((n - 1) / n)`` and ``x_hat'``
    normalized with ``eps * (n - 1) / n``: the same function, and the same hand-written backward.
    Eval mode (running statistics) is unchanged.

    Args:
        features: H, the number of features (the last axis).
        eps: added to the variance inside the square root. Default: 1e-5.
        momentum: weight of the new batch statistic in the running average. Default: 0.1.
        members: S for an ensemble of S models: input ``(S, B, H)`` or ``(S, B, T, H)``,
            statistics per member, gamma, beta and the running statistics ``(S, 1, H)``. Default: None.
        unbiased: normalize with the unbiased batch variance (above). Default: False (PyTorch's biased one).

    Attributes:
        gamma, beta: learnable gain (ones) and bias (zeros), shape ``(H,)``.
        running_mean, running_var: buffers of shape ``(H,)``, initialised to 0 and 1.
        use_batch_stats_in_eval: when True, eval mode normalizes with batch statistics and
            still updates nothing (see :func:`batch_statistics`).
        batch_group: with ``use_batch_stats_in_eval``, None (the whole batch is one batch) or g:
            the batch is read as consecutive groups of g examples, each normalized with its own
            statistics (see :func:`batch_statistics`).

    Shape:
        Input: ``(B, H)`` or ``(B, T, H)`` (ensemble: a leading S), any floating dtype. Output:
        same shape and dtype.

    Warns:
        SingleValueBatchWarning: once, on one value per feature in training.

    Raises:
        ValueError: if ``features < 1``, the input is not 2-D or 3-D, or its last axis is not H.
    """

    uses_batch_statistics = True
    input_ranks: ClassVar[tuple[int, ...] | None] = (2, 3)

    beta: nn.Parameter
    running_mean: torch.Tensor
    running_var: torch.Tensor

    def __init__(
        self,
        features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        members: int | None = None,
        unbiased: bool = False,
    ) -> None:
        super().__init__(features, eps, members)
        self.momentum, self.unbiased = momentum, unbiased
        self.register_buffer("running_mean", torch.zeros(self.param_shape))
        self.register_buffer("running_var", torch.ones(self.param_shape))
        self.use_batch_stats_in_eval = False
        self.batch_group: int | None = None

    @classmethod
    def from_config(
        cls, features: int, model_cfg: ModelConfig, members: int | None = None, seq_len: int | None = None
    ) -> Self:
        """The layer with the model's ``batch_norm_unbiased``."""
        return cls(features, members=members, unbiased=model_cfg.norm_option("batch_norm_unbiased"))

    def reset_running_stats(self) -> None:
        """running_mean to 0, running_var to 1 (``torch.nn.BatchNorm1d.reset_running_stats``)."""
        self.running_mean.zero_()
        self.running_var.fill_(1.0)

    def reset_parameters(self) -> None:
        """The running statistics, gamma and beta (``torch.nn.BatchNorm1d.reset_parameters``)."""
        self.reset_running_stats()
        super().reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._normalize(x, None)

    def _normalize(self, x: torch.Tensor, t: int | None) -> torch.Tensor:
        """The forward at timestep ``t`` (None outside a recurrence)."""
        self.check_input(x)
        gamma, beta = self._per_member(self.gamma, x), self._per_member(self.beta, x)
        if not self.training and not self.use_batch_stats_in_eval:
            mean, var = (self._per_member(s, x) for s in self._running_stats(t))
            rstd = torch.rsqrt(var + self.eps)
            return ((x - mean) * rstd * gamma + beta).to(x.dtype)
        if not self.training and self.batch_group is not None:
            return self._normalize_groups(x, gamma, beta, self.batch_group)
        dims = tuple(range(self.batch_axis, x.dim() - 1))  # every axis but the members' and the features
        n = math.prod(x.shape[d] for d in dims)  # values per feature (per member)
        gamma, eps = self._variance_estimator(gamma, n)
        y, mean, var = NormalizeAffine.apply(x, gamma, beta, eps, dims)
        if self.training and n > 0:  # an empty batch updates nothing (as PyTorch)
            self._track(mean.view(self.param_shape), var.view(self.param_shape), n, t)
        return y

    def _normalize_groups(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, g: int) -> torch.Tensor:
        """Eval with batch statistics, each run of g consecutive examples of the batch its own
        batch: ``(.., B, [T,] H)`` viewed as ``(.., B / g, g, [T,] H)``, the statistics over the g
        (and T) axes. Nothing is tracked."""
        b = self.batch_axis
        self.check_groups(x.shape[b], g)
        groups = x.unflatten(b, (x.shape[b] // g, g))
        if self.members is not None:  # (S, 1, [1,] H) -> (S, 1, 1, [1,] H): one more axis to broadcast over
            gamma, beta = (p.view(self.members, *[1] * (groups.dim() - 2), self.features) for p in (gamma, beta))
        dims = tuple(range(b + 1, groups.dim() - 1))
        n = math.prod(groups.shape[d] for d in dims)
        gamma, eps = self._variance_estimator(gamma, n)
        y, _, _ = NormalizeAffine.apply(groups, gamma, beta, eps, dims)
        return y.flatten(b, b + 1)

    def check_groups(self, batch: int, g: int) -> None:
        """Raise ValueError unless a batch of ``batch`` examples is a whole number of groups of g
        (the Python path and the fused kernel raise the same error)."""
        if batch % g:
            raise ValueError(f"{type(self).__name__}: batch of {batch} is not a whole number of groups of {g}")

    def _variance_estimator(self, gamma: torch.Tensor, n: int) -> tuple[torch.Tensor, float]:
        """``(gamma, eps)`` for :class:`NormalizeAffine`, which normalizes with the biased variance:
        as they are, or with ``unbiased`` and n > 1 values ``(gamma * c, eps * c^2)``, c^2 = (n - 1) / n,
        which gives ``gamma * (x - mean) / sqrt(var * n / (n - 1) + eps)``."""
        if not self.unbiased or n < 2:
            return gamma, self.eps
        c2 = (n - 1) / n
        return gamma * math.sqrt(c2), self.eps * c2

    def _per_member(self, stat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """An ensemble's ``(S, 1, H)`` tensor viewed as ``(S, 1, 1, H)`` for an ``(S, B, T, H)`` input."""
        return stat if self.members is None or x.dim() == 3 else stat.view(self.members, 1, 1, self.features)

    def _running_stats(self, t: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The running statistics eval mode normalizes with at timestep ``t``."""
        return self.running_mean, self.running_var

    def _track(self, mean: torch.Tensor, var: torch.Tensor, n: int, t: int | None) -> None:
        """Take in a training batch's statistics: here, one running update per forward."""
        self._update_running_stats(mean, var, n)

    @torch.no_grad()
    def _update_running_stats(
        self, mean: torch.Tensor, var: torch.Tensor, n: int, row: int | slice | None = None
    ) -> None:
        """PyTorch's rule, ``running = (1 - m) running + m batch`` with the unbiased variance of
        n values, on the buffers (or on their ``row``); with n = 1 the variance is left alone,
        with n = 0 (an empty batch) nothing is updated (as PyTorch)."""
        if n == 0:
            return
        running_mean, running_var = (
            (self.running_mean, self.running_var) if row is None else (self.running_mean[row], self.running_var[row])
        )
        m = self.momentum
        running_mean.mul_(1 - m).add_(m * mean)
        if n > 1:
            running_var.mul_(1 - m).add_(m * var * (n / (n - 1)))
        else:
            self._warn_single_value(
                f"{type(self).__name__} got one value per feature in training: x_hat = 0, so the output is beta "
                "and running_var is not updated",
                SingleValueBatchWarning,
            )

    def extra_repr(self) -> str:
        return super().extra_repr() + f", momentum={self.momentum}" + (", unbiased=True" if self.unbiased else "")


@contextlib.contextmanager
def batch_statistics(model: nn.Module, group_size: int | None = None) -> Iterator[None]:
    """Within the block, every norm of ``model`` that ``uses_batch_statistics`` (the BatchNorms)
    normalizes with the statistics of the batch it is given, even in eval mode, without touching
    its running statistics.

    Used to measure BatchNorm's test accuracy "with batch statistics" next to the usual eval-mode
    accuracy with running statistics. No PyTorch counterpart (``torch.nn.BatchNorm1d`` with
    ``track_running_stats=False`` is the closest).

    With ``group_size`` g, a batch of B = k * g examples is k batches of g in one pass: each run
    of g consecutive examples is normalized with its own statistics, as if the k batches had
    been given one after another (the same statistics, up to float rounding; at g = 1 each
    example is its own batch). The probes at batch size 1 take one pass instead of N.

    Args:
        model: any module; the flag is set on its submodules that use batch statistics.
        group_size: g >= 1, or None (the whole batch is one batch). Default: None.

    Yields:
        None; the flags are reset on exit, also after an exception.

    Raises:
        ValueError: if ``group_size < 1``; in the block, a batch that is not a multiple of g.
    """
    if group_size is not None and group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    norms = [m for m in model.modules() if isinstance(m, Norm) and m.uses_batch_statistics]
    for norm in norms:
        norm.use_batch_stats_in_eval = True
        if isinstance(norm, BatchNorm1d):
            norm.batch_group = group_size
    try:
        yield
    finally:
        for norm in norms:
            norm.use_batch_stats_in_eval = False
            if isinstance(norm, BatchNorm1d):
                norm.batch_group = None


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
        stats: ``pooled`` or ``per_timestep``. Default: ``pooled``.
        seq_len: T, the number of per-timestep rows (required for ``per_timestep``). Default: None.
        eps, momentum, unbiased: as :class:`BatchNorm1d`.
        members: S for an ensemble of S models: input ``(S, B, H)``, statistics per member over B,
            gamma and beta ``(S, 1, H)``. Default: None.

    Attributes:
        running_mean, running_var: ``(H,)`` (pooled) or ``(T, H)`` (per_timestep); for an
            ensemble ``(S, 1, H)`` or ``(T, S, 1, H)``.

    Shape:
        Input: ``(B, H)`` (ensemble: ``(S, B, H)``) and the timestep ``t`` (int, from 0). Output: same.

    Raises:
        ValueError: for an unknown ``stats``, a missing ``seq_len`` with ``per_timestep``, or
            an input that is not ``(B, H)``.
    """

    STATS = ("pooled", "per_timestep")
    takes_timestep = True
    input_ranks: ClassVar[tuple[int, ...] | None] = (2,)

    def __init__(
        self,
        features: int,
        stats: str = "pooled",
        seq_len: int | None = None,
        eps: float = 1e-5,
        momentum: float = 0.1,
        members: int | None = None,
        unbiased: bool = False,
    ) -> None:
        if stats not in self.STATS:
            raise ValueError(f"batch_norm_stats: unknown {stats!r}; allowed: {', '.join(self.STATS)}")
        if stats == "per_timestep" and (seq_len is None or seq_len < 1):
            raise ValueError("batch_norm_stats=per_timestep needs seq_len >= 1")
        super().__init__(features, eps, momentum, members, unbiased)
        self.stats = stats
        if seq_len is not None and stats == "per_timestep":  # the timestep first: (T, H) or (T, S, 1, H)
            self.running_mean = torch.zeros(seq_len, *self.param_shape)
            self.running_var = torch.ones(seq_len, *self.param_shape)
        self._pending: list[tuple[torch.Tensor, torch.Tensor, int]] = []  # (mu_t, s_t^2, B) per timestep

    @classmethod
    def from_config(
        cls, features: int, model_cfg: ModelConfig, members: int | None = None, seq_len: int | None = None
    ) -> Self:
        """The layer with the model's ``batch_norm_stats`` (and ``seq_len`` rows for ``per_timestep``)
        and ``batch_norm_unbiased``."""
        unbiased = model_cfg.norm_option("batch_norm_unbiased")
        return cls(features, model_cfg.batch_norm_stats, seq_len, members=members, unbiased=unbiased)

    def forward(self, x: torch.Tensor, t: int = 0) -> torch.Tensor:
        return self._normalize(x, t)

    def _running_stats(self, t: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        if self.stats == "pooled":
            return self.running_mean, self.running_var
        row = min(t or 0, self.running_mean.shape[0] - 1)
        return self.running_mean[row], self.running_var[row]

    def _track(self, mean: torch.Tensor, var: torch.Tensor, n: int, t: int | None) -> None:
        if not t:
            self._pending.clear()  # a new sequence (drops any left by an aborted forward)
        if self.stats == "pooled":
            self._pending.append((mean, var, n))
        else:
            self._update_running_stats(mean, var, n, min(t or 0, self.running_mean.shape[0] - 1))

    @torch.no_grad()
    def update_running_stats(self) -> None:
        """Fold the timesteps seen since the last call into the pooled running statistics (one
        update per training step); a no-op for ``per_timestep`` or when nothing is pending."""
        if self.stats != "pooled" or not self._pending:
            return
        means, variances, sizes = zip(*self._pending)
        self._pending.clear()
        self._update_running_stats(torch.stack(means).mean(dim=0), torch.stack(variances).mean(dim=0), sizes[0])

    def end_sequence(self) -> None:
        """:meth:`update_running_stats`: one update per training step (a no-op in eval)."""
        self.update_running_stats()

    # The whole sequence at once (the fused recurrence, lnbench.nn.fused, normalizes in C++): the
    # running statistics it normalizes with in eval, and the updates T calls of forward(x_t, t)
    # and end_sequence() would make from its batch statistics.

    def running_rows(self, T: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The running mean and variance eval mode normalizes timesteps 0 .. T-1 with, each
        ``(T, *param_shape)`` (pooled: the same row T times; per_timestep: row min(t, seq_len - 1))."""
        if self.stats == "pooled":
            return (s.unsqueeze(0).expand(T, *s.shape) for s in (self.running_mean, self.running_var))  # type: ignore[return-value]
        rows = torch.arange(T).clamp_(max=self.running_mean.shape[0] - 1)
        return self.running_mean[rows], self.running_var[rows]

    @torch.no_grad()
    def track_sequence(self, mean: torch.Tensor, var: torch.Tensor, n: int) -> None:
        """Take in a training sequence's per-timestep batch statistics, ``(T, *param_shape)`` means
        and biased variances of n values each, as T calls of :meth:`forward` and one
        :meth:`end_sequence` would: pooled, one update with their means over t; per_timestep, row t
        updated with timestep t's (the timesteps beyond ``seq_len`` one after another on the last row)."""
        self._pending.clear()
        if self.stats == "pooled":
            self._update_running_stats(mean.mean(dim=0), var.mean(dim=0), n)
            return
        rows = min(mean.shape[0], self.running_mean.shape[0])
        self._update_running_stats(mean[:rows], var[:rows], n, slice(0, rows))
        for t in range(rows, mean.shape[0]):
            self._update_running_stats(mean[t], var[t], n, rows - 1)

    def member_axis(self, name: str) -> int:
        """Per-timestep running statistics have the timestep first: ``(T, S, 1, H)``, members on axis 1."""
        return 1 if self.stats == "per_timestep" and name.startswith("running_") else 0

    def extra_repr(self) -> str:
        return super().extra_repr() + f", stats={self.stats!r}"
