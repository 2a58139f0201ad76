"""A whole recurrence as one autograd node: the C++ kernel of ``lnbench/nn/csrc/recurrence.cpp``.

:class:`lnbench.nn.rnn.SimpleRNN` and :class:`lnbench.nn.lstm.LSTM` unroll their cell step by step
in Python, each step 15-25 ATen calls with their own autograd nodes. Here the same equations run
over all T timesteps in C++, with a backward through time written by hand: one node per sequence,
as ``torch.nn.LSTM``'s CPU kernel. The input terms (``W_x x_t``, and the separate placement's and
the LSTM's ``norm_x``) do not depend on the recurrence, so the models compute them for every
timestep at once before it, in torch ops (autograd takes their gradient from the node's).
A stacked model (``model.num_layers`` > 1) runs one node per layer (:func:`unroll_fused`): the node
returns every h_t, differentiable, so layer l's h_1 .. h_T are the input of layer l + 1's input
terms and the backward of layer l + 1 hands layer l the gradient of all its states (no kernel change).

Which path a model takes (:func:`kernel_covers`): the kernel for a float32/float64 CPU input with
a norm it has a mode for (the identity, LayerNorm, RMSNorm, recurrent BatchNorm; weight norm's
weights are computed before it), unless ``LNBENCH_KERNELS=0``,
the model's ``use_kernel`` is False, or the kernel cannot be built; otherwise the step-by-step
Python code, which stays the reference (``tests/nn/test_fused.py`` compares the two in float64 to
1e-10: outputs, every gradient, the running statistics and the probes).

Double backward (``create_graph=True``): the node's backward recomputes the recurrence with
:func:`reference_recurrence`, the same equations in differentiable torch ops, and differentiates
through it (as activation checkpointing does), so a gradient penalty works as on the Python path.

Norm modes (one per norm position; ``MODES``, named for what they compute): ``none``,
``over_features`` (mean and variance over the features: LayerNorm), ``rms_over_features`` (the root
mean square over the features: RMSNorm), ``over_batch`` (the statistics of each group of ``group``
consecutive examples of a member at this timestep: the batch's in training; BatchNorm) and
``affine`` (BatchNorm in eval: ``scale_t x + shift_t`` from its running statistics). Which layer
takes which mode is :func:`_norm_mode`'s table of exact classes; any other layer (GroupNorm, a
user's norm, a subclass) takes the Python path. Shapes: T timesteps, S members (1 for one model), B batch, H hidden size, G = H
(RNN) or 4H (LSTM).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from torch import nn

from lnbench.nn.batchnorm import RecurrentBatchNorm1d
from lnbench.nn.kernels import recurrence_kernel
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.rmsnorm import RMSNorm

#: the kernel's norm modes (its LAYER, RMS, BATCH, AFFINE): what is computed, not which norm asks for it
MODES = {"none": 0, "over_features": 1, "rms_over_features": 2, "over_batch": 3, "affine": 4}
KERNEL_DTYPES = frozenset((torch.float32, torch.float64))


@dataclass(frozen=True)
class Recurrence:
    """What the kernel computes (see ``recurrence.cpp``).

    Attributes:
        lstm: the LSTM (else the tanh RNN).
        inner: the input term is added inside norm_h (the joint RNN, Ba et al. eq. 4).
        mode_h, mode_c, mode_x: the norm modes (:data:`MODES`) on the recurrent (or summed) term,
            over G, on the LSTM's c_t, over H, and on the input term (separate RNN, LSTM), over G.
        group: examples per BatchNorm statistic (``over_batch`` mode); B otherwise.
        eps_h, eps_c, eps_x: the norms' eps.
        count_saturated: also count each example's saturated units (the probes).
    """

    lstm: bool
    inner: bool
    mode_h: str
    mode_c: str = "none"
    mode_x: str = "none"
    group: int = 1
    eps_h: float = 1e-5
    eps_c: float = 1e-5
    eps_x: float = 1e-5
    count_saturated: bool = False


class FusedRecurrence(torch.autograd.Function):
    """The recurrence as one node. ``apply(spec, U, W_h, bias, gamma_h, beta_h, scale_h, shift_h,
    gamma_c, beta_c, scale_c, shift_c, tap, gamma_x, beta_x, scale_x, shift_x)``:

    Args:
        spec: a :class:`Recurrence`.
        U: the input terms ``W_x x_t``, ``(S, T, B, G)``; W_h: ``(S, G, H)``; bias: ``(S, G)`` or None;
        gamma_*, beta_*: ``(S, D)`` or None; scale_*, shift_*: ``(T, S, D)`` (``affine``) or None;
        tap: ``(T, S, B, H)`` zeros or None: added to h_t, so its gradient is the total dL/dh_t.

    Returns:
        ``(h_T, H, BM_h, BV_h, BM_c, BV_c, BM_x, BV_x, SAT)``: h_T ``(S, B, H)`` and h_1 .. h_T
        ``(T, S, B, H)`` (differentiable: a loss on h_T alone gives the backward no (T, S, B, H)
        gradient to fill and copy); the rest detached: ``over_batch`` mode's means and biased variances
        ``(T, S, B / group, D)`` of norm_h, norm_c and norm_x, and with ``spec.count_saturated``
        each example's saturated units over all timesteps ``(S, B)`` (empty tensors where absent).
    """

    @staticmethod
    def forward(
        ctx, spec, U, W_h, bias, gamma_h, beta_h, scale_h, shift_h, gamma_c, beta_c, scale_c, shift_c, tap, *norm_x
    ):
        kernel = recurrence_kernel()
        assert kernel is not None, "kernel_covers() is checked before"
        out = kernel.recurrence_forward(
            spec.lstm,
            spec.inner,
            MODES[spec.mode_h],
            MODES[spec.mode_c],
            MODES[spec.mode_x],
            spec.group,
            spec.eps_h,
            spec.eps_c,
            spec.eps_x,
            U,
            W_h,
            bias,
            gamma_h,
            beta_h,
            scale_h,
            shift_h,
            gamma_c,
            beta_c,
            scale_c,
            shift_c,
            tap,
            *norm_x,
            spec.count_saturated,
        )
        out, saturated = out[:16], out[16]
        ctx.set_materialize_grads(False)  # only H has a gradient: no zero tensors for the others
        ctx.spec = spec
        inputs = (U, W_h, bias, gamma_h, beta_h, scale_h, shift_h, gamma_c, beta_c, scale_c, shift_c, tap, *norm_x)
        ctx.n_inputs = len(inputs)
        ctx.save_for_backward(*inputs, *out)  # the kernel's activations too (saved-tensor hooks see them)
        empty = U.new_empty(0)
        H = out[0]
        stats = [t if t is not None else empty for t in (out[8], out[9], out[10], out[11], out[14], out[15])]
        extras = [*stats, saturated if saturated is not None else empty]
        ctx.mark_non_differentiable(*extras)
        return (H[-1].clone(), H, *extras)

    @staticmethod
    def backward(ctx, g_last, gH, *_):
        spec = ctx.spec
        if gH is None and g_last is None:
            return (None,) * 17
        inputs, kernel_saved = ctx.saved_tensors[: ctx.n_inputs], ctx.saved_tensors[ctx.n_inputs :]
        want = list(ctx.needs_input_grad[1:])
        if torch.is_grad_enabled():  # create_graph: differentiate the recurrence recomputed in torch ops
            wanted = [x for x, w in zip(inputs, want, strict=True) if w]
            with torch.enable_grad():
                H = reference_recurrence(spec, *inputs)[0]
            outs, grads_out = zip(*[(o, g) for o, g in ((H[-1], g_last), (H, gH)) if g is not None], strict=True)
            grads = iter(torch.autograd.grad(outs, wanted, grads_out, create_graph=True, allow_unused=True))
            return (None, *[next(grads) if w else None for w in want])
        (
            U,
            W_h,
            bias,
            gamma_h,
            beta_h,
            scale_h,
            shift_h,
            gamma_c,
            beta_c,
            scale_c,
            shift_c,
            tap,
            gamma_x,
            _,
            scale_x,
            _,
        ) = inputs
        kernel = recurrence_kernel()
        saved = [t if t is not None else U.new_empty(0) for t in kernel_saved]
        present = [x is not None for x in inputs]
        grads = kernel.recurrence_backward(
            spec.lstm,
            spec.inner,
            MODES[spec.mode_h],
            MODES[spec.mode_c],
            MODES[spec.mode_x],
            spec.group,
            gH,
            g_last,
            W_h,
            gamma_h,
            scale_h,
            gamma_c,
            scale_c,
            gamma_x,
            scale_x,
            saved,
            [w and p for w, p in zip(want, present, strict=True)],
        )
        return (None, *[g if w else None for g, w in zip(grads, want, strict=True)])


def reference_recurrence(
    spec: Recurrence,
    U: torch.Tensor,
    W_h: torch.Tensor,
    bias: torch.Tensor | None,
    gamma_h: torch.Tensor | None,
    beta_h: torch.Tensor | None,
    scale_h: torch.Tensor | None,
    shift_h: torch.Tensor | None,
    gamma_c: torch.Tensor | None,
    beta_c: torch.Tensor | None,
    scale_c: torch.Tensor | None,
    shift_c: torch.Tensor | None,
    tap: torch.Tensor | None,
    gamma_x: torch.Tensor | None = None,
    beta_x: torch.Tensor | None = None,
    scale_x: torch.Tensor | None = None,
    shift_x: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The kernel's recurrence in differentiable torch ops (any order of derivatives): the same
    arguments as :class:`FusedRecurrence`; returns ``(H, ACT, TC)`` (TC None for the RNN)."""
    S, T, B, _ = U.shape
    Hd = W_h.shape[-1]

    def norm(mode: str, x, gamma, beta, scale, shift, eps, t):  # x (S, B, D)
        if mode == "none":
            return x
        if mode == "affine":
            return x * scale[t].unsqueeze(1) + shift[t].unsqueeze(1)
        if mode == "over_batch":
            g = x.unflatten(1, (B // spec.group, spec.group))  # (S, B/g, g, D)
            mean = g.mean(dim=2, keepdim=True)
            var = (g - mean).square().mean(dim=2, keepdim=True)
            y = ((g - mean) * (var + eps).rsqrt()).flatten(1, 2)
        elif mode == "over_features":
            mean = x.mean(dim=-1, keepdim=True)
            y = (x - mean) * ((x - mean).square().mean(dim=-1, keepdim=True) + eps).rsqrt()
        else:  # rms_over_features
            y = x * (x.square().mean(dim=-1, keepdim=True) + eps).rsqrt()
        y = y * gamma.unsqueeze(1)
        return y if beta is None else y + beta.unsqueeze(1)

    h = U.new_zeros(S, B, Hd)
    c = U.new_zeros(S, B, Hd)
    hs, acts, tcs = [], [], []
    for t in range(T):
        r = torch.bmm(h, W_h.transpose(1, 2))
        if spec.inner:
            pre = norm(spec.mode_h, r + U[:, t], gamma_h, beta_h, scale_h, shift_h, spec.eps_h, t)
        else:
            pre = norm(spec.mode_h, r, gamma_h, beta_h, scale_h, shift_h, spec.eps_h, t) + norm(
                spec.mode_x, U[:, t], gamma_x, beta_x, scale_x, shift_x, spec.eps_x, t
            )
        if bias is not None:
            pre = pre + bias.unsqueeze(1)
        if not spec.lstm:
            act = torch.tanh(pre)
            h = act
        else:
            ifo, g = torch.sigmoid(pre[..., : 3 * Hd]), torch.tanh(pre[..., 3 * Hd :])
            act = torch.cat([ifo, g], dim=-1)
            c = ifo[..., Hd : 2 * Hd] * c + ifo[..., :Hd] * g
            tc = torch.tanh(norm(spec.mode_c, c, gamma_c, beta_c, scale_c, shift_c, spec.eps_c, t))
            tcs.append(tc)
            h = ifo[..., 2 * Hd :] * tc
        if tap is not None:
            h = h + tap[t]
        hs.append(h)
        acts.append(act)
    return torch.stack(hs), torch.stack(acts), torch.stack(tcs) if tcs else None


@dataclass
class LayerStates:
    """One recurrent layer unrolled over a batch: its states, and what the probes read of it.

    Attributes:
        hidden: h_1 .. h_T, ``(B, T, H)`` (ensemble ``(S, B, T, H)``): the next layer's input sequence.
        last: h_T, ``(B, H)`` (``(S, B, H)``), the graph node the head (or nothing) reads: a loss on
            it alone gives the kernel's backward no ``(T, S, B, H)`` gradient to fill.
        saturated: with ``probe``, the fraction of each example's saturable units with
            ``|u| > 0.99`` over all timesteps, ``(B,)`` (``(S, B)``): the RNN's h_t; the LSTM's
            ``2 sigmoid - 1`` of i, f, o, tanh(g) and tanh(norm_c(c_t)), 5H per step. Else None.
        grad_targets: the tensors whose gradients give dL/dh_1 and dL/dh_T (the Python path's
            ``[h_1, h_T]``; the kernel's tap, ``(T, S, B, H)``); ``pick`` maps their gradients to
            ``(dL/dh_1, dL/dh_T)``, each like ``hidden[..., 0, :]``. Empty without ``probe``.
    """

    hidden: torch.Tensor
    last: torch.Tensor
    saturated: torch.Tensor | None = None
    grad_targets: list[torch.Tensor] = field(default_factory=list)
    pick: Callable[[list[torch.Tensor]], tuple[torch.Tensor, torch.Tensor]] | None = None


@dataclass
class Unrolled:
    """A stacked recurrence unrolled over a batch: what the models' forward and the probes read.

    Attributes:
        logits: ``(B, C)`` (ensemble ``(S, B, C)``), the head on the top layer's h_T.
        layers: one :class:`LayerStates` per layer, layer 1 (which reads the input) first.
    """

    logits: torch.Tensor
    layers: list[LayerStates]

    @property
    def hidden(self) -> torch.Tensor:
        """The top layer's h_1 .. h_T, ``(B, T, H)`` (``(S, B, T, H)``): as ``torch.nn.RNN``'s output."""
        return self.layers[-1].hidden

    def first_last_grads(self, loss: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer ``(dL/dh_1, dL/dh_T)``, the total derivatives through the stacked recurrence
        (``unroll(..., probe=True)``), all in one backward pass."""
        targets = [t for layer in self.layers for t in layer.grad_targets]
        assert targets and all(layer.pick is not None for layer in self.layers), "unroll(..., probe=True)"
        grads = iter(torch.autograd.grad(loss, targets))
        return [layer.pick([next(grads) for _ in layer.grad_targets]) for layer in self.layers]  # type: ignore[misc]


def per_member(t: torch.Tensor | None, S: int) -> torch.Tensor | None:
    """A parameter (``(D,)``, ``(S, 1, D)``) as ``(S, D)``, the kernel's layout."""
    return None if t is None else t.reshape(S, t.shape[-1])


def _norm_mode(norm: nn.Module, T: int, S: int, B: int) -> tuple[str, list, float, int | None] | None:
    """The kernel's mode for a norm layer, its ``[gamma, beta, scale, shift]`` and eps, and the
    BatchNorm group; None for a norm the kernel does not know (GroupNorm, a user's own: the Python path)."""
    kind = type(norm)  # exactly these classes: a subclass may change the arithmetic (the Python path)
    if kind is nn.Identity:
        return "none", [None] * 4, 1e-5, None
    if (
        isinstance(norm, LayerNorm) and kind is LayerNorm and norm.features > 1
    ):  # features 1: the Python path, which warns
        return "over_features", [per_member(norm.gamma, S), per_member(norm.beta, S), None, None], norm.eps, None
    if isinstance(norm, RMSNorm) and kind is RMSNorm:
        return "rms_over_features", [per_member(norm.gamma, S), None, None, None], norm.eps, None
    if isinstance(norm, RecurrentBatchNorm1d) and kind is RecurrentBatchNorm1d:
        if norm.training or norm.use_batch_stats_in_eval:
            if norm.unbiased:  # the kernel normalizes with the biased variance: the Python path
                return None
            group = B if norm.training or norm.batch_group is None else norm.batch_group
            if group != B:
                norm.check_groups(B, group)
            return "over_batch", [per_member(norm.gamma, S), per_member(norm.beta, S), None, None], norm.eps, group
        mean, var = norm.running_rows(T)  # (T, *param_shape)
        scale = norm.gamma * torch.rsqrt(var + norm.eps)
        shift = norm.beta - mean * scale
        return "affine", [None, None, scale.reshape(T, S, -1), shift.reshape(T, S, -1)], norm.eps, None
    return None


def unroll_fused(
    cell: nn.Module,
    x: torch.Tensor,
    *,
    members: int | None,
    lstm: bool,
    inner: bool,
    norm_h: nn.Module,
    norm_x: nn.Module | None,
    norm_c: nn.Module | None,
    bias: torch.Tensor | None,
    probe: bool = False,
) -> LayerStates | None:
    """Unroll one recurrent layer, ``cell`` (a :class:`lnbench.nn.rnn.RNNCellWithNorm` or
    :class:`lnbench.nn.lstm.LSTMCellWithNorm`; ``members`` S or None for one model), on ``x``
    ``(B, T, I)`` (``(S, B, T, I)``) with the kernel; None when one of its norms is not one the
    kernel knows (the caller takes the Python path).

    The input terms ``W_x x_t`` of every timestep are one matrix product before the recurrence; the
    kernel applies every norm (norm_h, norm_x, norm_c); BatchNorm's running statistics are updated
    as the Python path updates them (:meth:`lnbench.nn.batchnorm.RecurrentBatchNorm1d.track_sequence`).
    ``x`` may be the layer below's hidden states: the node's h_1 .. h_T are differentiable, so the
    gradient reaches the layer below (and, with ``probe``, its tap)."""
    solo = members is None
    X = x.unsqueeze(0) if solo else x  # (S, B, T, I)
    S, B, T, n_in = X.shape
    identity = nn.Identity()
    norms = (norm_h, norm_c if norm_c is not None else identity, norm_x if norm_x is not None else identity)
    modes = [_norm_mode(n, T, S, B) for n in norms]
    if any(m is None for m in modes):
        return None
    (mode_h, args_h, eps_h, grp_h), (mode_c, args_c, eps_c, grp_c), (mode_x, args_x, eps_x, grp_x) = modes  # type: ignore[misc]
    recurrent: Any = cell  # SimpleRNN's or LSTM's cell
    # the probes read only dL/dh_t: every parameter is detached, so the node computes no parameter
    # gradients for them (the input terms keep the graph to the layer below)
    with torch.no_grad() if probe else contextlib.nullcontext():
        W_h, W_x = recurrent.recurrent_weights()  # once per sequence (weight norm computes them)
        W_h, W_x = W_h.reshape(S, *W_h.shape[-2:]), W_x.reshape(S, *W_x.shape[-2:])
        params = [per_member(bias, S), *args_h, *args_c]
        params_x = list(args_x)
        if probe:
            W_h = W_h.detach()
            params = [None if p is None else p.detach() for p in params]
            params_x = [None if p is None else p.detach() for p in params_x]
    G = W_h.shape[1]
    X = X.transpose(1, 2).reshape(S, T * B, n_in)  # time-major rows per member (a copy of the small input)
    U = torch.bmm(X, W_x.transpose(1, 2)).view(S, T, B, G)  # the input terms W_x x_t, (S, T, B, G)
    spec = Recurrence(lstm, inner, mode_h, mode_c, mode_x, grp_h or grp_c or grp_x or B, eps_h, eps_c, eps_x, probe)
    tap = U.new_zeros(T, S, B, W_h.shape[-1], requires_grad=True) if probe else None
    outputs = cast(tuple[torch.Tensor, ...], FusedRecurrence.apply(spec, U, W_h, *params, tap, *params_x))
    h_T, H, *stats, saturated = outputs
    for norm, mode, mean, var in zip(norms, (mode_h, mode_c, mode_x), stats[0::2], stats[1::2], strict=True):
        if mode == "over_batch" and norm.training:  # the running statistics, as the Python path updates them
            assert isinstance(norm, RecurrentBatchNorm1d)
            norm.track_sequence(mean.reshape(T, *norm.param_shape), var.reshape(T, *norm.param_shape), B)
    hidden = H.permute(1, 2, 0, 3)  # (S, B, T, H)
    fraction = saturated / (T * (5 if lstm else 1) * W_h.shape[-1]) if probe else None
    if solo:
        hidden, h_T, fraction = hidden[0], h_T[0], None if fraction is None else fraction[0]

    def pick(grads: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        (g,) = grads  # (T, S, B, H): the total dL/dh_t
        return (g[0], g[-1]) if not solo else (g[0, 0], g[-1, 0])

    return LayerStates(hidden, h_T, fraction, [tap] if tap is not None else [], pick if probe else None)


def kernel_covers(model: torch.nn.Module, x: torch.Tensor) -> bool:
    """Whether ``model``'s recurrence on ``x`` runs in the kernel (see the module docstring)."""
    if not getattr(model, "use_kernel", True) or x.dtype not in KERNEL_DTYPES or x.device.type != "cpu":
        return False
    if x.shape[-2] == 0 or x.shape[-3] == 0:  # no timesteps or an empty batch: the Python loop's edge cases
        return False
    return recurrence_kernel() is not None
