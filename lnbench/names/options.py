"""A ``model`` key that one registry entry owns (:class:`KeyOption`): a norm kind's
(:attr:`lnbench.names.NormInfo.options`, GroupNorm's ``norm_groups``) or a model family's
(:attr:`lnbench.names.FamilyInfo.options`, the Transformer's ``pos_emb``), declared once, in the
entry; and lists in words (:func:`joined`), as descriptions and messages write them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_SEED = 2**32 - 1  # a seed's largest value: numpy's default_rng and torch.manual_seed both take [0, 2**32)


def joined(values: Sequence[Any], word: str = "or") -> str:
    """``a``; ``a or b``; ``a, b or c`` (``word``: ``or`` or ``and``)."""
    items = [str(v) for v in values]
    return f" {word} ".join(items) if len(items) < 3 else f"{', '.join(items[:-1])} {word} {items[-1]}"


@dataclass(frozen=True)
class KeyOption:
    """A ``model`` key of one registry entry's own, declared once, in the entry: the config schema
    makes it a field of :class:`lnbench.config.model.ModelConfig` (type, default, bounds, allowed
    values, description: the config reference's text), validated there once and trusted after: the
    model reads the validated value (``model_cfg.<key>``; a norm's layer ``model_cfg.norm_option(key)``).
    :mod:`lnbench.config.ownership` refuses it where its owner does not apply.

    Attributes:
        type: its Python type (``int``, ``float``, ``bool``, ``str``).
        default: its value when the config does not set it.
        description: what it does, in the config reference.
        ge, gt, le: bounds of a number (pydantic's ``Field`` constraints), or None.
        choices: the values a ``str`` option allows (a ``Literal`` in the schema), or None.
        nullable: None is allowed too (``d_ff: null``, 4 x hidden_size).
        added: a key added after run folders were first written: a folder whose config.yaml lacks
            it is the run at ``default`` (:data:`lnbench.config.identity.ADDED_KEYS`). A norm
            kind's options always are.
    """

    type: type
    default: Any
    description: str
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] | None = None
    nullable: bool = False
    added: bool = False
