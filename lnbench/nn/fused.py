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
takes which mode is :func:`_norm_slot`'s table of exact classes; any other layer (GroupNorm, a
user's norm, a subclass) takes the Python path. Shapes: T timesteps, S members (1 for one model), B batch, H hidden size, G = H
(RNN) or 4H (LSTM).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import torch
from torch import nn

from lnbench.nn.batchnorm import RecurrentBatchNorm1d
from lnbench.nn.kernels import recurrence_kernel
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.rmsnorm import RMSNorm

#: the kernel's norm modes (its LAYER, RMS, BATCH, AFFINE): what is computed, not which norm asks for it
MODES = {"none": 0, "over_features": 1, "rms_over_features": 2, "over_batch": 3, "affine": 4}
KERNEL_DTYPES = frozenset((torch.float32, torch.float64))
#: the norm positions (the cells' ``norm_h``, ``norm_x``, ``norm_c``) and each one's parameters
POSITIONS = ("h", "x", "c")
NORM_PARAMS = ("gamma", "beta", "scale", "shift")


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


class NodeInputs(NamedTuple):
    """The node's differentiable inputs, in the one order :meth:`FusedRecurrence.apply` takes them
    (autograd tracks positional tensors only). ``<param>_<position>`` is the kernel's
    ``norm_<position>.<param>`` (:func:`to_kernel`, :func:`from_kernel`); the rest keep their names.
    Shapes: U ``(S, T, B, G)``, W_h ``(S, G, H)``, bias ``(S, G)``, gamma and beta ``(S, D)``, scale
    and shift ``(T, S, D)`` (``affine``), tap ``(T, S, B, H)``, h0 ``(S, B, H)`` (the initial state;
    None: h_0 = 0); None where absent. Built with all seventeen values (a missing one raises
    ``TypeError``); the backward also holds autograd's ``needs_input_grad`` flags in one, to name them."""

    U: Any
    W_h: Any
    bias: Any
    gamma_h: Any
    beta_h: Any
    scale_h: Any
    shift_h: Any
    gamma_c: Any
    beta_c: Any
    scale_c: Any
    shift_c: Any
    tap: Any
    gamma_x: Any
    beta_x: Any
    scale_x: Any
    shift_x: Any
    h0: Any


class NodeOutputs(NamedTuple):
    """What :meth:`FusedRecurrence.apply` returns, in this order: h_T ``(S, B, H)``, hidden (h_1 ..
    h_T, ``(T, S, B, H)``), both differentiable; then detached: ``over_batch`` mode's means and biased
    variances ``(T, S, B / group, D)`` per position, and the saturated units per example ``(S, B)``
    (empty tensors where absent)."""

    h_T: torch.Tensor
    hidden: torch.Tensor
    mean_h: torch.Tensor
    var_h: torch.Tensor
    mean_c: torch.Tensor
    var_c: torch.Tensor
    mean_x: torch.Tensor
    var_x: torch.Tensor
    saturated: torch.Tensor


def _split(name: str) -> tuple[str | None, str]:
    """A :class:`NodeInputs` field as (the kernel's slot or None, its field): ``gamma_h`` ->
    ``("norm_h", "gamma")``, ``W_h`` -> ``(None, "W_h")``."""
    param, _, position = name.rpartition("_")
    return (f"norm_{position}", param) if param in NORM_PARAMS and position in POSITIONS else (None, name)


#: where each :class:`NodeInputs` field lives in the kernel's structs: (slot or None, field)
_PLACES = tuple(_split(name) for name in NodeInputs._fields)
#: the same as indices: the node's own fields, and each slot's
_OWN = tuple((name, i) for i, (slot, name) in enumerate(_PLACES) if slot is None)
_SLOTS = {f"norm_{p}": tuple((name, i) for i, (s, name) in enumerate(_PLACES) if s == f"norm_{p}") for p in POSITIONS}


