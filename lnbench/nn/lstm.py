"""The LSTM family, written from scratch, with a pluggable norm: the standard LSTM, the paper's
layer-normalized LSTM (Ba et al. 2016) and the batch-normalized LSTM of Cooijmans et al. (2016).

One step, the gates in the order ``i, f, o, g`` (each a slice of H of the 4H summed inputs)::

    (i, f, o, g) = norm_h(W_h h_{t-1}) + norm_x(W_x x_t) + b        (1)
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)               (2)
    h_t = sigmoid(o) * tanh(norm_c(c_t))                            (3)

``norm`` decides the three norm positions (the registry, :mod:`lnbench.nn.registry`, says what a
kind can do; the LSTM asks it, not the kind's name):

- ``none``: the identity everywhere: the standard LSTM (Hochreiter & Schmidhuber 1997 with the
  forget gate of Gers et al. 2000), ``torch.nn.LSTM``'s equations with ``b = b_ih + b_hh`` (its
  gate order is ``i, f, g, o``: the oracle in ``tests/nn/test_lstm.py`` permutes its rows).
- ``layer``: Ba et al. 2016, section 3.1 and the supplementary material's layer-normalized LSTM:
  (1) is ``LN(W_h h_{t-1}; alpha_1, beta_1) + LN(W_x x_t; alpha_2, beta_2) + b``, each LN over the
  4H summed inputs, and (3) is ``h_t = sigmoid(o) * tanh(LN(c_t; alpha_3, beta_3))`` over H; each LN
  has its own gain (ones) and bias (zeros).
- ``batch``: Cooijmans et al. 2016, "Recurrent Batch Normalization", eq. 6-8: (1) is
  ``BN(W_h h_{t-1}; gamma_h, 0) + BN(W_x x_t; gamma_x, 0) + b`` (their bias convention: ``beta_h``
  and ``beta_x`` are fixed at 0, b accounts for both) and (3) is
  ``h_t = sigmoid(o) * tanh(BN(c_t; gamma_c, beta_c))``. Statistics per timestep: in training the
  batch's at timestep t; in eval the running statistics of timestep t
  (:class:`lnbench.nn.batchnorm.RecurrentBatchNorm1d` with ``per_timestep``), those of the last
  trained timestep beyond ``seq_len`` (their section 4). Every gamma starts at 0.1 (their
  section 4.2: a gain of 1 saturates the tanh and stops the gradient).

Every norm's gain starts at ``model.norm_gain_init`` when it is set (the same value for every norm
kind, so LN and BN can be compared at equal initial gains); null keeps each paper's (above).
- ``rms``: RMSNorm (Zhang & Sennrich 2019) in LayerNorm's three places; it has no beta, so (1)'s
  b is the only bias and (3) has none.
- ``group``: GroupNorm (Wu & He 2018) in LayerNorm's three places, the 4H terms and the H cell
  state each in ``model.norm_groups`` groups (any norm of the registry goes there, as a user's does).
- ``weight``: weight normalization (Salimans & Kingma 2016) of W_h and W_x, each row with its own
  length (``g_h``, ``g_x``, starting at the rows' norms, so the LSTM starts as the plain one); the
  three norm positions are the identity.

``b`` starts at zero except the forget gate's slice, ``model.forget_bias`` (default 1: Gers et al.
2000; Jozefowicz et al. 2015; Cooijmans et al. 2016 use 1 too), the same for every norm. ``W_h`` and
``W_x`` start as ``torch.nn.LSTM``'s, uniform in ``(-1/sqrt(H), 1/sqrt(H))``; ``model.recurrent_init``
makes ``W_h`` orthogonal, or Cooijmans et al.'s identity in the cell-input block
(:func:`init_recurrent_weights`). The state starts at ``h_0 = c_0 = 0``, or with
``model.state_noise_std`` at ``h_0`` drawn per example (:mod:`lnbench.nn.recurrent`).

Shapes: B batch, T seq_len, H hidden_size, I input_size, C num_classes, S members (a seed
ensemble: every tensor gets a leading S axis, as :class:`lnbench.nn.rnn.SimpleRNN`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.names import paper_gain_init
from lnbench.names.families import RECURRENT_INIT
from lnbench.nn.base import Norm
from lnbench.nn.fused import FusedSpec
from lnbench.nn.recurrent import RecurrentClassifier
from lnbench.nn.registry import norm_kind
from lnbench.nn.weightnorm import row_norms, weight_normalize

GATES = ("i", "f", "o", "g")  # the slices of the 4H summed inputs, in this order
BATCH_NORM_GAIN = paper_gain_init("lstm", "batch")  # 0.1, Cooijmans et al. 2016, section 4.2 (the registry's)


@torch.no_grad()
def init_recurrent_weights(W_h: torch.Tensor, init: str) -> None:
    """Initialise one LSTM's ``W_h`` ``(4H, H)`` (gate blocks i, f, o, g) in place: ``orthogonal``,
    the whole matrix ``torch.nn.init.orthogonal_`` (orthonormal columns); ``identity``, the cell-input
    block g the identity and the three gate blocks one orthogonal ``(3H, H)`` matrix (Cooijmans et
    al. 2016's ``--init id``: their ``Wa`` is ``[I, orthogonal((H, 3H))]`` in their gate order g, f, i, o).

    Raises:
        ValueError: for another ``init``.
    """
    H = W_h.shape[-1]
    if init == "orthogonal":
        nn.init.orthogonal_(W_h)
    elif init == "identity":
        nn.init.orthogonal_(W_h[: 3 * H])
        W_h[3 * H :] = torch.eye(H)
    else:
        raise ValueError(f"recurrent_init: unknown {init!r}; allowed: {', '.join(RECURRENT_INIT.choices or ())}")


class LSTMCellWithNorm(nn.Module):
    """One step of an LSTM with a norm on the recurrent term, the input term and the cell state
    (equations (1)-(3) of :mod:`lnbench.nn.lstm`; the norms per kind are listed there).

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig`; the cell reads ``hidden_size`` H,
            ``norm`` and ``forget_bias``.
        input_size: I, the size of x_t. Default: H.
        seq_len: T, the timesteps with their own running statistics (``norm="batch"``). Default: None.
        members: S for an ensemble of S stacked cells (every tensor gets a leading S axis). Default: None.

    Attributes:
        W_h: ``(4H, H)``; W_x: ``(4H, I)``; bias: b, ``(4H,)`` (ensemble: ``(S, 4H, H)``, ...,
            ``(S, 1, 4H)``); rows and slices in the gate order ``i, f, o, g``.
        norm_h, norm_x: the norms of the recurrent and input terms, over 4H; norm_c: of c_t, over H
            (``nn.Identity`` for ``none`` and ``weight``).
        g_h, g_x: weight norm only, the rows' lengths ``(4H,)``.

    Shape:
        x: ``(B, I)``, state ``(h, c)`` each ``(B, H)``, t: int -> ``(h_t, c_t)`` each ``(B, H)``
        (ensemble: a leading S axis).

    Raises:
        ValueError: for an unknown ``norm``; with ``norm="batch"``, a missing ``seq_len``.
    """

    def __init__(
        self, cfg: ModelConfig, input_size: int | None = None, seq_len: int | None = None, members: int | None = None
    ) -> None:
        super().__init__()
        spec = norm_kind(cfg.norm)
        H = cfg.hidden_size
        input_size = H if input_size is None else input_size
        self.hidden_size, self.input_size, self.norm_kind, self.members = H, input_size, cfg.norm, members
        self.forget_bias = cfg.forget_bias
        self.reparametrizes_weights = spec.reparametrizes_weights
        self.takes_timestep = spec.takes_timestep
        lead = () if members is None else (members,)
        bound = 1.0 / math.sqrt(H)  # torch.nn.LSTM's init
        self.W_h = nn.Parameter(torch.empty(*lead, 4 * H, H).uniform_(-bound, bound))
        self.W_x = nn.Parameter(torch.empty(*lead, 4 * H, input_size).uniform_(-bound, bound))
        if cfg.recurrent_init != "uniform":  # after W_x is drawn: W_x is torch.nn.LSTM's for every init
            with torch.no_grad():
                for w in self.W_h.view(-1, 4 * H, H):
                    init_recurrent_weights(w, cfg.recurrent_init)
        self.bias = nn.Parameter(torch.zeros((4 * H,) if members is None else (members, 1, 4 * H)))
        with torch.no_grad():
            self.bias[..., H : 2 * H] = cfg.forget_bias  # the forget gate's slice
        if self.reparametrizes_weights:
            with torch.no_grad():
                self.g_h, self.g_x = nn.Parameter(row_norms(self.W_h)), nn.Parameter(row_norms(self.W_x))

        # the BN-LSTM keeps running statistics per timestep (Cooijmans et al. 2016, section 4), whatever
        # the RNN's batch_norm_stats; its gains start at the registry's initial_gain (0.1 for BN)
        norm_cfg = cfg.model_copy(update={"batch_norm_stats": "per_timestep"})

        def make_norm(features: int) -> nn.Module:
            return spec.build(features, norm_cfg, members, recurrent=True, seq_len=seq_len)

        self.norm_h, self.norm_x, self.norm_c = make_norm(4 * H), make_norm(4 * H), make_norm(H)
        if spec.uses_batch_statistics:  # Cooijmans et al.'s BN-LSTM
            for norm in (self.norm_h, self.norm_x):  # beta_h = beta_x = 0, not learned: b is their bias
                assert isinstance(norm, Norm) and norm.beta is not None
                norm.beta.requires_grad_(False)

    @property
    def norms(self) -> list[nn.Module]:
        """``[norm_h, norm_x, norm_c]``."""
        return [self.norm_h, self.norm_x, self.norm_c]

    def recurrent_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The effective ``(W_h, W_x)``: the parameters, or with weight norm ``g_i v_i / ||v_i||``
        row by row (computed once per sequence by :class:`LSTM`)."""
        if not self.reparametrizes_weights:
            return self.W_h, self.W_x
        return weight_normalize(self.W_h, self.g_h), weight_normalize(self.W_x, self.g_x)

    def _normalize(self, norm: nn.Module, a: torch.Tensor, t: int) -> torch.Tensor:
        """``norm(a)``, with the timestep for a norm that takes it (recurrent BatchNorm)."""
        return norm(a, t) if self.takes_timestep else norm(a)

    def forward(
        self,
        x: torch.Tensor,
        state: tuple[torch.Tensor, torch.Tensor],
        t: int = 0,
        weights: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        W_h, W_x = self.recurrent_weights() if weights is None else weights
        return self.step(x @ W_x.mT, state, t, W_h)

    def step(
        self,
        input_term: torch.Tensor,
        state: tuple[torch.Tensor, torch.Tensor],
        t: int,
        W_h: torch.Tensor,
        units: list[torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step from the input term ``W_x x_t`` ``(B, 4H)`` (computed for every timestep at
        once by :class:`LSTM`); ``units``, if given, receives the saturable units of this step on
        tanh's scale, ``(B, 5H)``: ``2 sigmoid - 1`` of i, f, o, then tanh(g) and tanh(norm_c(c_t))."""
        h, c = state
        H = self.hidden_size
        gates = (  # (1): (B, 4H)
            self._normalize(self.norm_h, h @ W_h.mT, t) + self._normalize(self.norm_x, input_term, t) + self.bias
        )
        sig = torch.sigmoid(gates[..., : 3 * H])  # i, f, o: (B, 3H)
        g = torch.tanh(gates[..., 3 * H :])
        c = sig[..., H : 2 * H] * c + sig[..., :H] * g  # (2)
        tanh_c = torch.tanh(self._normalize(self.norm_c, c, t))
        h = sig[..., 2 * H :] * tanh_c  # (3)
        if units is not None:
            units.append(torch.cat([2 * sig - 1, g, tanh_c], dim=-1))
        return h, c

    def fused_spec(self) -> FusedSpec:
        """What the C++ kernel runs for this cell: the LSTM recurrence with norm_h, norm_x, norm_c
        and the bias (:func:`lnbench.nn.fused.unroll_fused`)."""
        return FusedSpec(
            lstm=True, inner=False, norm_h=self.norm_h, norm_x=self.norm_x, norm_c=self.norm_c, bias=self.bias
        )

    def extra_repr(self) -> str:
        return (
            f"input_size={self.input_size}, hidden_size={self.hidden_size}, norm={self.norm_kind!r}, "
            f"forget_bias={self.forget_bias}"
        )


class LSTM(RecurrentClassifier):
    """An LSTM classifier of ``model.num_layers`` stacked LSTM layers (each an
    :class:`LSTMCellWithNorm` with its own three norms and gains: the LN-LSTM's, or the BN-LSTM's
    gains of 0.1, in every layer): unroll T steps from ``h_0 = c_0 = 0``, then ``Linear(H, C)`` on
    the top layer's h_T. Layer l > 1 reads layer l - 1's h_1 .. h_T (``torch.nn.LSTM(num_layers=L)``).

    The input terms ``W_x x_t`` of all T timesteps are one matrix product before the recurrence
    (as cuDNN's LSTM does); the norms and the gates follow step by step (:meth:`LSTMCellWithNorm.step`).

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig` (see :class:`LSTMCellWithNorm`).
        input_size: I, features per timestep of the input.
        num_classes: C. Default: 2.
        seq_len: T, the timesteps with their own BatchNorm statistics. Default: None.
        members: S for a seed ensemble (build it with :meth:`stack`). Default: None.

    Shape:
        Input: ``(B, T, I)`` (ensemble: ``(S, B, T, I)``), the model's dtype. Output: logits
        ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the top layer's h_1 .. h_T
        ``(B, T, H)``.

    Raises:
        ValueError: as :class:`LSTMCellWithNorm`.
    """

    cell: LSTMCellWithNorm
    cell_type = LSTMCellWithNorm

    def layer_states(
        self, cell: nn.Module, x: torch.Tensor, units: list[torch.Tensor] | None, h0: torch.Tensor | None = None
    ) -> list[torch.Tensor]:
        """h_1 .. h_T of one layer as graph nodes of the recurrence, from ``h0`` (None: zeros) and
        c_0 = 0; ``units``, if given, receives each step's saturable units (:meth:`LSTMCellWithNorm.step`)."""
        assert isinstance(cell, LSTMCellWithNorm)
        W_h, W_x = cell.recurrent_weights()  # once per sequence
        input_terms = (x.flatten(-3, -2) @ W_x.mT).unflatten(-2, x.shape[-3:-1])  # (B, T, 4H) or (S, B, T, 4H)
        c = x.new_zeros(*x.shape[:-2], cell.hidden_size)  # (B, H) or (S, B, H)
        state = (c if h0 is None else h0, c)
        states = []
        for t in range(x.shape[-2]):
            state = cell.step(input_terms[..., t, :], state, t, W_h, units)
            states.append(state[0])
        return states
