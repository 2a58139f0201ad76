"""Run folders: unique names, the run.json manifest, failure records (the atomic writes are
:mod:`lnbench.records.io`, the provenance :mod:`lnbench.records.provenance`).

Layout (docs/run-folder.md)::

    runs/<UTC timestamp with microseconds>_<name>/
        config.yaml   run.json   metrics.json   *.png   <child runs>/   summary.json
"""

from __future__ import annotations

import contextlib
import copy
import os
import platform
import shutil
import sys
import time
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np

from lnbench.records.folder import read_object
from lnbench.records.io import WriteError, utc_now, write_json_atomic, write_text_atomic
from lnbench.records.locks import FolderLock
from lnbench.records.provenance import _git_state_of_lnbench, cpu_info, torch_build

STATUSES = ("running", "completed", "failed", "interrupted", "diverged")


class StaleLockWarning(UserWarning):
    """A run folder's lock was left by a process that stopped without releasing it, and taken over."""


def _error_of(exc: BaseException) -> tuple[str, str]:
    """The status and the error message a run that stopped on ``exc`` records."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", "interrupted by the user (KeyboardInterrupt)"
    return "failed", f"{type(exc).__name__}: {exc}"


def _note_folder(exc: BaseException, path: Path, status: str, recorded: bool) -> None:
    """The outermost run's folder is the last note on the exception (the CLI prints it)."""
    said = f"status: {status}" if recorded else f"{status}, but its run.json could not be updated"
    exc.add_note(f"run folder: {path} ({said})")


def record_failure(path: str | Path, exc: BaseException) -> bool:
    """Record in the run folder ``path``'s run.json that it stopped on ``exc`` after its run
    had finished (a figure or report.html could not be written): status ``failed`` (or
    ``interrupted``) and the error, and note the folder on ``exc``. Returns whether run.json
    could be written (a full disk may not allow even that)."""
    path = Path(path)
    status, error = _error_of(exc)
    manifest = read_object(path / "run.json")
    try:
        if manifest is not None:
            manifest.update(status=status, error=error)
            write_json_atomic(path / "run.json", manifest)
        recorded = manifest is not None
    except OSError:
        recorded = False
    _note_folder(exc, path, status, recorded)
    return recorded


@contextlib.contextmanager
def finishing(path: str | Path) -> Iterator[None]:
    """The steps after a run folder's training (its summary, figures, report): an exception in
    the block is recorded in the folder's run.json (:func:`record_failure`) and raised."""
    try:
        yield
    except BaseException as exc:
        record_failure(path, exc)
        raise


def create_run_dir(parent: str | Path, name: str) -> Path:
    """Create ``parent/<UTC timestamp with microseconds>_<name>`` with ``exist_ok=False``.

    Two runs started in the same microsecond get two folders (the second retries with a new
    timestamp); an existing folder is never reused.

    Raises:
        WriteError: the folder could not be created, naming it.
    """
    parent = Path(parent)
    path = parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        while True:
            stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S_%fZ")
            path = parent / f"{stamp}_{name}"
            try:
                path.mkdir()  # exist_ok=False: never an existing folder
                return path
            except FileExistsError:
                time.sleep(1e-6)
    except OSError as exc:  # e.g. a folder that takes no new entries (/proc), a full disk
        raise WriteError(exc.errno or 0, exc.strerror or str(exc), str(path)) from None


