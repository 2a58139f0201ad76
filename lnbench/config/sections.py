"""What every section of the config schema shares: the :class:`Section` base (unknown keys and
YAML's booleans as numbers refused), the value types that name a registry member (a norm, a
family, a task) or a seed, and the check that a list has no repeats."""

from __future__ import annotations

import math
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from lnbench.config.limits import MAX_SEED
from lnbench.config.yaml12 import show_value
from lnbench.names import FAMILY_REGISTRY, NORM_KINDS, TASK_NAMES, is_plugin_norm


def _known_norm(name: str) -> str:
    """A norm kind of :data:`lnbench.names.NORM_KINDS`, or a user's own norm class
    ``"package.module:ClassName"`` (imported and checked when the models are built:
    :func:`lnbench.nn.registry.norm_kind`, and before any run by the experiments' checks)."""
    if name not in NORM_KINDS and not is_plugin_norm(name):
        names = [f"'{n}'" for n in NORM_KINDS]
        raise ValueError(
            f"Input should be {', '.join(names[:-1])} or {names[-1]}, or a norm class 'package.module:ClassName'"
        )
    return name


Norm = Annotated[str, AfterValidator(_known_norm)]  # the registry in lnbench.names, or a user's class
TaskName = Literal[TASK_NAMES]  # type: ignore[valid-type]


def _known_family(name: str) -> str:
    """A name of the family registry (:data:`lnbench.names.FAMILY_REGISTRY`, which a test or a
    user may extend before a config is read)."""
    if name not in FAMILY_REGISTRY:
        names = [f"'{n}'" for n in FAMILY_REGISTRY]
        raise ValueError(f"Input should be {', '.join(names[:-1])} or {names[-1]}")
    return name


Family = Annotated[str, AfterValidator(_known_family)]  # a name of the registry in lnbench.names

Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


_NUMERIC = (int, float, int | None, float | None)


def _float_for_int(annotation: Any, value: Any) -> float | None:
    """The first float in ``value`` where ``annotation`` wants an int (``int``, ``int | None``,
    ``list[int]``, a mapping's values; a mapping's keys are its own validator's), else None."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _float_for_int(args[0], value)
    if annotation is int:
        return value if isinstance(value, float) else None
    if origin in (Union, UnionType):
        kinds = [a for a in args if a is not type(None)]
        if value is None or float in kinds:
            return None
        return next((f for f in (_float_for_int(a, value) for a in kinds) if f is not None), None)
    items = value if origin is list and isinstance(value, list) else []
    if origin is dict and isinstance(value, dict):
        items, args = list(value.values()), args[1:]
    return next((f for f in (_float_for_int(args[0], v) for v in items) if f is not None), None)


def _integer_problem(key: str, value: Any, annotation: Any) -> str | None:
    """One rule for every integer key: a float is refused, a whole one too (YAML 1.2 reads ``1e3``
    and ``1000.0`` as floats), with the integer to write instead: ``epochs: expected an integer,
    got 1000.0 (YAML reads 1e3 and 1000.0 as floats); write 1000``."""
    found = _float_for_int(annotation, value)
    if found is None:
        return None
    where = f"{show_value(found)}" if found is value else f"{show_value(found)} in {show_value(value)}"
    whole = math.isfinite(found) and found.is_integer()
    hint = f" (YAML reads 1e3 and 1000.0 as floats); write {int(found)}" if whole else ""
    return f"{key}: expected an integer, got {where}{hint}"


class Section(BaseModel):
    """A section of the config (``data``, ``model``, ...): an unknown key is an error, and so are
    inf and NaN (no learning rate or noise level; NaN is rejected by the bounds already)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, raw: Any) -> Any:
        """YAML's yes/no/on/off/true are booleans, which pydantic would turn into 1 and 0; and a
        float where an integer is wanted, which pydantic would take when it is whole
        (:func:`_integer_problem`)."""
        if isinstance(raw, dict):
            for key, value in raw.items():
                field = cls.model_fields.get(key)
                if isinstance(value, bool) and field is not None and field.annotation in _NUMERIC:
                    raise ValueError(f"{key}: expected a number, got the boolean {str(value).lower()}")
                if isinstance(value, list) and any(isinstance(v, bool) for v in value):
                    raise ValueError(f"{key}: expected a list of numbers or names, got a boolean in {value}")
                problem = _integer_problem(key, value, field.annotation) if field is not None else None
                if problem is not None:
                    raise ValueError(problem)
        return raw


def unique(values: list, key: str) -> list:
    """``values`` if no entry repeats; else ValueError naming ``key`` and the list."""
    if len(set(values)) != len(values):
        raise ValueError(f"{key}: duplicate entries in {values}")
    return values
