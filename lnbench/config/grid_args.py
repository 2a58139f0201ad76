"""Hydra's grid syntax for ``lnbench sweep``: ``-g KEY=V1,V2,...`` (repeatable) builds ``sweep.grid``.

Each ``-g`` names one config key (``section.key`` of data, model or train, as in ``--set``) and its
values separated by commas, each value read as YAML 1.2 (:mod:`lnbench.config.yaml12`):
``-g train.lr=1e-3,1e-2`` is ``{train.lr: [0.001, 0.01]}``; a comma inside brackets, braces or
quotes does not split, and an empty value (``1e-3,``, ``,1e-3``, ``1e-3,,1e-2``) is refused.
``-g a=... -g b=...`` is ``{a: [...], b: [...]}`` in that order.

Combined with a ``sweep.grid`` from the config file or ``--set`` (the rule, documented in
docs/cli.md): the grids merge, as Hydra's do; a key given with ``-g`` replaces that key's values
(in its place), a new key is added after the others, like ``--set`` over the file. So ``-g`` is
the YAML mapping ``--set "sweep.grid={a: [...], b: [...]}"`` only for a config without a grid
(``--set`` replaces the whole grid); :func:`grid_origins` says which key came from where.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from lnbench.config import yaml12
from lnbench.config.limits import ConfigError
from lnbench.config.schema import GRID_SECTIONS, RunConfig, is_grid_key
from lnbench.config.yaml12 import show_value

_OPEN, _CLOSE = "[{", "]}"


def check_brackets(text: str, what: str) -> list[int]:
    """Raise ConfigError naming the column of the first bracket or brace that does not match
    (an opening one never closed, or a closing one never opened), or of an unclosed quote.
    Returns the indices of the commas outside brackets, braces and quotes (those that split values)."""
    commas: list[int] = []
    stack: list[tuple[str, int]] = []
    quote: tuple[str, int] | None = None
    for i, ch in enumerate(text):
        if quote is not None:
            if ch == quote[0]:
                quote = None
            continue
        if ch in "'\"" and text[:i].rstrip()[-1:] in ("", ",", "[", "{", ":"):  # a quoted value starts
            quote = (ch, i)
        elif ch in _OPEN:
            stack.append((ch, i))
        elif ch in _CLOSE:
            want = _OPEN[_CLOSE.index(ch)]
            if not stack or stack[-1][0] != want:
                opened = f" (the {stack[-1][0]!r} at column {stack[-1][1] + 1} is still open)" if stack else ""
                raise ConfigError(f"{what}: unbalanced {ch!r} at column {i + 1} of {text!r}{opened}")
            stack.pop()
        elif ch == "," and not stack:
            commas.append(i)
    if quote is not None:
        raise ConfigError(f"{what}: the quote {quote[0]} at column {quote[1] + 1} of {text!r} is never closed")
    if stack:
        ch, i = stack[-1]
        closing = _CLOSE[_OPEN.index(ch)]
        raise ConfigError(f"{what}: unbalanced {ch!r} at column {i + 1} of {text!r} (no closing {closing!r})")
    return commas


def parse_grid_args(items: list[str]) -> dict[str, list[Any]]:
    """``["train.lr=1e-3,1e-2", "model.norm=none,layer"]`` -> ``{"train.lr": [0.001, 0.01],
    "model.norm": ["none", "layer"]}``.

    Raises:
        ConfigError: an item without ``KEY=``, an empty value list, an empty value (a comma with
            nothing before or after it, with its column), a key given twice, an unbalanced bracket,
            brace or quote (with its column), or a value YAML cannot read.
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"-g {item!r}: expected KEY=V1,V2,..., e.g. -g train.lr=1e-3,1e-2")
        what = f"-g {key}"
        if key in grid:
            raise ConfigError(f"{what}: given twice; give all its values in one -g {key}=V1,V2,...")
        if not values.strip():
            raise ConfigError(f"{what}: no values; e.g. -g {key}=V1,V2")
        bounds = [-1, *check_brackets(values, what), len(values)]
        for start, end in zip(bounds, bounds[1:]):
            if not values[start + 1 : end].strip():  # YAML would drop a trailing one silently
                where = (
                    f"before the comma at column {end + 1}" if start < 0 else f"after the comma at column {start + 1}"
                )
                raise ConfigError(f"{what}: an empty value {where} of {values!r}; e.g. -g {key}=V1,V2")
        try:
            parsed = yaml12.load(f"[{values}]")
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at column {mark.column}" if mark is not None else ""  # the added '[' is column 1
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError(f"{what}: invalid YAML in the values{where}: {problem}") from None
        if not isinstance(parsed, list) or not parsed:
            raise ConfigError(f"{what}: no values; e.g. -g {key}=V1,V2")
        grid[key] = parsed
    return grid


def with_grid(cfg: RunConfig, grid: dict[str, list[Any]], source: str) -> RunConfig:
    """``cfg`` with ``grid`` merged into its ``sweep.grid`` (the rule in the module docstring).

    Raises:
        ConfigError: a key outside data, model and train (naming its ``-g``), or the merged grid
            is not a valid config (one line, naming ``source``).
    """
    if not grid:
        return cfg
    for key in grid:
        if not is_grid_key(key):
            sections = ", ".join(f"{s}.*" for s in GRID_SECTIONS)
            raise ConfigError(f"-g {key}: not a key a sweep can vary; sweep.grid takes {sections} keys (section.key)")
    merged = dict(cfg.sweep.grid or {})
    merged.update(grid)  # an existing key keeps its place, a new one goes last
    raw = cfg.model_dump(mode="python")
    raw["sweep"]["grid"] = merged
    try:
        return RunConfig.model_validate(raw)
    except ValueError as exc:
        raise ConfigError(f"{source}: sweep.grid: {exc}") from None


def grid_origins(before: dict[str, list[Any]] | None, given: dict[str, list[Any]], source: str) -> str:
    """One line saying where each key of the merged grid came from: ``source`` (the config
    file, or ``--set``) or ``-g`` (added, or replacing the config's values), and its cell count."""
    merged = {**(before or {}), **given}
    parts = []
    for key, values in merged.items():
        if key not in given:
            where = source
        elif before and key in before:
            where = f"-g, replacing {show_value(before[key])}"
        else:
            where = "-g, added" if before else "-g"
        parts.append(f"{key} {show_value(values)} ({where})")
    cells = math.prod(len(v) for v in merged.values())
    head = f"the grid of {source} merged with -g" if before else f"from -g ({source} has none)"
    return f"sweep.grid: {head}, {cells} {'cell' if cells == 1 else 'cells'}: {'; '.join(parts)}"
