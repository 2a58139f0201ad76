"""The ``data`` section of the config: the task and its data (:data:`lnbench.names.TASKS`;
:func:`lnbench.training.tasks.make_task_data`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from lnbench.config.options import declare as _declare
from lnbench.config.ownership import section_refusals
from lnbench.config.sections import Section, TaskName
from lnbench.config.words import described, joined
from lnbench.names import DEFAULT_TASK, TASK_OPTIONS, TASKS

MAX_INPUT = 1e18  # the largest input magnitude data may reach: its square stays finite in float32

_FIXED = [name for name, task in TASKS.items() if not task.seeded]  # one fixed dataset each: digits, mnist


def _task_text(name: str) -> str:
    """A task in ``data.task``'s description: its registry summary, whether it is the default, its fixed split."""
    task = TASKS[name]
    text = f"the default; {task.summary}" if name == DEFAULT_TASK else task.summary
    return (
        text if task.seeded else f"{text}; one fixed split: {task.max_train} training and {task.max_test} test examples"
    )


class DataConfig(Section):
    """The task and its data (:data:`lnbench.names.TASKS`; :func:`lnbench.training.tasks.make_task_data`).
    ``n_train`` and ``n_test`` apply to every task; each other key to the tasks that list it."""

    task: TaskName = Field(
        "trend",
        description=f"The task: {described([(name, _task_text(name)) for name in TASKS])}.",
    )
    n_train: int = Field(
        1000,
        ge=1,
        description="Training sequences per seed (trend: classes balanced to within one; adding: binomial; "
        f"{joined(_FIXED, 'and')}: n_train of the fixed split, at most "
        f"{joined([TASKS[t].max_train for t in _FIXED], 'and')}, every class among them from 10 on: the "
        "classes in turn; at 1000 and at the whole split the first n_train). Every batch size must be "
        "<= n_train.",
    )
    n_test: int = Field(
        200,
        ge=1,
        description="Test sequences per seed. All runs of one seed share this test set, so their results are "
        f"paired; an accuracy moves in steps of 1 / n_test. {joined(_FIXED, 'and').capitalize()}: every class among "
        "them from 10 on, as n_train (at 200 and at the whole split the first n_test).",
    )
    n_val: int = Field(
        0,
        ge=0,
        description="Validation sequences per seed, carved out of the n_train training sequences (which leaves "
        "n_train - n_val to train on) by a fixed generator (lnbench.training.data.carve_validation): the same "
        f"positions for every seed and config, so for {joined(_FIXED, 'and')} the same images, and for "
        f"{joined([t for t in TASKS if t not in _FIXED], 'and')} (whose "
        "data are drawn per seed) held-out draws of that seed's training distribution. Every selection (the "
        "first epoch at the target, a sweep's best cell) then reads it instead of the test set; 0: none, "
        "selections read the test set.",
    )
    # each task's own keys, declared once in the registry (lnbench.names.TASK_OPTIONS), in its order
    _declare(locals(), TASK_OPTIONS)
    if TYPE_CHECKING:  # the keys declared from the registry are fields the type checker does not see

        def __getattr__(self, key: str) -> Any: ...

    def shape(self) -> tuple[int, int, int]:
        """``(T, features, classes)`` of the task's sequences."""
        return TASKS[self.task].shape(self)

    @property
    def training_sequences(self) -> str:
        """The number of training sequences as an error message spells it, the keys and their
        values: ``data.n_train - data.n_val (5000 - 4999 = 1, the training sequences)``, or
        ``data.n_train (1000)``."""
        if self.n_val:
            n = self.n_train - self.n_val
            return f"data.n_train - data.n_val ({self.n_train} - {self.n_val} = {n}, the training sequences)"
        return f"data.n_train ({self.n_train})"

    @model_validator(mode="after")
    def _task_keys(self) -> "DataConfig":
        """Another task's key set (:mod:`lnbench.config.ownership`) is refused, the first by name;
        then a key that applies at a value of the task's own key (``permutation_seed``)."""
        refused = section_refusals("data", self)
        if refused:
            raise ValueError(min(refused, key=lambda r: (r[0].within is not None, r[0].key))[1])
        task = TASKS[self.task]
        if self.n_val >= self.n_train:
            raise ValueError(
                f"n_val: {self.n_val}, but n_train is {self.n_train}; it must leave training data: < n_train"
            )
        for key, most in (("n_train", task.max_train), ("n_test", task.max_test)):
            if most is not None and getattr(self, key) > most:
                raise ValueError(f"{key}: {getattr(self, key)}, but the {self.task} task has {most}; at most {most}")
        return self

    @model_validator(mode="after")
    def _scale_range(self) -> "DataConfig":
        if self.scale_min > self.scale_max:
            raise ValueError(f"scale_min ({self.scale_min}) must be <= scale_max ({self.scale_max})")
        # a 6-sigma input must stay far inside float32 (3.4e38): the models square and sum it
        largest = self.scale_max * (6 * self.offset_std + self.trend_strength + 6 * self.noise_std)
        if largest > MAX_INPUT:
            raise ValueError(
                f"inputs up to ~{largest:.3g} (scale_max x (6 offset_std + trend_strength + 6 noise_std)) "
                f"overflow float32 arithmetic; keep it below {MAX_INPUT:g}"
            )
        return self
