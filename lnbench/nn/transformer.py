"""The Transformer family: a single-head, pre-norm classifier (nanoGPT's ordering), with a pluggable norm::

    z_0 = input_norm(W_in x_t) + p_t      (input_norm optional; p: sinusoidal or learned positions)
    z = z + attn(norm_1(z));  z = z + mlp(norm_2(z))        (per block)
    logits = head(mean_t norm_f(z))

Every norm position holds the layer the registry (:mod:`lnbench.nn.registry`) builds for the model's
norm; a norm that re-parametrizes weights (weight norm) makes every Linear weight-normalized and
leaves the norm positions the identity. Shapes: B batch, T seq_len, D d_model (the config's
``hidden_size``), C num_classes, S members.

A seed ensemble (``members=S``, built by :meth:`TransformerClassifier.stack`) runs S models on
``(S, B, T, I)`` at once: every Linear an :class:`lnbench.nn.rnn.EnsembleLinear`, every norm
with ``(S, 1, D)`` parameters applied to the ``(S, B * T, D)`` view of the stream. Each member
computes its plain model (up to float rounding), and its training does not depend on how many
other members it has, bit for bit with one torch thread (``tests/nn/test_transformer_ensemble.py``).
It pays at small batches, where a step's cost is per-op overhead
(:func:`lnbench.experiments.base.ensemble_mechanism`).
"""

from __future__ import annotations

import math
from typing import Self

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn.base import Norm, stack_models
from lnbench.nn.ensemble_linear import EnsembleLinear
from lnbench.nn.registry import norm_kind
from lnbench.nn.weightnorm import linear


def model_linear(
    in_features: int, out_features: int, cfg: ModelConfig, members: int | None, bias: bool = True
) -> nn.Module:
    """A model's Linear (the Transformer's, the MLP's): :func:`lnbench.nn.weightnorm.linear`
    (weight-normalized if ``cfg.norm`` re-parametrizes weights), or for an ensemble of ``members``
    an :class:`lnbench.nn.rnn.EnsembleLinear`.

    Raises:
        ValueError: an ensemble with a norm that has no member axis (weight norm)."""
    wn = norm_kind(cfg.norm).reparametrizes_weights
    if members is None:
        return linear(in_features, out_features, wn, bias)
    if not norm_kind(cfg.norm).has_member_axis:
        raise ValueError(f"a seed ensemble needs a norm with a member axis (has_member_axis); got {cfg.norm!r}")
    return EnsembleLinear(members, in_features, out_features, bias)


def _normalize(norm: nn.Module, z: torch.Tensor, members: int | None) -> torch.Tensor:
    """``norm(z)``; for an ensemble, a norm over the features (LayerNorm, RMSNorm) sees the
    ``(S, B, T, D)`` stream as ``(S, B * T, D)``, the layout its ``(S, 1, D)`` parameters
    broadcast over; BatchNorm takes ``(S, B, T, D)`` itself (statistics over B and T per member)."""
    if members is None or not isinstance(norm, Norm) or norm.uses_batch_statistics:
        return norm(z)
    return norm(z.flatten(1, -2)).view(z.shape)


class SelfAttention(nn.Module):
    """Single-head scaled dot-product self-attention (Vaswani et al. 2017, eq. 1), no mask:
    ``proj(softmax(q k^T / sqrt(D)) v)`` with ``q, k, v = qkv(x)``.

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig`: ``hidden_size`` D, and ``norm``
            (weight-normalized ``qkv`` and ``proj`` if its kind re-parametrizes weights).

        members: S for an ensemble. Default: None.

    Shape:
        ``(B, T, D)`` -> ``(B, T, D)`` (ensemble: a leading S), the model's dtype.

    Raises:
        ValueError: for an unknown ``norm``.
    """

    def __init__(self, cfg: ModelConfig, members: int | None = None) -> None:
        super().__init__()
        D = cfg.hidden_size
        self.qkv = model_linear(D, 3 * D, cfg, members)
        self.proj = model_linear(D, D, cfg, members)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # each ([S,] B, T, D)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # ([S,] B, T, T)
        return self.proj(att.softmax(dim=-1) @ v)  # (B, T, D)


class TransformerBlock(nn.Module):
    """A pre-norm Transformer block: ``x + attn(norm_1(x))`` then ``x + mlp(norm_2(x))`` (nanoGPT's ``Block``).

    Args:
        cfg: the model's :class:`lnbench.config.ModelConfig`: ``hidden_size`` D (the width of the
            residual stream), ``norm`` (BatchNorm takes statistics over (B, T)), ``d_ff`` (the
            feed-forward width; None: ``4 * D``).
        members: S for an ensemble. Default: None.

    Shape:
        ``(B, T, D)`` -> ``(B, T, D)`` (ensemble: a leading S), the model's dtype.

    Raises:
        ValueError: for an unknown ``norm``.
    """

    def __init__(self, cfg: ModelConfig, members: int | None = None) -> None:
        super().__init__()
        spec = norm_kind(cfg.norm)
        D = cfg.hidden_size
        d_ff = 4 * D if cfg.d_ff is None else cfg.d_ff
        # weight norm: every Linear weight-normalized; the norm positions are the identity
        self.members = members
        self.norm_1 = spec.build(D, cfg, members)
        self.attn = SelfAttention(cfg, members)
        self.norm_2 = spec.build(D, cfg, members)
        self.mlp = nn.Sequential(model_linear(D, d_ff, cfg, members), nn.GELU(), model_linear(d_ff, D, cfg, members))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(_normalize(self.norm_1, x, self.members))
        return x + self.mlp(_normalize(self.norm_2, x, self.members))


