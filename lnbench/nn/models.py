"""The two model families, each with a pluggable norm (``none`` / ``batch`` / ``layer``).

RNN (Ba et al. 2016, section 3.1), two placements of the norm (``norm_placement``)::

    joint (eq. 4):   h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t))             norm's beta is the bias b
    separate:        h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b)

``separate`` is the form of the paper's layer-normalized LSTM (section 3.1, the equations
after eq. 5, and appendix): the recurrent and input terms are normalized on their own, so the
input's scale cannot shift the balance between memory and input.

Transformer: a single-head, pre-norm block (nanoGPT's ordering)::

    z_0 = input_norm(W_in x_t) + p_t      (input_norm optional; p: sinusoidal or learned positions)
    z = z + attn(norm_1(z));  z = z + mlp(norm_2(z))

Shapes: B batch, T seq_len, H hidden_size / d_model, C num_classes.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lnbench.names import FAMILIES, family_label  # noqa: F401  (re-exported)
from lnbench.nn.norms import LayerNorm, RecurrentBatchNorm1d, build_norm
from lnbench.nn.rmsnorm import RMSNorm
from lnbench.nn.weightnorm import linear, row_norms, weight_normalize


class EnsembleLinear(nn.Module):
    """S independent ``nn.Linear`` layers applied to S inputs at once: ``y[s] = x[s] W[s]^T + b[s]``.

    Shape: ``(S, B, in_features)`` -> ``(S, B, out_features)``; weight ``(S, out, in)``, bias
    ``(S, 1, out)`` (filled by :meth:`SimpleRNN.stack`).
    """

    def __init__(self, members: int, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(members, out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(members, 1, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight.transpose(1, 2))  # (S, B, out)


PLACEMENTS = ("joint", "separate")
RECURRENT_INITS = ("uniform", "orthogonal")
POS_EMBS = ("sinusoidal", "learned")


class RNNCellWithNorm(nn.Module):
    """One step of a tanh RNN with a normalized pre-activation (Ba et al. 2016, section 3.1).

    - ``placement="joint"`` (eq. 4): ``h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t))``; with batch
      and layer norm the norm's ``beta`` is the paper's b; with none, rms and weight a bias b is
      added after the norm (RMSNorm has no beta).
    - ``placement="separate"`` (the paper's layer-normalized LSTM):
      ``h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b)``, two norms with their own gain
      and bias. With ``norm="none"`` both placements are the same function.

    ``norm="batch"`` is a :class:`lnbench.nn.norms.RecurrentBatchNorm1d`: batch statistics per
    timestep, running statistics ``pooled`` over timesteps (one update per training step) or
    ``per_timestep`` (Cooijmans et al. 2016). ``norm="rms"`` is :class:`lnbench.nn.rmsnorm.RMSNorm`.
    ``norm="weight"`` normalizes the weights instead (Salimans & Kingma 2016): ``joint``, each row
    of ``[W_hh W_xh]`` is ``g_i v_i / ||v_i||`` (one layer producing the summed input); ``separate``,
    each row of ``W_hh`` and of ``W_xh`` with its own ``g_hh`` / ``g_xh``; ``g`` starts at the
    rows' norms, so the cell starts as the NoNorm cell with the same weights.

    Args:
        hidden_size: H.
        norm: one of :data:`lnbench.nn.norms.NORM_KINDS`.
        input_size: size of x_t; defaults to H (so ``W_xh`` is ``(H, H)``).
        batch_norm_stats: ``pooled`` or ``per_timestep`` (``norm="batch"`` only).
        seq_len: T, for ``per_timestep`` statistics.
        members: S for an ensemble of S stacked cells (every tensor gets a leading S axis).
        placement: ``joint`` or ``separate`` (:data:`PLACEMENTS`).
        recurrent_init: ``W_hh`` init: ``uniform`` (torch.nn.RNN's U(-1/sqrt(H), 1/sqrt(H))) or
            ``orthogonal`` (torch.nn.init.orthogonal_), either multiplied by ``recurrent_gain``.
            ``W_xh`` is always torch.nn.RNN's uniform.
        recurrent_gain: the factor on ``W_hh`` (> 0); an orthogonal ``W_hh`` with gain g has
            every singular value g, so g > 1 makes the linear recurrence expand.

    Shape:
        x: ``(B, input_size)``, h: ``(B, H)``, t: int -> ``(B, H)``, float32 (ensemble: a
        leading S axis).

    Raises:
        ValueError: for an unknown ``norm``, ``batch_norm_stats``, ``placement`` or
            ``recurrent_init``.
    """

    def __init__(
        self,
        hidden_size: int,
        norm: str,
        input_size: int | None = None,
        batch_norm_stats: str = "pooled",
        seq_len: int | None = None,
        members: int | None = None,
        placement: str = "joint",
        recurrent_init: str = "uniform",
        recurrent_gain: float = 1.0,
    ) -> None:
        super().__init__()
        if placement not in PLACEMENTS:
            raise ValueError(f"norm_placement: unknown {placement!r}; allowed: {', '.join(PLACEMENTS)}")
        if recurrent_init not in RECURRENT_INITS:
            raise ValueError(f"recurrent_init: unknown {recurrent_init!r}; allowed: {', '.join(RECURRENT_INITS)}")
        input_size = hidden_size if input_size is None else input_size
        self.hidden_size, self.input_size, self.norm_kind, self.placement = hidden_size, input_size, norm, placement
        self.members = members
        lead = () if members is None else (members,)  # an ensemble stacks S cells: (S, H, H), ...
        bound = 1.0 / math.sqrt(hidden_size)  # torch.nn.RNN's init
        self.W_hh = nn.Parameter(torch.empty(*lead, hidden_size, hidden_size))
        with torch.no_grad():
            if recurrent_init == "orthogonal":
                for w in self.W_hh.view(-1, hidden_size, hidden_size):
                    nn.init.orthogonal_(w, gain=recurrent_gain)
            else:
                self.W_hh.uniform_(-bound * recurrent_gain, bound * recurrent_gain)
        self.W_xh = nn.Parameter(torch.empty(*lead, hidden_size, input_size).uniform_(-bound, bound))
        bias_shape = (hidden_size,) if members is None else (members, 1, hidden_size)
        has_bias = (
            norm in ("none", "weight", "rms") or placement == "separate"
        )  # else the norm's beta is the bias (RMSNorm has none)
        self.bias = nn.Parameter(torch.zeros(bias_shape)) if has_bias else None
        if norm == "weight":
            with torch.no_grad():
                if placement == "joint":  # one layer: the rows of [W_hh W_xh]
                    self.g = nn.Parameter(row_norms(torch.cat([self.W_hh, self.W_xh], dim=-1)))
                else:
                    self.g_hh, self.g_xh = nn.Parameter(row_norms(self.W_hh)), nn.Parameter(row_norms(self.W_xh))
        self.norm = self._make_norm(norm, batch_norm_stats, seq_len)  # joint: on the sum; separate: on W_hh h
        self.norm_x = self._make_norm(norm, batch_norm_stats, seq_len) if placement == "separate" else None

    def _make_norm(self, norm: str, batch_norm_stats: str, seq_len: int | None) -> nn.Module:
        H, members = self.hidden_size, self.members
        if norm == "batch":
            return RecurrentBatchNorm1d(H, batch_norm_stats, seq_len, members=members)
        if norm == "layer" and members is not None:
            return LayerNorm(H, members=members)
        if norm == "rms" and members is not None:
            return RMSNorm(H, members=members)
        return build_norm(norm, H)  # none and weight: the identity on the summed inputs

    def recurrent_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The effective ``(W_hh, W_xh)``: the parameters, or with ``norm="weight"`` their
        weight-normalized form (computed once per sequence by :class:`SimpleRNN`)."""
        if self.norm_kind != "weight":
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

    @staticmethod
    def _apply(norm: nn.Module, a: torch.Tensor, t: int) -> torch.Tensor:
        return norm(a, t) if isinstance(norm, RecurrentBatchNorm1d) else norm(a)

    def forward(
        self, x: torch.Tensor, h: torch.Tensor, t: int = 0, weights: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        W_hh, W_xh = self.recurrent_weights() if weights is None else weights
        if self.norm_x is None:  # joint: the summed inputs, (B, H) or (S, B, H)
            a = self._apply(self.norm, h @ W_hh.mT + x @ W_xh.mT, t)
            # the bias after the norm (RMSNorm has no beta: Zhang & Sennrich eq. 4, f(g a / RMS(a) + b));
            # with no norm or weight norm the norm is the identity, so it is the plain a + b
            return torch.tanh(a if self.bias is None else a + self.bias)
        a = self._apply(self.norm, h @ W_hh.mT, t) + self._apply(self.norm_x, x @ W_xh.mT, t)
        return torch.tanh(a + self.bias)

    def extra_repr(self) -> str:
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}, norm={self.norm_kind!r}, placement={self.placement!r}"


class SimpleRNN(nn.Module):
    """A one-layer RNN classifier: unroll T steps from ``h_0 = 0``, then ``Linear(H, C)`` on h_T.

    Args:
        input_size: features per timestep of the input.
        hidden_size: H.
        num_classes: C.
        norm: one of :data:`lnbench.names.NORM_KINDS` (see :class:`RNNCellWithNorm`).
        batch_norm_stats, seq_len: see :class:`RNNCellWithNorm`.
        members: S for a seed ensemble of S independent RNNs trained at once (build it with
            :meth:`stack`); every tensor then has a leading member axis.
        placement, recurrent_init, recurrent_gain: see :class:`RNNCellWithNorm`.

    Shape:
        Input: ``(B, T, input_size)`` float32 (ensemble: ``(S, B, T, input_size)``). Output:
        logits ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the hidden states
        ``(B, T, H)`` (``(S, B, T, H)``).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_classes: int,
        norm: str,
        batch_norm_stats: str = "pooled",
        seq_len: int | None = None,
        members: int | None = None,
        placement: str = "joint",
        recurrent_init: str = "uniform",
        recurrent_gain: float = 1.0,
    ) -> None:
        super().__init__()
        self.members = members
        self.cell = RNNCellWithNorm(
            hidden_size, norm, input_size, batch_norm_stats, seq_len, members, placement, recurrent_init, recurrent_gain
        )
        self.head = (
            nn.Linear(hidden_size, num_classes)
            if members is None
            else EnsembleLinear(members, hidden_size, num_classes)
        )
        self._config = (input_size, hidden_size, num_classes, norm, batch_norm_stats, seq_len)
        self._options = {"placement": placement, "recurrent_init": recurrent_init, "recurrent_gain": recurrent_gain}

    @classmethod
    @torch.no_grad()
    def stack(cls, models: list["SimpleRNN"]) -> "SimpleRNN":
        """One ensemble whose member s starts as ``models[s]`` (parameters and buffers copied):
        trained by :func:`lnbench.training.loop.train_members`, member s follows the arithmetic of
        ``models[s]`` trained alone."""
        ensemble = cls(*models[0]._config, members=len(models), **models[0]._options)
        solo = [dict(m.named_parameters()) | dict(m.named_buffers()) for m in models]
        per_timestep = getattr(ensemble.cell.norm, "stats", None) == "per_timestep"
        for name, t in list(ensemble.named_parameters()) + list(ensemble.named_buffers()):
            parts = [s[name] for s in solo]
            if per_timestep and name.rpartition(".")[2].startswith("running_"):
                # per-timestep statistics: (T, S, 1, H) from (T, H)
                t.copy_(torch.stack(parts, dim=1).unsqueeze(2))
            else:
                t.copy_(torch.stack(parts).view(t.shape))
        return ensemble

    def forward_states(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits and the list of the T hidden states h_1 .. h_T as graph nodes of the
        recurrence (so ``torch.autograd.grad(loss, states[0])`` is the total dL/dh_1)."""
        h = x.new_zeros(*x.shape[:-2], self.cell.hidden_size)  # (B, H) or (S, B, H)
        states = []
        weights = self.cell.recurrent_weights()  # once per sequence (weight norm computes them)
        for t in range(x.shape[-2]):
            h = self.cell(x[..., t, :], h, t, weights)  # (B, H) or (S, B, H)
            states.append(h)
        for norm in self.cell.norms:
            if isinstance(norm, RecurrentBatchNorm1d):
                norm.update_running_stats()  # once per training step (no-op in eval)
        return self.head(h), states  # (B, C) or (S, B, C)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        logits, states = self.forward_states(x)
        if return_hidden:
            return logits, torch.stack(states, dim=-2)  # (B, T, H) or (S, B, T, H)
        return logits


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention (Vaswani et al. 2017, eq. 1), no mask.

    Shape: ``(B, T, D)`` -> ``(B, T, D)``.
    """

    def __init__(self, d_model: int, weight_norm: bool = False) -> None:
        super().__init__()
        self.qkv = linear(d_model, 3 * d_model, weight_norm)
        self.proj = linear(d_model, d_model, weight_norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # each (B, T, D)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, T, T)
        return self.proj(att.softmax(dim=-1) @ v)  # (B, T, D)


class TransformerBlock(nn.Module):
    """A pre-norm Transformer block: ``x + attn(norm_1(x))`` then ``x + mlp(norm_2(x))``.

    Args:
        d_model: D, the width of the residual stream.
        norm: one of :data:`lnbench.names.NORM_KINDS`; BatchNorm takes statistics over (B, T).
        d_ff: hidden width of the feed-forward layer. Default: ``4 * d_model``.

    Shape:
        ``(B, T, D)`` -> ``(B, T, D)``.
    """

    def __init__(self, d_model: int, norm: str, d_ff: int | None = None) -> None:
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        wn = norm == "weight"  # every Linear weight-normalized; the norm positions are the identity
        self.norm_1 = build_norm(norm, d_model)
        self.attn = SelfAttention(d_model, wn)
        self.norm_2 = build_norm(norm, d_model)
        self.mlp = nn.Sequential(linear(d_model, d_ff, wn), nn.GELU(), linear(d_ff, d_model, wn))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm_1(x))
        return x + self.mlp(self.norm_2(x))


def sinusoidal_positions(seq_len: int, d_model: int) -> torch.Tensor:
    """The fixed position encoding of Vaswani et al. 2017, section 3.5, ``(T, D)`` float32::

        PE[t, 2i] = sin(t / 10000^(2i/D)),   PE[t, 2i+1] = cos(t / 10000^(2i/D))

    Every value is in [-1, 1] and the RMS over a row is 1/sqrt(2) (D even): the scale of a
    normalized content vector, so neither swamps the other.
    """
    t = torch.arange(seq_len, dtype=torch.float64)[:, None]  # (T, 1)
    freq = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (ceil(D/2),)
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t * freq)
    pe[:, 1::2] = torch.cos(t * freq[: d_model // 2])
    return pe.float()


class TransformerClassifier(nn.Module):
    """Input projection (+ optional input norm) + positions, pre-norm block(s), final norm,
    mean pool, Linear.

    The position encoding is what lets attention see order at all: without it the model is
    permutation invariant and cannot tell an increasing trend from a decreasing one. It must
    be on the scale of the content: the seed's learned embedding started at std 0.02 against
    an input projection of 0.2 to 3.2 per sample, and a LayerNorm then normalized the sum,
    content and order together, so order was a rounding error for large samples (README,
    "A fair Transformer").

    Args:
        input_size: features per timestep of the input.
        d_model: D.
        num_classes: C.
        norm: one of :data:`lnbench.names.NORM_KINDS` (every norm in the model, the final one included;
            ``weight``: every Linear weight-normalized, the norm positions the identity).
        seq_len: T, the number of positions.
        num_layers: number of blocks. Default: 1.
        d_ff: feed-forward width. Default: ``4 * d_model``.
        pos_emb: ``sinusoidal`` (:func:`sinusoidal_positions`, fixed) or ``learned`` (a
            parameter ``(T, D)`` initialised N(0, ``pos_emb_std``^2)).
        pos_emb_std: the learned embedding's initial std (the seed used 0.02).
        input_norm: apply the model's norm to the input projection before the positions are
            added; the projection then has no bias (the norm's beta is the bias; RMSNorm has no
            beta, so that input path has none). With LayerNorm or RMSNorm the model is then
            invariant to the scale of each input sequence.

    Shape:
        Input: ``(B, T, input_size)``. Output: logits ``(B, C)``; with ``return_hidden=True``
        also the residual stream after the last block, ``(B, T, D)``.

    Raises:
        ValueError: for an unknown ``norm`` or ``pos_emb``; in forward, for T > ``seq_len``.
    """

    def __init__(
        self,
        input_size: int,
        d_model: int,
        num_classes: int,
        norm: str,
        seq_len: int,
        num_layers: int = 1,
        d_ff: int | None = None,
        pos_emb: str = "sinusoidal",
        pos_emb_std: float = 1.0,
        input_norm: bool = True,
    ) -> None:
        super().__init__()
        if pos_emb not in POS_EMBS:
            raise ValueError(f"pos_emb: unknown {pos_emb!r}; allowed: {', '.join(POS_EMBS)}")
        normed_input = input_norm and norm not in ("none", "weight")
        self.input_proj = linear(input_size, d_model, norm == "weight", bias=not normed_input)
        self.input_norm = build_norm(norm, d_model) if normed_input else None
        if pos_emb == "learned":
            self.pos_emb = nn.Parameter(torch.randn(seq_len, d_model) * pos_emb_std)
        else:
            self.register_buffer("pos_emb", sinusoidal_positions(seq_len, d_model))
        self.blocks = nn.ModuleList(TransformerBlock(d_model, norm, d_ff) for _ in range(num_layers))
        self.norm_f = build_norm(norm, d_model)
        self.head = linear(d_model, num_classes, norm == "weight")

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        T = x.shape[1]
        if T > self.pos_emb.shape[0]:
            raise ValueError(f"sequence length {T} exceeds the model's seq_len {self.pos_emb.shape[0]}")
        z = self.input_proj(x)  # (B, T, D)
        if self.input_norm is not None:
            z = self.input_norm(z)
        z = z + self.pos_emb[:T]
        for block in self.blocks:
            z = block(z)
        logits = self.head(self.norm_f(z).mean(dim=1))  # (B, C)
        if return_hidden:
            return logits, z
        return logits


def build_model(model_cfg, input_size: int, seq_len: int, num_classes: int = 2) -> nn.Module:
    """Build the model a :class:`lnbench.config.ModelConfig` describes.

    Raises:
        ValueError: for an unknown family or norm.
    """
    m = model_cfg
    if m.family == "rnn":
        return SimpleRNN(
            input_size,
            m.hidden_size,
            num_classes,
            m.norm,
            m.batch_norm_stats,
            seq_len,
            placement=m.norm_placement,
            recurrent_init=m.recurrent_init,
            recurrent_gain=m.recurrent_gain,
        )
    if m.family == "transformer":
        return TransformerClassifier(
            input_size,
            m.hidden_size,
            num_classes,
            m.norm,
            seq_len=seq_len,
            num_layers=m.num_layers,
            d_ff=m.d_ff,
            pos_emb=m.pos_emb,
            pos_emb_std=m.pos_emb_std,
            input_norm=m.input_norm,
        )
    raise ValueError(f"unknown model family {m.family!r}; allowed: rnn, transformer")
