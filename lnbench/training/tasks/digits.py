"""Handwritten digits as sequences: the UCI 8x8 digits that scikit-learn ships inside its package
(``sklearn.datasets.load_digits``: 1797 images of 8 x 8 pixels, values 0 .. 16, 10 classes;
nothing is downloaded), the small offline form of the sequential and permuted MNIST tasks of
Le et al. 2015 and Cooijmans et al. 2016.

**The split is fixed** (the same for every seed; a seed moves the weights and the batch order):
the images of each class, in the dataset's order, are shuffled by ``default_rng(0)``; the first
36 of each class (360) are the test split, the other 1437 the training split, which is then
shuffled once more by the same generator. ``n_train`` and ``n_test`` take images of each split
in its order, every class among them from 10 on (the classes in turn,
:func:`lnbench.training.tasks.images.balanced_first`; the first 18 test images hold 9 classes);
at the default 1000 and 200, and at the whole split (1437 and 360), the first images. Pixels are divided by 16, so every
input is in [0, 1].

**How an image becomes a sequence** (``data.digits_order``):

- ``rows``: 8 steps, the image's rows top to bottom, 8 pixels each (T = 8, D = 8);
- ``pixels``: 64 steps of one pixel, row by row (T = 64, D = 1): sequential digits;
- ``permuted``: the 64 pixels in one fixed random order, ``default_rng(permutation_seed)``'s
  permutation of 0 .. 63 (T = 64, D = 1): permuted digits. The permutation is the same for both
  splits and every seed; the seed is in the run's config.yaml.
"""

from __future__ import annotations

import numpy as np

from lnbench.names import DIGITS_TEST_PER_CLASS
from lnbench.training.data import TaskData
from lnbench.training.tasks.images import image_task_data, stratified_split, task_maker

SPLIT_SEED = 0  # the fixed split's generator
CLASSES = 10
SIDE = 8  # 8 x 8 pixels


def digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed split of ``load_digits``: ``(X_train (1437, 64), y_train, X_test (360, 64), y_test)``,
    pixels in [0, 1] (float64), in the split's order (the module docstring;
    :func:`lnbench.training.tasks.images.stratified_split`)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return stratified_split(digits.data / 16.0, digits.target.astype(np.int64), DIGITS_TEST_PER_CLASS, SPLIT_SEED)


def make_digits_data(
    n_train: int = 1000, n_test: int = 200, digits_order: str = "rows", permutation_seed: int = 0
) -> TaskData:
    """The digits task's splits (the module docstring gives the split and the orders).

    Args:
        n_train, n_test: images of the fixed training (1437) and test (360) splits, every class
            among them (the module docstring).
        digits_order: ``rows``, ``pixels`` or ``permuted``.
        permutation_seed: the seed of ``permuted``'s pixel order.

    Returns:
        TaskData with ``X_* (N, 8, 8)`` or ``(N, 64, 1)`` float32 in [0, 1], ``y_* (N,) int64`` in
        0 .. 9, ``s_*`` ones, ``num_classes`` 10.

    Raises:
        ValueError: a split larger than the fixed split's, or an unknown order.
    """
    return image_task_data(digits_split(), n_train, n_test, SIDE, digits_order, permutation_seed, "digits", CLASSES)


#: the registry's maker: the digits of a data config, the same for every seed
make = task_maker(make_digits_data, "digits_order")
