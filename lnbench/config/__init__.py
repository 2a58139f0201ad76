"""Configuration: the typed schema (pydantic), YAML 1.2 loading, ``--set`` overrides and the
checks of a whole experiment. ``from lnbench.config import RunConfig, load_config`` is the API."""

from lnbench.config.schema import (
    DEFAULT_NUM_SEEDS,
    FAMILY_KEYS,
    MAX_INPUT,
    MAX_SEED,
    CompareConfig,
    ConfigError,
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
