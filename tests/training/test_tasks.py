"""The task registry (lnbench.training.tasks) and the config keys that select a task (each task's
definition, its distribution at fixed seeds: tasks/test_trend.py, tasks/test_adding.py,
tasks/test_digits.py)."""

from __future__ import annotations

import pytest
import torch

from lnbench.config import ConfigError, DataConfig, load_config
from lnbench.names import TASK_NAMES, TASKS
from lnbench.training.tasks import make_task_data
from lnbench.training.tasks.trend import make_trend_data

# -- the registry and the config -----------------------------------------------------------------


def test_trend_is_the_default_and_its_data_are_unchanged():
    cfg = DataConfig()
    assert cfg.task == "trend" and cfg.shape() == (20, 64, 2)
    a, b = make_task_data(cfg, 3), make_trend_data(seed=3)
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.y_test, b.y_test) and torch.equal(a.s_test, b.s_test)
    assert a.num_classes == 2


@pytest.mark.parametrize(
    ("data", "shape"),
    [
        ({"task": "adding", "seq_len": 12}, (12, 2, 2)),
        ({"task": "digits"}, (8, 8, 10)),
        ({"task": "digits", "digits_order": "pixels"}, (64, 1, 10)),
        ({"task": "digits", "digits_order": "permuted", "permutation_seed": 3}, (64, 1, 10)),
    ],
)
def test_each_task_makes_the_shape_its_entry_gives(data, shape):
    cfg = DataConfig(n_train=40, n_test=30, **data)
    d = make_task_data(cfg, 0)
    T, D, C = shape
    assert cfg.shape() == shape
    assert tuple(d.X_train.shape) == (40, T, D) and tuple(d.X_test.shape) == (30, T, D)
    assert d.X_train.dtype == torch.float32 and d.y_train.dtype == torch.int64 and d.num_classes == C
    assert int(d.y_train.min()) >= 0 and int(d.y_train.max()) < C
    assert torch.equal(d.s_test, torch.ones(30))  # no per-sequence scale off trend


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"task": "adding", "offset_std": 2.0}, "offset_std: applies to the trend task only, and task is adding"),
        ({"task": "digits", "seq_len": 30}, "seq_len: applies to the trend and adding tasks only, and task is digits"),
        ({"task": "trend", "digits_order": "pixels"}, "digits_order: applies to the digits task only"),
        ({"task": "digits", "n_train": 1438}, "n_train: 1438, but the digits task has 1437; at most 1437"),
        ({"task": "digits", "n_test": 361}, "n_test: 361, but the digits task has 360"),
        ({"task": "digits", "permutation_seed": 5}, "permutation_seed: applies to digits_order permuted only"),
    ],
)
def test_a_key_of_another_task_or_too_many_images_is_one_line_naming_it(data, message, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data:\n" + "".join(f"  {k}: {v}\n" for k, v in data.items()))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_key_at_its_default_is_let_through():
    """A resolved config.yaml spells out every key at its default: it must load on every task."""
    for task in TASK_NAMES:
        full = {**DataConfig().model_dump(), "task": task}
        assert DataConfig(**full).task == task


def test_the_registry_names_a_maker_for_every_task():
    for name, entry in TASKS.items():
        assert entry.maker.startswith("lnbench.training.tasks.") and entry.label
        assert (
            make_task_data(DataConfig(task=name, n_train=8, n_test=8), 1).num_classes
            == entry.shape(DataConfig(task=name))[2]
        )


def test_a_cells_data_is_made_once_per_process_and_seed_and_each_caller_gets_its_own_copy(monkeypatch):
    """Oracle: make_task_data. A second cell on the same data and seed gets equal splits without
    making them again; another seed or config is made afresh; changing one caller's tensors in
    place leaves the next caller's alone; beyond the byte budget the oldest splits are dropped."""
    import lnbench.training.tasks as tasks

    made = []
    real = tasks.make_task_data
    monkeypatch.setattr(tasks, "make_task_data", lambda cfg, seed: made.append(seed) or real(cfg, seed))
    monkeypatch.setattr(tasks, "_kept", type(tasks._kept)())
    cfg = DataConfig(n_train=64, n_test=32, n_val=16)
    for _ in range(2):  # the call that makes the splits, then one that finds them kept
        mine = tasks.cell_task_data(cfg, 1)
        mine.X_train.zero_(), mine.y_val.zero_()
    second = tasks.cell_task_data(cfg, 1)
    fresh = real(cfg, 1)
    for name in ("X_train", "y_train", "X_test", "y_test", "s_train", "s_test", "X_val", "y_val", "s_val"):
        assert torch.equal(getattr(second, name), getattr(fresh, name)), name
    assert made == [1]
    tasks.cell_task_data(cfg, 2), tasks.cell_task_data(DataConfig(n_train=64, n_test=32), 1)
    assert made == [1, 2, 1]
    monkeypatch.setattr(tasks, "CELL_DATA_CACHE_BYTES", 2 * tasks._nbytes(fresh))
    tasks.cell_task_data(cfg, 3)  # three of this size do not fit: the least recently used go
    tasks.cell_task_data(cfg, 1)
    assert made == [1, 2, 1, 3, 1]
    tasks.forget_cell_data()
    tasks.cell_task_data(cfg, 1)
    assert made == [1, 2, 1, 3, 1, 1]


@pytest.mark.parametrize("task, order_key", [("digits", "digits_order"), ("mnist", "mnist_order")])
def test_the_permuted_order_is_one_permutation_for_every_seed_through_the_task_registry(task, order_key):
    """make_task_data, as training calls it: the permuted task's pixel order is
    default_rng(permutation_seed)'s permutation of the pixels (Le et al.'s pMNIST: one fixed order),
    the same for seeds 0 and 3, and another permutation_seed gives another order (oracle: the
    pixels-order data permuted by hand)."""
    import numpy as np

    from lnbench.config import DataConfig
    from lnbench.training.tasks import make_task_data

    sizes = {"n_train": 40, "n_test": 20}
    pixels = make_task_data(DataConfig(task=task, **{order_key: "pixels"}, **sizes), seed=0)
    first, again = (
        make_task_data(DataConfig(task=task, **{order_key: "permuted"}, permutation_seed=7, **sizes), seed=s)
        for s in (0, 3)
    )
    order = np.random.default_rng(7).permutation(pixels.X_train.shape[1])
    torch.testing.assert_close(first.X_train, pixels.X_train[:, order], rtol=0, atol=0)
    torch.testing.assert_close(again.X_train, first.X_train, rtol=0, atol=0)
    other = make_task_data(DataConfig(task=task, **{order_key: "permuted"}, permutation_seed=8, **sizes), seed=0)
    assert not torch.equal(other.X_train, first.X_train)
