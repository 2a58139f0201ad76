"""One process per run folder: a second process is refused with "DIR is being
run by pid N"; the lock of a process killed with SIGKILL is taken over with a note."""

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TINY_OVERRIDES, fingerprint, runner, set_args, tiny_args

from lnbench.cli.app import app
from lnbench.records.io import WriteError
from lnbench.records.locks import LOCK_NAME, FolderBusy, FolderLock, holder_of
from lnbench.records.runs import Run, StaleLockWarning

HOLD = """
import sys, time
from lnbench.records.locks import FolderLock
FolderLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(3600)  # killed by the fixture; never released under a slow test
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding ``tmp_path / "exp"``'s lock: (folder, process)."""
    folder = tmp_path / "exp"
    folder.mkdir()
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "locked"
    yield folder, process
    process.kill()
    process.wait()


def test_a_second_process_is_refused_naming_the_holder_and_nothing_changes(holder):
    folder, process = holder
    (folder / "run.json").write_text(json.dumps({"kind": "compare", "status": "running", "start_time": "t0"}))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert holder_of(folder)["pid"] == process.pid
    with pytest.raises(FolderBusy, match=f"^{folder} is being run by pid {process.pid} "):
        FolderLock(folder).acquire()
    with pytest.raises(FolderBusy):
        Run(folder.parent, "x", None, 0, "compare", resume=folder).__enter__()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # run.json untouched


def test_the_lock_of_a_killed_process_is_taken_over_with_a_note(holder):
    folder, process = holder
    (folder / "run.json").write_text(json.dumps({"kind": "compare", "status": "running", "start_time": "t0"}))
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert (folder / LOCK_NAME).exists() and holder_of(folder) is None  # left behind, not held
    with pytest.warns(StaleLockWarning, match=f"took over the lock of pid {process.pid}"):
        with Run(folder.parent, "x", None, 0, "compare", resume=folder) as run:
            assert holder_of(folder)["pid"] == os.getpid()
    manifest = json.loads((run.path / "run.json").read_text())
    assert manifest["resumed"][-1]["lock_taken_over"]["pid"] == process.pid
    assert any(f"pid {process.pid}" in w and "stopped without releasing it" in w for w in manifest["warnings"])
    assert not (folder / LOCK_NAME).exists()  # released: removed


def test_a_released_lock_is_no_note_and_a_run_holds_its_folder_while_it_runs(tmp_path, recwarn):
    with Run(tmp_path, "first", None, 0, "compare") as run:
        assert holder_of(run.path)["pid"] == os.getpid()
        with pytest.raises(FolderBusy):  # flock: even another open file of this process is refused
            FolderLock(run.path).acquire()
    assert holder_of(run.path) is None and not (run.path / LOCK_NAME).exists()
    with Run(tmp_path, "again", None, 0, "compare", resume=run.path) as again:
        assert again.lock is not None and again.lock.stale is None
    assert not [w for w in recwarn if issubclass(w.category, StaleLockWarning)]
    kept = Run(tmp_path, "kept", None, 0, "compare", keep_lock=True)
    with kept:
        pass
    assert holder_of(kept.path)["pid"] == os.getpid()  # until the report is written
    kept.unlock()
    assert holder_of(kept.path) is None


ONE_CELL = [
    "seeds=[0]",
    "compare.families=[rnn]",
    "compare.norms=[none]",
]  # the tiny config on one cell: the RNN, no norm
ARGS = ["compare", *tiny_args(*ONE_CELL)]


def _unfinished_compare(tmp_path: Path) -> Path:
    """The folder of a compare that started (its config.yaml and run.json) and trained nothing yet."""
    from lnbench.config import load_config
    from lnbench.experiments.registry import EXPERIMENTS

    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "config.yaml").write_text(
        EXPERIMENTS["compare"].config_yaml(load_config(None, [*TINY_OVERRIDES, *ONE_CELL]))
    )
    (folder / "run.json").write_text(json.dumps({"kind": "compare", "status": "running", "start_time": "t0"}))
    return folder


