"""Configuration: the typed schema (pydantic), YAML 1.2 loading, ``--set`` overrides and the
checks of a whole experiment. ``from lnbench.config import RunConfig, load_config`` is the API.

The schema is imported on first use of one of its names (pydantic takes a while): ``ConfigError``
and ``MAX_SEED`` come from :mod:`lnbench.config.limits`, so that the command line's ``--help``
does not import it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lnbench.config.limits import MAX_SEED, ConfigError

#: each lazily exported name -> the module of lnbench.config that defines it
_HOMES = {
    "DataConfig": "data",
    "MAX_INPUT": "data",
    "ModelConfig": "model",
    "TrainConfig": "train",
    "DEFAULT_NUM_SEEDS": "schema",
    "CompareConfig": "schema",
    "LauncherConfig": "schema",
    "RunConfig": "schema",
    "SweepConfig": "schema",
    "apply_overrides": "load",
    "load_config": "load",
}

if TYPE_CHECKING:
    from lnbench.config.data import MAX_INPUT, DataConfig
    from lnbench.config.load import apply_overrides, load_config
    from lnbench.config.model import ModelConfig
    from lnbench.config.schema import DEFAULT_NUM_SEEDS, CompareConfig, LauncherConfig, RunConfig, SweepConfig
    from lnbench.config.train import TrainConfig

__all__ = [
    "DEFAULT_NUM_SEEDS",
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
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(f"lnbench.config.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'lnbench.config' has no attribute {name!r}")
