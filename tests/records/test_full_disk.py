"""A full disk: every file of a run folder is written under a temporary name,
then renamed; a failed write leaves no temporary and no truncated file, names the file and its
folder in one line, fails the run (in its run.json when that can still be written) and the
command (exit 1); ``--resume`` completes the experiment once there is space.

Simulated (``ENOSPC`` after the first bytes of a write) everywhere, and for real on a small tmpfs
where this machine lets the test mount one (root).
"""

import contextlib
import errno
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from conftest import REPO, TINY_OVERRIDES, runner, set_args

from lnbench.cli.app import app
from lnbench.records import io as records_io
from lnbench.records.io import WriteError, write_json_atomic

PNG_END = b"IEND\xaeB`\x82"  # the last chunk of every complete PNG


class _FullDisk:
    """A file object that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, f, room: int) -> None:
        self.f, self.room = f, room

    def write(self, data) -> int:
        if len(data) > self.room:
            self.f.write(bytes(data[: self.room]))
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def fill_disk(monkeypatch, room: int = 100, only: str = "") -> None:
    """From now on, a file of the run folders written whose name contains ``only`` gets
    ``room`` bytes, then ENOSPC."""
    fdopen = os.fdopen

    def full(fd, *args, **kwargs):
        f = fdopen(fd, *args, **kwargs)
        return _FullDisk(f, room) if only in os.readlink(f"/proc/self/fd/{fd}") else f

    monkeypatch.setattr(records_io.os, "fdopen", full)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json_atomic(path, {"rows": [1, 2]})
    fill_disk(monkeypatch, room=5)
    with pytest.raises(WriteError) as info:
        write_json_atomic(path, {"rows": [1, 2, 3]})
    assert str(info.value) == f"could not write summary.json in {tmp_path}: No space left on device"
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert json.loads(path.read_text()) == {"rows": [1, 2]}  # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary left


def test_concurrent_writers_of_one_file_do_not_collide(tmp_path):
    """Unique temporary names: concurrent writers of one file each write through their own
    temporary (a fixed ``report.html.tmp`` would be shared), and all of them succeed."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "report.html"
    pages = [f"<p>{k}</p>" * 20_000 for k in range(40)]
    with ThreadPoolExecutor(40) as pool:
        list(pool.map(lambda page: records_io.write_text_atomic(path, page), pages))
    assert path.read_text() in pages and [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_figure_that_cannot_be_written_leaves_no_truncated_png(tmp_path, monkeypatch):
    from lnbench.records.schema import Metrics
    from lnbench.report import figures

    run = [Metrics(family="rnn", norm="layer", seed=0, epochs=[1, 2], test_acc=[0.6, 0.8])]
    (tmp_path / "test_accuracy.png").write_bytes(b"old")
    fill_disk(monkeypatch, room=4096)
    with pytest.raises(WriteError, match=f"could not write test_accuracy.png in {tmp_path}: No space"):
        figures.plot_test_accuracy(run, tmp_path / "test_accuracy.png")
    assert [p.name for p in tmp_path.iterdir()] == ["test_accuracy.png"]
    assert (tmp_path / "test_accuracy.png").read_bytes() == b"old"
    monkeypatch.undo()
    assert figures.plot_test_accuracy(run, tmp_path / "test_accuracy.png").read_bytes().endswith(PNG_END)


@pytest.mark.e2e
@pytest.mark.parametrize("only", ["hidden_norm.png", "report.html"])
def test_train_on_a_full_disk_is_one_line_exit_1_and_a_failed_run(tmp_path, monkeypatch, only):
    fill_disk(monkeypatch, only=only)
    result = runner.invoke(
        app, ["train", str(REPO / "configs/train.yaml"), "--runs-dir", str(tmp_path), *set_args(TINY_OVERRIDES)]
    )
    (folder,) = tmp_path.iterdir()
    message = f"could not write {only} in {folder}: No space left on device"
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1] == f"lnbench: error: {message}; run folder: {folder} (status: failed)"
    assert "Traceback" not in result.output and "Warning" not in result.output
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"] == f"WriteError: {message}"
    assert not list(folder.glob(".*.tmp")) and not (folder / only).exists()
    assert all(png.read_bytes().endswith(PNG_END) for png in folder.glob("*.png"))


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    """A 300 kB tmpfs (room for the children's files, not for the figures), or a skip."""
    disk = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    if os.geteuid() != 0 or not _mount_tmpfs(disk, "300k"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.e2e
def test_compare_on_a_real_full_disk_then_resume_once_there_is_space(small_disk):
    tiny = set_args([*TINY_OVERRIDES, "seeds=[0,1]", "compare.norms=[none,layer]", "compare.families=[rnn]"])
    result = runner.invoke(app, ["compare", "--runs-dir", str(small_disk), *tiny, "--jobs", "1"])
    (folder,) = small_disk.iterdir()
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("lnbench: error: could not write ") and f" in {folder}: No space left on device" in last
    assert last.endswith(f"run folder: {folder} (status: failed)") and "Traceback" not in result.output
    manifest = json.loads((folder / "run.json").read_text())
    assert manifest["status"] == "failed" and "No space left on device" in manifest["error"]
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]
    assert all(png.read_bytes().endswith(PNG_END) for png in folder.glob("*.png"))

    subprocess.run(["mount", "-o", "remount,size=20m", str(small_disk)], check=True)
    result = runner.invoke(app, ["compare", "--resume", str(folder), *tiny, "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert json.loads((folder / "run.json").read_text())["status"] == "completed"
    assert (folder / "report.html").exists() and len(list(folder.glob("*.png"))) == 5  # the figures of a compare


def test_a_checkpoint_on_a_full_disk_is_a_write_error_naming_the_file(small_disk):
    """A checkpoint that does not fit is a WriteError with errno ENOSPC naming checkpoint.pt, not
    torch's zip writer's 'RuntimeError: unexpected pos ...'; it leaves no file, and a small one
    still saves and loads back equal."""
    import torch

    from lnbench.training import checkpoints

    path = small_disk / "checkpoint.pt"
    with pytest.raises(WriteError) as exc:
        checkpoints.save(path, {"w": torch.zeros(200_000)})  # 800 kB on a 300 kB disk
    assert exc.value.errno == errno.ENOSPC and "could not write checkpoint.pt" in str(exc.value)
    assert list(small_disk.iterdir()) == []  # no partial file, no temporary
    checkpoints.save(path, {"w": torch.arange(3.0)})  # a small one still fits
    assert torch.equal(torch.load(path)["w"], torch.arange(3.0))


def test_a_compare_whose_cells_failed_exits_1_naming_the_error(tmp_path, monkeypatch):
    """A compare whose folder ends 'failed' exits 1, its last line the folder's error, the folder
    and its status."""
    from lnbench.experiments import driver
    from lnbench.experiments.base import ExperimentResult

    folder = tmp_path / "runs" / "x_compare"

    def execute(*args, **kwargs):
        folder.mkdir(parents=True)
        write_json_atomic(folder / "run.json", {"status": "failed", "error": "cells failed: rnn_layer: WriteError: w"})
        return ExperimentResult(folder, "failed")

    monkeypatch.setattr(driver, "execute", execute)
    tiny = set_args([*TINY_OVERRIDES, "compare.families=[rnn]"])
    result = runner.invoke(app, ["compare", "--runs-dir", str(tmp_path / "runs"), *tiny])
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last == f"lnbench: error: cells failed: rnn_layer: WriteError: w; run folder: {folder} (status: failed)"


@pytest.mark.parametrize("command", [["invariance"], ["train", str(REPO / "configs/train.yaml")], ["compare"]])
def test_a_disk_too_full_for_run_json_leaves_no_folder_and_one_line(small_disk, command):
    """With no room for run.json, every command exits 1 with at most its start line and then one
    error line naming run.json and ENOSPC, and leaves no run folder behind."""
    with open(small_disk / "fill", "wb") as f:
        with contextlib.suppress(OSError):
            f.write(b"\0" * 400_000)  # fills the 300 kB disk
    result = runner.invoke(app, [*command, "--runs-dir", str(small_disk)])
    assert result.exit_code == 1, result.output
    *plan, line = result.output.strip().splitlines()  # the start line with the plan, then the error
    assert len(plan) <= 1 and all(": " in p and " on " in p for p in plan), result.output
    assert line.startswith("lnbench: error: could not write run.json in ") and line.endswith("No space left on device")
    assert [p.name for p in small_disk.iterdir()] == ["fill"]
