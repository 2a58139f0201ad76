"""The ``train`` section of the config: a torch optimizer and a per-epoch learning-rate schedule
on cross-entropy (:mod:`lnbench.training.optim`)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, model_validator

from lnbench.config.optimizers import LR_SCHEDULES, OPTIMIZERS
from lnbench.config.ownership import owners, section_refusals
from lnbench.config.sections import Section
from lnbench.config.words import described, joined
from lnbench.config.yaml12 import show_value

MAX_WEIGHT_DECAY = 1e30  # train.weight_decay's largest: torch's float32 scalar overflows above ~3.4e38


OPTIMIZER_NAMES = tuple(OPTIMIZERS)
SCHEDULE_NAMES = tuple(LR_SCHEDULES)


def _only(key: str) -> str:
    """Whom the ``train`` key ``key`` applies to, as its description begins: ``sgd and rmsprop only``,
    ``lr_schedule step only`` (the optimizers and schedules that declare it, :data:`OPTIMIZERS`,
    :data:`LR_SCHEDULES`)."""
    optimizers, schedules = owners("train.optimizer"), owners("train.lr_schedule")
    if f"train.{key}" in optimizers:
        return f"{joined(optimizers[f'train.{key}'], 'and')} only"
    return f"lr_schedule {joined(schedules[f'train.{key}'], 'and')} only"


class TrainConfig(Section):
    """Optimisation: a torch optimizer (Adam by default) and a per-epoch learning-rate schedule on
    cross-entropy (:mod:`lnbench.training.optim`)."""

    epochs: int = Field(
        50,
        ge=1,
        le=100_000,
        description="Epochs: full passes over the training set; at most 100000 (a bound no experiment here comes "
        "near: the shipped configs train 5 to 50).",
    )
    batch_size: int = Field(
        64,
        ge=1,
        description="Mini-batch size B of training (and of BatchNorm's batch-statistics evaluation); <= data.n_train.",
    )
    lr: float = Field(
        1e-3,
        gt=0,
        description="Learning rate (the peak of a schedule); at most ~3e37, where float32 overflows. "
        "lr_by_batch_size replaces it at the batch sizes it lists (a --set train.lr that no run of the plan trains "
        "at is refused).",
    )
    grad_clip: float | None = Field(
        None,
        gt=0,
        description="Maximum global L2 norm of the gradient (as torch.nn.utils.clip_grad_norm_, per seed of "
        "an ensemble); null: no clipping.",
    )
    optimizer: Literal[OPTIMIZER_NAMES] = Field(  # type: ignore[valid-type]
        "adam",
        description=f"The optimizer: {described([(name, info.summary) for name, info in OPTIMIZERS.items()])}. "
        "Each parameter element has its own state, so each seed of an ensemble trains as it would alone.",
    )
    momentum: float = Field(
        0.0, ge=0, lt=1, description=f"{_only('momentum')}: the momentum factor (torch's momentum); 0: none."
    )
    rmsprop_alpha: float = Field(
        0.99,
        gt=0,
        lt=1,
        description=f"{_only('rmsprop_alpha')}: the decay of the mean square of the gradients (torch.optim.RMSprop's "
        "alpha, default 0.99; Cooijmans et al.'s code trains sequential MNIST with Blocks' RMSProp at decay_rate 0.5).",
    )
    nesterov: StrictBool = Field(
        False, description=f"{_only('nesterov')}: Nesterov momentum (torch.optim.SGD's nesterov); needs momentum > 0."
    )
    weight_decay: float = Field(
        0.0,
        ge=0,
        description="Weight decay, every optimizer (torch's weight_decay): an L2 term lambda w added to the "
        f"gradient ({', '.join(n for n, i in OPTIMIZERS.items() if not i.decoupled_decay)}), or decoupled, "
        f"w -= lr lambda w ({', '.join(n for n, i in OPTIMIZERS.items() if i.decoupled_decay)}), on the parameters of "
        "weight_decay_params; 0: none. At most 1e30 (torch takes it as a float32 scalar, which overflows above "
        "~3.4e38).",
    )
    weight_decay_params: Literal["weights", "all"] = Field(
        "weights",
        description="What weight_decay decays: weights (the weights only, as nanoGPT, timm and Hugging Face: "
        "every parameter of 2 or more dimensions per seed that is not a bias; a norm layer's gain gamma and bias "
        "beta, every bias and weight norm's gains g are not decayed, so decay does not pull the gains toward 0 "
        "and away from model.norm_gain_init) or all (every parameter, the norms' gains and biases too: lnbench "
        "before this key). run.json's weight_decay_groups lists both groups. No effect with weight_decay 0.",
    )
    lr_schedule: Literal[SCHEDULE_NAMES] = Field(  # type: ignore[valid-type]
        "constant",
        description="The learning rate per epoch (set once per epoch, before it): "
        + "; ".join(f"{name} ({info.summary})" for name, info in LR_SCHEDULES.items())
        + ".",
    )
    lr_step_epochs: int | None = Field(
        None,
        ge=1,
        description=f"{_only('lr_step_epochs')} (and needed there): the learning rate is multiplied by lr_gamma every "
        "this many epochs (StepLR's step_size); < epochs.",
    )
    lr_gamma: float = Field(
        0.1, gt=0, lt=1, description=f"{_only('lr_gamma')}: the factor of each step (StepLR's gamma)."
    )
    warmup_epochs: int | None = Field(
        None,
        ge=1,
        description=f"{_only('warmup_epochs')} (and needed there): the epochs of linear warm-up; < epochs.",
    )
    lr_by_batch_size: dict[Annotated[int, Field(ge=1)], Annotated[float, Field(gt=0, le=1e30)]] | None = Field(
        None,
        description="The learning rate at each of these batch sizes, e.g. {4: 1e-4, 128: 1e-3}: a run whose "
        "batch_size is listed trains at its rate (metrics.json's lr records it), any other at lr. For a "
        "batch-size comparison in which each batch size has its own rate, chosen beforehand on the validation "
        "split (the config's comments say how); null: lr at every batch size.",
    )
    # One thread is about as fast as two for these tiny models on an idle 2-core machine, and much
    # faster on a busy one (OpenMP threads stall when a core is taken).
    num_threads: int = Field(
        1, ge=1, description="torch threads per run (torch.set_num_threads); 1 is the fastest on a shared machine."
    )

    @property
    def batch_lr(self) -> float:
        """The learning rate this config trains at: ``lr_by_batch_size``'s rate for ``batch_size``
        when it lists it, else ``lr`` (:func:`lnbench.training.optim.build_optimizer`; metrics.json's
        ``lr`` records it per epoch)."""
        return (self.lr_by_batch_size or {}).get(self.batch_size, self.lr)

    @model_validator(mode="before")
    @classmethod
    def _lr_by_batch_size_is_batch_sizes_to_rates(cls, raw: Any) -> Any:
        """One line for the odd entries of ``lr_by_batch_size``: a key that is not an integer batch
        size >= 1 (YAML's true, 4.5, 4.0, null, "04"), a boolean value (pydantic's float would read 1.0);
        the values' bounds are the field's. A key quoted as digits (``'4'``, as a config.yaml written
        before its keys were integers holds them) is that batch size, as a quoted integer is for any
        integer key."""
        table = raw.get("lr_by_batch_size") if isinstance(raw, dict) else None
        if not isinstance(table, dict):
            return raw  # null, or not a mapping: the field's own check says so
        digits = [k for k in table if isinstance(k, str) and re.fullmatch("[1-9][0-9]*", k)]
        if digits:
            twice = [k for k in digits if int(k) in table]
            if twice:
                raise ValueError(f"lr_by_batch_size: batch size {twice[0]} given twice ({twice[0]} and '{twice[0]}')")
            table = {int(k) if k in digits else k: v for k, v in table.items()}
            raw = {**raw, "lr_by_batch_size": table}
        bad = [f"batch size {show_value(k)}" for k in table if isinstance(k, bool) or not isinstance(k, int) or k < 1]
        bad += [f"lr {show_value(v)} at batch size {show_value(k)}" for k, v in table.items() if isinstance(v, bool)]
        if bad:
            raise ValueError(
                f"lr_by_batch_size: {', '.join(bad)}; its keys are batch sizes (integers >= 1) and its values "
                "learning rates (numbers > 0), e.g. {4: 1e-4, 128: 1e-3}"
            )
        return raw

    @model_validator(mode="after")
    def _lr_fits_the_optimizer(self) -> "TrainConfig":
        if self.lr > 1e30:  # checked only where float32 can overflow
            _optimizer_accepts(self.optimizer, self.lr)
        return self

    @model_validator(mode="after")
    def _decay_fits_float32(self) -> "TrainConfig":
        """torch's optimizers take weight_decay as a float32 scalar: above ~3.4e38 their first step raises."""
        if self.weight_decay > MAX_WEIGHT_DECAY:
            raise ValueError(
                f"weight_decay: {self.weight_decay:g} overflows the optimizers' float32 arithmetic; "
                f"give weight_decay <= {MAX_WEIGHT_DECAY:g}"
            )
        return self

    @model_validator(mode="after")
    def _keys_apply(self) -> "TrainConfig":
        """A key of one optimizer or schedule (:data:`lnbench.config.optimizers.OPTIMIZERS`,
        ``LR_SCHEDULES``; :mod:`lnbench.config.ownership`) set to other than its default under
        another would be recorded as if used; the keys a schedule needs must be set."""
        refused = section_refusals("train", self)
        if refused:
            raise ValueError(refused[0][1])
        if self.nesterov and self.momentum == 0:
            raise ValueError("nesterov: needs momentum > 0 (torch.optim.SGD refuses it with momentum 0); set momentum")
        for name, schedule in LR_SCHEDULES.items():
            for key in schedule.needs:  # numbers of epochs: lr_step_epochs, warmup_epochs
                value = getattr(self, key)
                if self.lr_schedule == name and value is None:
                    raise ValueError(f"{key}: lr_schedule {name} needs it; give a number of epochs >= 1")
                if value is not None and value >= self.epochs:
                    raise ValueError(f"{key}: {value}, but epochs is {self.epochs}; it must be < epochs")
        return self


def _optimizer_accepts(optimizer: str, lr: float) -> None:
    """Raise ValueError (``lr: ...``) if one float32 step of ``optimizer`` cannot take ``lr``:
    Adam and AdamW compute lr / (1 - beta1) = 10 lr as a float32 scalar, which overflows above
    ~3.4e37; RMSprop's first step is lr / (sqrt(1 - alpha) + eps) = ~10 lr, infinite above ~3.4e37."""
    import torch

    name = OPTIMIZERS[optimizer].torch_class
    p = torch.nn.Parameter(torch.zeros(1))
    p.grad = torch.ones(1)
    try:
        getattr(torch.optim, name)([p], lr=lr).step()
        problem = None if torch.isfinite(p).all() else "its first step is not finite in float32"
    except (RuntimeError, OverflowError, ValueError) as exc:
        problem = str(exc)
    if problem is not None:
        raise ValueError(f"lr: {optimizer} (torch.optim.{name}) cannot take lr = {lr:g} ({problem}); give lr <= 1e30")
