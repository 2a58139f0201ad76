"""run.json, the manifest of a run folder, field by field (issue 19, C): what a completed, failed,
interrupted, diverged or resumed run records, the note a failure carries, and the folder names."""

import json
import platform
import re
import sys

import numpy as np
import pytest

from lnbench.records import runs
from lnbench.records.runs import STATUSES, Run, create_run_dir, record_failure


def manifest(run):
    return json.loads((run.path / "run.json").read_text())


def test_a_completed_run_records_what_ran_and_when(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["lnbench", "train", "--set", "seed=4"])
    with Run(tmp_path, "one", "seed: 4\n", [4, 5], "compare") as run:
        running = manifest(run)
    m = manifest(run)
    assert running["status"] == "running" and running["end_time"] is None and running["wall_seconds"] is None
    assert (m["kind"], m["name"], m["status"], m["seed"], m["error"], m["warnings"]) == (
        "compare",
        "one",
        "completed",
        [4, 5],
        None,
        [],
    )
    assert m["command"] == ["lnbench", "train", "--set", "seed=4"]
    assert m["versions"]["python"] == platform.python_version() and m["versions"]["numpy"] == np.__version__
    assert m["platform"] == platform.platform() and m["versions"]["torch"]
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00"
    assert re.fullmatch(iso, m["start_time"]) and re.fullmatch(iso, m["end_time"]) and m["start_time"] <= m["end_time"]
    assert 0 <= m["wall_seconds"] < 60 and round(m["wall_seconds"], 3) == m["wall_seconds"]
    assert (run.path / "config.yaml").read_text() == "seed: 4\n" and run.path.name.endswith("Z_one")


def test_a_run_set_to_diverged_stays_diverged_and_an_unknown_status_is_refused(tmp_path):
    with Run(tmp_path, "d", None, 0, "train") as run:
        run.set_status("diverged", "diverged in epoch 3: loss is nan")
        with pytest.raises(ValueError) as err:
            run.set_status("done")
    assert str(err.value) == f"unknown status 'done'; allowed: {', '.join(STATUSES)}"
    m = manifest(run)
    assert (m["status"], m["error"]) == ("diverged", "diverged in epoch 3: loss is nan")
    assert not (run.path / "config.yaml").exists()  # no config given: none written
    run.set_status("completed")
    assert run.manifest["error"] == "diverged in epoch 3: loss is nan"  # no error given: the old one stays


@pytest.mark.parametrize(
    "exc,status,error",
    [
        (RuntimeError("boom"), "failed", "RuntimeError: boom"),
        (KeyboardInterrupt(), "interrupted", "interrupted by the user (KeyboardInterrupt)"),
    ],
)
def test_a_run_that_stops_on_an_exception_says_how_and_where(tmp_path, exc, status, error):
    with pytest.raises(type(exc)) as info:
        with Run(tmp_path, "x", None, 0, "train", timestamped=False) as run:
            raise exc
    m = manifest(run)
    assert (m["status"], m["error"]) == (status, error) and m["end_time"] is not None
    assert info.value.__notes__ == [f"run folder: {tmp_path / 'x'} (status: {status})"]


def test_write_json_writes_into_the_folder_and_returns_the_path(tmp_path):
    with Run(tmp_path, "w", None, 0, "train", timestamped=False) as run:
        path = run.write_json("metrics.json", {"a": float("nan")})
    assert path == tmp_path / "w" / "metrics.json" and json.loads(path.read_text()) == {"a": None}


def test_a_resumed_run_keeps_its_history(tmp_path):
    with Run(tmp_path, "exp", "a: 1\n", 0, "compare") as first:
        first.set_status("interrupted")
    before = manifest(first)
    with Run(tmp_path, "exp", "b: 2\n", 0, "compare", resume=first.path) as again:
        assert again.path == first.path
    m = manifest(again)
    assert m["resumed"] == [{"start_time": before["start_time"], "status": "interrupted"}]
    assert m["status"] == "completed" and m["start_time"] > before["start_time"]
    assert (first.path / "config.yaml").read_text() == "a: 1\n"  # the resumed folder's config stays
    with Run(tmp_path, "exp", None, 0, "compare", resume=first.path) as third:
        pass
    assert [r["status"] for r in manifest(third)["resumed"]] == ["interrupted", "completed"]
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]


def test_record_failure_marks_a_finished_run_failed_and_notes_the_folder(tmp_path):
    with Run(tmp_path, "r", None, 0, "train", timestamped=False) as run:
        pass
    exc = OSError("disk full")
    assert record_failure(run.path, exc) is True
    m = manifest(run)
    assert (m["status"], m["error"]) == ("failed", "OSError: disk full")
    assert exc.__notes__ == [f"run folder: {run.path} (status: failed)"]
    lost = OSError("gone")
    assert record_failure(tmp_path / "missing", lost) is False
    assert lost.__notes__ == [f"run folder: {tmp_path / 'missing'} (failed, but its run.json could not be updated)"]
    interrupted = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        with runs.finishing(run.path):
            raise interrupted
    assert manifest(run)["status"] == "interrupted"


def test_run_folder_names_are_utc_microsecond_stamps(tmp_path):
    path = create_run_dir(tmp_path / "new" / "runs", "compare")  # parents made as needed
    assert re.fullmatch(r"\d{8}T\d{6}_\d{6}Z_compare", path.name) and path.parent == tmp_path / "new" / "runs"
    assert path.is_dir() and list(path.iterdir()) == []
