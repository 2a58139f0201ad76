"""The task registry's tasks: each one's definition (its distribution at fixed seeds, as the trend
generator's in test_data.py), its baselines, and the config keys that select it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from lnbench.config import ConfigError, DataConfig, load_config
from lnbench.names import DIGITS_TEST_PER_CLASS, TASK_NAMES, TASKS
from lnbench.training.baselines import baseline_accuracies
from lnbench.training.tasks import make_task_data
from lnbench.training.tasks.adding import make_adding_data
from lnbench.training.tasks.digits import digits_split, make_digits_data
from lnbench.training.tasks.images import balanced_first, pixel_order
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


# -- adding --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adding():
    return make_adding_data(4000, 4000, 20, seed=0)


def test_adding_marks_exactly_two_steps_one_in_each_half(adding):
    markers = adding.X_train[..., 1]
    assert set(torch.unique(markers).tolist()) == {0.0, 1.0}
    assert torch.all(markers.sum(1) == 2)
    assert torch.all(markers[:, :10].sum(1) == 1) and torch.all(markers[:, 10:].sum(1) == 1)


def test_adding_marked_positions_are_uniform_in_each_half(adding):
    positions = adding.X_train[..., 1].nonzero()[:, 1].view(-1, 2)  # (N, 2): first, second
    for half, offset in ((positions[:, 0], 0), (positions[:, 1], 10)):
        counts = torch.bincount(half - offset, minlength=10).numpy()
        assert stats.chisquare(counts).pvalue > 0.01, counts


def test_adding_values_are_uniform_and_the_label_is_the_sum_past_one(adding):
    values = adding.X_train[..., 0]
    assert stats.kstest(values.flatten().numpy(), "uniform").pvalue > 0.01
    marked = (values * adding.X_train[..., 1]).sum(1)
    assert torch.equal(adding.y_train, (marked > 1).long())
    # balanced in expectation: P(v_a + v_b > 1) = 1/2, binomial within 4 sd
    n = len(adding.y_train)
    assert abs(adding.y_train.float().mean().item() - 0.5) < 4 * 0.5 / np.sqrt(n)


@pytest.mark.parametrize("seq_len", [3, 7, 21])
def test_adding_halves_at_an_odd_length_are_floor_and_ceil_of_half(seq_len):
    """At odd T the first half is steps 0 .. h - 1 and the second h .. T - 1, h = floor(T / 2)
    (the module docstring): T = 7 marks one of {0, 1, 2} and one of {3, 4, 5, 6}, each step of a
    half equally often (chi-square), every step reachable, none twice."""
    data = make_adding_data(3000, 1, seq_len, seed=3)
    positions = data.X_train[..., 1].nonzero()[:, 1].view(-1, 2)  # (N, 2): first, second
    h = seq_len // 2
    for marked, steps in ((positions[:, 0], range(0, h)), (positions[:, 1], range(h, seq_len))):
        counts = torch.bincount(marked, minlength=seq_len).numpy()
        assert set(np.flatnonzero(counts)) == set(steps), counts
        if len(steps) > 1:
            assert stats.chisquare(counts[list(steps)]).pvalue > 0.001, counts


def test_adding_is_a_pure_function_of_its_seed():
    a, b, c = (make_adding_data(50, 20, 8, seed=s) for s in (1, 1, 2))
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.X_test, b.X_test)
    assert not torch.equal(a.X_train, c.X_train)
    assert not torch.equal(a.X_train[:20], a.X_test)  # the test split is its own draw


def test_adding_refuses_what_it_cannot_make():
    with pytest.raises(ValueError, match="seq_len must be >= 2"):
        make_adding_data(10, 10, 1)
    with pytest.raises(ValueError, match="n_train and n_test must be >= 1"):
        make_adding_data(0, 10, 5)


def test_adding_has_no_memoryless_shortcut():
    """The memoryless readout of x_T is near chance (at best 1/2 + 1/4 / (T - T/2) = 52.5% at
    T = 20, when x_T is marked), so the task needs memory; a linear readout of the whole
    sequence cannot form v_t m_t either. Over 3 seeds of 4000 test sequences."""
    for seed in range(3):
        acc = baseline_accuracies(make_adding_data(4000, 4000, 20, seed=seed))
        assert abs(acc["chance"] - 0.5) < 0.03
        assert acc["last_timestep"] < 0.56, acc
        assert acc["whole_sequence"] < 0.68, acc


# -- digits --------------------------------------------------------------------------------------


def test_the_digits_split_is_fixed_stratified_and_disjoint():
    X_train, y_train, X_test, y_test = digits_split()
    assert (len(X_train), len(X_test)) == (1437, 360)
    assert np.bincount(y_test).tolist() == [DIGITS_TEST_PER_CLASS] * 10
    assert sorted(np.bincount(y_train).tolist()) == sorted(
        c - 36 for c in [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    )
    assert X_train.min() == 0.0 and X_train.max() == 1.0  # pixels / 16
    from sklearn.datasets import load_digits

    every = {row.tobytes() for row in load_digits().data / 16.0}
    train, test = {r.tobytes() for r in X_train}, {r.tobytes() for r in X_test}
    assert train | test <= every and len(train) == 1437 and len(test) == 360
    assert not train & test  # no test image is trained on
    again = digits_split()
    assert np.array_equal(again[0], X_train) and np.array_equal(again[3], y_test)


def test_digits_orders_are_the_same_pixels():
    rows = make_digits_data(100, 50, "rows")
    pixels = make_digits_data(100, 50, "pixels")
    permuted = make_digits_data(100, 50, "permuted", permutation_seed=7)
    assert torch.equal(rows.X_train.reshape(100, 64, 1), pixels.X_train)
    order = pixel_order("permuted", 64, 7)
    assert sorted(order.tolist()) == list(range(64)) and not np.array_equal(order, np.arange(64))
    assert torch.equal(permuted.X_test, pixels.X_test[:, order])
    assert not np.array_equal(pixel_order("permuted", 64, 8), order)
    assert torch.equal(rows.y_train, pixels.y_train) and torch.equal(rows.y_train, permuted.y_train)


def test_digits_are_the_same_for_every_seed_and_the_default_sizes_take_the_first_images():
    """The whole split is the split in its order; the config's default sizes (1000 and 200) are its
    first images (the data of runs written before the selection was stratified); a smaller n takes
    images of the split in its order."""
    cfg = DataConfig(task="digits", n_train=1437, n_test=360)
    a, b = make_task_data(cfg, 0), make_task_data(cfg, 5)
    assert torch.equal(a.X_train, b.X_train) and not TASKS["digits"].seeded
    X_train, y_train, X_test, y_test = digits_split()
    assert torch.equal(a.X_train, torch.from_numpy(X_train.reshape(-1, 8, 8).astype(np.float32)))
    assert torch.equal(a.y_test, torch.from_numpy(y_test))
    default = make_task_data(DataConfig(task="digits"), 0)
    assert torch.equal(default.X_train, a.X_train[:1000]) and torch.equal(default.y_train, a.y_train[:1000])
    assert torch.equal(default.X_test, a.X_test[:200]) and torch.equal(default.y_test, a.y_test[:200])
    small = make_task_data(DataConfig(task="digits", n_train=10, n_test=5), 0)
    train = balanced_first(y_train, 10, [1000])
    test = balanced_first(y_test, 5, [200])
    assert torch.equal(small.X_train, a.X_train[train]) and torch.equal(small.y_test, a.y_test[test])
    assert list(train) == sorted(train) and len(set(small.y_test.tolist())) == 5  # in the split's order; 5 classes


@pytest.mark.parametrize("split", ["test", "train"])
def test_the_first_n_digits_hold_every_class_balanced_to_within_one(split):
    """Every n from 10 up holds all 10 classes, each between floor(n / 10) and ceil(n / 10) times
    while the block of the default size (200 test, 1000 training images) has images of each class
    left (16 of its rarest class in the test block, 85 in the training one), and every class
    after; digits' first 18 test images in the split's order hold 9 classes (the shuffled split alone
    is not enough)."""
    X_train, y_train, X_test, y_test = digits_split()
    y, default = (y_test, 200) if split == "test" else (y_train, 1000)
    rarest = int(np.bincount(y[:default], minlength=10).min())
    for n in range(10, len(y) + 1):
        counts = np.bincount(y[balanced_first(y, n, [default])], minlength=10)
        assert counts.min() >= 1, (n, counts)
        if n <= 10 * rarest:
            assert counts.min() == n // 10 and counts.max() == -(-n // 10), (n, counts)
    if split == "test":
        assert len(set(y_test[:18].tolist())) == 9
        small = make_digits_data(1437, 10)
        assert sorted(small.y_test.tolist()) == list(range(10))
    else:
        assert sorted(make_digits_data(10, 1).y_train.tolist()) == list(range(10))


def test_digits_baselines():
    """Chance is 1 / 10; the last pixel alone (pixels) is near it (a corner pixel is almost always
    blank) and the last row alone (rows) far below a linear readout of the whole image (~96%)."""
    pixels = baseline_accuracies(make_digits_data(1437, 360, "pixels"))
    assert pixels["chance"] == pytest.approx(0.1)
    assert pixels["last_timestep"] < 0.15 and pixels["whole_sequence"] > 0.93
    rows = baseline_accuracies(make_digits_data(1437, 360, "rows"))
    assert 0.3 < rows["last_timestep"] < 0.7 and rows["whole_sequence"] == pytest.approx(pixels["whole_sequence"])
