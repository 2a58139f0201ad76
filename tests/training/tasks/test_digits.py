"""lnbench.training.tasks.digits, the digits task: its fixed split, its pixel orders, its sizes and its
baselines."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lnbench.config import DataConfig
from lnbench.names import DIGITS_TEST_PER_CLASS, TASKS
from lnbench.training.baselines import baseline_accuracies
from lnbench.training.tasks import make_task_data
from lnbench.training.tasks.digits import digits_split, make_digits_data
from lnbench.training.tasks.images import balanced_first, pixel_order


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
