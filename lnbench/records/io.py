"""Atomic writes of a run folder's files: a file is either its old or its new whole content,
never half of one (written to a temporary file in the same folder, flushed, then renamed), and
JSON of numpy and non-finite values written as strict JSON."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

_UMASK = os.umask(0)
os.umask(_UMASK)


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
