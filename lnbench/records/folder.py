"""The one reader of a run folder's files: run.json, summary.json, config.yaml, metrics.json, a
checking kind's report (``invariance.json``) and the child run folders.

Every module that reads a run folder reads it here, so that a missing file and a damaged one mean
the same everywhere:

- a **missing** file is ``None`` (a folder still running, or stopped before it wrote the file);
- a **damaged** file (unreadable, not UTF-8, not JSON or YAML, or not an object/mapping: edited by
  hand or cut short by a full disk) is ``None`` too by default, because ``lnbench ls``, ``export``
  and ``report`` list what they can of a half-written folder; with ``strict=True`` it raises
  :class:`DamagedFile`, one line naming the file (``lnbench show`` exits 2 with it rather than
  print a damaged folder as an empty one).

The writer is :mod:`lnbench.records.runs`; metrics.json's schema is :mod:`lnbench.records.schema`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from lnbench.records.schema import Metrics, read_metrics


class DamagedFile(ValueError):
    """A run folder's file that exists but cannot be read as a JSON object (or a YAML mapping);
    the message names the file and says why."""


def read_object(path: str | Path, strict: bool = False) -> dict | None:
    """The JSON object in the file ``path``.

    Returns:
        The object (a dict); None when the file is missing, or (``strict=False``) damaged.

    Raises:
        DamagedFile: ``strict=True`` and the file is unreadable, not UTF-8, not JSON or not an object.
    """
    path = Path(path)
    try:
        body = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        if strict:
            raise DamagedFile(f"{path}: cannot read it as JSON ({exc}); was it edited or cut short?") from None
        return None
    if isinstance(body, dict):
        return body
    if strict:
        raise DamagedFile(f"{path}: not a JSON object (a {type(body).__name__}); was it edited?")
    return None


class RunFolder:
    """A run folder (an experiment's or a run's) read from its files only (see the module docstring).

    Args:
        path: the folder; it need not exist (every file is then missing).

    Example::

        folder = RunFolder("runs/20260101T000000_000000Z_compare")
        folder.kind, (folder.summary() or {}).get("headline")
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def json(self, name: str, strict: bool = False) -> dict | None:
        """The JSON object of the folder's file ``name`` (:func:`read_object`).

        Raises:
            DamagedFile: ``strict=True`` and the file is damaged.
        """
        return read_object(self.path / name, strict)

    def manifest(self, strict: bool = False) -> dict | None:
        """run.json: status, kind, seeds, times, versions (:class:`lnbench.records.runs.Run`)."""
        return self.json("run.json", strict)

    def summary(self, strict: bool = False) -> dict | None:
        """summary.json: rows, aggregate, verdicts, figures, headline (docs/run-folder.md, "summary.json")."""
        return self.json("summary.json", strict)

    def report(self, strict: bool = False) -> dict | None:
        """A checking kind's report, ``<kind>.json`` (``invariance.json``, ``gradcheck.json``)."""
        return self.json(f"{self.kind}.json", strict) if self.kind else None

    def raw_metrics(self) -> dict | None:
        """metrics.json as it is on disk (no schema check); None when missing or damaged."""
        return self.json("metrics.json")

    def metrics(self) -> Metrics:
        """metrics.json checked against its schema (:func:`lnbench.records.schema.read_metrics`).

        Raises:
            SchemaError: missing, unreadable, not JSON, or of a newer schema version.
        """
        return read_metrics(self.path)

    def config_text(self) -> str | None:
        """config.yaml's text (the resolved config the folder was run with); None when missing or unreadable."""
        try:
            return (self.path / "config.yaml").read_text()
        except (OSError, ValueError):
            return None

    def config(self) -> dict | None:
        """config.yaml as a mapping; None when missing, unreadable, or not a YAML mapping."""
        text = self.config_text()
        try:
            body: Any = yaml.safe_load(text) if text is not None else None
        except yaml.YAMLError:
            return None
        return body if isinstance(body, dict) else None

    @property
    def kind(self) -> str | None:
        """The experiment kind its run.json names (``compare``), or None."""
        kind = (self.manifest() or {}).get("kind")
        return str(kind) if kind else None

    @property
    def name(self) -> str:
        """The name it was run under (run.json's ``name``), else the folder's name."""
        return str((self.manifest() or {}).get("name") or self.path.name)

    def children(self, attempts: bool = True) -> list[Path]:
        """The child run folders (a folder holding a run.json), sorted by name; ``attempts=False``
        leaves out the earlier attempts a resumed experiment kept (``*.attemptN``)."""
        if not self.path.is_dir():
            return []
        found = sorted(d for d in self.path.iterdir() if d.is_dir() and (d / "run.json").is_file())
        return found if attempts else [d for d in found if ".attempt" not in d.name]
