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

from lnbench.names import NORM_KINDS, NORM_NAMES, norm_color, norm_label  # noqa: F401  (re-exported)
from lnbench.nn.kernels import layernorm_kernel
from lnbench.nn.rmsnorm import RMSNorm

_KERNEL_DTYPES = frozenset((torch.float32, torch.float64))


class SingleValueWarning(UserWarning):
    """A norm's statistics are over one value: x_hat is 0 and the output is beta, whatever the input."""


class SingleValueBatchWarning(SingleValueWarning):
    """BatchNorm saw one value per feature in training: x_hat is 0 and the output is beta."""


_LOW_PRECISION = frozenset((torch.float16, torch.bfloat16))


class NormalizeAffine(torch.autograd.Function):
    r"""``y = gamma * (x - mean) * rstd + beta``, the statistics of ``x`` taken over ``dims``,
    with a hand-written backward from a cache of ``(x_hat, rstd, gamma)``.

    Forward (two-pass variance, biased)::

        mean, var = moments of x over dims      rstd = 1 / sqrt(var + eps)
        x_hat = (x - mean) * rstd               y = gamma * x_hat + beta

    Backward, the x-hat form shared by LayerNorm (``dims`` = the features) and BatchNorm (the
    batch axes), the same formula as :func:`lnbench.nn.numpy_layernorm.layernorm_backward`, with
    ``g = gamma * grad_y`` and means over ``dims``::

        dx     = rstd * (g - mean(g) - x_hat * mean(g * x_hat))
        dgamma = sum(grad_y * x_hat)        dbeta = sum(grad_y)    (over every axis gamma broadcasts on)

    One graph node with one Python backward instead of ~8 autograd nodes per call.

    Args (to ``apply``): x ``(*, D)`` floating; gamma, beta broadcastable to x (``(D,)``, or
    ``(S, 1, D)`` for an ensemble of S models); eps (float); dims (tuple of ints).

    Returns:
        ``(y, mean, var)``: y like x (its shape and dtype); mean and the biased var over ``dims``
        (keepdim), detached, for running statistics. float16 and bfloat16 inputs are normalized
        in float32 (as PyTorch's CPU kernels accumulate them: 600^2 overflows float16), so mean
        and var are float32 for them.
    """

    @staticmethod
    def forward(ctx, x, gamma, beta, eps, dims):  # type: ignore[override]
        ctx.x_dtype, ctx.gamma_dtype = x.dtype, gamma.dtype
        if x.dtype in _LOW_PRECISION:  # statistics and x_hat in float32, y back in x's dtype
            x, gamma, beta = x.float(), gamma.float(), beta.float()
        mean = x.mean(dim=dims, keepdim=True)
        x_hat = x - mean  # centered for now; exactly 0 on a constant row, so y = beta there
        var = (x_hat * x_hat).mean(dim=dims, keepdim=True)  # two-pass: no E[x^2] - E[x]^2 cancellation
        rstd = (var + eps).rsqrt_()
        x_hat.mul_(rstd)
        ctx.save_for_backward(x_hat, rstd, gamma)
        ctx.dims, ctx.param_axes = dims, _broadcast_axes(x.shape, gamma.shape)
        ctx.mark_non_differentiable(mean, var)
        ctx.set_materialize_grads(False)  # mean and var get no gradient: no zero tensors for them
        return torch.addcmul(beta, x_hat, gamma).to(ctx.x_dtype), mean, var

    @staticmethod
    @torch.autograd.function.once_differentiable  # a second derivative raises instead of being wrong
    def backward(ctx, grad_y, _grad_mean, _grad_var):  # type: ignore[override]
        if grad_y is None:
            return None, None, None, None, None
        x_hat, rstd, gamma = ctx.saved_tensors
        dims, axes = ctx.dims, ctx.param_axes
        grad_y = grad_y.to(x_hat.dtype)  # float32 for a float16 input (see forward)
        g = grad_y * gamma
        inner = (g * x_hat).mean(dim=dims, keepdim=True)
        dx = torch.addcmul(g - g.mean(dim=dims, keepdim=True), x_hat, inner, value=-1).mul_(rstd)
        dgamma, dbeta = grad_y * x_hat, grad_y
        if axes:  # sum(dim=()) would sum everything
            dgamma, dbeta = dgamma.sum(dim=axes), dbeta.sum(dim=axes)
        dgamma, dbeta = dgamma.view(gamma.shape).to(ctx.gamma_dtype), dbeta.reshape(gamma.shape).to(ctx.gamma_dtype)
        return dx.to(ctx.x_dtype), dgamma, dbeta, None, None


