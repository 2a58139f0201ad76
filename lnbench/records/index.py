"""The run index (``lnbench ls``): what each run folder under a runs folder is, from its files only.

One :class:`Entry` per folder: its kind, status, start time, wall time, seeds and headline result
(the best mean accuracy, a train run's final accuracy, the claims' verdict counts, the checks
passed), read from ``run.json`` and ``summary.json`` (or ``metrics.json``). No database: a folder
is what its files say, and a folder that cannot say it (half written, of an older or newer
version) is listed with a note saying what is missing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lnbench.names import DEFAULT_TASK
from lnbench.records.schema import SCHEMA_VERSION

#: what the headline of each kind is
HEADLINES = {
    "train": "final test accuracy",
    "compare": "best mean final test accuracy (model, norm) over seeds",
    "batchsize-sweep": "best mean final test accuracy (norm, batch size) over seeds",
    "sweep": "best mean final test accuracy of a grid cell over seeds",
    "claims": "the claims' verdicts, counted",
    "invariance": "cells that agree with the paper's Table 1",
    "gradcheck": "checks passed",
}


def read_json(path: Path) -> Any:
    """A JSON file's body, or None when it is missing or not JSON (a half-written folder)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


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


def _best(rows: list[dict], key: str, label: Any) -> tuple[float, str] | None:
    scored = [(r[key], label(r)) for r in rows if isinstance(r.get(key), (int, float))]
    return max(scored, key=lambda s: s[0]) if scored else None


def headline(kind: str, summary: dict | None, metrics: dict | None, report: dict | None) -> str:
    """The one-line result of a folder of ``kind`` (:data:`HEADLINES`); "" when it has none yet.
    A run off the default task says which (``... on adding``)."""
    line = _headline(kind, summary, metrics, report)
    summary = summary or {}
    tasks = summary.get("tasks") or sorted({r.get("task", DEFAULT_TASK) for r in summary.get("rows") or []})
    if kind == "train":
        tasks = [(metrics or {}).get("task", DEFAULT_TASK)]
    return f"{line} on {', '.join(tasks)}" if line and tasks and list(tasks) != [DEFAULT_TASK] else line


def _headline(kind: str, summary: dict | None, metrics: dict | None, report: dict | None) -> str:
    summary = summary or {}
    if kind == "train":
        accs = (metrics or {}).get("test_acc") or []
        return f"test acc {accs[-1]:.3f}" if accs and isinstance(accs[-1], (int, float)) else ""
    if kind == "claims" and summary.get("claims"):
        counts = Counter(c.get("verdict", "?") for c in summary["claims"])
        return ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))
    if kind in ("invariance", "gradcheck") and report:
        items = report.get("cells" if kind == "invariance" else "checks") or []
        good = sum(bool(i.get("agrees" if kind == "invariance" else "passed")) for i in items)
        return f"{good}/{len(items)} {'agree' if kind == 'invariance' else 'passed'}"
    entries = summary.get("aggregate") or summary.get("cells") or []

    def label(e: dict) -> str:
        if "values" in e and isinstance(e["values"], dict):
            return ", ".join(f"{k.split('.')[-1]}={v}" for k, v in e["values"].items())
        parts = [e.get("family"), e.get("norm_placement"), e.get("norm")]
        if kind == "batchsize-sweep":
            parts.append(f"B={e.get('batch_size')}")
        return " ".join(str(p) for p in parts if p)

    best = _best(entries, "mean_final_test_acc", label)
    if best is None:  # no aggregate yet (an interrupted run): the best single run
        best = _best(summary.get("rows") or [], "final_test_acc", lambda r: f"{r.get('run_dir', '?')}")
        return f"best run {best[1]}: {best[0]:.3f}" if best else ""
    return f"best {best[1]}: {best[0]:.3f}"


def entry(path: Path) -> Entry:
    """What the folder ``path`` says about itself (see the module docstring)."""
    out = Entry(path, start=_stamp(path.name))
    manifest = read_json(path / "run.json")
    if not isinstance(manifest, dict):
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
    summary = read_json(path / "summary.json")
    metrics = read_json(path / "metrics.json") if out.kind == "train" else None
    report = read_json(path / f"{out.kind}.json") if out.kind in ("invariance", "gradcheck") else None
    if out.kind in HEADLINES and out.kind not in ("train", "invariance", "gradcheck"):
        if not isinstance(summary, dict):
            out.notes.append("no summary.json yet" if manifest else "no summary.json")
            summary = None
        elif not summary.get("complete", False):
            out.notes.append(f"partial: {len(summary.get('rows') or [])} runs finished")
    if isinstance(metrics, dict) and metrics.get("schema_version", 1) > SCHEMA_VERSION:
        out.notes.append(f"metrics.json of a newer lnbench (schema {metrics['schema_version']})")
        metrics = None
    elif isinstance(metrics, dict) and metrics.get("schema_version", 1) < SCHEMA_VERSION:
        out.notes.append(f"older schema {metrics.get('schema_version', 1)}")
    if out.kind == "train" and metrics is None and not any("newer" in n for n in out.notes):
        out.notes.append("no metrics.json")
    if out.kind != "?" and out.kind not in HEADLINES:
        out.notes.append(f"unknown kind {out.kind!r} (a newer lnbench?)")
    try:
        out.headline = headline(out.kind, summary if isinstance(summary, dict) else None, metrics, report)
    except (TypeError, ValueError, KeyError, AttributeError):
        out.notes.append("summary.json of another version: no headline")
    return out


def index(
    runs_dir: str | Path, kind: str | None = None, status: str | None = None, limit: int | None = None
) -> list[Entry]:
    """The run folders under ``runs_dir`` (or that one folder), newest first, keeping those of
    ``kind`` and ``status`` when given, at most ``limit``.

    Raises:
        FileNotFoundError: ``runs_dir`` is not a folder.
    """
    entries = [entry(p) for p in run_folders(runs_dir)]
    entries = [e for e in entries if (kind is None or e.kind == kind) and (status is None or e.status == status)]
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    entries.sort(key=lambda e: (e.start or oldest, e.path.name), reverse=True)
    return entries[:limit] if limit is not None else entries
