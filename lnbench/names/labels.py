"""How tables, legends, figures and run folders show the vocabulary: family, model-group and norm
labels, the model groups rows are compared in, plot colours (a user's norm's too), table order
and plurals.
"""

from __future__ import annotations

from collections.abc import Iterable

from lnbench.names.families import FAMILIES, has_placements
from lnbench.names.norms import NORM_KINDS, NORM_NAMES, NORM_REGISTRY
from lnbench.names.user_norms import PLUGIN_NORM, entry_point_norms, is_plugin_norm


def family_label(family: str) -> str:
    """``"rnn"`` -> ``"RNN"``; an unknown family as given."""
    return FAMILIES.get(family, family)


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


def seeds_phrase(seeds: list[int]) -> str:
    """``"0-4"`` for three or more consecutive seeds, else ``"0,2"``."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(s) for s in seeds)


def plural(n: int, word: str) -> str:
    """``"1 run"``, ``"2 runs"``."""
    return f"{n} {word}{'' if n == 1 else 's'}"
