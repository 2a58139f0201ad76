"""The optimizers and learning-rate schedules that ``train.optimizer`` and ``train.lr_schedule``
name: one entry each, with what the config needs of it, its ``train`` keys of its own among them
(declared once, as a norm kind declares its options: :mod:`lnbench.config.ownership` reads them).
:mod:`lnbench.training.optim` builds them. Pure data: no torch, no pydantic."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OptimizerInfo:
    """One optimizer ``train.optimizer`` names.

    Attributes:
        torch_class: its class in ``torch.optim``.
        summary: what it is, in ``train.optimizer``'s description.
        keys: the ``train`` keys that apply to it (and the optimizers that list them) alone.
        decoupled_decay: ``train.weight_decay`` is decoupled from the gradient (AdamW), not an L2 term.
    """

    torch_class: str
    summary: str
    keys: tuple[str, ...] = ()
    decoupled_decay: bool = False


@dataclass(frozen=True)
class ScheduleInfo:
    """One learning-rate schedule ``train.lr_schedule`` names.

    Attributes:
        summary: what it does, in ``train.lr_schedule``'s description.
        keys: the ``train`` keys that apply to it alone.
        needs: those of its keys it cannot do without (no default works): a config must set them.
    """

    summary: str
    keys: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()


#: The optimizers: ``train.optimizer``'s name -> its entry, Adam (the default) first.
OPTIMIZERS: dict[str, OptimizerInfo] = {
    "adam": OptimizerInfo("Adam", "torch.optim.Adam, default betas"),
    "adamw": OptimizerInfo(
        "AdamW", "torch.optim.AdamW: weight_decay decoupled from the gradient", decoupled_decay=True
    ),
    "sgd": OptimizerInfo("SGD", "torch.optim.SGD, with momentum and nesterov", keys=("momentum", "nesterov")),
    "rmsprop": OptimizerInfo(
        "RMSprop", "torch.optim.RMSprop, with rmsprop_alpha and momentum", keys=("momentum", "rmsprop_alpha")
    ),
}

#: The learning-rate schedules: ``train.lr_schedule``'s name -> its entry, constant (the default) first.
LR_SCHEDULES: dict[str, ScheduleInfo] = {
    "constant": ScheduleInfo("lr"),
    "cosine": ScheduleInfo(
        "torch.optim.lr_scheduler.CosineAnnealingLR over the epochs: epoch e trains at lr (1 + cos(pi (e - 1) / "
        "epochs)) / 2"
    ),
    "step": ScheduleInfo(
        "StepLR: lr times lr_gamma every lr_step_epochs epochs",
        keys=("lr_step_epochs", "lr_gamma"),
        needs=("lr_step_epochs",),
    ),
    "warmup_cosine": ScheduleInfo(
        "LinearLR then CosineAnnealingLR in a SequentialLR: epoch e <= warmup_epochs trains at lr e / "
        "(warmup_epochs + 1), then cosine from lr over the remaining epochs",
        keys=("warmup_epochs",),
        needs=("warmup_epochs",),
    ),
}
