"""Run folders: unique names, the run.json manifest, atomic JSON writes.

Layout (see README, "Run folder")::

    runs/<UTC timestamp with microseconds>_<name>/
        config.yaml   run.json   metrics.json   *.png   <child runs>/   summary.json
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import importlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Literal

import numpy as np

from lnbench.records.folder import read_object
from lnbench.records.locks import FolderLock

_UMASK = os.umask(0)
os.umask(_UMASK)
STATUSES = ("running", "completed", "failed", "interrupted", "diverged")


class StaleLockWarning(UserWarning):
    """A run folder's lock was left by a process that stopped without releasing it, and taken over."""


def utc_now() -> str:
    """The current UTC time, ISO 8601 with microseconds (``2026-11-30T01:34:25.123456+00:00``)."""
    return datetime.now(timezone.utc).isoformat()


def _jsonable(obj: Any) -> Any:
    """NaN and inf are not JSON: write them as null (JSON readers elsewhere choke on ``NaN``)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (np.floating, np.integer)):
        return _jsonable(obj.item())
    return obj


class WriteError(OSError):
    """A file could not be written (a full disk, a read-only folder): ``str`` names the file and
    its folder in one line, ``errno`` and ``filename`` are the underlying OSError's."""

    def __str__(self) -> str:
        path = Path(self.filename)
        return f"could not write {path.name} in {path.parent}: {self.strerror}"


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write a file atomically: ``write(f)`` fills a temporary file with a unique name in the same
    folder, which then replaces ``path`` (``os.replace``), so a reader never sees half a file and
    two writers of one file never collide. On failure the temporary file is removed (on a full
    disk, that gives back its space) and ``path`` is as it was.

    Raises:
        WriteError: an OSError while writing (ENOSPC, EROFS, ...), naming ``path``.
    """
    return atomic_write_all({Path(path): write})[0]


def atomic_write_all(writes: Mapping[Path, Callable[[BinaryIO], object]]) -> list[Path]:
    """Write several files as :func:`atomic_write` writes one, all or none: each ``write(f)``
    fills a temporary file beside its path, and only once every one is written are they renamed
    into place. On failure every temporary file is removed; a failure while writing (a full
    disk, a read-only folder: before any rename) leaves every path as it was.

    Returns:
        The paths written, in the order given.

    Raises:
        WriteError: an OSError while writing (ENOSPC, EROFS, ...), naming the file it was writing.
    """
    staged: list[tuple[Path, Path]] = []  # (temporary, path)
    path: Path | None = None
    try:
        for path, write in writes.items():
            fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((Path(name), path))
            os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the usual permissions
            with os.fdopen(fd, "wb") as f:
                write(f)
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException as exc:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(exc.errno or 0, exc.strerror or str(exc), str(path)) from exc
        raise
    return [path for _, path in staged]


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` with :func:`atomic_write`."""
    return atomic_write(path, lambda f: f.write(text.encode()))  # UTF-8


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` with :func:`atomic_write`. Non-finite floats become ``null``.

    Raises:
        WriteError: the file could not be written.
    """
    text = json.dumps(_jsonable(obj), indent=2) + "\n"  # _jsonable leaves no NaN or inf
    write_text_atomic(path, text)


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


def _git(directory: Path, *args: str) -> bytes | None:
    """The output of ``git args`` run in ``directory``, or None if git fails or is absent."""
    try:
        out = subprocess.run(["git", *args], cwd=directory, capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_state(directory: str | Path) -> dict[str, Any]:
    """The provenance of the checkout holding ``directory``, as MLflow and Sacred record it.

    Returns:
        ``git_commit`` (the HEAD commit, or None outside a checkout), ``git_dirty`` (whether any
        tracked file differs from HEAD or an untracked, not ignored, file exists; None outside a
        checkout), ``git_diff_sha256`` (SHA-256 of ``git diff HEAD --binary`` and of the untracked
        files' paths and contents; None when clean) and ``git_changed_files`` (paths from the
        checkout's root, sorted).
    """
    directory = Path(directory)
    state: dict[str, Any] = {"git_commit": None, "git_dirty": None, "git_diff_sha256": None, "git_changed_files": []}
    head = _git(directory, "rev-parse", "HEAD")
    if head is None:  # not a checkout, or no git
        return state
    root = _git(directory, "rev-parse", "--show-toplevel")
    diff = _git(directory, "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff")
    tracked = _git(directory, "diff", "HEAD", "--name-only", "-z")  # names only: no diff tool runs
    # ":/": the whole checkout (ls-files lists only the current folder's files; diff the whole tree)
    untracked = _git(directory, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", ":/")
    if root is None or diff is None or tracked is None or untracked is None:
        return state
    state["git_commit"] = head.decode().strip() or None
    new_files = sorted(untracked.decode(errors="replace").split("\0")[:-1])
    changed = sorted(set(tracked.decode(errors="replace").split("\0")[:-1]) | set(new_files))
    state["git_dirty"], state["git_changed_files"] = bool(changed), changed
    if changed:
        digest = hashlib.sha256(diff)
        top = Path(root.decode().strip())
        for name in new_files:  # a new file is part of what ran: its path and content
            digest.update(b"\0" + name.encode() + b"\0")
            try:
                digest.update((top / name).read_bytes())
            except OSError:
                pass
        state["git_diff_sha256"] = digest.hexdigest()
    return state


@functools.cache
def _git_state_of_lnbench() -> dict[str, Any]:
    """:func:`git_state` of the checkout lnbench runs from, once per process (the code a process
    runs is the code it imported; a compare starts many runs)."""
    return git_state(Path(__file__).resolve().parent)


#: The vector instruction sets whose kernels round differently (x86 ``flags``, aarch64 ``Features``
#: in /proc/cpuinfo): :func:`cpu_info` records which of them the CPU has.
VECTOR_ISA_FLAGS = frozenset(
    {
        *("sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"),
        *("avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2"),
    }
)
_CPUINFO = "/proc/cpuinfo"


def _or_none(get: Callable[[], Any]) -> Any:
    """``get()``, or None when it raises: a machine description never stops a run."""
    try:
        return get()
    except Exception:
        return None


def _cpuinfo() -> dict[str, str]:
    """The first value of each key of /proc/cpuinfo (the first CPU's), {} when it cannot be read."""
    try:
        with open(_CPUINFO, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), value.strip())
    return fields


@functools.lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    """The CPU a process runs on, once per process: ``model`` (/proc/cpuinfo's ``model name``, else
    ``platform.processor()``), ``isa`` (the sorted :data:`VECTOR_ISA_FLAGS` it has),
    ``torch_capability`` (``torch.backends.cpu.get_cpu_capability()``: the ISA torch's kernels
    dispatch to, e.g. ``AVX2`` or ``AVX512``) and ``count`` (``os.cpu_count()``). Per-seed numbers
    are bit-exact only on the same kind of CPU. A field that cannot be found is None."""
    fields = _cpuinfo()
    flags = fields.get("flags", fields.get("Features"))

    def capability() -> str:
        import torch

        return torch.backends.cpu.get_cpu_capability()

    return {
        "model": fields.get("model name") or _or_none(platform.processor) or None,
        "isa": None if flags is None else sorted(VECTOR_ISA_FLAGS.intersection(flags.split())),
        "torch_capability": _or_none(capability),
        "count": _or_none(os.cpu_count),
    }


def _setting(text: str | None, pattern: str) -> str | None:
    """The first group of ``pattern`` in ``text`` (multiline), None when absent or empty."""
    found = None if text is None else re.search(pattern, text, re.MULTILINE)
    return (found.group(1).strip() or None) if found else None


@functools.lru_cache(maxsize=1)
def torch_build() -> dict[str, Any]:
    """How torch was built, once per process: ``blas`` and ``lapack`` (``BLAS_INFO`` and
    ``LAPACK_INFO`` of ``torch.__config__.show()``, e.g. ``mkl`` or ``open``), ``mkldnn``
    (``torch.backends.mkldnn.is_available()``) and ``parallel`` (the ``ATen parallel backend`` of
    ``torch.__config__.parallel_info()``, e.g. ``OpenMP``). A field that cannot be found is None."""
    torch = _or_none(lambda: importlib.import_module("torch"))
    show = _or_none(lambda: torch.__config__.show())
    parallel = _or_none(lambda: torch.__config__.parallel_info())
    return {
        "blas": _setting(show, r"\bBLAS_INFO=([^,\n]*)"),
        "lapack": _setting(show, r"\bLAPACK_INFO=([^,\n]*)"),
        "mkldnn": _or_none(lambda: bool(torch.backends.mkldnn.is_available())),
        "parallel": _setting(parallel, r"^ATen parallel backend:(.*)$"),
    }


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
