"""Hydra's grid syntax for ``lnbench sweep``: ``-g KEY=V1,V2,...`` (repeatable) builds ``sweep.grid``.

Each ``-g`` names one config key (``section.key``, as in ``--set``) and its values separated by
commas, each value read as YAML 1.2 (:mod:`lnbench.config.yaml12`): ``-g train.lr=1e-3,1e-2`` is
``{train.lr: [0.001, 0.01]}``; a value that is itself a list is bracketed
(``-g compare.norms=[none,layer],[layer]``), and a comma inside brackets, braces or quotes does
not split. ``-g a=... -g b=...`` is ``{a: [...], b: [...]}`` in that order: the same grid as the
YAML mapping ``--set "sweep.grid={a: [...], b: [...]}"``.

Combined with a ``sweep.grid`` from the config file or ``--set`` (the rule, documented in
docs/cli.md): the grids merge; a key given with ``-g`` replaces that key's values (in its place),
a new key is added after the others, like ``--set`` over the file.
"""

from __future__ import annotations

from typing import Any

import yaml

from lnbench.config import yaml12
from lnbench.config.schema import ConfigError, RunConfig

_OPEN, _CLOSE = "[{", "]}"


def check_brackets(text: str, what: str) -> None:
    """Raise ConfigError naming the column of the first bracket or brace that does not match
    (an opening one never closed, or a closing one never opened), or of an unclosed quote."""
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
    if quote is not None:
        raise ConfigError(f"{what}: the quote {quote[0]} at column {quote[1] + 1} of {text!r} is never closed")
    if stack:
        ch, i = stack[-1]
        closing = _CLOSE[_OPEN.index(ch)]
        raise ConfigError(f"{what}: unbalanced {ch!r} at column {i + 1} of {text!r} (no closing {closing!r})")


def parse_grid_args(items: list[str]) -> dict[str, list[Any]]:
    """``["train.lr=1e-3,1e-2", "model.norm=none,layer"]`` -> ``{"train.lr": [0.001, 0.01],
    "model.norm": ["none", "layer"]}``.

    Raises:
        ConfigError: an item without ``KEY=``, an empty value list, a key given twice, an
            unbalanced bracket, brace or quote (with its column), or a value YAML cannot read.
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
        check_brackets(values, what)
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
        ConfigError: the merged grid is not a valid config (one line, naming ``source``).
    """
    if not grid:
        return cfg
    merged = dict(cfg.sweep.grid or {})
    merged.update(grid)  # an existing key keeps its place, a new one goes last
    raw = cfg.model_dump(mode="python")
    raw["sweep"]["grid"] = merged
    try:
        return RunConfig.model_validate(raw)
    except ValueError as exc:
        raise ConfigError(f"{source}: sweep.grid: {exc}") from None
