"""The optimizer and the learning-rate schedule of ``train``: torch's own, built from the config.

- :func:`build_optimizer`: ``train.optimizer`` as ``torch.optim.Adam``, ``AdamW``, ``SGD`` or
  ``RMSprop`` (``foreach=True``: one op per step over all tensors, the same values), with
  ``train.lr`` (or ``train.lr_by_batch_size``'s rate at the run's batch size: ``TrainConfig.batch_lr``),
  ``train.weight_decay`` and, for SGD and RMSprop, ``train.momentum`` (SGD:
  ``train.nesterov``).
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

import torch
from torch.optim import lr_scheduler

from lnbench.config import TrainConfig


def build_optimizer(params: Iterable[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.Optimizer:
    """``cfg.optimizer`` over ``params`` (see the module docstring).

    Raises:
        ValueError: torch's own, for settings the config's checks let through (none known).
    """
    lr, decay = cfg.batch_lr, cfg.weight_decay  # lr_by_batch_size's rate at this batch size, else lr
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=decay, foreach=True)
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=decay, foreach=True)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=lr, momentum=cfg.momentum, nesterov=cfg.nesterov, weight_decay=decay, foreach=True
        )
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, momentum=cfg.momentum, weight_decay=decay, foreach=True)
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
