"""Config YAML read the way YAML 1.2 (core schema) reads it, with duplicate keys refused.

PyYAML implements YAML 1.1, whose implicit types surprise in a config file: ``seed: 010`` is
octal 8, ``0b11`` is 3, ``1:20`` is 80 (base 60), ``yes`` / ``on`` are booleans, ``2024-01-01``
is a date, while ``1e-3`` (no dot) is a string. :class:`Loader` resolves plain scalars with the
YAML 1.2 core schema instead:

- int: ``[-+]?[0-9]+`` (base 10, so ``010`` is 10), ``0o[0-7]+``, ``0x[0-9a-fA-F]+``;
- float: ``[-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)?``, ``.inf``, ``.nan``;
- bool: ``true`` / ``false`` (any of three casings); null as before;
- everything else (``0b11``, ``1_000``, ``1:20``, ``yes``, ``2024-01-01``) is a string, which
  the schema then refuses where it expects a number or a boolean.

A mapping that repeats a key raises :class:`DuplicateKeyError` naming the key and both lines
(YAML 1.1 and PyYAML keep the last one silently, dropping a whole section if it is repeated).

The other way round, :func:`show_value` writes a value into a message as YAML 1.2 spells it.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Hashable
from typing import Any

import yaml

_BOOL, _INT, _FLOAT, _TIMESTAMP = (f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "timestamp"))


class DuplicateKeyError(yaml.YAMLError):
    """A mapping repeats a key; ``key``, ``first_line`` and ``line`` (1-based) say where."""

    def __init__(self, key: object, first_line: int, line: int) -> None:
        super().__init__(f"duplicate key {key!r} at lines {first_line} and {line}")
        self.key, self.first_line, self.line = key, first_line, line


class Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 core-schema scalars and duplicate keys refused."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise DuplicateKeyError(key, seen[key], line)
                    seen[key] = line
                except TypeError:  # an unhashable key: SafeLoader's own error follows
                    pass
        return super().construct_mapping(node, deep=deep)


def _construct_int(loader: Loader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    body = text.lstrip("+-")
    base = 16 if body[:2] in ("0x", "0X") else 8 if body[:2] == "0o" else 10
    return int(text, base)


Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT, _TIMESTAMP)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
Loader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
Loader.add_constructor(_INT, _construct_int)


def load(text: str) -> Any:
    """Parse one YAML document with :class:`Loader` (YAML 1.2 core scalars, no duplicate keys).

    Raises:
        DuplicateKeyError: a mapping repeats a key.
        yaml.YAMLError: invalid YAML.
    """
    return yaml.load(text, Loader=Loader)  # noqa: S506  Loader is a SafeLoader


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
            plain = x == x.strip() and load(f"[{x}]") == [x]
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
