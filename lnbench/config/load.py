"""Reading a config: YAML loading, ``--set`` overrides and ``--seed``, and the schema's errors as
one line each (``source: key: message (got value)``)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from lnbench.config import yaml12
from lnbench.config.limits import MAX_SEED, ConfigError
from lnbench.config.schema import RunConfig
from lnbench.config.yaml12 import show_value


def _allowed_keys(loc: tuple) -> list[str]:
    section: type[BaseModel] = RunConfig
    for part in loc:
        annotation = section.model_fields[str(part)].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        section = annotation
    return list(section.model_fields)


def _yaml_problem(exc: yaml.YAMLError, line_too: bool = True) -> str:
    """What a YAML parser error says and where: ``at line 2, column 5: expected ...``."""
    mark = getattr(exc, "problem_mark", None)
    where = ""
    if mark is not None:
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if line_too else f" at column {mark.column + 1}"
    problem = getattr(exc, "problem", None)
    return where + (f": {problem}" if problem else "")


def _format_error(source: str, err: ValidationError, given: dict[str, str] | None = None) -> str:
    """One line per schema error: ``source: key: message (got value)``; where a string is wanted and
    YAML read a number, a boolean or a mapping (``:smile:``), how to quote it (``given``: each ``--set``
    key's value as typed, quoted as is)."""
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        head, sep, rest = msg.partition(": ")
        if sep and e["type"] == "value_error" and head in _allowed_keys(e["loc"]):
            key, msg = f"{key}.{head}" if key else head, rest  # a section's check names its key: train.nesterov
        if e["type"] == "extra_forbidden":
            allowed = _allowed_keys(e["loc"][:-1])
            close = difflib.get_close_matches(str(e["loc"][-1]), allowed, n=1)
            msg = "unknown key" + (f" (did you mean {close[0]}?)" if close else "") + f"; allowed: {', '.join(allowed)}"
        elif "input" in e and (not isinstance(e["input"], dict) or e["type"] != "value_error"):
            # a section's own check (value_error) has the whole section as its input: not echoed
            msg += f" (got {show_value(e['input'])})"
            if e["type"] == "string_type" and isinstance(e["input"], (int, float, dict)):
                msg += "; " + _quote_hint(key, e["input"], (given or {}).get(key))
        lines.append(f"{source}: {key}: {msg}" if key else f"{source}: {msg}")
    return "\n".join(lines)


def _quote_hint(key: str, value: Any, typed: str | None) -> str:
    """How to give ``key`` the string YAML read as ``value`` (a number, a boolean, a mapping):
    ``YAML read a number: quote it, name: "2024"``; with ``--set``, ``typed`` (the value as typed):
    ``YAML read a mapping: quote it, --set 'name=":smile:"'``."""
    what = "a boolean" if isinstance(value, bool) else "a mapping" if isinstance(value, dict) else "a number"
    if typed is not None:
        return f"YAML read {what}: quote it, --set '{key}={json.dumps(typed.strip(), ensure_ascii=False)}'"
    if isinstance(value, dict):  # its text is not at hand: say what made it one
        return f"YAML read {what} (a ': ' or a '{{' in the value): quote the value"
    return f'YAML read {what}: quote it, {key.rpartition(".")[2]}: "{str(value).lower() if isinstance(value, bool) else value}"'


def apply_overrides(raw: dict[str, Any], overrides: list[str], source: str = "--set") -> dict[str, Any]:
    """Apply ``key.sub=value`` overrides to a raw config dict (values parsed as YAML).

    Raises:
        ConfigError: for an override without ``=``, one that descends into a non-mapping, or a
            value that starts as YAML (``{``, ``[``, a quote) but does not parse.
    """
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{source}: {item!r}: expected key=value, e.g. train.epochs=5")
        node = raw
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{source}: {key}: {part!r} is not a section")
        try:
            node[parts[-1]] = yaml12.load(value)
        except yaml12.DuplicateKeyError as exc:
            raise ConfigError(f"{source} {key}: {exc}") from None
        except yaml.YAMLError as exc:
            if value.lstrip()[:1] in ("{", "[", '"', "'"):  # meant as YAML (a mapping, a list, a quoted string)
                raise ConfigError(f"{source} {key}: invalid YAML in the value{_yaml_problem(exc, False)}") from None
            node[parts[-1]] = value  # a plain word YAML cannot read (e.g. `x): the string itself
    return raw


def load_config(path: str | Path | None, overrides: list[str] | None = None, seed: int | None = None) -> RunConfig:
    """Load, override and validate a YAML config.

    Args:
        path: a YAML file, or None for the schema defaults.
        overrides: ``key=value`` strings applied after loading (``train.epochs=5``).
        seed: if given, the first seed (``--seed``): it replaces ``seed``, and a ``seeds`` list of k
            seeds becomes ``seed .. seed + k - 1`` (as ``seeds`` unset means ``seed .. seed + 4``).

    Raises:
        ConfigError: unreadable file, invalid YAML, unknown key, wrong type or impossible value,
            or a ``seed`` whose k seeds pass the largest seed; the message is one line naming the
            file and the key.
    """
    source = str(path) if path is not None else "(defaults)"
    raw: Any = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read config: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"{source}: cannot read config: not UTF-8 text") from None
        try:
            raw = yaml12.load(text)
        except yaml12.DuplicateKeyError as exc:
            raise ConfigError(f"{source}: {exc} (YAML would keep only the last one)") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source}: invalid YAML{_yaml_problem(exc)}") from None
        raw = {} if raw is None else raw
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: expected a mapping of sections (data, model, train, ...)")
        for section in ("data", "model", "train", "compare", "sweep", "launcher"):
            if section in raw and raw[section] is None:  # every key commented out: the defaults
                raw[section] = {}
    return validate_config(raw, source, overrides, seed)


def validate_config(
    raw: dict[str, Any], source: str, overrides: list[str] | None = None, seed: int | None = None
) -> RunConfig:
    """A config read as nested dicts (``raw``, from ``source``: a file's name in messages), with
    ``overrides`` and ``seed`` applied as :func:`load_config` applies them, validated.

    Raises:
        ConfigError: as :func:`load_config` (not the file's errors); ``raw`` may have been changed.
    """
    if overrides:
        raw = apply_overrides(raw, overrides)
        source += " (with --set)"
    if seed is not None:
        raw["seed"] = seed
        if isinstance(raw.get("seeds"), list):  # the same number of seeds, from the new first one
            if seed + len(raw["seeds"]) - 1 > MAX_SEED:
                raise ConfigError(
                    f"--seed {seed}: with the {len(raw['seeds'])} seeds of seeds, the last one, "
                    f"{seed + len(raw['seeds']) - 1}, exceeds {MAX_SEED}"
                )
            raw["seeds"] = [seed + k for k in range(len(raw["seeds"]))]
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as err:
        given = {key.strip(): value for key, _, value in (o.partition("=") for o in overrides or [])}
        raise ConfigError(_format_error(source, err, given)) from None
