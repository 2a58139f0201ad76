"""Run folders: unique names, manifests and atomic JSON."""

import json

import pytest

from lnbench.records.runs import Run, create_run_dir, write_json_atomic


def test_run_dirs_in_the_same_second_are_distinct(tmp_path):
    paths = [create_run_dir(tmp_path, "x") for _ in range(20)]
    assert len(set(paths)) == 20 and all(p.is_dir() for p in paths)
    assert all(p.name.endswith("Z_x") and len(p.name.split("_")[1]) == 7 for p in paths)  # microseconds + Z


def test_write_json_atomic_replaces_and_writes_nan_as_null(tmp_path):
    f = tmp_path / "m.json"
    write_json_atomic(f, {"a": 1})
    write_json_atomic(f, {"a": [1.5, float("nan"), float("inf")]})
    assert json.loads(f.read_text()) == {"a": [1.5, None, None]}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary file left


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
    """Issue 10 (17): the statuses run.json and metrics.json can hold, as the run-folder reference documents them."""
    from pathlib import Path

    from lnbench.records.runs import STATUSES

    page = Path(__file__).resolve().parents[2].joinpath("docs", "schema-reference.md").read_text()
    for status in STATUSES:
        assert f"| `{status}` |" in page, status
