"""Lists in words, as the config's descriptions and messages write them: ``a, b or c``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def joined(values: Sequence[Any], word: str = "or") -> str:
    """``a``; ``a or b``; ``a, b or c`` (``word``: ``or`` or ``and``)."""
    items = [str(v) for v in values]
    return f" {word} ".join(items) if len(items) < 3 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def described(entries: Sequence[tuple[str, str]], word: str = "or") -> str:
    """Registry members with what each is, in their order: ``a (what a is), b (...) or c (...)``
    (one without a description as its name alone)."""
    return joined([f"{name} ({text})" if text else name for name, text in entries], word)
