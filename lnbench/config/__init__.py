"""Configuration: the typed schema (pydantic), YAML 1.2 loading, ``--set`` overrides and the
checks of a whole experiment. ``from lnbench.config import RunConfig, load_config`` is the API.

The schema is imported on first use of one of its names (pydantic takes a while): ``ConfigError``
and ``MAX_SEED`` come from :mod:`lnbench.config.limits`, so that the command line's ``--help``
does not import it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lnbench.config.limits import MAX_SEED, ConfigError

if TYPE_CHECKING:
    from lnbench.config.schema import (
        DEFAULT_NUM_SEEDS,
        FAMILY_KEYS,
        MAX_INPUT,
        CompareConfig,
        DataConfig,
        LauncherConfig,
        ModelConfig,
        RunConfig,
        SweepConfig,
        TrainConfig,
        apply_overrides,
        load_config,
    )

__all__ = [
    "DEFAULT_NUM_SEEDS",
    "FAMILY_KEYS",
    "MAX_INPUT",
    "MAX_SEED",
    "CompareConfig",
    "ConfigError",
    "DataConfig",
    "LauncherConfig",
    "ModelConfig",
    "RunConfig",
    "SweepConfig",
    "TrainConfig",
    "apply_overrides",
    "load_config",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from lnbench.config import schema

        return getattr(schema, name)
    raise AttributeError(f"module 'lnbench.config' has no attribute {name!r}")
