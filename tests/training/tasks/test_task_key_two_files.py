"""A task's key of its own takes 2 files: its declaration in ``lnbench/names/tasks.py`` (the name in
the task's :attr:`lnbench.names.Task.keys` and its :class:`lnbench.names.KeyOption` in
:data:`lnbench.names.TASK_OPTIONS`) and its use in the task's module in ``lnbench/training/tasks/``.
The schema's field, its one validation, the check that refuses it for another task and the config
reference follow from the declaration. Tested literally on a copy of the package with exactly
those edits, in a fresh interpreter. The oracle: the toy key multiplies the trend sequences, so
the inputs at 2 are twice those at 1 for the same seed."""

from __future__ import annotations

import pytest
from conftest import insert_at, package_copy, probe_copy

DOC = "Trend only: a factor on every input value, a toy."
OPTION = f'    "input_gain": KeyOption(float, 1.0, "{DOC}", gt=0, le=10),\n'

PROBE = """
import json
from lnbench.config import load_config
from lnbench.config.data import DataConfig
from lnbench.training.tasks import make_task_data

out = {"field": DataConfig.model_fields["input_gain"].description}
X = [make_task_data(load_config(None, [f"data.input_gain={g}", "data.n_train=8", "data.n_test=4", "train.batch_size=4"]).data, 0).X_train
     for g in ("1", "2")]
out["ratio"] = float((X[1] / X[0]).mean())
out["errors"] = refusals(
    lambda: load_config(None, ["data.input_gain=0"]), lambda: load_config(None, ["data.task=digits", "data.input_gain=2"])
)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict:
    root = package_copy(tmp_path_factory.mktemp("task_key_two_files"), "docs")
    tasks = root / "lnbench" / "names" / "tasks.py"  # file 1: the key in the task's entry, declared
    insert_at(tasks, '"scale_min", "scale_max"', ', "input_gain"', after=True)
    insert_at(tasks, '    "scale_max": KeyOption(', OPTION)
    trend = root / "lnbench" / "training" / "tasks" / "trend.py"  # file 2: the task reads it
    insert_at(trend, "    seed: int = 0,\n) -> TrendData:", "    input_gain: float = 1.0,\n")
    insert_at(
        trend,
        "    return TrendData(X_train, y_train, X_test, y_test, s_train, s_test)",
        "    X_train, X_test = input_gain * X_train, input_gain * X_test\n",
    )
    return probe_copy(root, PROBE, "config-reference.md")


def test_the_declaration_is_the_schema_field_and_its_reference_row(probed):
    assert probed["field"] == DOC
    (row,) = [line for line in probed["reference"].splitlines() if "`data.input_gain`" in line]
    assert DOC in row and "`1.0`" in row


def test_the_task_reads_its_validated_value(probed):
    assert probed["ratio"] == pytest.approx(2.0, rel=1e-6)


def test_the_key_is_validated_once_and_belongs_to_its_task_alone(probed):
    bound, foreign = probed["errors"]
    assert bound is not None and "data.input_gain" in bound and "greater than 0" in bound
    assert foreign is not None and "data.input_gain" in foreign and "trend" in foreign