def sinusoidal_positions(seq_len: int, d_model: int) -> torch.Tensor:
    """The fixed position encoding of Vaswani et al. 2017, section 3.5, ``(T, D)`` float32::

        PE[t, 2i] = sin(t / 10000^(2i/D)),   PE[t, 2i+1] = cos(t / 10000^(2i/D))

    Every value is in [-1, 1] and the RMS over a row is 1/sqrt(2) (D even): the scale of a
    normalized content vector, so neither swamps the other. Computed in float64, returned as float32.
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
        cfg: the model's :class:`lnbench.config.ModelConfig`; it reads ``hidden_size`` D,
            ``norm`` (every norm in the model, the final one included; weight norm: every Linear
            weight-normalized, the norm positions the identity), ``num_layers`` (blocks),
            ``d_ff``, ``pos_emb`` (``sinusoidal``, :func:`sinusoidal_positions`, fixed; or
            ``learned``, a parameter ``(T, D)`` initialised N(0, ``pos_emb_std``^2)) and
            ``input_norm`` (the model's norm on the input projection before the positions are
            added; the projection then has no bias, the norm's beta is the bias, and RMSNorm has
            none. With LayerNorm or RMSNorm the model is then invariant to the scale of each
            input sequence).
        input_size: features per timestep of the input.
        seq_len: T, the number of positions.
        num_classes: C. Default: 2.
        members: S for a seed ensemble of S independent models trained at once (build it with
            :meth:`stack`; norms that have a member axis, :func:`lnbench.names.norm_has_member_axis`); every tensor then has a leading member
            axis. Default: None.

    Shape:
        Input: ``(B, T, input_size)`` (ensemble: ``(S, B, T, input_size)``), the model's dtype.
        Output: logits ``(B, C)`` (``(S, B, C)``); with ``return_hidden=True`` also the residual
        stream after the last block, ``(B, T, D)`` (``(S, B, T, D)``).

    Raises:
        ValueError: for an unknown ``norm``, an ensemble with weight norm (``pos_emb`` and the
            family's other keys are the config's, validated there once); in
            forward, for T > ``seq_len``.
    """

    def __init__(
        self, cfg: ModelConfig, input_size: int, seq_len: int, num_classes: int = 2, members: int | None = None
    ) -> None:
        super().__init__()
        spec = norm_kind(cfg.norm)
        D = cfg.hidden_size
        self.cfg, self.input_size, self.seq_len, self.num_classes = cfg, input_size, seq_len, num_classes
        self.members = members
        lead = () if members is None else (members,)
        normed_input = cfg.input_norm and spec.normalizes_activations
        self.input_proj = model_linear(input_size, D, cfg, members, bias=not normed_input)
        self.input_norm = spec.build(D, cfg, members) if normed_input else None
        if cfg.pos_emb == "learned":
            self.pos_emb = nn.Parameter(torch.randn(*lead, seq_len, D) * cfg.pos_emb_std)
        else:
            self.register_buffer("pos_emb", sinusoidal_positions(seq_len, D).expand(*lead, seq_len, D).clone())
        self.blocks = nn.ModuleList(TransformerBlock(cfg, members) for _ in range(cfg.num_layers))
        self.norm_f = spec.build(D, cfg, members)
        self.head = model_linear(D, num_classes, cfg, members)

    @classmethod
    @torch.no_grad()
    def stack(cls, models: list[Self]) -> Self:
        """One ensemble whose member s starts as ``models[s]`` (parameters and buffers copied):
        trained by :func:`lnbench.training.loop.train_members`, member s follows the arithmetic of
        ``models[s]`` in an ensemble of one. Each tensor is stacked along the member axis its
        module names (0 but for per-timestep statistics, which a Transformer has none of).

        Raises:
            IndexError: for an empty list; ValueError: for weight norm (no ensemble form).
        """
        return stack_models(models)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        T, S = x.shape[-2], self.members
        if T > self.pos_emb.shape[-2]:
            raise ValueError(f"sequence length {T} exceeds the model's seq_len {self.pos_emb.shape[-2]}")
        z = self.input_proj(x)  # ([S,] B, T, D)
        if self.input_norm is not None:
            z = _normalize(self.input_norm, z, S)
        z = z + (self.pos_emb[:T] if S is None else self.pos_emb[:, None, :T])
        for block in self.blocks:
            z = block(z)
        logits = self.head(_normalize(self.norm_f, z, S).mean(dim=-2))  # ([S,] B, C)
        if return_hidden:
            return logits, z
        return logits
