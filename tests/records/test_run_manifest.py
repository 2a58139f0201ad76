"""run.json, the manifest of a run folder, field by field: what a completed, failed,
interrupted, diverged or resumed run records, the note a failure carries, and the folder names."""

import errno
import json
import os
import platform
import re
import sys
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import numpy as np
import pytest

from lnbench.records import io as records_io
from lnbench.records import runs
from lnbench.records.io import WriteError
from lnbench.records.locks import LOCK_NAME, holder_of
from lnbench.records.runs import STATUSES, Run, StaleLockWarning, create_run_dir, record_failure


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
    provenance = ["git_commit", "git_dirty", "git_diff_sha256", "git_changed_files"]
    fields = ["kind", "name", "status", "command", "seed", "versions", "platform", "cpu", "torch_build", "kernels"]
    fields += provenance
    fields += ["start_time", "end_time", "wall_seconds", "error", "warnings"]
    assert list(running) == fields and list(m) == fields  # run.json's fields, in this order
    assert list(m["versions"]) == ["python", "torch", "numpy"]
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


# ---------------------------------------------------------------- exact times, locks, a full disk


class _Clock:
    """What runs reads the time from: UTC ``now`` and ``perf_counter`` move only when told to
    (``sleep`` moves ``now``), on a machine whose local time is UTC+05:30."""

    def __init__(self) -> None:
        self.utc = datetime(2026, 12, 1, 5, 6, 7, 999999, tzinfo=timezone.utc)
        self.perf = 100.0

    def sleep(self, seconds: float) -> None:
        self.utc += timedelta(seconds=seconds)

    def perf_counter(self) -> float:
        return self.perf


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()

    class Now(datetime):
        @classmethod
        def now(cls, tz=None):
            return c.utc if tz is timezone.utc else (c.utc + timedelta(hours=5, minutes=30)).replace(tzinfo=None)

    monkeypatch.setattr(records_io, "datetime", Now)  # utc_now
    monkeypatch.setattr(runs, "datetime", Now)  # the folder name
    monkeypatch.setattr(runs, "time", SimpleNamespace(sleep=c.sleep, perf_counter=c.perf_counter))
    return c


def test_two_folders_of_one_microsecond_are_one_microsecond_apart_in_utc(tmp_path, clock):
    first, second = create_run_dir(tmp_path, "x"), create_run_dir(tmp_path, "x")
    assert (first.name, second.name) == ("20261201T050607_999999Z_x", "20261201T050608_000000Z_x")
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, second.name]


def test_the_times_of_a_run_are_utc_and_its_wall_seconds_rounded_to_milliseconds(tmp_path, clock):
    with Run(tmp_path, "t", None, 0, "train") as run:
        clock.utc += timedelta(seconds=2, microseconds=346679)
        clock.perf = 102.3456789
    m = manifest(run)
    assert (m["start_time"], m["end_time"]) == ("2026-12-01T05:06:07.999999+00:00", "2026-12-01T05:06:10.346678+00:00")
    assert m["wall_seconds"] == 2.346 and run.path.name == "20261201T050607_999999Z_t"


def _disk_full_for(monkeypatch, name: str) -> None:
    """From now on, writing a file of runs whose name contains ``name`` fails as a full disk does."""
    fdopen = os.fdopen

    class Full:
        def __init__(self, f) -> None:
            self.f = f

        def write(self, data) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def maybe_full(fd, *args, **kwargs):
        f = fdopen(fd, *args, **kwargs)
        return Full(f) if name in os.readlink(f"/proc/self/fd/{fd}") else f

    monkeypatch.setattr(runs.os, "fdopen", maybe_full)


def test_a_config_that_cannot_be_written_fails_the_run_before_it_starts(tmp_path, monkeypatch):
    _disk_full_for(monkeypatch, "config.yaml")
    run = Run(tmp_path, "full", "a: 1\n", 0, "train")
    with pytest.raises(WriteError) as info:
        with run:
            pytest.fail("a run whose config could not be written is not entered")
    m = manifest(run)
    error = f"WriteError: could not write config.yaml in {run.path}: No space left on device"
    assert (m["status"], m["error"], m["end_time"] is not None) == ("failed", error, True)
    assert info.value.__notes__ == [f"run folder: {run.path} (status: failed)"]
    assert run.lock is None and holder_of(run.path) is None and [p.name for p in run.path.iterdir()] == ["run.json"]


def test_a_run_json_that_cannot_be_updated_at_the_end(tmp_path, monkeypatch):
    run = Run(tmp_path, "x", None, 0, "train")
    with pytest.raises(RuntimeError) as info:
        with run:
            _disk_full_for(monkeypatch, "run.json")
            raise RuntimeError("boom")
    assert manifest(run)["status"] == "running"  # the old run.json, whole
    assert info.value.__notes__ == [f"run folder: {run.path} (failed, but its run.json could not be updated)"]
    assert run.lock is None and holder_of(run.path) is None
    monkeypatch.undo()
    done = Run(tmp_path, "y", None, 0, "train")
    with pytest.raises(WriteError, match=f"^could not write run.json in {done.parent}/"):  # no error to note: raised
        with done:
            _disk_full_for(monkeypatch, "run.json")
    done.unlock()


def test_who_holds_the_lock_and_until_when(tmp_path):
    with Run(tmp_path, "nolock", None, 0, "compare", lock=False) as run:
        assert run.lock is None and holder_of(run.path) is None
        with Run(run.path, "child", None, 0, "train", timestamped=False) as child:  # covered by its parent's
            assert child.lock is None and holder_of(child.path) is None
    assert sorted(p.name for p in run.path.iterdir()) == ["child", "run.json"]
    with Run(tmp_path, "again", None, 0, "compare", resume=run.path, lock=False) as again:
        assert again.lock is None and holder_of(run.path) is None
    assert manifest(again)["warnings"] == [] and "lock_taken_over" not in manifest(again)["resumed"][-1]
    kept = Run(tmp_path, "k", None, 0, "compare", keep_lock=True)
    with pytest.raises(RuntimeError):
        with kept:
            raise RuntimeError("x")
    assert kept.lock is None and holder_of(kept.path) is None  # after a failure nothing more is written
    kept.unlock()  # idempotent
    assert kept.lock is None


@pytest.mark.parametrize(
    "left,who",
    [
        (
            {"pid": 4242, "host": "node7", "since": "2026-11-30T01:00:00+00:00"},
            "pid 4242 on node7 (since 2026-11-30T01:00:00+00:00)",
        ),
        ({"host": ""}, "pid ? (since ?)"),
    ],
)
def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_note_naming_it(tmp_path, monkeypatch, left, who):
    with Run(tmp_path, "exp", None, 0, "compare") as first:
        first.set_status("interrupted")
    before = manifest(first)
    (first.path / LOCK_NAME).write_text(json.dumps(left))  # its holder died: the file stays, unlocked
    warned = []
    monkeypatch.setattr(runs.warnings, "warn", lambda *args, **kwargs: warned.append((args, kwargs)))
    with Run(tmp_path, "exp", None, 0, "compare", resume=first.path) as run:
        pass
    note = f"{first.path}: took over the lock of {who}, which stopped without releasing it"
    assert warned == [((note, StaleLockWarning), {"stacklevel": 3})]  # 3: the caller's ``with`` statement
    m = manifest(run)
    assert m["warnings"] == [note] and m["status"] == "completed"
    assert m["resumed"] == [{"start_time": before["start_time"], "status": "interrupted", "lock_taken_over": left}]
