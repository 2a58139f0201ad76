"""Images as sequences, for the image tasks (digits, mnist): a fixed stratified split, and the
orders in which an image of ``side x side`` pixels becomes a sequence.

- ``rows``: ``side`` steps, the image's rows top to bottom, ``side`` pixels each (T = side, D = side);
- ``pixels``: ``side^2`` steps of one pixel, row by row (T = side^2, D = 1): the sequential task of
  Le et al. 2015;
- ``permuted``: the pixels in one fixed random order, ``default_rng(permutation_seed)``'s
  permutation of ``0 .. side^2 - 1`` (T = side^2, D = 1): the permuted task. The permutation is the
  same for every split and every seed; its seed is in the run's config.yaml;
- ``flat``: the whole image as one vector (T = 1, D = side^2): the permutation-invariant task of a
  feed-forward network (Ba et al. 2016, section 6.7).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from lnbench.config import DataConfig
from lnbench.training.data import TaskData

ORDERS = ("rows", "pixels", "permuted", "flat")


def stratified_split(
    X: np.ndarray, y: np.ndarray, test_per_class: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A fixed split, the same whatever the run's seed: the images of each class, in the data
    set's order, are shuffled by ``default_rng(seed)``; the first ``test_per_class`` of each
    class are the test split, the rest the training split; each split is then shuffled once more
    by the same generator (test first), so the first n images of a split mix the classes.

    Args:
        X: ``(N, P)`` images; y: ``(N,)`` int64 labels 0 .. C - 1 (every class present).
        test_per_class: test images per class (each class must have more).
        seed: the split's own generator. Default: 0.

    Returns:
        ``(X_train, y_train, X_test, y_test)`` in the split's order.
    """
    rng = np.random.default_rng(seed)
    test, train = [], []
    for c in range(int(y.max()) + 1):
        idx = rng.permutation(np.flatnonzero(y == c))
        test.append(idx[:test_per_class])
        train.append(idx[test_per_class:])
    test_idx = np.concatenate(test)
    test_idx = test_idx[rng.permutation(len(test_idx))]
    train_idx = np.concatenate(train)
    train_idx = train_idx[rng.permutation(len(train_idx))]
    return X[train_idx], y[train_idx], X[test_idx], y[test_idx]


def balanced_first(y: np.ndarray, n: int, keep: Sequence[int] = ()) -> np.ndarray:
    """The positions of ``n`` images of a split with labels ``y``, in the split's order, with every
    class among them from n = C on: the split is cut into blocks at the sizes ``keep`` (the
    config's default n_train or n_test), and within each block the classes are taken in turn, each
    class's images in the split's order (the first of every class, then the second, ...), so the
    classes stay balanced to within one while the block's images of each class last. At a size in
    ``keep`` and at the whole split the positions are ``0 .. n - 1``: the first n images, as before
    the selection was stratified (the first 18 of digits' test split hold 9 classes).

    Args:
        y: ``(N,)`` int64 labels of the split, in its order. n: 0 .. N. keep: sizes whose
            selection is the first n images.

    Returns:
        ``(n,)`` int64 positions into the split, ascending.
    """
    order = []
    bounds = sorted({b for b in keep if 0 < b < len(y)} | {len(y)})
    for start, end in zip([0, *bounds[:-1]], bounds):
        block = np.arange(start, end)
        labels = y[block]
        rank = np.zeros(len(block), dtype=np.int64)  # each image's place among its class's in the block
        for c in np.unique(labels):
            rank[labels == c] = np.arange(int((labels == c).sum()))
        order.append(block[np.lexsort((labels, rank))])  # round by round (rank), class by class
    return np.sort(np.concatenate(order)[:n])


def pixel_order(order: str, pixels: int, permutation_seed: int = 0) -> np.ndarray:
    """The pixel index of each step: ``0 .. pixels - 1`` for ``pixels`` (and ``flat``), and
    ``default_rng(permutation_seed).permutation(pixels)`` for ``permuted``; ``(pixels,)`` int64."""
    if order == "permuted":
        return np.random.default_rng(permutation_seed).permutation(pixels)
    return np.arange(pixels)


def as_sequences(X: np.ndarray, side: int, order: str, permutation_seed: int = 0) -> np.ndarray:
    """``(N, side^2)`` images -> sequences in ``order``: ``(N, side, side)`` (rows),
    ``(N, side^2, 1)`` (pixels, permuted) or ``(N, 1, side^2)`` (flat); float32.

    Raises:
        ValueError: an order not in :data:`ORDERS`.
    """
    if order == "rows":
        return X.reshape(-1, side, side).astype(np.float32)
    if order == "flat":
        return X[:, None, :].astype(np.float32)
    if order not in ("pixels", "permuted"):
        raise ValueError(f"order: {order!r}; allowed: {', '.join(ORDERS)}")
    return X[:, pixel_order(order, side * side, permutation_seed)][:, :, None].astype(np.float32)


def task_maker(make_data: Callable[[int, int, str, int], TaskData], order_key: str) -> Callable[..., TaskData]:
    """An image task's ``make(cfg, seed=0)`` (its registry maker, :data:`lnbench.names.TASKS`):
    ``make_data(n_train, n_test, order, permutation_seed)`` of the data config ``cfg``, its order
    read from the key ``order_key``; the same for every ``seed`` (the split is fixed)."""

    def make(cfg: DataConfig, seed: int = 0) -> TaskData:
        return make_data(cfg.n_train, cfg.n_test, getattr(cfg, order_key), cfg.permutation_seed)

    return make


def image_task_data(
    split: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n_train: int,
    n_test: int,
    side: int,
    order: str,
    permutation_seed: int = 0,
    task: str = "images",
    classes: int = 10,
) -> TaskData:
    """``n_train`` and ``n_test`` images of a fixed ``split`` (:func:`stratified_split`'s
    ``(X_train, y_train, X_test, y_test)``, pixels in [0, 1]), every class among them
    (:func:`balanced_first`; at the config's default sizes and at the whole split: the first
    images), as sequences in ``order`` (:func:`as_sequences`), with no per-sequence scale (``s_*``
    ones) and ``classes`` classes.

    Raises:
        ValueError: ``n_train`` or ``n_test`` outside 1 .. the split's size (naming ``task``), or an unknown order.
    """
    X_train, y_train, X_test, y_test = split
    if not 1 <= n_train <= len(X_train) or not 1 <= n_test <= len(X_test):
        raise ValueError(f"{task} has {len(X_train)} training and {len(X_test)} test images; got {n_train}, {n_test}")

    def as_t(X: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(as_sequences(X, side, order, permutation_seed))

    train = balanced_first(y_train, n_train, [DataConfig.model_fields["n_train"].default])
    test = balanced_first(y_test, n_test, [DataConfig.model_fields["n_test"].default])
    return TaskData(
        as_t(X_train[train]),
        torch.from_numpy(y_train[train]),
        as_t(X_test[test]),
        torch.from_numpy(y_test[test]),
        torch.ones(n_train),
        torch.ones(n_test),
        num_classes=classes,
    )
