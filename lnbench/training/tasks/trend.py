"""The trend task (the default): :func:`lnbench.training.data.make_trend_data` from a data config."""

from __future__ import annotations

from lnbench.config import DataConfig
from lnbench.names import TASKS
from lnbench.training.data import TaskData, make_trend_data


def make(cfg: DataConfig, seed: int = 0) -> TaskData:
    """The trend sequences of ``cfg`` (its trend keys, ``n_train``, ``n_test``) for ``seed``."""
    keys = ("n_train", "n_test", *TASKS["trend"].keys)
    return make_trend_data(**{k: getattr(cfg, k) for k in keys}, seed=seed)
