"""One process per run folder: an exclusive ``flock`` on ``<folder>/.lnbench.lock``.

An experiment holds its folder's lock from the moment it creates the folder (or resumes it)
until its report is written; a second process that wants the folder (``--resume DIR`` while DIR
is still running) is refused with "DIR is being run by pid N". The lock file holds the holder's
pid, host and start time, and is removed on release. ``flock`` is released by the kernel when
its process dies (``kill -9`` included), so a lock file that is still there but not locked was
left by a process that stopped without releasing it: the next process takes it over and says so
(:attr:`FolderLock.stale`). On a network file system the lock of a lost node is released when
the server's lease on it expires.

Mirrors the usual pattern of ``fcntl.flock`` lock files (the ``filelock`` package's
``UnixFileLock``), plus the holder's identity for the message.

A file system without ``flock`` (NFS without a lock manager: ``ENOLCK``; Lustre mounted without
``-o flock``: ``ENOSYS``; some FUSE mounts: ``EOPNOTSUPP``) gets a soft lock instead, as
``filelock``'s ``SoftFileLock`` does: the lock file is created exclusively and holds the pid and
host; a process that finds one refuses the folder while that pid is alive on this host (or the
file names another host), takes it over when the pid is gone, and a warning (one line, once per
process) says that two processes could then write the folder.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import warnings
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

LOCK_NAME = ".lnbench.lock"

#: errno of a file system that has no ``flock``: the soft lock is used there
NO_FLOCK = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}
_warned_soft = False


class SoftLockWarning(UserWarning):
    """A run folder is on a file system without ``flock``: lnbench locks it with a soft lock."""


def _alive(holder: dict[str, Any]) -> bool:
    """Whether a soft lock's holder may still run: its pid is alive on this host, or it names
    another host (whose processes cannot be seen from here)."""
    if holder.get("host") not in (None, platform.node()):
        return True
    pid = holder.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


class FolderBusy(RuntimeError):
    """Another process holds the run folder's lock. ``str``: "DIR is being run by pid N"."""

    def __init__(self, folder: Path, holder: dict[str, Any]) -> None:
        self.folder, self.holder = folder, holder
        pid = holder.get("pid")
        who = f"pid {pid}" if pid is not None else "another process"
        if holder.get("host") not in (None, platform.node()):
            who += f" on {holder['host']}"
        since = f" (since {holder['since']})" if holder.get("since") else ""
        super().__init__(f"{folder} is being run by {who}{since}; wait for it to finish or stop it first")


def _holder(fd: int) -> dict[str, Any]:
    """What the lock file open as ``fd`` says about its holder ({} if nothing readable)."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def holder_of(folder: str | Path) -> dict[str, Any] | None:
    """The holder of ``folder``'s lock (its pid, host, since) if a live process holds it, else
    None. Reads only: a stale lock file is left for :meth:`FolderLock.acquire` to report."""
    try:
        fd = os.open(Path(folder) / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # conflicts with the holder's LOCK_EX only
    except BlockingIOError:
        return _holder(fd)
    except OSError as exc:  # no flock here: the soft lock's holder, if it may still run
        if exc.errno not in NO_FLOCK:
            raise
        holder = _holder(fd)
        return holder if holder and _alive(holder) else None
    finally:
        os.close(fd)  # also releases the shared lock, if taken
    return None


class FolderLock:
    """The exclusive lock of one run folder (see the module's docstring).

    Args:
        folder: the run folder (it must exist).

    Attributes:
        stale: after :meth:`acquire`, what a lock file left by a process that died said about
            it (``{"pid", "host", "since"}``), or None when there was none.
        soft: after :meth:`acquire`, None, or on a file system without ``flock`` the note that
            the folder holds a soft lock.

    Raises:
        FolderBusy: from :meth:`acquire` (and ``__enter__``) when another process holds it.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.stale: dict[str, Any] | None = None
        self.soft: str | None = None  # after acquire on a file system without flock: why the lock is soft
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise FolderBusy(self.folder, holder) from None
            except OSError as exc:
                if exc.errno not in NO_FLOCK:
                    os.close(fd)
                    raise
                return self._acquire_soft(fd)
            try:  # the file may have been released and removed between our open and our lock
                current = os.stat(self.path)
                opened = os.fstat(fd)
                same = (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.stale = _holder(fd) or None  # a released lock is removed: anything here was left by a dead holder
        me = {"pid": os.getpid(), "host": platform.node(), "since": datetime.now(timezone.utc).isoformat()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError:  # a full disk: the lock holds without the holder's name
            pass
        self._fd = fd
        return self

    def _acquire_soft(self, fd: int) -> FolderLock:
        """The soft lock of a file system without ``flock`` (see the module's docstring); ``fd``
        is the lock file, opened (and created if it was not there) by :meth:`acquire`."""
        global _warned_soft
        holder = _holder(fd)
        if holder and _alive(holder):
            os.close(fd)
            raise FolderBusy(self.folder, holder)
        self.stale = holder or None
        self.soft = (
            f"{self.folder.parent} has no file locks (flock); lnbench uses a soft lock there, "
            "so two processes started at the same moment could both write one run folder"
        )
        if not _warned_soft:
            _warned_soft = True
            warnings.warn(self.soft, SoftLockWarning, stacklevel=3)
        me = {"pid": os.getpid(), "host": platform.node(), "since": datetime.now(timezone.utc).isoformat()}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        except OSError:
            pass
        self._fd = fd
        return self

    def release(self) -> None:
        """Remove the lock file, then unlock (a no-op if not held)."""
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)  # while still holding it: a waiter re-checks the file it locked
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
