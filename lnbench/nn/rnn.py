"""The RNN family: a tanh RNN with a pluggable norm on its summed inputs (Ba et al. 2016, section 3.1).

Two placements of the norm (``norm_placement``)::

    joint (eq. 4):   h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t))             norm's beta is the bias b
    separate:        h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b)

``separate`` is the form of the paper's layer-normalized LSTM (section 3.1, the equations
after eq. 5, and appendix): the recurrent and input terms are normalized on their own, so the
input's scale cannot shift the balance between memory and input.

The cell asks the norm registry (:mod:`lnbench.nn.registry`) what its norm can do: whether it has
a beta (else the cell adds a bias), takes the timestep (recurrent BatchNorm), or re-parametrizes
the weights (weight norm). Shapes: B batch, T seq_len, H hidden_size, C num_classes, S members.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Self

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn.base import Norm, copy_members
from lnbench.nn.fused import LayerStates, Unrolled, kernel_covers, unroll_fused
from lnbench.nn.registry import norm_kind
from lnbench.nn.weightnorm import row_norms, weight_normalize

PLACEMENTS = ("joint", "separate")
SATURATION = 0.99  # |u| above this: a saturated unit (lnbench.training.probes)
RECURRENT_INITS = ("uniform", "orthogonal")


class EnsembleLinear(nn.Module):
    """S independent ``nn.Linear`` layers applied to S inputs at once: ``y[s] = x[s] W[s]^T + b[s]``
    (``torch.baddbmm``, or ``torch.bmm`` without a bias; each member as
    ``torch.nn.functional.linear`` on its own input, up to float rounding).

    Args:
        members: S.
        in_features, out_features: as ``nn.Linear``.
        bias: as ``nn.Linear``. Default: True.

    Attributes:
        weight: ``(S, out, in)``; bias: ``(S, 1, out)`` or None, zeros until a ``stack`` fills them.

    Shape:
        ``(S, *, in_features)`` -> ``(S, *, out_features)``, float32.
    """

    grouped_as_layer = True  # weight and bias are one layer in grad_norm_layer

    def __init__(self, members: int, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(members, out_features, in_features))
        self.bias: nn.Parameter | None
        if bias:
            self.bias = nn.Parameter(torch.zeros(members, 1, out_features))
        else:
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1, x.shape[-1])  # (S, N, in)
        weight = self.weight.transpose(1, 2)
        y = torch.bmm(flat, weight) if self.bias is None else torch.baddbmm(self.bias, flat, weight)  # (S, N, out)
        return y.view(*x.shape[:-1], y.shape[-1])


class RNNCellWithNorm(nn.Module):
    """One step of a tanh RNN with a normalized pre-activation (Ba et al. 2016, section 3.1).

    - ``norm_placement="joint"`` (eq. 4): ``h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t))``; a norm
      with a beta (batch, layer) provides the paper's b; otherwise (none, rms, weight) a bias b is
      added after the norm (RMSNorm has no beta: Zhang & Sennrich eq. 4, ``f(g a / RMS(a) + b)``).
    - ``norm_placement="separate"`` (the paper's layer-normalized LSTM):
      ``h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b)``, two norms with their own gain
      and bias. With ``norm="none"`` both placements are the same function.

    ``norm="batch"`` is a :class:`lnbench.nn.batchnorm.RecurrentBatchNorm1d` (it takes the timestep):
    batch statistics per timestep, running statistics ``pooled`` over timesteps (one update per
    training step) or ``per_timestep`` (Cooijmans et al. 2016). ``norm="weight"`` normalizes the
    weights instead (Salimans & Kingma 2016): ``joint``, each row of ``[W_hh W_xh]`` is
    ``g_i v_i / ||v_i||`` (one layer producing the summed input); ``separate``, each row of
    ``W_hh`` and of ``W_xh`` with its own ``g_hh`` / ``g_xh``; ``g`` starts at the rows' norms, so
    the cell starts as the NoNorm cell with the same weights.

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig`; the cell reads ``hidden_size`` H,
            ``norm``, ``norm_placement``, ``batch_norm_stats``, ``recurrent_init`` (``W_hh``:
            ``uniform``, torch.nn.RNN's U(-1/sqrt(H), 1/sqrt(H)), or ``orthogonal``,
            torch.nn.init.orthogonal_) and ``recurrent_gain`` (the factor on ``W_hh``: an
            orthogonal ``W_hh`` with gain g has every singular value g). ``W_xh`` is always
            torch.nn.RNN's uniform.
        input_size: size of x_t. Default: H (so ``W_xh`` is ``(H, H)``).
        seq_len: T, for ``per_timestep`` statistics. Default: None.
        members: S for an ensemble of S stacked cells (every tensor gets a leading S axis). Default: None.

    Shape:
        x: ``(B, input_size)``, h: ``(B, H)``, t: int -> ``(B, H)``, float32 (ensemble: a
        leading S axis).

    Raises:
        ValueError: for an unknown ``norm``, ``batch_norm_stats``, ``norm_placement`` or
            ``recurrent_init``.
    """

    def __init__(
        self, cfg: ModelConfig, input_size: int | None = None, seq_len: int | None = None, members: int | None = None
    ) -> None:
        super().__init__()
        placement, recurrent_init, gain = cfg.norm_placement, cfg.recurrent_init, cfg.recurrent_gain
        if placement not in PLACEMENTS:
            raise ValueError(f"norm_placement: unknown {placement!r}; allowed: {', '.join(PLACEMENTS)}")
        if recurrent_init not in RECURRENT_INITS:
            raise ValueError(f"recurrent_init: unknown {recurrent_init!r}; allowed: {', '.join(RECURRENT_INITS)}")
        spec = norm_kind(cfg.norm)
        H = cfg.hidden_size
        input_size = H if input_size is None else input_size
        self.hidden_size, self.input_size, self.norm_kind, self.placement = H, input_size, cfg.norm, placement
        self.members = members
        self.reparametrizes_weights = spec.reparametrizes_weights
        lead = () if members is None else (members,)  # an ensemble stacks S cells: (S, H, H), ...
        bound = 1.0 / math.sqrt(H)  # torch.nn.RNN's init
        self.W_hh = nn.Parameter(torch.empty(*lead, H, H))
        with torch.no_grad():
            if recurrent_init == "orthogonal":
                for w in self.W_hh.view(-1, H, H):
                    nn.init.orthogonal_(w, gain=gain)
            else:
                self.W_hh.uniform_(-bound * gain, bound * gain)
        self.W_xh = nn.Parameter(torch.empty(*lead, H, input_size).uniform_(-bound, bound))
        bias_shape = (H,) if members is None else (members, 1, H)
        has_bias = not spec.has_beta or placement == "separate"  # else the norm's beta is the bias
        self.bias = nn.Parameter(torch.zeros(bias_shape)) if has_bias else None
        if self.reparametrizes_weights:
            with torch.no_grad():
                if placement == "joint":  # one layer: the rows of [W_hh W_xh]
                    self.g = nn.Parameter(row_norms(torch.cat([self.W_hh, self.W_xh], dim=-1)))
                else:
                    self.g_hh, self.g_xh = nn.Parameter(row_norms(self.W_hh)), nn.Parameter(row_norms(self.W_xh))

        # each norm reads its options from cfg (batch_norm_stats, norm_groups); gains start at
        # model.norm_gain_init, or 1 (Ba et al.)
        self.norm = spec.build(
            H, cfg, members, recurrent=True, seq_len=seq_len
        )  # joint: on the sum; separate: on W_hh h
        self.norm_x = spec.build(H, cfg, members, recurrent=True, seq_len=seq_len) if placement == "separate" else None
        self.takes_timestep = spec.takes_timestep

    def recurrent_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The effective ``(W_hh, W_xh)``: the parameters, or with weight norm their
        weight-normalized form (computed once per sequence by :class:`SimpleRNN`)."""
        if not self.reparametrizes_weights:
            return self.W_hh, self.W_xh
        if self.placement == "separate":
            return weight_normalize(self.W_hh, self.g_hh), weight_normalize(self.W_xh, self.g_xh)
        norm = torch.sqrt(self.W_hh.square().sum(dim=-1) + self.W_xh.square().sum(dim=-1))  # (H,) or (S, H)
        scale = (self.g / norm).unsqueeze(-1)
        return self.W_hh * scale, self.W_xh * scale

    @property
    def norms(self) -> list[nn.Module]:
        """The cell's norm layers: ``[norm]`` (joint) or ``[norm, norm_x]`` (separate)."""
        return [self.norm] if self.norm_x is None else [self.norm, self.norm_x]

    def _normalize(self, norm: nn.Module, a: torch.Tensor, t: int) -> torch.Tensor:
        """``norm(a)``, with the timestep for a norm that takes it (recurrent BatchNorm)."""
        return norm(a, t) if self.takes_timestep else norm(a)

    def forward(
        self, x: torch.Tensor, h: torch.Tensor, t: int = 0, weights: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        W_hh, W_xh = self.recurrent_weights() if weights is None else weights
        if self.norm_x is None:  # joint: the summed inputs, (B, H) or (S, B, H)
            a = self._normalize(self.norm, h @ W_hh.mT + x @ W_xh.mT, t)
            # the bias after the norm; with no norm or weight norm the norm is the identity: a + b
            return torch.tanh(a if self.bias is None else a + self.bias)
        a = self._normalize(self.norm, h @ W_hh.mT, t) + self._normalize(self.norm_x, x @ W_xh.mT, t)
        assert self.bias is not None  # separate placement always has one
        return torch.tanh(a + self.bias)

    def extra_repr(self) -> str:
        return (
            f"input_size={self.input_size}, hidden_size={self.hidden_size}, norm={self.norm_kind!r}, "
            f"placement={self.placement!r}"
        )


class RecurrentClassifier(nn.Module):
    """What the recurrent families share (:class:`SimpleRNN`, :class:`lnbench.nn.lstm.LSTM`): a stack
    of ``model.num_layers`` cells, each unrolled over T steps from a zero state (layer l > 1 reads
    layer l - 1's h_1 .. h_T as its input sequence, as ``torch.nn.RNN(num_layers=L)``), ``Linear(H, C)``
    on the top layer's h_T, and the seed ensemble's member axis (:meth:`stack`). A subclass builds
    its layers with :meth:`build_layers` and defines :meth:`layer_states` (and :meth:`_unroll_fused`).

    Every layer is a cell of its own, with its own norms and gains (each normalized as its paper
    describes): layer 1 is ``cell`` (so a one-layer model's parameter names, and the metrics that
    name them, are those of before stacking), layer l is ``cell_<l>``, input size H.

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig` (``num_layers``: L).
        input_size: features per timestep of the input.
        num_classes: C. Default: 2.
        seq_len: T, for per-timestep statistics. Default: None.
        members: S for a seed ensemble of S independent models trained at once (build it with
            :meth:`stack`); every tensor then has a leading member axis. Default: None.

    Attributes:
        use_kernel: run each layer's recurrence as one autograd node in C++ (:mod:`lnbench.nn.fused`)
            where the kernel covers it; False: always the step-by-step Python code. Default: True.

    Shape:
        Input: ``(B, T, input_size)`` (ensemble: ``(S, B, T, input_size)``), the model's dtype.
        Output: logits ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the top
        layer's hidden states ``(B, T, H)`` (``(S, B, T, H)``).
    """

    use_kernel: bool
    cell: nn.Module  # layer 1
    head: nn.Module

    def __init__(
        self,
        cfg: ModelConfig,
        input_size: int,
        num_classes: int = 2,
        seq_len: int | None = None,
        members: int | None = None,
    ) -> None:
        super().__init__()
        self.cfg, self.input_size, self.num_classes, self.seq_len = cfg, input_size, num_classes, seq_len
        self.members = members
        self.num_layers = cfg.num_layers
        self.use_kernel = True

    def build_layers(self, make_cell: Callable[[int], nn.Module]) -> None:
        """Build the L cells (``make_cell(input_size)``, bottom first: layer 1 reads the input,
        the others H features) and then the head, in this order (so a one-layer model draws its
        initial weights as before stacking)."""
        H, S = self.cfg.hidden_size, self.members
        self.cell = make_cell(self.input_size)
        for layer in range(2, self.num_layers + 1):
            self.add_module(f"cell_{layer}", make_cell(H))
        self.head = nn.Linear(H, self.num_classes) if S is None else EnsembleLinear(S, H, self.num_classes)

    @property
    def cells(self) -> list[nn.Module]:
        """The L cells, layer 1 first: ``[cell, cell_2, ..., cell_L]``."""
        return [self.cell, *(self.get_submodule(f"cell_{layer}") for layer in range(2, self.num_layers + 1))]

    @classmethod
    @torch.no_grad()
    def stack(cls, models: list[Self]) -> Self:
        """One ensemble whose member s starts as ``models[s]`` (parameters and buffers copied):
        trained by :func:`lnbench.training.loop.train_members`, member s follows the arithmetic of
        ``models[s]`` trained alone. Each tensor is stacked along the member axis its module
        names (:meth:`lnbench.nn.base.Norm.member_axis`; 0 for the others).

        Raises:
            IndexError: for an empty list.
        """
        first = models[0]
        ensemble = cls(first.cfg, first.input_size, first.num_classes, first.seq_len, members=len(models))
        copy_members(ensemble, models)
        return ensemble

    def layer_states(self, cell: nn.Module, x: torch.Tensor, units: list[torch.Tensor] | None) -> list[torch.Tensor]:
        """The step-by-step Python recurrence of one layer on its input sequence ``x``
        ``(B, T, I)`` (``(S, B, T, I)``): the list of the T hidden states h_1 .. h_T as graph
        nodes of the recurrence (so ``torch.autograd.grad(loss, states[0])`` is the total dL/dh_1);
        ``units``, if given, receives each step's saturable units (the LSTM's)."""
        raise NotImplementedError

    def _unroll_fused(self, cell: nn.Module, x: torch.Tensor, probe: bool) -> LayerStates | None:
        """One layer's recurrence in the C++ kernel (:func:`lnbench.nn.fused.unroll_fused`), or None."""
        return None

    def _unroll_python(self, cell: nn.Module, x: torch.Tensor, probe: bool) -> LayerStates:
        """One layer by :meth:`layer_states`, with its probes."""
        units: list[torch.Tensor] | None = [] if probe else None
        states = self.layer_states(cell, x, units)
        H = self.cfg.hidden_size
        hidden = (
            torch.stack(states, dim=-2) if states else x.new_zeros(*x.shape[:-2], 0, H)
        )  # (B, T, H) or (S, B, T, H)
        last = states[-1] if states else x.new_zeros(*x.shape[:-2], H)  # h_T, or h_0 without timesteps
        if not probe:
            return LayerStates(hidden, last)
        saturable = torch.stack(units, dim=-2) if units else hidden  # the LSTM's units (5H per step), or the RNN's h_t
        saturated = (saturable.abs() > SATURATION).to(hidden.dtype).mean(dim=(-2, -1))  # (B,) or (S, B)

        def pick(grads: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            first, last = grads
            return first, last

        return LayerStates(hidden, last, saturated, [states[0], states[-1]], pick)

    def unroll(self, x: torch.Tensor, probe: bool = False) -> Unrolled:
        """Logits and, per layer, its hidden states and (``probe``) the fraction of saturated units
        and the total gradients of h_1 and h_T (:class:`lnbench.nn.fused.Unrolled`): each layer in
        the C++ kernel where it covers the model (:func:`lnbench.nn.fused.kernel_covers`), else by
        :meth:`layer_states`; layer l > 1 reads layer l - 1's h_1 .. h_T."""
        fused = kernel_covers(self, x)
        layers: list[LayerStates] = []
        inputs = x
        for cell in self.cells:
            layer = self._unroll_fused(cell, inputs, probe) if fused else None
            layers.append(layer if layer is not None else self._unroll_python(cell, inputs, probe))
            inputs = layers[-1].hidden
        return Unrolled(self.head(layers[-1].last), layers)  # (B, C) or (S, B, C)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        out = self.unroll(x)
        return (out.logits, out.hidden) if return_hidden else out.logits


class SimpleRNN(RecurrentClassifier):
    """An RNN classifier of ``model.num_layers`` stacked tanh RNN layers (each a
    :class:`RNNCellWithNorm` with its own norms): unroll T steps from ``h_0 = 0``, then
    ``Linear(H, C)`` on the top layer's h_T.

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig` (see :class:`RNNCellWithNorm`).
        input_size: features per timestep of the input.
        num_classes: C. Default: 2.
        seq_len: T, for ``batch_norm_stats="per_timestep"``. Default: None.
        members: S for a seed ensemble of S independent RNNs trained at once (build it with
            :meth:`stack`); every tensor then has a leading member axis. Default: None.

    Shape:
        Input: ``(B, T, input_size)`` floating (ensemble: ``(S, B, T, input_size)``), the model's
        dtype. Output: logits ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the
        top layer's hidden states ``(B, T, H)`` (``(S, B, T, H)``).

    Raises:
        ValueError: as :class:`RNNCellWithNorm`.
    """

    cell: RNNCellWithNorm

    def __init__(
        self,
        cfg: ModelConfig,
        input_size: int,
        num_classes: int = 2,
        seq_len: int | None = None,
        members: int | None = None,
    ) -> None:
        super().__init__(cfg, input_size, num_classes, seq_len, members)
        self.build_layers(lambda n_in: RNNCellWithNorm(cfg, n_in, seq_len, members))

    def _unroll_fused(self, cell: nn.Module, x: torch.Tensor, probe: bool) -> LayerStates | None:
        assert isinstance(cell, RNNCellWithNorm)
        return unroll_fused(
            cell,
            x,
            members=self.members,
            lstm=False,
            inner=cell.placement == "joint",
            norm_h=cell.norm,
            norm_x=cell.norm_x,
            norm_c=None,
            bias=cell.bias,
            probe=probe,
        )

    def layer_states(self, cell: nn.Module, x: torch.Tensor, units: list[torch.Tensor] | None) -> list[torch.Tensor]:
        """The T hidden states h_1 .. h_T of one layer (see :meth:`RecurrentClassifier.layer_states`);
        the RNN's saturable units are its h_t (``units`` is left empty)."""
        assert isinstance(cell, RNNCellWithNorm)
        h = x.new_zeros(*x.shape[:-2], cell.hidden_size)  # (B, H) or (S, B, H)
        states = []
        weights = cell.recurrent_weights()  # once per sequence (weight norm computes them)
        for t in range(x.shape[-2]):
            h = cell(x[..., t, :], h, t, weights)  # (B, H) or (S, B, H)
            states.append(h)
        for norm in cell.norms:
            if isinstance(norm, Norm):
                norm.end_sequence()  # recurrent BatchNorm: one running-statistics update per training step
        return states
