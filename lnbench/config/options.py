"""The schema's fields of the keys that registry entries own (:class:`lnbench.names.KeyOption`):
a model family's, a norm kind's (``model``) and a task's (``data``), declared once in the entry."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from lnbench.names import KeyOption


def declare(namespace: dict[str, Any], options: dict[str, KeyOption]) -> None:
    """Add ``options`` (registry entries' own keys, :class:`lnbench.names.KeyOption`) to the class
    body ``namespace`` being defined, as fields with their type, default, bounds, allowed values and
    description: a key is declared once, in its entry, and validated here like any key. A key
    already declared (one the RNN and the LSTM share) is not declared again."""
    for key, option in options.items():
        if key in namespace:
            continue
        kind: Any = StrictBool if option.type is bool else option.type  # not 1, "yes"
        kind = Literal[option.choices] if option.choices else kind
        namespace["__annotations__"][key] = kind | None if option.nullable else kind
        namespace[key] = Field(option.default, ge=option.ge, gt=option.gt, le=option.le, description=option.description)
