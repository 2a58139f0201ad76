"""The member axis of a seed ensemble: S models trained as one, parameters ``(S, ...)``.

A plain model is treated as an ensemble of one (S = 1): these helpers add and remove the member
axis so that the training loop and the probes have one code path.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from lnbench.nn.base import Norm, grouped_as_layer


def layer_names(model: nn.Module) -> dict[str, str]:
    """Map each parameter name to its layer: the owning module when it groups its parameters as
    one layer (a norm or a linear map, :func:`lnbench.nn.base.grouped_as_layer`), otherwise the
    parameter itself (so an RNN's ``W_hh`` and ``W_xh`` are two layers)."""
    owners = {name for name, m in model.named_modules() if grouped_as_layer(m)}
    out = {}
    for name, _ in model.named_parameters():
        owner = name.rpartition(".")[0]
        out[name] = owner if owner in owners else name
    return out


def has_batch_norm(model: nn.Module) -> bool:
    """Whether a norm of ``model`` uses batch statistics (its training and eval outputs differ)."""
    return any(isinstance(m, Norm) and m.uses_batch_statistics for m in model.modules())


def is_ensemble(model: nn.Module) -> bool:
    return getattr(model, "members", None) is not None


def forward(model: nn.Module, X: torch.Tensor, return_hidden: bool = False, h0: torch.Tensor | None = None):
    """``X (S, B, T, I)`` -> logits ``(S, B, C)`` (and hidden ``(S, B, T, H)``) for an ensemble of
    S members, or for a plain model with S = 1. ``h0``: a recurrent model's initial states
    ``(S, B, L, H)`` (:meth:`lnbench.nn.recurrent.RecurrentClassifier.initial_states`), or None."""
    extra = {} if h0 is None else {"h0": h0 if is_ensemble(model) else h0[0]}
    if is_ensemble(model):
        return model(X, return_hidden=return_hidden, **extra)
    out = model(X[0], return_hidden=return_hidden, **extra)
    return tuple(o.unsqueeze(0) for o in out) if return_hidden else out.unsqueeze(0)


def per_member(model: nn.Module, t: torch.Tensor) -> torch.Tensor:
    """A parameter-shaped tensor with its member axis first: ``(S, ...)`` (a view)."""
    return t if is_ensemble(model) else t.unsqueeze(0)


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per member: logits ``(S, B, C)``, y ``(S, B)`` -> ``(S,)`` nats."""
    return F.cross_entropy(logits.transpose(1, 2), y, reduction="none").mean(dim=1)
