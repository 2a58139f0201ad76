"""The optimizer and the learning-rate schedule of ``train``: torch's own, built from the config.

- :func:`build_optimizer`: ``train.optimizer`` as ``torch.optim.Adam``, ``AdamW``, ``SGD`` or
  ``RMSprop``, with
  ``train.lr`` (or ``train.lr_by_batch_size``'s rate at the run's batch size: ``TrainConfig.batch_lr``),
  ``train.weight_decay`` and, for SGD and RMSprop, ``train.momentum`` (SGD:
  ``train.nesterov``).
  A plain model (a cell whose seeds train one after another: the MLP, a large LSTM, a Transformer
  above batch size 16) steps with Adam, AdamW and SGD fused (``fused=True``: one pass over each
  tensor; the MLP's 1.8M parameters step in 1.45 ms instead of 5.4 with ``foreach=True``; it rounds
  differently, ~1e-6 apart after 200 steps). A seed ensemble steps ``foreach`` (one op per step over
  all tensors): the fused kernel rounds an element by its place in the tensor (vector lanes or the
  scalar tail), so a member of a stacked ``(S, ...)`` parameter would not step as its ensemble of
  one does, bit for bit. RMSprop, which has no fused form, is always ``foreach``.
- :func:`decay_groups`: which parameters ``train.weight_decay`` decays. With
  ``train.weight_decay_params: weights`` (the default) the weights only: every parameter of two or
  more dimensions per member that is not a bias or a norm layer's (nanoGPT's
  ``configure_optimizers``, timm, Hugging Face). A norm layer's ``gamma`` and ``beta``
  (:class:`lnbench.nn.base.Norm`, whatever their shape), every ``bias`` and weight norm's gains
  ``g`` (one value per row) go to a second group with ``weight_decay`` 0, so decay does not pull
  the gains the study is about toward 0 (and away from ``model.norm_gain_init``). ``all`` decays
  every parameter (lnbench before this key). Judged per member: a seed ensemble's parameters have
  a leading member axis (a norm's gamma is ``(S, 1, D)``, a bias ``(S, 1, H)``), and it gets the
  groups of its model alone.
- :func:`build_scheduler`: ``train.lr_schedule`` as a ``torch.optim.lr_scheduler`` stepped once
  per epoch, after it (so epoch e, 1-based, trains at the schedule's value after e - 1 steps):

  ====================  ==========================================================================
  constant              none: every epoch at ``lr``
  cosine                ``CosineAnnealingLR(T_max=E)``: ``lr (1 + cos(pi (e - 1) / E)) / 2``
  step                  ``StepLR(step_size=k, gamma)``: ``lr gamma^floor((e - 1) / k)``
  warmup_cosine         ``SequentialLR`` of ``LinearLR(1 / (W + 1), 1, total_iters=W)`` and
                        ``CosineAnnealingLR(T_max=E - W)``: ``lr e / (W + 1)`` for e <= W, then
                        ``lr (1 + cos(pi (e - 1 - W) / (E - W))) / 2``
  ====================  ==========================================================================

  (E = ``train.epochs``, k = ``train.lr_step_epochs``, W = ``train.warmup_epochs``.)

Seed ensembles: every one of these optimizers updates each parameter element from that element's
own gradient and state (AdamW's decoupled decay and SGD's weight decay are elementwise too), and
the schedule sets one learning rate for all, so a member of a stacked ensemble (parameters
``(S, ...)``) takes the same steps as its model alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.optim import lr_scheduler

from lnbench.config import TrainConfig
from lnbench.nn.base import Norm
from lnbench.training.ensemble import is_ensemble


def decays(model: nn.Module, name: str) -> bool:
    """Whether the parameter ``name`` of ``model`` is a weight that ``weight_decay_params: weights``
    decays: not a norm layer's (:class:`lnbench.nn.base.Norm`), not a ``bias``, and of two or
    more dimensions per member (weight norm's gains ``g`` are one per row)."""
    owner, _, leaf = name.rpartition(".")
    if isinstance(model.get_submodule(owner), Norm) or leaf == "bias":
        return False
    member_axis = getattr(model, "members", None) is not None  # a seed ensemble: (S, ...)
    return model.get_parameter(name).dim() - member_axis >= 2


def decay_groups(model: nn.Module, cfg: TrainConfig) -> dict[str, list[str]]:
    """The names of ``model``'s parameters that ``cfg.weight_decay`` decays (``decay``) and does not
    (``no_decay``), each in ``named_parameters`` order (see the module docstring); with
    ``weight_decay_params: all`` every name is in ``decay``. run.json's ``weight_decay_groups``
    (at ``weight_decay`` 0 neither group is decayed)."""
    names = [n for n, _ in model.named_parameters()]
    if cfg.weight_decay_params == "all":
        return {"decay": names, "no_decay": []}
    return {"decay": [n for n in names if decays(model, n)], "no_decay": [n for n in names if not decays(model, n)]}


def param_groups(model: nn.Module, cfg: TrainConfig) -> list[dict[str, Any]]:
    """torch's parameter groups of :func:`decay_groups`: ``[{"params": decay}, {"params": no_decay,
    "weight_decay": 0.0}]``; one group of every parameter, in ``named_parameters`` order, when every
    parameter is decayed or ``weight_decay`` is 0 (what ``torch.optim.Adam(model.parameters())``
    makes, so a checkpoint of such a run loads as before)."""
    params = dict(model.named_parameters())
    groups = decay_groups(model, cfg)
    if not groups["no_decay"] or cfg.weight_decay == 0:
        return [{"params": list(params.values())}]
    return [
        {"params": [params[n] for n in groups["decay"]]},
        {"params": [params[n] for n in groups["no_decay"]], "weight_decay": 0.0},
    ]


def state_names(model: nn.Module, opt: torch.optim.Optimizer) -> list[str]:
    """The parameter names of ``model`` in the order of ``opt.state_dict()``'s integer keys (its
    groups' parameters one group after the other), to save and restore its state by name."""
    names = {id(p): n for n, p in model.named_parameters()}
    return [names[id(p)] for group in opt.param_groups for p in group["params"]]


def build_optimizer(model: nn.Module | Iterable[nn.Parameter], cfg: TrainConfig) -> torch.optim.Optimizer:
    """``cfg.optimizer`` over ``model``'s parameters in the groups of :func:`param_groups` (see the
    module docstring); a plain iterable of parameters is one group, every parameter decayed.

    Raises:
        ValueError: torch's own, for settings the config's checks let through (none known).
    """
    params: Any = param_groups(model, cfg) if isinstance(model, nn.Module) else list(model)
    lr, decay = cfg.batch_lr, cfg.weight_decay  # lr_by_batch_size's rate at this batch size, else lr
    ensemble = isinstance(model, nn.Module) and is_ensemble(model)
    fused = not ensemble  # the module docstring
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=decay, fused=fused, foreach=not fused)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=decay, fused=fused, foreach=not fused)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params,
            lr=lr,
            momentum=cfg.momentum,
            nesterov=cfg.nesterov,
            weight_decay=decay,
            fused=fused,
            foreach=not fused,
        )
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(
            params, lr=lr, alpha=cfg.rmsprop_alpha, momentum=cfg.momentum, weight_decay=decay, foreach=True
        )
    raise ValueError(f"train.optimizer: {cfg.optimizer!r}; allowed: adam, adamw, sgd, rmsprop")


