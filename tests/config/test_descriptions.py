"""The config descriptions that list registry members (norms, families, tasks, optimizers,
schedules, experiment kinds) are written from the registries: each names every member, so a new
member cannot be left out (compare.norms once lacked a norm)."""

from __future__ import annotations

import re

import pytest

from lnbench.config import CompareConfig, DataConfig, ModelConfig, RunConfig, TrainConfig
from lnbench.config.optimizers import LR_SCHEDULES, OPTIMIZERS
from lnbench.names import EXPERIMENT_KINDS, FAMILY_NAMES, GAINLESS_NORMS, NORM_KINDS, TASK_NAMES, TASKS


def _names_in(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", text))


@pytest.mark.parametrize(
    ("section", "key", "members"),
    [
        (ModelConfig, "norm", NORM_KINDS),
        (CompareConfig, "norms", NORM_KINDS),
        (ModelConfig, "family", FAMILY_NAMES),
        (CompareConfig, "families", FAMILY_NAMES),
        (DataConfig, "task", TASK_NAMES),
        (DataConfig, "n_val", TASK_NAMES),  # the fixed datasets and the drawn ones
        (DataConfig, "n_train", [t for t in TASK_NAMES if not TASKS[t].seeded]),
        (TrainConfig, "optimizer", list(OPTIMIZERS)),
        (TrainConfig, "weight_decay", list(OPTIMIZERS)),
        (TrainConfig, "lr_schedule", list(LR_SCHEDULES)),
        (ModelConfig, "norm_gain_init", GAINLESS_NORMS),
        (ModelConfig, "input_norm", GAINLESS_NORMS),
        (CompareConfig, "target_acc", list(EXPERIMENT_KINDS)),
        (RunConfig, "seeds", [k for k, info in EXPERIMENT_KINDS.items() if info.seeded]),
    ],
)
def test_a_description_that_lists_registry_members_names_them_all(section, key, members):
    """Oracle: the registry itself (lnbench.names, lnbench.config.optimizers)."""
    assert set(members) - _names_in(section.model_fields[key].description or "") == set()
