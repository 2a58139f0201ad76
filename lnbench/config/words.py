"""Lists in words, as the config's descriptions and messages write them: ``a, b or c``."""

from __future__ import annotations

from collections.abc import Sequence

from lnbench.names.options import joined

__all__ = ["described", "joined"]


def described(entries: Sequence[tuple[str, str]], word: str = "or") -> str:
    """Registry members with what each is, in their order: ``a (what a is), b (...) or c (...)``
    (one without a description as its name alone)."""
    return joined([f"{name} ({text})" if text else name for name, text in entries], word)
