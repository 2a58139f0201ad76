"""Run folders: unique names, manifests and ``mark_unfinished`` that never touches a finished run
(the atomic JSON: test_io.py; git provenance: test_provenance.py)."""

import json

import pytest
from conftest import REPO

from lnbench.records.runs import Run, create_run_dir, mark_unfinished


def test_run_dirs_in_the_same_second_are_distinct(tmp_path):
    paths = [create_run_dir(tmp_path, "x") for _ in range(20)]
    assert len(set(paths)) == 20 and all(p.is_dir() for p in paths)
    assert all(p.name.endswith("Z_x") and len(p.name.split("_")[1]) == 7 for p in paths)  # microseconds + Z


def test_manifest_completed(tmp_path):
    with Run(tmp_path, "ok", "seed: 1\n", 1, "train") as run:
        assert json.loads((run.path / "run.json").read_text())["status"] == "running"
    m = json.loads((run.path / "run.json").read_text())
    assert m["status"] == "completed" and m["seed"] == 1 and m["error"] is None
    assert m["wall_seconds"] >= 0 and m["start_time"] <= m["end_time"] and m["versions"]["torch"]
    assert (run.path / "config.yaml").read_text() == "seed: 1\n"


@pytest.mark.parametrize("exc,status", [(RuntimeError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")])
def test_failed_or_interrupted_run_keeps_files_and_says_so(tmp_path, exc, status):
    with pytest.raises(type(exc)):
        with Run(tmp_path, "bad", None, 0, "train") as run:
            run.write_json("metrics.json", {"epochs": [1]})
            raise exc
    m = json.loads((run.path / "run.json").read_text())
    assert m["status"] == status and m["error"]
    assert json.loads((run.path / "metrics.json").read_text()) == {"epochs": [1]}


def test_child_run_folder_is_never_reused(tmp_path):
    with Run(tmp_path, "child", None, 0, "train", timestamped=False):
        pass
    with pytest.raises(FileExistsError):
        with Run(tmp_path, "child", None, 0, "train", timestamped=False):
            pass


def test_the_docs_list_every_status_a_run_can_have():
    """The statuses run.json and metrics.json can hold, as the run-folder reference documents them."""

    from lnbench.records.runs import STATUSES

    page = REPO.joinpath("docs", "schema-reference.md").read_text()
    for status in STATUSES:
        assert f"| `{status}` |" in page, status


# ---------------------------------------------------------------- mark_unfinished


def _run_folder(tmp_path, status, metrics_status="running", metrics=True):
    folder = tmp_path / f"run_{status}"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"status": status, "error": None, "end_time": None, "seed": 3}))
    if metrics:
        (folder / "metrics.json").write_text(json.dumps({"status": metrics_status, "epochs": [1, 2]}))
    return folder


def test_mark_unfinished_records_a_run_that_died_running(tmp_path):
    folder = _run_folder(tmp_path, "running")
    assert mark_unfinished(folder, "failed", "its worker died") is True
    manifest = json.loads((folder / "run.json").read_text())
    assert (manifest["status"], manifest["error"], manifest["seed"]) == ("failed", "its worker died", 3)
    assert manifest["end_time"] and manifest["end_time"].endswith("+00:00")
    assert json.loads((folder / "metrics.json").read_text()) == {"status": "failed", "epochs": [1, 2]}


@pytest.mark.parametrize("status", ["completed", "diverged", "failed", "interrupted"])
def test_mark_unfinished_never_touches_a_finished_run(tmp_path, status):
    folder = _run_folder(tmp_path, status, metrics_status="running")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert mark_unfinished(folder, "failed", "it did not finish") is False
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files


def test_mark_unfinished_keeps_a_metrics_status_that_is_not_running(tmp_path):
    folder = _run_folder(tmp_path, "running", metrics_status="diverged")
    metrics = (folder / "metrics.json").read_bytes()
    assert mark_unfinished(folder, "interrupted", "stopped") is True
    assert (folder / "metrics.json").read_bytes() == metrics
    assert json.loads((folder / "run.json").read_text())["status"] == "interrupted"


def test_mark_unfinished_without_metrics_or_with_unreadable_files(tmp_path):
    no_metrics = _run_folder(tmp_path, "running", metrics=False)
    assert mark_unfinished(no_metrics, "failed", "x") is True
    assert [p.name for p in no_metrics.iterdir()] == ["run.json"]
    (tmp_path / "b").mkdir()
    bad_metrics = _run_folder(tmp_path / "b", "running")
    (bad_metrics / "metrics.json").write_text("{half")
    assert mark_unfinished(bad_metrics, "failed", "x") is True and (bad_metrics / "metrics.json").read_text() == "{half"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert mark_unfinished(empty, "failed", "x") is False and list(empty.iterdir()) == []
    (empty / "run.json").write_text("not json")
    assert mark_unfinished(empty, "failed", "x") is False and (empty / "run.json").read_text() == "not json"
