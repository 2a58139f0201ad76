"""The names of model families and norm kinds, how tables and figures show them, and which
cells train their seeds as one ensemble.

Pure data, no torch: the config schema and the command line read it without importing the
models (``lnbench --help`` answers at once). :data:`lnbench.nn.norms.NORMS` adds each kind's layer.
"""

from __future__ import annotations

#: The model families: config name -> label in tables, legends and verdicts.
FAMILIES = {"rnn": "RNN", "lstm": "LSTM", "transformer": "Transformer (pre-norm)"}

#: The norm kinds: config name -> (label, plot colour). One colour per norm in every figure.
NORM_NAMES = {
    "none": ("NoNorm", "tab:gray"),
    "batch": ("BatchNorm", "tab:orange"),
    "layer": ("LayerNorm", "tab:blue"),
    "rms": ("RMSNorm", "tab:green"),
    "weight": ("WeightNorm", "tab:purple"),
}
NORM_KINDS = tuple(NORM_NAMES)


def family_label(family: str) -> str:
    """``"rnn"`` -> ``"RNN"``; an unknown family as given."""
    return FAMILIES.get(family, family)


def model_label(family: str, norm_placement: str | None = None, norm_gain_init: float | None = None) -> str:
    """The group a row is compared in: ``"RNN (separate)"`` for an RNN with its placement, else
    :func:`family_label` (``"Transformer (pre-norm)"``); with a set ``model.norm_gain_init``
    ``"LSTM, gains 0.1"`` (None: each paper's gains, not named)."""
    label = f"{family_label(family)} ({norm_placement})" if norm_placement and family == "rnn" else family_label(family)
    return label if norm_gain_init is None else f"{label}, gains {norm_gain_init:g}"


def model_group_of(family: str, norm_placement: str | None = None, norm_gain_init: float | None = None) -> str:
    """The group a row is compared in: its model family, for an RNN its norm placement
    (``"rnn-separate"``), and a set initial gain (``"lstm@0.1"``); each group is compared on its
    own, with its own Holm family (norms are compared at one initial gain)."""
    group = f"{family}-{norm_placement}" if family == "rnn" and norm_placement else family
    return group if norm_gain_init is None else f"{group}@{norm_gain_init:g}"


def group_label(group: str) -> str:
    """:func:`model_label` of a :func:`model_group_of` key: ``"rnn-separate@0.1"`` ->
    ``"RNN (separate), gains 0.1"``; ``"transformer"`` -> ``"Transformer (pre-norm)"``."""
    base, _, gain = group.partition("@")
    family, _, placement = base.partition("-")
    return model_label(family, placement or None, float(gain) if gain else None)


def norm_label(kind: str) -> str:
    """The display name of a norm kind (``"layer"`` -> ``"LayerNorm"``); unknown kinds as given."""
    return NORM_NAMES[kind][0] if kind in NORM_NAMES else kind


def norm_color(kind: str) -> str | None:
    """The plot colour of a norm kind (None for an unknown kind)."""
    return NORM_NAMES[kind][1] if kind in NORM_NAMES else None


def plural(n: int, word: str) -> str:
    """``"1 run"``, ``"2 runs"``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


#: The norm kinds without a gain on activations: ``model.norm_gain_init`` changes nothing in them.
GAINLESS_NORMS = ("none", "weight")


def paper_gain_init(family: str, norm: str) -> float | None:
    """The initial gain of a model's norms in its paper (what ``model.norm_gain_init: null`` gives):
    0.1 for the BN-LSTM (Cooijmans et al. 2016, section 4.2), 1 otherwise (Ba et al. 2016;
    PyTorch's); None for a norm without a gain (:data:`GAINLESS_NORMS`)."""
    if norm in GAINLESS_NORMS:
        return None
    return 0.1 if (family, norm) == ("lstm", "batch") else 1.0


#: The norms a Transformer seed ensemble has (weight norm has no member-axis form).
TRANSFORMER_ENSEMBLE_NORMS = ("none", "batch", "layer", "rms")

#: The largest batch size at which a Transformer cell trains its seeds as one ensemble: above it a
#: step is compute, not per-op overhead, and an ensemble does not pay (docs/speed.md).
TRANSFORMER_ENSEMBLE_MAX_BATCH = 16


def seeds_train_together(family: str, norm: str, batch_size: int) -> bool:
    """Whether the seeds of a cell of this family, norm and batch size train as one ensemble
    (one model with a member axis): always for the RNN and the LSTM; for the Transformer up to
    batch size :data:`TRANSFORMER_ENSEMBLE_MAX_BATCH` with a norm in
    :data:`TRANSFORMER_ENSEMBLE_NORMS`. See :func:`lnbench.experiments.base.ensemble_mechanism`."""
    if family in ("rnn", "lstm"):
        return True
    return batch_size <= TRANSFORMER_ENSEMBLE_MAX_BATCH and norm in TRANSFORMER_ENSEMBLE_NORMS
