"""The two model families, each with a pluggable norm (``none`` / ``batch`` / ``layer``).

RNN (Ba et al. 2016, section 3.1, eq. 4): the summed inputs of the recurrent layer,
``a_t = W_hh h_{t-1} + W_xh x_t``, are normalized before the nonlinearity::

    h_t = tanh(norm(a_t))          norm's beta plays the role of the bias b

Transformer: a single-head, pre-norm block (nanoGPT's ordering)::

    x = x + attn(norm_1(x));  x = x + mlp(norm_2(x))

Shapes: B batch, T seq_len, H hidden_size / d_model, C num_classes.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lnbench.norms import LayerNorm, RecurrentBatchNorm1d, build_norm

#: The model families: config name -> label in tables, legends and verdicts.
FAMILIES = {"rnn": "RNN", "transformer": "Transformer (pre-norm)"}


def family_label(family: str) -> str:
    """``"rnn"`` -> ``"RNN"``; an unknown family as given."""
    return FAMILIES.get(family, family)


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


class RNNCellWithNorm(nn.Module):
    """One step of a tanh RNN with the summed inputs normalized (Ba et al. 2016, eq. 4).

    ``a_t = W_hh h_{t-1} + W_xh x_t (+ bias)``, ``h_t = tanh(norm(a_t))``. The bias is only
    present with ``norm="none"``: with a norm, the norm's ``beta`` is the bias (the paper's b).
    ``norm="batch"`` is a :class:`lnbench.norms.RecurrentBatchNorm1d`: batch statistics per
    timestep, running statistics ``pooled`` over timesteps (one update per training step) or
    ``per_timestep`` (Cooijmans et al. 2016).

    Args:
        hidden_size: H.
        norm: one of :data:`lnbench.norms.NORM_KINDS`.
        input_size: size of x_t; defaults to H (so ``W_xh`` is ``(H, H)``).
        batch_norm_stats: ``pooled`` or ``per_timestep`` (``norm="batch"`` only).
        seq_len: T, for ``per_timestep`` statistics.

    Shape:
        x: ``(B, input_size)``, h: ``(B, H)``, t: int -> ``(B, H)``, float32.

    Raises:
        ValueError: for an unknown ``norm`` or ``batch_norm_stats``.
    """

    def __init__(
        self,
        hidden_size: int,
        norm: str,
        input_size: int | None = None,
        batch_norm_stats: str = "pooled",
        seq_len: int | None = None,
        members: int | None = None,
    ) -> None:
        super().__init__()
        input_size = hidden_size if input_size is None else input_size
        self.hidden_size, self.input_size, self.norm_kind = hidden_size, input_size, norm
        self.members = members
        lead = () if members is None else (members,)  # an ensemble stacks S cells: (S, H, H), ...
        bound = 1.0 / math.sqrt(hidden_size)  # torch.nn.RNN's init
        self.W_hh = nn.Parameter(torch.empty(*lead, hidden_size, hidden_size).uniform_(-bound, bound))
        self.W_xh = nn.Parameter(torch.empty(*lead, hidden_size, input_size).uniform_(-bound, bound))
        bias_shape = (hidden_size,) if members is None else (members, 1, hidden_size)
        self.bias = nn.Parameter(torch.zeros(bias_shape)) if norm == "none" else None
        if norm == "batch":
            self.norm = RecurrentBatchNorm1d(hidden_size, batch_norm_stats, seq_len, members=members)
        elif norm == "layer" and members is not None:
            self.norm = LayerNorm(hidden_size, members=members)
        elif members is not None and norm != "none":
            raise ValueError(f"norm {norm!r} has no ensemble form; allowed with members: none, batch, layer")
        else:
            self.norm = build_norm(norm, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor, t: int = 0) -> torch.Tensor:
        a = h @ self.W_hh.mT + x @ self.W_xh.mT  # (B, H), or (S, B, H) for an ensemble: summed inputs
        if self.bias is not None:
            a = a + self.bias
        a = self.norm(a, t) if isinstance(self.norm, RecurrentBatchNorm1d) else self.norm(a)
        return torch.tanh(a)

    def extra_repr(self) -> str:
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}, norm={self.norm_kind!r}"


class SimpleRNN(nn.Module):
    """A one-layer RNN classifier: unroll T steps from ``h_0 = 0``, then ``Linear(H, C)`` on h_T.

    Args:
        input_size: features per timestep of the input.
        hidden_size: H.
        num_classes: C.
        norm: ``none``, ``batch`` or ``layer`` (see :class:`RNNCellWithNorm`).
        batch_norm_stats, seq_len: see :class:`RNNCellWithNorm`.
        members: S for a seed ensemble of S independent RNNs trained at once (build it with
            :meth:`stack`); every tensor then has a leading member axis.

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
    ) -> None:
        super().__init__()
        self.members = members
        self.cell = RNNCellWithNorm(hidden_size, norm, input_size, batch_norm_stats, seq_len, members)
        self.head = nn.Linear(hidden_size, num_classes) if members is None else EnsembleLinear(members, hidden_size, num_classes)
        self._config = (input_size, hidden_size, num_classes, norm, batch_norm_stats, seq_len)

    @classmethod
    @torch.no_grad()
    def stack(cls, models: list["SimpleRNN"]) -> "SimpleRNN":
        """One ensemble whose member s starts as ``models[s]`` (parameters and buffers copied):
        trained by :func:`lnbench.training.train_members`, member s follows the arithmetic of
        ``models[s]`` trained alone."""
        ensemble = cls(*models[0]._config, members=len(models))
        solo = [dict(m.named_parameters()) | dict(m.named_buffers()) for m in models]
        for name, t in list(ensemble.named_parameters()) + list(ensemble.named_buffers()):
            parts = [s[name] for s in solo]
            if getattr(ensemble.cell.norm, "stats", None) == "per_timestep" and name.startswith("cell.norm.running_"):
                # per-timestep statistics: (T, S, 1, H) from (T, H)
                t.copy_(torch.stack(parts, dim=1).unsqueeze(2))
            else:
                t.copy_(torch.stack(parts).view(t.shape))
        return ensemble

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        h = x.new_zeros(*x.shape[:-2], self.cell.hidden_size)  # (B, H) or (S, B, H)
        hidden = []
        for t in range(x.shape[-2]):
            h = self.cell(x[..., t, :], h, t)  # (B, H) or (S, B, H)
            hidden.append(h)
        if isinstance(self.cell.norm, RecurrentBatchNorm1d):
            self.cell.norm.update_running_stats()  # once per training step (no-op in eval)
        logits = self.head(h)  # (B, C) or (S, B, C)
        if return_hidden:
            return logits, torch.stack(hidden, dim=-2)  # (B, T, H) or (S, B, T, H)
        return logits


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention (Vaswani et al. 2017, eq. 1), no mask.

    Shape: ``(B, T, D)`` -> ``(B, T, D)``.
    """

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # each (B, T, D)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, T, T)
        return self.proj(att.softmax(dim=-1) @ v)  # (B, T, D)


class TransformerBlock(nn.Module):
    """A pre-norm Transformer block: ``x + attn(norm_1(x))`` then ``x + mlp(norm_2(x))``.

    Args:
        d_model: D, the width of the residual stream.
        norm: ``none``, ``batch`` or ``layer``; BatchNorm takes statistics over (B, T).
        d_ff: hidden width of the feed-forward layer. Default: ``4 * d_model``.

    Shape:
        ``(B, T, D)`` -> ``(B, T, D)``.
    """

    def __init__(self, d_model: int, norm: str, d_ff: int | None = None) -> None:
        super().__init__()
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.norm_1 = build_norm(norm, d_model)
        self.attn = SelfAttention(d_model)
        self.norm_2 = build_norm(norm, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm_1(x))
        return x + self.mlp(self.norm_2(x))


class TransformerClassifier(nn.Module):
    """Input projection + learned positions, pre-norm block(s), final norm, mean pool, Linear.

    The learned position embedding is what lets attention see order at all: without it the
    model is permutation invariant and cannot tell an increasing trend from a decreasing one.

    Args:
        input_size: features per timestep of the input.
        d_model: D.
        num_classes: C.
        norm: ``none``, ``batch`` or ``layer`` (every norm in the model, the final one included).
        seq_len: T, the number of learned positions.
        num_layers: number of blocks. Default: 1.
        d_ff: feed-forward width. Default: ``4 * d_model``.

    Shape:
        Input: ``(B, T, input_size)``. Output: logits ``(B, C)``; with ``return_hidden=True``
        also the residual stream after the last block, ``(B, T, D)``.
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
    ) -> None:
        super().__init__()
        self.input_proj = nn.Linear(input_size, d_model)
        self.pos_emb = nn.Parameter(torch.randn(seq_len, d_model) * 0.02)
        self.blocks = nn.ModuleList(TransformerBlock(d_model, norm, d_ff) for _ in range(num_layers))
        self.norm_f = build_norm(norm, d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        T = x.shape[1]
        if T > self.pos_emb.shape[0]:
            raise ValueError(f"sequence length {T} exceeds the model's seq_len {self.pos_emb.shape[0]}")
        z = self.input_proj(x) + self.pos_emb[:T]  # (B, T, D)
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
    if model_cfg.family == "rnn":
        return SimpleRNN(
            input_size, model_cfg.hidden_size, num_classes, model_cfg.norm, model_cfg.batch_norm_stats, seq_len
        )
    if model_cfg.family == "transformer":
        return TransformerClassifier(
            input_size,
            model_cfg.hidden_size,
            num_classes,
            model_cfg.norm,
            seq_len=seq_len,
            num_layers=model_cfg.num_layers,
            d_ff=model_cfg.d_ff,
        )
    raise ValueError(f"unknown model family {model_cfg.family!r}; allowed: rnn, transformer")
