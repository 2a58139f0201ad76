"""The names of model families and norm kinds, and how tables and figures show them.

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


def model_label(family: str, norm_placement: str | None = None) -> str:
    """The group a row is compared in: ``"RNN (separate)"`` for an RNN with its placement, else
    :func:`family_label` (``"Transformer (pre-norm)"``)."""
    return f"{family_label(family)} ({norm_placement})" if norm_placement and family == "rnn" else family_label(family)


def norm_label(kind: str) -> str:
    """The display name of a norm kind (``"layer"`` -> ``"LayerNorm"``); unknown kinds as given."""
    return NORM_NAMES[kind][0] if kind in NORM_NAMES else kind


def norm_color(kind: str) -> str | None:
    """The plot colour of a norm kind (None for an unknown kind)."""
    return NORM_NAMES[kind][1] if kind in NORM_NAMES else None


def plural(n: int, word: str) -> str:
    """``"1 run"``, ``"2 runs"``."""
    return f"{n} {word}{'' if n == 1 else 's'}"
