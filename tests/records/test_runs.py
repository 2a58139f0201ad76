"""Run folders: unique names, manifests and atomic JSON."""

import json

import pytest
from conftest import REPO

from lnbench.records.io import write_json_atomic
from lnbench.records.runs import Run, create_run_dir


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
    """The statuses run.json and metrics.json can hold, as the run-folder reference documents them."""

    from lnbench.records.runs import STATUSES

    page = REPO.joinpath("docs", "schema-reference.md").read_text()
    for status in STATUSES:
        assert f"| `{status}` |" in page, status


def _git(repo, *args):
    import subprocess

    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True).stdout


def test_run_json_records_a_checkout_with_uncommitted_changes_as_dirty(tmp_path, monkeypatch):
    """The commit, ``git_dirty``, a hash of the diff and the changed files (MLflow
    and Sacred record a dirty flag); the hash of a tracked change is SHA-256 of ``git diff HEAD --binary``."""
    import hashlib

    from lnbench.records import provenance, runs

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("runs/\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD").decode().strip()
    (repo / "runs").mkdir()  # ignored: not a change
    clean = provenance.git_state(repo / "pkg")
    assert clean == {"git_commit": head, "git_dirty": False, "git_diff_sha256": None, "git_changed_files": []}

    (repo / "pkg" / "a.py").write_text("x = 2\n")
    tracked_only = provenance.git_state(repo / "pkg")
    assert tracked_only["git_diff_sha256"] == hashlib.sha256(_git(repo, "diff", "HEAD", "--binary")).hexdigest()
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    monkeypatch.setattr(runs, "_git_state_of_lnbench", lambda: provenance.git_state(repo / "pkg"))
    with Run(tmp_path / "runs", "dirty", None, 0, "train") as run:
        pass
    m = json.loads((run.path / "run.json").read_text())
    assert m["git_commit"] == head and m["git_dirty"] is True
    assert m["git_changed_files"] == ["pkg/a.py", "pkg/new.py"]
    assert len(m["git_diff_sha256"]) == 64 and m["git_diff_sha256"] != tracked_only["git_diff_sha256"]
    (repo / "pkg" / "new.py").write_text("y = 2\n")  # another content of the new file: another hash
    assert provenance.git_state(repo)["git_diff_sha256"] != m["git_diff_sha256"]
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    assert provenance.git_state(repo)["git_diff_sha256"] == m["git_diff_sha256"]  # the same changes: the same hash


def test_outside_a_checkout_the_provenance_is_unknown(tmp_path, monkeypatch):
    from lnbench.records.provenance import git_state

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git looks no higher than tmp_path
    state = git_state(tmp_path)
    assert state == {"git_commit": None, "git_dirty": None, "git_diff_sha256": None, "git_changed_files": []}
