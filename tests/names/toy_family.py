"""A toy model family for tests/names/test_families.py: the sequence mean-pooled,
normalized by lnbench's norm of the config, then a linear head. Not a model anyone should study."""

from __future__ import annotations

import torch
from torch import nn

from lnbench.nn.registry import norm_kind


class MeanPool(nn.Module):
    """``(B, T, I)`` -> logits ``(B, C)``; with ``return_hidden``, also the per-step features ``(B, T, H)``."""

    def __init__(self, cfg, input_size: int, seq_len: int, num_classes: int = 2) -> None:
        super().__init__()
        H = cfg.hidden_size
        self.cfg, self.input_size, self.seq_len, self.num_classes = cfg, input_size, seq_len, num_classes
        self.proj = nn.Linear(input_size, H)
        self.norm = norm_kind(cfg.norm).build(H, cfg)  # nn.Identity where the kind has no layer
        self.head = nn.Linear(H, num_classes)

    def forward(self, x: torch.Tensor, return_hidden: bool = False):
        h = torch.tanh(self.proj(x))  # (B, T, H)
        logits = self.head(self.norm(h.mean(dim=1)))
        return (logits, h) if return_hidden else logits
