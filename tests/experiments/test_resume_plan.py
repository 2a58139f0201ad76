"""Resuming a folder reads each child run once: the resume plan (``driver.resume_plan``) is read
before anything is printed and handed to the dry run's plan, the "nothing to do" check and the
run itself. Oracle: the count of child folders a resume reads (``base.finished_run`` calls) against
the number of child runs, and the kept cells' rows against the folder's summary.json."""

from __future__ import annotations

import json

import pytest
from conftest import runner, tiny_args

from lnbench.cli.app import app
from lnbench.experiments import base

ARGS = tiny_args("seeds=[0,1]", "compare.norms=[none,layer]")


@pytest.fixture
def reads(monkeypatch) -> list:
    """Every child folder a resume reads, in order (a spy on ``finished_run``)."""
    seen: list = []
    real = base.finished_run

    def spy(path, cfg, target_acc):
        seen.append(path.name)
        return real(path, cfg, target_acc)

    monkeypatch.setattr(base, "finished_run", spy)
    return seen


def _children(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if (p / "metrics.json").is_file())


def test_resuming_a_finished_compare_reads_each_child_once(compare_run, reads):
    result = runner.invoke(app, ["compare", *ARGS, "--resume", str(compare_run)])
    assert result.exit_code == 0, result.output
    assert "Nothing to do" in result.output
    assert sorted(reads) == _children(compare_run)  # each child once, not once per question asked of it


def test_a_partial_resume_reads_once_and_keeps_the_finished_cells(compare_run, reads):
    """One run's metrics removed: its cell trains again, the other cells are kept with their rows."""
    victim = next(p for p in sorted(compare_run.iterdir()) if p.name.endswith("layer_seed1"))
    (victim / "metrics.json").unlink()
    before = {r["run_dir"]: r for r in json.loads((compare_run / "summary.json").read_text())["rows"]}
    result = runner.invoke(app, ["compare", *ARGS, "--resume", str(compare_run)])
    assert result.exit_code == 0, result.output
    assert len(reads) == len(set(reads))  # no child folder read twice
    after = {r["run_dir"]: r for r in json.loads((compare_run / "summary.json").read_text())["rows"]}
    for name, row in before.items():
        if "layer" not in name:  # a kept cell's rows as they were
            assert after[name]["final_test_acc"] == row["final_test_acc"], name
    assert (victim / "metrics.json").is_file()
