"""The three model families, each with a pluggable norm, and :func:`build_model`.

- ``rnn``: :class:`lnbench.nn.rnn.SimpleRNN`, a tanh RNN with the norm on its summed inputs, joint
  (Ba et al. 2016, eq. 4) or separate (the paper's layer-normalized LSTM).
- ``lstm``: :class:`lnbench.nn.lstm.LSTM`, from scratch: with ``layer`` the paper's LN-LSTM, with
  ``batch`` Cooijmans et al.'s BN-LSTM.
- ``transformer``: :class:`lnbench.nn.transformer.TransformerClassifier`, pre-norm blocks.

Every constructor takes the model's :class:`lnbench.config.ModelConfig` (nanoGPT's ``Block(config)``).
"""

from __future__ import annotations

import pkgutil
from typing import Any

from torch import nn

from lnbench.config import ModelConfig
from lnbench.names import FAMILIES, FAMILY_REGISTRY, family_label
from lnbench.nn.ensemble_linear import EnsembleLinear
from lnbench.nn.lstm import LSTM, LSTMCellWithNorm
from lnbench.nn.recurrent import RecurrentClassifier
from lnbench.nn.registry import initial_gain
from lnbench.nn.rnn import RNNCellWithNorm, SimpleRNN
from lnbench.nn.transformer import (
    SelfAttention,
    TransformerBlock,
    TransformerClassifier,
    sinusoidal_positions,
)

__all__ = [
    "ensemble_of",
    "FAMILIES",
    "EnsembleLinear",
    "LSTM",
    "LSTMCellWithNorm",
    "RNNCellWithNorm",
    "RecurrentClassifier",
    "SelfAttention",
    "SimpleRNN",
    "TransformerBlock",
    "TransformerClassifier",
    "build_model",
    "initial_gain",
    "family_label",
    "sinusoidal_positions",
]


def build_model(model_cfg: ModelConfig, input_size: int, seq_len: int, num_classes: int = 2) -> nn.Module:
    """Build the model a :class:`lnbench.config.ModelConfig` describes, in float32 on the CPU.

    Args:
        model_cfg: the family, the norm and their options.
        input_size: features per timestep of the input.
        seq_len: T (the Transformer's positions; the RNN's per-timestep statistics).
        num_classes: C. Default: 2.

    Returns:
        A :class:`lnbench.nn.rnn.SimpleRNN`, :class:`lnbench.nn.lstm.LSTM` or
        :class:`lnbench.nn.transformer.TransformerClassifier`:
        ``(B, T, input_size)`` -> logits ``(B, C)``.

    Raises:
        ValueError: for an unknown family or norm.
    """
    if model_cfg.family not in FAMILY_REGISTRY:
        raise ValueError(f"unknown model family {model_cfg.family!r}; allowed: {', '.join(FAMILIES)}")
    cls = pkgutil.resolve_name(FAMILY_REGISTRY[model_cfg.family].builder)
    return cls(model_cfg, input_size=input_size, seq_len=seq_len, num_classes=num_classes)


def ensemble_of(models: list[nn.Module]) -> nn.Module:
    """One seed ensemble whose member s starts as ``models[s]`` (models of one family, as
    :func:`build_model` gives them): their class's ``stack`` (every family's model has one)."""
    family_class: Any = type(models[0])
    return family_class.stack(models)