def build_scheduler(opt: torch.optim.Optimizer, cfg: TrainConfig) -> lr_scheduler.LRScheduler | None:
    """``cfg.lr_schedule`` on ``opt``, to be stepped once after every epoch; None for constant
    (the optimizer's lr is then never touched)."""
    E = cfg.epochs
    if cfg.lr_schedule == "constant":
        return None
    if cfg.lr_schedule == "cosine":
        return lr_scheduler.CosineAnnealingLR(opt, T_max=E)
    if cfg.lr_schedule == "step":
        assert cfg.lr_step_epochs is not None  # the config requires it
        return lr_scheduler.StepLR(opt, step_size=cfg.lr_step_epochs, gamma=cfg.lr_gamma)
    if cfg.lr_schedule == "warmup_cosine":
        assert cfg.warmup_epochs is not None
        W = cfg.warmup_epochs
        warmup = lr_scheduler.LinearLR(opt, start_factor=1 / (W + 1), end_factor=1.0, total_iters=W)
        cosine = lr_scheduler.CosineAnnealingLR(opt, T_max=E - W)
        return lr_scheduler.SequentialLR(opt, [warmup, cosine], milestones=[W])
    raise ValueError(f"train.lr_schedule: {cfg.lr_schedule!r}; allowed: constant, cosine, step, warmup_cosine")