def _broadcast_axes(x_shape: torch.Size, param_shape: torch.Size) -> tuple[int, ...]:
    """The axes of ``x`` a parameter of ``param_shape`` is broadcast over (summed in its gradient)."""
    lead = len(x_shape) - len(param_shape)
    return tuple(range(lead)) + tuple(lead + i for i, n in enumerate(param_shape) if n == 1 and x_shape[lead + i] != 1)


class LayerNorm(nn.Module):
    r"""Layer Normalization over the last axis (Ba et al. 2016, eq. 4).

    .. math:: y = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta

    with :math:`\mu` and the biased :math:`\sigma^2` taken over the last axis of each sample.
    Mirrors ``torch.nn.LayerNorm(features, eps=eps)``.

    Args:
        features: D, the size of the normalized (last) axis.
        eps: added to the variance inside the square root. Default: 1e-5.

        members: S for an ensemble of S models (input ``(S, B, D)``, gamma ``(S, 1, D)``).

    float32/float64 CPU inputs go through the compiled kernel of :mod:`lnbench.nn.kernels` when it
    is built (the same formula and backward, one C++ autograd node); other inputs, or
    ``use_kernel = False``, through :class:`NormalizeAffine`.

    Attributes:
        gamma: learnable gain of shape ``(D,)``, initialised to ones (the paper's g).
        beta: learnable bias of shape ``(D,)``, initialised to zeros (the paper's b).

    Shape:
        Input: ``(*, D)``, e.g. ``(B, H)`` or ``(B, T, H)``, any floating dtype.
        Output: same shape and dtype as the input.

    Warns:
        SingleValueWarning: once, for ``features == 1`` (the output is beta whatever the input).

    Raises:
        ValueError: if ``features < 1`` or the input's last axis is not D.

    Examples:
        >>> ln = LayerNorm(4)
        >>> ln(torch.tensor([[40000.0, 40001.0, 40002.0, 40003.0]]))
        tensor([[-1.3416, -0.4472,  0.4472,  1.3416]], grad_fn=<AddBackward0>)
    """

    def __init__(self, features: int, eps: float = 1e-5, members: int | None = None) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"LayerNorm: features must be >= 1, got {features}")
        self.features = features
        self.eps = eps
        self.members = members
        shape = (features,) if members is None else (members, 1, features)  # an ensemble: (S, 1, D)
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        self.use_kernel = True  # False: always the Python autograd Function (NormalizeAffine)
        self._warned_single_value = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.features:
            raise ValueError(f"LayerNorm: expected last axis {self.features}, got shape {tuple(x.shape)}")
        if self.features == 1 and not self._warned_single_value:
            self._warned_single_value = True
            warnings.warn(
                "LayerNorm over one feature: x_hat = 0, so the output is beta whatever the input "
                "(a model with hidden_size 1 and LayerNorm cannot learn)",
                SingleValueWarning,
                stacklevel=2,
            )
        if self.use_kernel and x.dtype in _KERNEL_DTYPES and not x.is_cuda:
            kernel = layernorm_kernel()
            if kernel is not None:  # the same formula as one C++ autograd node (lnbench.nn.kernels)
                return kernel.layer_norm(x, self.gamma, self.beta, self.eps)
        return NormalizeAffine.apply(x, self.gamma, self.beta, self.eps, (-1,))[0]  # (*, D)

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
            return ((x - self.running_mean) * rstd * self.gamma + self.beta).to(x.dtype)

        n = x.numel() // self.features  # values per feature in this batch
        y, mean, var = NormalizeAffine.apply(x, self.gamma, self.beta, self.eps, dims)
        if self.training:
            self._update_running_stats(mean.reshape(-1), var.reshape(-1), n)
        return y

    @torch.no_grad()
    def _update_running_stats(self, mean: torch.Tensor, var: torch.Tensor, n: int, row: int | None = None) -> None:
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

        members: S for an ensemble of S models: input ``(S, B, H)``, statistics per member over B,
            gamma and beta ``(S, 1, H)``.

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

    def __init__(
        self,
        features: int,
        stats: str = "pooled",
        seq_len: int | None = None,
        eps: float = 1e-5,
        momentum: float = 0.1,
        members: int | None = None,
    ) -> None:
        super().__init__(features, eps, momentum)
        if stats not in self.STATS:
            raise ValueError(f"batch_norm_stats: unknown {stats!r}; allowed: {', '.join(self.STATS)}")
        if stats == "per_timestep" and (seq_len is None or seq_len < 1):
            raise ValueError("batch_norm_stats=per_timestep needs seq_len >= 1")
        # an ensemble of S members normalizes (S, B, H) over B, per member
        self.members, self.batch_axis = members, (0 if members is None else 1)
        stat = (features,) if members is None else (members, 1, features)
        if members is not None:
            self.gamma = nn.Parameter(torch.ones(stat))
            self.beta = nn.Parameter(torch.zeros(stat))
        rows = () if stats == "pooled" else (seq_len,)  # per_timestep: the timestep first, (T, *stat)
        self.running_mean = torch.zeros(*rows, *stat)
        self.running_var = torch.ones(*rows, *stat)
        self._stat_shape = stat
        self.stats = stats
        self._pending: list[tuple[torch.Tensor, torch.Tensor, int]] = []  # (mu_t, s_t^2, B) per timestep

    def forward(self, x: torch.Tensor, t: int = 0) -> torch.Tensor:  # type: ignore[override]
        if x.dim() != 2 + self.batch_axis or x.shape[-1] != self.features:
            want = f"(B, {self.features})" if self.members is None else f"({self.members}, B, {self.features})"
            raise ValueError(f"RecurrentBatchNorm1d: expected {want}, got {tuple(x.shape)}")
        row = min(t, self.running_mean.shape[0] - 1) if self.stats == "per_timestep" else None
        if not self.training and not self.use_batch_stats_in_eval:
            mean, var = (
                (self.running_mean, self.running_var)
                if row is None
                else (self.running_mean[row], self.running_var[row])
            )
            return ((x - mean) * torch.rsqrt(var + self.eps) * self.gamma + self.beta).to(x.dtype)
        y, mean, var = NormalizeAffine.apply(x, self.gamma, self.beta, self.eps, (self.batch_axis,))
        if self.training and x.shape[self.batch_axis] > 0:  # an empty batch updates nothing (as PyTorch)
            n = x.shape[self.batch_axis]
            mean, var = mean.view(self._stat_shape), var.view(self._stat_shape)  # (H,) or (S, 1, H)
            if t == 0:
                self._pending.clear()  # a new sequence (drops any left by an aborted forward)
            if row is None:
                self._pending.append((mean, var, n))
            else:
                self._update_running_stats(mean, var, n, row)
        return y

    @torch.no_grad()
    def update_running_stats(self) -> None:
        """Fold the timesteps seen since the last call into the pooled running statistics (one
        update per training step); a no-op for ``per_timestep`` or when nothing is pending."""
        if self.stats != "pooled" or not self._pending:
            return
        means, variances, sizes = zip(*self._pending)
        self._pending.clear()
        self._update_running_stats(torch.stack(means).mean(dim=0), torch.stack(variances).mean(dim=0), sizes[0])

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


#: The one registry of norm kinds (names and colours: :mod:`lnbench.names`); config, models,
#: plots and tables read it.
NORMS: dict[str, NormKind] = {
    kind: NormKind(kind, NORM_NAMES[kind][0], NORM_NAMES[kind][1], factory)
    for kind, factory in {
        "none": lambda features: nn.Identity(),
        "batch": BatchNorm1d,
        "layer": LayerNorm,
        "rms": RMSNorm,
        # weight normalization re-parametrizes the weights that produce the summed inputs (the
        # models build lnbench.nn.weightnorm layers); where a model places a norm on activations it is the identity
        "weight": lambda features: nn.Identity(),
    }.items()
}
assert tuple(NORMS) == NORM_KINDS


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
