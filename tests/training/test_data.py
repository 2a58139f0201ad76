"""lnbench.training.data: the validation split carved out of the training data by its own fixed generator
(oracle: the task's data without a split, whose training sequences are exactly the validation and
training sequences, at disjoint positions)."""

from __future__ import annotations

import pytest
import torch

from lnbench.config import DataConfig
from lnbench.training.data import carve_validation, validation_positions
from lnbench.training.tasks import make_task_data

TASKS = {
    "trend": dict(task="trend", n_train=60, n_test=20, seq_len=4, features=3),
    "adding": dict(task="adding", n_train=60, n_test=20, seq_len=6),
    "digits": dict(task="digits", n_train=300, n_test=50),
}


def _rows(X):
    return {tuple(x.flatten().tolist()) for x in X}


@pytest.mark.parametrize("task", list(TASKS))
def test_the_split_is_carved_from_the_training_data_and_disjoint(task):
    keys = TASKS[task]
    whole = make_task_data(DataConfig(**keys), seed=3)
    split = make_task_data(DataConfig(**keys, n_val=15), seed=3)
    assert whole.X_val is None and split.X_val is not None and split.y_val is not None
    assert split.X_val.shape[0] == 15 and split.X_train.shape[0] == keys["n_train"] - 15
    val = torch.from_numpy(validation_positions(keys["n_train"], 15))
    rest = torch.tensor([i for i in range(keys["n_train"]) if i not in set(val.tolist())])
    assert torch.equal(split.X_val, whole.X_train[val]) and torch.equal(split.y_val, whole.y_train[val])
    assert torch.equal(split.X_train, whole.X_train[rest]) and torch.equal(split.y_train, whole.y_train[rest])
    assert torch.equal(split.X_test, whole.X_test) and torch.equal(split.y_test, whole.y_test)  # untouched
    assert len(set(val.tolist()) | set(rest.tolist())) == keys["n_train"]  # every position once
    if task != "digits":  # continuous draws: no sequence twice, so disjoint as sequences too
        assert not _rows(split.X_val) & _rows(split.X_train) and not _rows(split.X_val) & _rows(split.X_test)


def test_the_split_is_stable_and_its_own_seed():
    """The same config gives the same split; the positions do not move with the run's seed (digits,
    one fixed data set: the same images for every seed); n_val 0 is the data as before."""
    cfg = DataConfig(**TASKS["digits"], n_val=40)
    a, b, other_seed = make_task_data(cfg, 0), make_task_data(cfg, 0), make_task_data(cfg, 7)
    assert torch.equal(a.X_val, b.X_val) and torch.equal(a.X_train, b.X_train)
    assert torch.equal(a.X_val, other_seed.X_val) and torch.equal(a.y_val, other_seed.y_val)
    trend = DataConfig(**TASKS["trend"], n_val=10)
    assert torch.equal(make_task_data(trend, 2).X_val, make_task_data(trend, 2).X_val)
    assert validation_positions(60, 10).tolist() == validation_positions(60, 10).tolist()
    assert carve_validation(a, 0) is a
    with pytest.raises(ValueError, match="n_val must be >= 0 and < n_train"):
        carve_validation(make_task_data(DataConfig(**TASKS["trend"]), 0), 60)
