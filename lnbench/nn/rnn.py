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

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn.fused import FusedSpec
from lnbench.nn.recurrent import RecurrentClassifier
from lnbench.nn.registry import norm_kind
from lnbench.nn.weightnorm import row_norms, weight_normalize


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
            ``uniform``, torch.nn.RNN's U(-1/sqrt(H), 1/sqrt(H)), ``orthogonal``,
            torch.nn.init.orthogonal_, or ``identity``, I: Le et al. 2015's IRNN) and
            ``recurrent_gain`` (the factor on ``W_hh``: an orthogonal ``W_hh`` with gain g has every
            singular value g). ``W_xh`` is always torch.nn.RNN's uniform.
        input_size: size of x_t. Default: H (so ``W_xh`` is ``(H, H)``).
        seq_len: T, for ``per_timestep`` statistics. Default: None.
        members: S for an ensemble of S stacked cells (every tensor gets a leading S axis). Default: None.

    Shape:
        x: ``(B, input_size)``, h: ``(B, H)``, t: int -> ``(B, H)``, float32 (ensemble: a
        leading S axis).

    Raises:
        ValueError: for an unknown ``norm``. The family's own keys (``norm_placement``,
            ``recurrent_init``, ...) are the config's, validated there once
            (:data:`lnbench.names.FAMILY_REGISTRY`'s options).
    """

    def __init__(
        self, cfg: ModelConfig, input_size: int | None = None, seq_len: int | None = None, members: int | None = None
    ) -> None:
        super().__init__()
        placement, recurrent_init, gain = cfg.norm_placement, cfg.recurrent_init, cfg.recurrent_gain
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
            elif recurrent_init == "identity":  # Le et al. 2015's IRNN: h_t starts as h_{t-1} plus the input
                self.W_hh.copy_(gain * torch.eye(H).expand_as(self.W_hh))
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

    def fused_spec(self) -> FusedSpec:
        """What the C++ kernel runs for this cell: a tanh recurrence, the norm inside it (joint) or
        on each term (separate) and the bias (:func:`lnbench.nn.fused.unroll_fused`)."""
        return FusedSpec(
            lstm=False,
            inner=self.placement == "joint",
            norm_h=self.norm,
            norm_x=self.norm_x,
            norm_c=None,
            bias=self.bias,
        )

    def extra_repr(self) -> str:
        return (
            f"input_size={self.input_size}, hidden_size={self.hidden_size}, norm={self.norm_kind!r}, "
            f"placement={self.placement!r}"
        )


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
    cell_type = RNNCellWithNorm

    def layer_states(
        self, cell: nn.Module, x: torch.Tensor, units: list[torch.Tensor] | None, h0: torch.Tensor | None = None
    ) -> list[torch.Tensor]:
        """The T hidden states h_1 .. h_T of one layer from ``h0`` (None: zeros; see
        :meth:`RecurrentClassifier.layer_states`); the RNN's saturable units are its h_t (``units`` is left empty)."""
        assert isinstance(cell, RNNCellWithNorm)
        h = x.new_zeros(*x.shape[:-2], cell.hidden_size) if h0 is None else h0  # (B, H) or (S, B, H)
        states = []
        weights = cell.recurrent_weights()  # once per sequence (weight norm computes them)
        for t in range(x.shape[-2]):
            h = cell(x[..., t, :], h, t, weights)  # (B, H) or (S, B, H)
            states.append(h)
        return states