def to_kernel(values: NodeInputs, make: Any, make_slot: Any, extra: Any = (), slot_extra: Any = None) -> Any:
    """One kernel struct from ``values`` by name: ``make(U=..., ..., norm_h=make_slot(gamma=...), ...)``;
    ``extra`` adds fields to the struct, ``slot_extra[slot]`` to a slot."""
    slots = {
        slot: make_slot(**(slot_extra[slot] if slot_extra else {}), **{name: values[i] for name, i in fields})
        for slot, fields in _SLOTS.items()
    }
    return make(**dict(extra), **{name: values[i] for name, i in _OWN}, **slots)


def from_kernel(struct: Any) -> NodeInputs:
    """The kernel's per-input struct (its ``Grads``) as :class:`NodeInputs`, by name."""
    slots = {slot: getattr(struct, slot) for slot in _SLOTS}
    return NodeInputs(*[getattr(struct if slot is None else slots[slot], field_name) for slot, field_name in _PLACES])


class FusedRecurrence(torch.autograd.Function):
    """The recurrence as one node. ``apply(spec, *inputs)``: a :class:`Recurrence` and the seventeen
    :class:`NodeInputs` in their order; returns the :class:`NodeOutputs` as a tuple. The kernel's
    interface is named (``recurrence.cpp``): its ``Inputs`` with one ``NormSlot`` per position, its
    ``Forward``, ``Saved``, ``Wants`` and ``Grads``, built from and read into :class:`NodeInputs`
    by field name; autograd keeps ``Saved`` as the flat list of ``Saved.tensors()``."""

    @staticmethod
    def forward(ctx: Any, spec: Recurrence, *inputs: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        kernel = recurrence_kernel()
        assert kernel is not None, "kernel_covers() is checked before"
        values = NodeInputs(*inputs)
        out = kernel.recurrence_forward(kernel_inputs(kernel, spec, values))
        ctx.set_materialize_grads(False)  # only H has a gradient: no zero tensors for the others
        ctx.spec = spec
        saved = out.saved.tensors()
        ctx.save_for_backward(*values, *saved)  # the kernel's activations too (saved-tensor hooks see them)
        empty = values.U.new_empty(0)
        stats = [(batch.mean, batch.var) for batch in (out.norm_h, out.norm_c, out.norm_x)]
        extras = [t if t is not None else empty for t in (*stats[0], *stats[1], *stats[2], out.saturated)]
        ctx.mark_non_differentiable(*extras)
        hidden = out.hidden
        return tuple(NodeOutputs(hidden[-1].clone(), hidden, *extras))

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        spec, n = ctx.spec, len(NodeInputs._fields)
        grads_out = dict(zip(NodeOutputs._fields, grad_outputs, strict=True))  # None: no gradient
        if grads_out["hidden"] is None and grads_out["h_T"] is None:
            return (None,) * (1 + n)
        values, saved = NodeInputs(*ctx.saved_tensors[:n]), ctx.saved_tensors[n:]
        want = NodeInputs(*ctx.needs_input_grad[1:])
        if torch.is_grad_enabled():  # create_graph: differentiate the recurrence recomputed in torch ops
            wanted = [x for x, w in zip(values, want, strict=True) if w]
            with torch.enable_grad():
                H = reference_recurrence(spec, **values._asdict())[0]
            pairs = [(o, g) for o, g in ((H[-1], grads_out["h_T"]), (H, grads_out["hidden"])) if g is not None]
            outs, grads = zip(*pairs, strict=True)
            found = iter(torch.autograd.grad(outs, wanted, grads, create_graph=True, allow_unused=True))
            return (None, *[next(found) if w else None for w in want])
        kernel = recurrence_kernel()
        assert kernel is not None, "the forward ran on it"
        result = kernel.recurrence_backward(
            kernel_inputs(kernel, spec, values),
            kernel.Saved.from_tensors(list(saved)),
            kernel.OutputGrads(hidden=grads_out["hidden"], last=grads_out["h_T"]),
            to_kernel(want, kernel.Wants, kernel.NormWants),
        )
        return (None, *[g if w else None for g, w in zip(from_kernel(result), want, strict=True)])


def kernel_inputs(kernel: Any, spec: Recurrence, values: NodeInputs) -> Any:
    """The kernel's ``Inputs`` for ``spec`` and ``values``: each position's mode and eps with its
    parameters in one ``NormSlot``."""
    cell, slots = _spec_fields(spec)
    return to_kernel(values, kernel.Inputs, kernel.NormSlot, cell, slots)


@functools.lru_cache(maxsize=64)
def _spec_fields(spec: Recurrence) -> tuple[tuple[tuple[str, Any], ...], dict[str, dict[str, Any]]]:
    """What ``spec`` sets in the kernel's ``Inputs``, and in each ``NormSlot`` (once per spec)."""
    cell = (
        ("lstm", spec.lstm),
        ("inner", spec.inner),
        ("group", spec.group),
        ("count_saturated", spec.count_saturated),
    )
    slots = {
        f"norm_{p}": {"mode": MODES[getattr(spec, f"mode_{p}")], "eps": getattr(spec, f"eps_{p}")} for p in POSITIONS
    }
    return cell, slots


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
    h0: torch.Tensor | None = None,
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

    h = U.new_zeros(S, B, Hd) if h0 is None else h0
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


@dataclass
class _Slot:
    """A norm layer as the kernel takes it: its mode (:data:`MODES`), eps, BatchNorm group (None:
    any) and parameters by name (:data:`NORM_PARAMS`, the absent ones None)."""

    mode: str
    eps: float = 1e-5
    group: int | None = None
    params: dict[str, torch.Tensor | None] = field(default_factory=dict)


def _norm_slot(norm: nn.Module, T: int, S: int, B: int) -> _Slot | None:
    """The kernel's slot for a norm layer; None for a norm the kernel does not know (GroupNorm, a
    user's own: the Python path)."""
    kind = type(norm)  # exactly these classes: a subclass may change the arithmetic (the Python path)
    if kind is nn.Identity:
        return _Slot("none")
    if (
        isinstance(norm, LayerNorm) and kind is LayerNorm and norm.features > 1
    ):  # features 1: the Python path, which warns
        gains = {"gamma": per_member(norm.gamma, S), "beta": per_member(norm.beta, S)}
        return _Slot("over_features", norm.eps, params=gains)
    if isinstance(norm, RMSNorm) and kind is RMSNorm:
        return _Slot("rms_over_features", norm.eps, params={"gamma": per_member(norm.gamma, S)})
    if isinstance(norm, RecurrentBatchNorm1d) and kind is RecurrentBatchNorm1d:
        if norm.training or norm.use_batch_stats_in_eval:
            if norm.unbiased:  # the kernel normalizes with the biased variance: the Python path
                return None
            group = B if norm.training or norm.batch_group is None else norm.batch_group
            if group != B:
                norm.check_groups(B, group)
            gains = {"gamma": per_member(norm.gamma, S), "beta": per_member(norm.beta, S)}
            return _Slot("over_batch", norm.eps, group, gains)
        mean, var = norm.running_rows(T)  # (T, *param_shape)
        scale = norm.gamma * torch.rsqrt(var + norm.eps)
        shift = norm.beta - mean * scale
        return _Slot("affine", norm.eps, params={"scale": scale.reshape(T, S, -1), "shift": shift.reshape(T, S, -1)})
    return None


class FusedSpec(NamedTuple):
    """What one recurrent cell asks of the kernel (its ``fused_spec()``): the recurrence (``lstm``:
    the LSTM's gates, else a tanh RNN), whether the norm is applied inside the sum of the two terms
    (``inner``: the RNN's joint placement, eq. 4 of Ba et al. 2016) or on each term, the three norm
    positions (``norm_h`` on W_h h_{t-1}, ``norm_x`` on W_x x_t, ``norm_c`` on the LSTM's c_t; None:
    none there) and the bias ``(4H,)`` / ``(H,)`` (``(S, ...)``) or None."""

    lstm: bool
    inner: bool
    norm_h: nn.Module
    norm_x: nn.Module | None
    norm_c: nn.Module | None
    bias: torch.Tensor | None


def unroll_fused(
    cell: nn.Module,
    x: torch.Tensor,
    cell_spec: FusedSpec,
    *,
    members: int | None,
    probe: bool = False,
    h0: torch.Tensor | None = None,
) -> LayerStates | None:
    """Unroll one recurrent layer, ``cell`` (a :class:`lnbench.nn.rnn.RNNCellWithNorm` or
    :class:`lnbench.nn.lstm.LSTMCellWithNorm`, whose ``fused_spec()`` is ``cell_spec``; ``members``
    S or None for one model), on ``x`` ``(B, T, I)`` (``(S, B, T, I)``) from the initial state ``h0``
    ``(B, H)`` (``(S, B, H)``; None: h_0 = 0) with the kernel; None when one of its norms is not one
    the kernel knows (the caller takes the Python path).

    The input terms ``W_x x_t`` of every timestep are one matrix product before the recurrence; the
    kernel applies every norm (norm_h, norm_x, norm_c); BatchNorm's running statistics are updated
    as the Python path updates them (:meth:`lnbench.nn.batchnorm.RecurrentBatchNorm1d.track_sequence`).
    ``x`` may be the layer below's hidden states: the node's h_1 .. h_T are differentiable, so the
    gradient reaches the layer below (and, with ``probe``, its tap)."""
    lstm, inner, norm_h, norm_x, norm_c, bias = cell_spec
    solo = members is None
    X = x.unsqueeze(0) if solo else x  # (S, B, T, I)
    S, B, T, n_in = X.shape
    identity = nn.Identity()
    norms = {
        "h": norm_h,
        "x": norm_x if norm_x is not None else identity,
        "c": norm_c if norm_c is not None else identity,
    }
    found = {position: _norm_slot(norm, T, S, B) for position, norm in norms.items()}
    if any(slot is None for slot in found.values()):
        return None
    slots = cast(dict[str, _Slot], found)
    recurrent: Any = cell  # SimpleRNN's or LSTM's cell
    # the probes read only dL/dh_t: every parameter is detached, so the node computes no parameter
    # gradients for them (the input terms keep the graph to the layer below)
    with torch.no_grad() if probe else contextlib.nullcontext():
        W_h, W_x = recurrent.recurrent_weights()  # once per sequence (weight norm computes them)
        W_h, W_x = W_h.reshape(S, *W_h.shape[-2:]), W_x.reshape(S, *W_x.shape[-2:])
        params = {"W_h": W_h, "bias": per_member(bias, S)}
        for position, slot in slots.items():
            params |= {f"{name}_{position}": slot.params.get(name) for name in NORM_PARAMS}
        if probe:
            params = {name: None if p is None else p.detach() for name, p in params.items()}
    G = W_h.shape[1]
    X = X.transpose(1, 2).reshape(S, T * B, n_in)  # time-major rows per member (a copy of the small input)
    U = torch.bmm(X, W_x.transpose(1, 2)).view(S, T, B, G)  # the input terms W_x x_t, (S, T, B, G)
    group = next((slot.group for slot in slots.values() if slot.group is not None), B)
    slot_h, slot_c, slot_x = slots["h"], slots["c"], slots["x"]
    spec = Recurrence(
        lstm=lstm,
        inner=inner,
        mode_h=slot_h.mode,
        mode_c=slot_c.mode,
        mode_x=slot_x.mode,
        group=group,
        eps_h=slot_h.eps,
        eps_c=slot_c.eps,
        eps_x=slot_x.eps,
        count_saturated=probe,
    )
    tap = U.new_zeros(T, S, B, W_h.shape[-1], requires_grad=True) if probe else None
    inputs = NodeInputs(U=U, tap=tap, h0=None if h0 is None else h0.reshape(S, B, -1), **params)
    outputs = NodeOutputs(*FusedRecurrence.apply(spec, *inputs))
    for position, norm in norms.items():
        if slots[position].mode == "over_batch" and norm.training:  # the running statistics, as the Python path
            assert isinstance(norm, RecurrentBatchNorm1d)
            mean, var = getattr(outputs, f"mean_{position}"), getattr(outputs, f"var_{position}")
            norm.track_sequence(mean.reshape(T, *norm.param_shape), var.reshape(T, *norm.param_shape), B)
    H, h_T, saturated = outputs.hidden, outputs.h_T, outputs.saturated
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
