"""The run index (``lnbench ls``): what each run folder under a runs folder is, from its files only.

One :class:`Entry` per folder: its kind, status, start time, wall time, seeds and headline result,
read from ``run.json`` and ``summary.json`` (:class:`lnbench.records.folder.RunFolder`). The
headline is the kind's own: each experiment kind writes it into summary.json (``headline``:
``{"label", "value", "text"}``, :func:`make_headline`); for a folder without one (of an older
version, or a kind that writes no summary.json) the kind computes it again from the folder's files
(:func:`headline_of`). This module knows no kind: the caller passes the kinds
(:func:`lnbench.experiments.registry.index` passes the registry). No database: a folder is what
its files say, and a folder that cannot say it (half written, of an older or newer version) is
listed with a note saying what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from lnbench.names import DEFAULT_TASK
from lnbench.records.folder import RunFolder
from lnbench.records.schema import SCHEMA_VERSION


class Kind(Protocol):
    """What ``lnbench ls`` asks of an experiment kind (:class:`lnbench.experiments.base.Experiment`)."""

    @property
    def holds(self) -> tuple[str, ...]:
        """The files its folder holds besides run.json once it has a result."""
        ...

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        """Its headline (:func:`make_headline`) from ``summary`` and the folder's files, or None."""
        ...


def make_headline(label: str, value: float | None = None, tasks: Iterable[str] = (), sep: str = ": ") -> dict:
    """A summary.json ``headline``: ``label`` (what it is: ``best lstm layer``), ``value`` (a number,
    or None) and ``text``, the line ``lnbench ls`` prints (``label``, ``sep`` and ``value`` to 3
    places: ``best lstm layer: 0.958``; a run off the default task says which: ``... on adding``)."""
    text = label if value is None else f"{label}{sep}{value:.3f}"
    tasks = list(tasks)
    if tasks and tasks != [DEFAULT_TASK]:
        text += f" on {', '.join(tasks)}"
    return {"label": label, "value": value, "text": text}


def headline_of(kind: Kind, folder: RunFolder, summary: dict | None) -> str:
    """The headline text of ``folder``: its summary.json's ``headline`` when it has one, else the
    kind's :meth:`Kind.headline` of its files (a folder of an older version); "" when it has none yet.

    Raises:
        TypeError, ValueError, KeyError, AttributeError: a summary.json of another version.
    """
    written = (summary or {}).get("headline")
    if isinstance(written, dict) and isinstance(written.get("text"), str):
        return written["text"]
    computed = kind.headline(folder, summary or {})
    return str(computed["text"]) if computed else ""


def is_run_folder(path: Path) -> bool:
    """A run folder holds a run.json (the manifest every run writes first)."""
    return (path / "run.json").is_file()


def run_folders(path: str | Path) -> list[Path]:
    """The run folders ``path`` names: itself when it is one, else the run folders in it (a runs
    folder; folders without run.json are listed too when their name starts with a timestamp,
    so a folder whose run.json was never written is not silently skipped). Sorted by name.

    Raises:
        FileNotFoundError: ``path`` is not a folder.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such folder")
    if is_run_folder(path):
        return [path]
    return sorted(d for d in path.iterdir() if d.is_dir() and (is_run_folder(d) or _stamp(d.name) is not None))


def _stamp(name: str) -> datetime | None:
    """The UTC time a run folder's name starts with (``20260130T120000_123456Z_...``), or None."""
    try:
        return datetime.strptime(name[:23], "%Y%m%dT%H%M%S_%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def start_time(text: str) -> datetime:
    """A run.json ``start_time`` (ISO 8601) as an aware UTC datetime. lnbench writes it with its
    UTC offset (``+00:00``); a time without an offset (a naive ``2026-12-01T10:00:00``, written by
    hand or by another tool) is read as UTC, and one with another offset is converted to UTC.

    Raises:
        ValueError: not an ISO 8601 time. TypeError: not a string.
    """
    when = datetime.fromisoformat(text)
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


@dataclass
class Entry:
    """One line of ``lnbench ls``."""

    path: Path
    kind: str = "?"
    status: str = "?"
    start: datetime | None = None  # UTC, aware (:func:`start_time`)
    wall_seconds: float | None = None
    seeds: list[int] = field(default_factory=list)
    headline: str = ""
    notes: list[str] = field(default_factory=list)


def entry(path: Path, kinds: Mapping[str, Kind]) -> Entry:
    """What the folder ``path`` says about itself (see the module docstring); ``kinds``: the
    experiment kinds by name (a folder of another kind is noted as unknown)."""
    out = Entry(path, start=_stamp(path.name))
    folder = RunFolder(path)
    manifest = folder.manifest()
    if manifest is None:
        out.notes.append("no readable run.json (half written?)")
        manifest = {}
    out.kind = str(manifest.get("kind") or "?")
    out.status = str(manifest.get("status") or "?")
    if manifest.get("start_time"):
        try:
            out.start = start_time(manifest["start_time"])
        except (TypeError, ValueError):
            pass
    out.wall_seconds = manifest.get("wall_seconds")
    seed = manifest.get("seed")
    out.seeds = seed if isinstance(seed, list) else [seed] if isinstance(seed, int) else []
    kind = kinds.get(out.kind)
    summary = folder.summary()
    if summary is not None and not summary.get("complete", False):
        out.notes.append(f"partial: {len(summary.get('rows') or [])} runs finished")
    metrics = folder.raw_metrics()
    version = (metrics or {}).get("schema_version", 1)
    if metrics is not None and version > SCHEMA_VERSION:
        out.notes.append(f"metrics.json of a newer lnbench (schema {version})")
    elif metrics is not None and version < SCHEMA_VERSION:
        out.notes.append(f"older schema {version}")
    for name in kind.holds if kind is not None else ():
        if folder.json(name) is None:
            out.notes.append(f"no {name} yet" if manifest else f"no {name}")
    if out.kind != "?" and kind is None:
        out.notes.append(f"unknown kind {out.kind!r} (a newer lnbench?)")
    try:
        if kind is not None and not any("newer" in n for n in out.notes):
            out.headline = headline_of(kind, folder, summary)
        elif summary is not None and isinstance(summary.get("headline"), dict):  # a newer kind says it itself
            out.headline = str(summary["headline"].get("text") or "")
    except (TypeError, ValueError, KeyError, AttributeError):
        out.notes.append("summary.json of another version: no headline")
    return out


def index(
    runs_dir: str | Path,
    kind: str | None = None,
    status: str | None = None,
    limit: int | None = None,
    *,
    kinds: Mapping[str, Kind],
) -> list[Entry]:
    """The run folders under ``runs_dir`` (or that one folder), newest first, keeping those of
    ``kind`` and ``status`` when given, at most ``limit``; ``kinds``: the experiment kinds by name
    (:data:`lnbench.experiments.registry.EXPERIMENTS`).

    Raises:
        FileNotFoundError: ``runs_dir`` is not a folder.
    """
    entries = [entry(p, kinds) for p in run_folders(runs_dir)]
    entries = [e for e in entries if (kind is None or e.kind == kind) and (status is None or e.status == status)]
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    entries.sort(key=lambda e: (e.start or oldest, e.path.name), reverse=True)
    return entries[:limit] if limit is not None else entries