class Run:
    """One run folder and its manifest.

    The manifest records where the code came from: ``git_commit``, ``git_dirty``,
    ``git_diff_sha256`` and ``git_changed_files`` (:func:`git_state`), and the machine that ran
    it: ``cpu`` (:func:`cpu_info`) and ``torch_build`` (:func:`torch_build`).

    Use as a context manager: on entry the folder is created with ``config.yaml`` and a
    ``run.json`` whose status is ``running``; on exit the status becomes ``completed``,
    ``failed`` (with the error message), ``interrupted`` (Ctrl-C) or whatever
    :meth:`set_status` chose (``diverged``), with the end time and wall seconds. Whatever was
    written before a failure stays.

    Args:
        parent: the folder to create the run folder in (``runs/`` or a parent run folder).
        name: suffix of the folder name.
        config_yaml: the resolved config, written as ``config.yaml``.
        seed: recorded in the manifest.
        kind: ``train``, ``compare``, ``batchsize-sweep`` or ``gradcheck``.
        timestamped: False for a child run: the folder is ``parent/name`` (still never reused).
        resume: an existing experiment folder to continue in (``--resume``): its run.json gains a
            ``resumed`` list (the earlier start times and statuses) and its config.yaml stays.
        lock: hold the folder's lock (:class:`lnbench.records.locks.FolderLock`) from entry, before
            anything is written, so no other process runs it at the same time. Default: for a
            timestamped or resumed folder (a child run is covered by its parent's lock).
        keep_lock: keep the lock after ``__exit__`` until :meth:`unlock` (the caller still writes
            to the folder: the report). Default: False.

    Raises:
        FolderBusy: on entry, when another process holds the folder's lock (nothing is written).

    Warns:
        StaleLockWarning: on entry, when it takes over the lock file of a process that died
            holding it; run.json's ``warnings`` (and its ``resumed`` entry) say so too.
    """

    path: Path  # the run folder: set on entry (``__enter__``), so read it inside the ``with`` block
    _t0: float  # time.perf_counter() on entry

    def __init__(
        self,
        parent: str | Path,
        name: str,
        config_yaml: str | None,
        seed: int | list[int] | None,
        kind: str,
        timestamped: bool = True,
        resume: str | Path | None = None,
        lock: bool | None = None,
        keep_lock: bool = False,
    ) -> None:
        self.parent, self.name, self.config_yaml = Path(parent), name, config_yaml
        self.timestamped = timestamped
        self.resume = None if resume is None else Path(resume)
        self.lock: FolderLock | None = None
        self._locks = (timestamped or resume is not None) if lock is None else lock
        self.keep_lock = keep_lock
        self.status = "running"
        self.manifest: dict[str, Any] = {
            "kind": kind,
            "name": name,
            "status": self.status,
            "command": sys.argv,
            "seed": seed,
            "versions": {
                "python": platform.python_version(),
                "torch": version("torch"),
                "numpy": np.__version__,
            },
            "platform": platform.platform(),
            "cpu": copy.deepcopy(cpu_info()),  # bit-exact per-seed numbers need the same kind of CPU
            "torch_build": copy.deepcopy(torch_build()),
            # LNBENCH_KERNELS: lnbench's C++ kernels (LayerNorm, the fused RNN/LSTM recurrence) allowed;
            # false: the step-by-step Python code, whose float32 numbers differ in their last digits
            "kernels": os.environ.get("LNBENCH_KERNELS", "1") != "0",
            **_git_state_of_lnbench(),
            "start_time": None,
            "end_time": None,
            "wall_seconds": None,
            "error": None,
            "warnings": [],
        }

    def __enter__(self) -> "Run":
        if self.resume is not None:  # an experiment resumed in its own folder: keep its history
            self.path = self.resume
            self._lock()  # before anything is read or written: another process may be running it
            try:
                previous = read_object(self.path / "run.json", strict=True) or {}  # checked by check_resume
                self.manifest["resumed"] = previous.get("resumed", []) + [
                    {"start_time": previous.get("start_time"), "status": previous.get("status")}
                ]
                self._note_stale_lock()
                self._t0 = time.perf_counter()
                self.manifest["start_time"] = utc_now()
                self.write_manifest()
            except BaseException:
                self.unlock()
                raise
            return self
        if self.timestamped:
            self.path = create_run_dir(self.parent, self.name)
        else:  # a child run inside its parent's folder: a plain, readable name
            self.path = self.parent / self.name
            self.path.mkdir()  # in an existing parent, never an existing folder
        self._lock()  # a new folder: nobody else can hold it yet, and from now on nobody can
        self._t0 = time.perf_counter()
        self.manifest["start_time"] = utc_now()
        try:
            self.write_manifest()
            if self.config_yaml is not None:
                write_text_atomic(self.path / "config.yaml", self.config_yaml)
        except BaseException:  # e.g. a full disk: __exit__ will not run, so record it here
            if not (self.path / "run.json").exists():  # nothing of the run was written: leave no empty folder
                self.unlock()
                shutil.rmtree(self.path, ignore_errors=True)
                raise
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _lock(self) -> None:
        """Take the folder's lock (when this run locks). A lock file that cannot be created (a
        read-only folder) is a WriteError naming it; FolderBusy as :meth:`FolderLock.acquire`."""
        if not self._locks:
            return
        lock = FolderLock(self.path)
        try:
            self.lock = lock.acquire()
        except OSError as exc:
            raise WriteError(exc.errno or 0, exc.strerror or str(exc), str(lock.path)) from None
        if self.lock.soft:  # no flock here: run.json says the folder had a soft lock
            self.manifest["warnings"].append(self.lock.soft)

    def _note_stale_lock(self) -> None:
        """Say, in run.json and as a warning, that the lock of a process that died was taken over."""
        stale = self.lock.stale if self.lock is not None else None
        if not stale:
            return
        who = f"pid {stale.get('pid', '?')}" + (f" on {stale['host']}" if stale.get("host") else "")
        note = (
            f"{self.path}: took over the lock of {who} (since {stale.get('since', '?')}), "
            "which stopped without releasing it"
        )
        self.manifest["warnings"].append(note)
        if "resumed" in self.manifest:
            self.manifest["resumed"][-1]["lock_taken_over"] = stale
        warnings.warn(note, StaleLockWarning, stacklevel=3)

    def unlock(self) -> None:
        """Release the folder's lock (after ``__exit__`` with ``keep_lock``; idempotent)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def set_status(self, status: str, error: str | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}")
        self.status = status
        if error is not None:
            self.manifest["error"] = error

    def write_manifest(self) -> None:
        self.manifest["status"] = self.status
        write_json_atomic(self.path / "run.json", self.manifest)

    def write_json(self, filename: str, obj: Any) -> Path:
        path = self.path / filename
        write_json_atomic(path, obj)
        return path

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if exc is None:
            if self.status == "running":
                self.status = "completed"
        else:
            self.status, self.manifest["error"] = _error_of(exc)
        self.manifest["end_time"] = utc_now()
        self.manifest["wall_seconds"] = round(time.perf_counter() - self._t0, 3)
        try:
            self.write_manifest()
            recorded = True
        except OSError:
            if exc is None:  # the run's end could not be recorded: the caller gets the error, the lock goes
                self.unlock()
                raise
            recorded = False
        if exc is not None:
            _note_folder(exc, self.path, self.status, recorded)
        if exc is not None or not self.keep_lock:  # after a failure the caller writes nothing more
            self.unlock()
        return False


def mark_unfinished(path: str | Path, status: str, error: str) -> bool:
    """If the run folder ``path`` still says ``running`` (its process died before it could say
    otherwise), record ``status`` and ``error`` in its run.json and metrics.json. Returns whether
    it did."""
    path = Path(path)
    manifest_path = path / "run.json"
    manifest = read_object(manifest_path)
    if manifest is None or manifest.get("status") != "running":
        return False
    manifest.update(status=status, error=error, end_time=utc_now())
    write_json_atomic(manifest_path, manifest)
    metrics_path = path / "metrics.json"
    metrics = read_object(metrics_path)
    if metrics is not None and metrics.get("status") == "running":
        metrics["status"] = status
        write_json_atomic(metrics_path, metrics)
    return True
