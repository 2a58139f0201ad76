"""The norm kinds' registry (:data:`NORM_REGISTRY`, one :class:`NormInfo` each): label, colour, layer
class path, the torch-free capabilities, the ``model`` keys of a norm's own (:class:`NormOption`)
and the check of its options. :data:`lnbench.nn.registry.NORMS` adds each kind's layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lnbench.names.options import KeyOption


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


#: A ``model`` key of one norm kind's own (GroupNorm's ``norm_groups``), declared once, in the
#: kind's registry entry (:attr:`NormInfo.options`); the layer reads it with
#: ``model_cfg.norm_option(key)`` in its ``from_config``. A constraint across keys (it must divide
#: ``hidden_size``) is the entry's ``check``. A norm's options are always ``added`` keys.
NormOption = KeyOption


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
    def normalizes(self) -> bool:
        """It normalizes something: a layer on summed inputs, or the weights (every kind but none)."""
        return self.layer is not None or self.reparametrizes_weights

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
        if not self.normalizes:
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
            ),
            "batch_norm_population": NormOption(
                str,
                "running",
                "With norm batch only: the statistics eval mode normalizes with. running: the running averages "
                "of training (PyTorch's momentum rule); recomputed: after every epoch, before evaluation, the "
                "population statistics of one pass over the training data in training mode without updating "
                "the weights, each statistic (each timestep's, in a recurrence) the mean of the batch statistics "
                "(Cooijmans et al. 2016, section 4); test_acc_running_stats then records the accuracy with the "
                "running averages beside it. Training is the same for both.",
                choices=("running", "recomputed"),
            ),
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


#: The norm kinds without a gain on activations: ``model.norm_gain_init`` changes nothing in them.
GAINLESS_NORMS = tuple(kind for kind, info in NORM_REGISTRY.items() if not info.has_gain)


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