@pytest.mark.e2e
def test_resume_while_another_process_runs_the_folder_is_refused_and_after_kill_9_completes(tmp_path, monkeypatch):
    """``--resume DIR`` while another process holds DIR's lock (as a running experiment does: the
    next test) is refused in one line naming its pid, exit code 2, and changes no file of DIR
    (else both would train the same cells); once that process is killed with SIGKILL, the resume
    takes over its lock with a StaleLockWarning naming the pid."""
    from lnbench.experiments.registry import EXPERIMENTS

    folder = _unfinished_compare(tmp_path)
    before = {p: p.read_bytes() for p in folder.rglob("*")}
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "locked"
        result = runner.invoke(app, [*ARGS, "--resume", str(folder)])
        assert result.exit_code == 2, result.output
        assert result.output.startswith(f"lnbench: error: --resume {folder} is being run by pid {other.pid} ")
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.name != LOCK_NAME} == before
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    monkeypatch.setattr(EXPERIMENTS["compare"], "figures", lambda path: [])  # not what this is about
    with pytest.warns(StaleLockWarning, match=f"pid {other.pid}"):
        result = runner.invoke(app, [*ARGS, "--resume", str(folder)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["status"] == "completed" and manifest["resumed"][-1]["lock_taken_over"]["pid"] == other.pid
    assert not (folder / LOCK_NAME).exists() and (folder / "report.html").exists()


@pytest.mark.e2e
def test_an_experiment_holds_its_folder_from_creation_until_its_report_is_written(tmp_path, monkeypatch):
    from lnbench.config import load_config
    from lnbench.experiments import driver
    from lnbench.experiments.registry import EXPERIMENTS

    exp, seen = EXPERIMENTS["compare"], {}

    def figures(path):
        seen["figures"] = holder_of(path)
        return []

    def write_html(exp, path):
        seen["report"] = holder_of(path)

    monkeypatch.setattr(exp, "figures", figures)
    monkeypatch.setattr(driver, "write_html", write_html)
    result = driver.run(exp, load_config(None, [*TINY_OVERRIDES, *ONE_CELL]), runs_dir=tmp_path)
    assert seen["figures"]["pid"] == seen["report"]["pid"] == os.getpid()
    assert holder_of(result.path) is None and not (result.path / LOCK_NAME).exists()


def test_a_run_whose_end_cannot_be_written_still_releases_its_lock(tmp_path, monkeypatch):
    """A full disk at __exit__ (run.json not written): the OSError reaches the caller and the
    folder is not left locked by this process (kept or not)."""
    for keep in (False, True):
        run = Run(tmp_path, f"full{keep}", None, 0, "compare", keep_lock=keep, lock=True)
        with pytest.raises(OSError, match="No space left"):
            with run:
                monkeypatch.setattr(run, "write_manifest", lambda: (_ for _ in ()).throw(OSError(28, "No space left")))
        assert holder_of(run.path) is None
        FolderLock(run.path).acquire().release()  # free for the next run


class _NoFlock:
    """``fcntl`` of a file system without flock (NFS without lockd: ENOLCK; Lustre without
    ``-o flock``: ENOSYS)."""

    LOCK_EX, LOCK_SH, LOCK_NB = 2, 1, 4

    def __init__(self, err: int) -> None:
        self.err = err

    def flock(self, fd, op):
        raise OSError(self.err, os.strerror(self.err))


@pytest.fixture(params=["ENOLCK", "ENOSYS"])
def no_flock(request, monkeypatch):
    import errno

    from lnbench.records import locks

    monkeypatch.setattr(locks, "fcntl", _NoFlock(getattr(errno, request.param)))
    monkeypatch.setattr(locks, "_warned_soft", False)
    return locks


def test_without_flock_a_soft_lock_refuses_a_live_holder_and_takes_over_a_dead_ones(no_flock, tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    with pytest.warns(no_flock.SoftLockWarning, match="has no file locks .flock.; lnbench uses a soft lock"):
        lock = FolderLock(folder).acquire()
    assert holder_of(folder)["pid"] == os.getpid()
    with pytest.raises(FolderBusy, match=f"is being run by pid {os.getpid()}"):
        FolderLock(folder).acquire()  # the holder is alive
    lock.release()
    assert not (folder / LOCK_NAME).exists() and holder_of(folder) is None
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (folder / LOCK_NAME).write_text(json.dumps({"pid": int(dead.stdout), "host": os.uname().nodename}))
    assert holder_of(folder) is None  # its pid is gone
    again = FolderLock(folder).acquire()  # no second warning in this process (the fixture checks recwarn below)
    assert again.stale["pid"] == int(dead.stdout)
    again.release()
    (folder / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "another-node"}))
    with pytest.raises(FolderBusy, match="on another-node"):  # a process on another node cannot be seen: refused
        FolderLock(folder).acquire()


def test_without_flock_lnbench_train_runs_warns_in_one_line_and_leaves_a_whole_folder(no_flock, tmp_path):
    config = str(REPO / "configs/train.yaml")
    result = runner.invoke(app, ["train", config, "--runs-dir", str(tmp_path), *set_args(TINY_OVERRIDES)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    (folder,) = tmp_path.iterdir()
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["status"] == "completed" and (folder / "metrics.json").exists()
    assert [w for w in manifest["warnings"] if "soft lock" in w] == [
        f"{tmp_path} has no file locks (flock); lnbench uses a soft lock there, "
        "so two processes started at the same moment could both write one run folder"
    ]
    assert f"note: {manifest['name']}: {manifest['warnings'][0]}" in " ".join(result.output.split())
    assert not (folder / LOCK_NAME).exists()


def test_the_command_line_shows_a_warning_in_one_line():
    from lnbench._entry import one_line_warning
    from lnbench.records.locks import SoftLockWarning

    assert one_line_warning(SoftLockWarning("no flock"), SoftLockWarning, "x.py", 3, "src") == (
        "lnbench: warning: no flock\n"
    )


def _read_only_lock_file(monkeypatch) -> None:
    """From now on a lock file cannot be created, as on a read-only file system (root passes chmod)."""
    from lnbench.records import locks

    real = locks.os.open

    def read_only(path, flags, *args):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, flags, *args)

    monkeypatch.setattr(locks.os, "open", read_only)


def test_a_lock_that_cannot_be_created_is_a_write_error_naming_it_and_nothing_changes(tmp_path, monkeypatch):
    """A lock file that cannot be created (``os.open`` raising EROFS) is a WriteError naming the
    lock file and its folder; through ``--resume`` it is that one line, exit code 1, no traceback,
    and every file of the folder is as it was (SHA-256 and mtime)."""
    folder = _unfinished_compare(tmp_path)
    before = fingerprint(folder)
    _read_only_lock_file(monkeypatch)
    with pytest.raises(WriteError) as info:
        Run(folder.parent, "x", None, 0, "compare", resume=folder).__enter__()
    assert str(info.value) == f"could not write {LOCK_NAME} in {folder}: Read-only file system"
    assert info.value.errno == errno.EROFS
    result = runner.invoke(app, [*ARGS, "--resume", str(folder)])  # a folder os.access calls writable
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"lnbench: error: could not write {LOCK_NAME} in {folder}: Read-only file system"
    )
    assert "Traceback" not in result.output and fingerprint(folder) == before


@pytest.fixture
def read_only_view(tmp_path):
    """``view(folder)``: ``folder`` bind-mounted read-only (a real read-only file system, which root
    cannot write either), unmounted after the test; a skip where mounting is not allowed."""
    mounts = []

    def view(folder: Path) -> Path:
        target = tmp_path / f"{folder.name}-read-only"
        target.mkdir()
        done = subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(target)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot bind-mount read-only here (needs root): {done.stderr.decode().strip()}")
        mounts.append(target)
        return target

    if os.geteuid() != 0:
        pytest.skip("cannot bind-mount read-only here (needs root)")
    yield view
    for target in mounts:
        subprocess.run(["umount", "-l", str(target)], check=False)


def test_resume_of_a_folder_on_a_read_only_file_system_is_one_line_and_nothing_changes(tmp_path, read_only_view):
    """``--resume`` of a folder bind-mounted read-only (a real read-only file system) is refused
    before anything is tried: one line, exit code 2 (as a --runs-dir that is not writable), and
    every file of the folder is as it was."""
    folder = _unfinished_compare(tmp_path)
    before = fingerprint(folder)
    view = read_only_view(folder)
    result = runner.invoke(app, [*ARGS, "--resume", str(view)])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"lnbench: error: --resume {view}: the folder is not writable (a read-only file system); nothing was changed"
    ]
    assert fingerprint(folder) == before
