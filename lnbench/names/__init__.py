"""The names of model families, norm kinds and tasks, how tables and figures show them, which
cells train their seeds as one ensemble, and what each experiment kind's command takes.

Pure data, no torch: the config schema and the command line read it without importing the
models (``lnbench --help`` answers at once). :data:`lnbench.nn.registry.NORMS` adds each kind's layer.
One module per registry or idea, imported here (``from lnbench.names import X`` for any of them):
:mod:`.norms` (the norm kinds' registry), :mod:`.user_norms` (a user's ``package.module:Class``
or entry-point norm), :mod:`.families` (the model families' registry), :mod:`.labels` (labels,
colours, model groups, table order), :mod:`.tasks` (the tasks' registry), :mod:`.kinds` (the
experiment kinds' commands).
"""

from __future__ import annotations

from lnbench.names.families import (
    FAMILIES,
    FAMILY_NAMES,
    FAMILY_REGISTRY,
    TRANSFORMER_ENSEMBLE_MAX_BATCH,
    FamilyInfo,
    has_placements,
    paper_gain_init,
    register_family,
    seeds_train_together,
)
from lnbench.names.kinds import (
    EXPERIMENT_KINDS,
    EXPERIMENT_OPTIONS,
    IN_PROCESS,
    RUN_KINDS,
    KindInfo,
    register_kind,
)
from lnbench.names.labels import (
    USER_NORM_COLORS,
    family_label,
    group_label,
    model_group_of,
    model_label,
    norm_color,
    norm_label,
    norm_order,
    norm_slug,
    plural,
    seeds_phrase,
)
from lnbench.names.norms import (
    GAINLESS_NORMS,
    NORM_KINDS,
    NORM_NAMES,
    NORM_REGISTRY,
    NormInfo,
    NormOption,
    norm_keys,
    norm_keys_without_effect,
    norm_uses_batch_statistics,
)
from lnbench.names.options import KeyOption
from lnbench.names.tasks import (
    DEFAULT_TASK,
    DIGITS_TEST,
    DIGITS_TEST_PER_CLASS,
    DIGITS_TRAIN,
    MNIST_SHAPES,
    MNIST_TEST,
    MNIST_TEST_PER_CLASS,
    MNIST_TRAIN,
    TASK_NAMES,
    TASK_OPTIONS,
    TASKS,
    Task,
)
from lnbench.names.user_norms import (
    NORM_ENTRY_POINTS,
    PLUGIN_NORM,
    entry_point_norms,
    is_plugin_norm,
    norm_has_member_axis,
)

__all__ = [
    "DEFAULT_TASK",
    "DIGITS_TEST",
    "DIGITS_TEST_PER_CLASS",
    "DIGITS_TRAIN",
    "EXPERIMENT_KINDS",
    "RUN_KINDS",
    "EXPERIMENT_OPTIONS",
    "FAMILIES",
    "FAMILY_NAMES",
    "FAMILY_REGISTRY",
    "FamilyInfo",
    "GAINLESS_NORMS",
    "IN_PROCESS",
    "KindInfo",
    "MNIST_SHAPES",
    "MNIST_TEST",
    "MNIST_TEST_PER_CLASS",
    "MNIST_TRAIN",
    "NORM_ENTRY_POINTS",
    "NORM_KINDS",
    "NORM_NAMES",
    "NORM_REGISTRY",
    "KeyOption",
    "NormInfo",
    "NormOption",
    "PLUGIN_NORM",
    "TASKS",
    "TASK_OPTIONS",
    "TASK_NAMES",
    "TRANSFORMER_ENSEMBLE_MAX_BATCH",
    "Task",
    "USER_NORM_COLORS",
    "entry_point_norms",
    "family_label",
    "group_label",
    "has_placements",
    "is_plugin_norm",
    "model_group_of",
    "model_label",
    "norm_color",
    "norm_has_member_axis",
    "norm_keys",
    "norm_keys_without_effect",
    "norm_label",
    "norm_order",
    "norm_slug",
    "norm_uses_batch_statistics",
    "paper_gain_init",
    "plural",
    "seeds_phrase",
    "register_family",
    "register_kind",
    "seeds_train_together",
]
