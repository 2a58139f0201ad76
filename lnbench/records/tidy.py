"""Run folders as tidy pandas DataFrames (``lnbench.load``, ``lnbench export``).

Long ("tidy") form: one row per observation, one column per variable, column names the keys of
the run folder's files (config.yaml keys dotted, ``model.norm``; metrics.json and summary.json
keys as they are; a nested value's parts dotted, ``ci95.low``; a list that is one value, such as
a claim's ``runs`` or a baseline's ``correct_per_seed``, as a Python list, and in a file that
:func:`export` writes as its JSON text). Every table starts with ``experiment`` (the experiment
folder's name) and, where rows belong to a run, ``run`` (the child folder's name; a train run's
is its own):

- ``runs``: one row per run: ``kind``, the summary row's fields (:data:`SUMMARY_ROW_DOCS`:
  status, final metrics and probes), the probes before training (``*_init``), ``regime`` (claims),
  ``note`` (what could not be read), and the run's config.yaml flattened;
- ``epochs``: one row per (run, epoch): every per-epoch metric of metrics.json
  (``saturation_by_scale.q1`` .. ``q4`` for its four values; a stacked RNN or LSTM's
  ``scale_spearman_by_layer.l1`` .. ``lL`` and the same of ``saturation`` and ``grad_ratio``);
- ``hidden_norm``: one row per (run, epoch, quartile, layer, timestep): ``hidden_norm`` (epoch 0:
  before training, ``hidden_norm_init``; ``quartile`` ``all``, or ``q1`` .. ``q4`` of the input
  scale for ``hidden_norm_by_scale``; ``layer`` None, or 1 .. L for a stacked model's
  ``hidden_norm_by_layer``);
- ``grad_norm`` and ``grad_norm_layer``: one row per (run, epoch, parameter or layer);
- ``aggregate``: one row per aggregate entry of summary.json (``aggregate``, a sweep's ``cells``);
- ``comparisons``, ``claims``, ``baselines``: summary.json's lists, one row each (claims with their
  ``task``, and a row with verdict ``n/a`` for each claim a task cannot measure).

The identity columns ``model`` (the model a row is compared in, as the tables and figures name it:
``RNN (joint)``, ``RNN (separate)``, ``LSTM, gains 0.1``: one curve per model and norm), ``family``,
``norm``, ``norm_placement``, ``norm_gain_init``, ``batch_size``, ``seed`` (and ``regime``) are repeated
in the per-epoch tables so that a plot needs no join.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from lnbench.names import DEFAULT_TASK, model_label
from lnbench.records.folder import RunFolder
from lnbench.records.index import run_folders
from lnbench.records.io import WriteError, atomic_write_all
from lnbench.records.schema import EPOCH_BY_LAYER, EPOCH_SCALARS, Metrics, SchemaError, at_epoch, run_facts, summary_row

IDENTITY = ("family", "norm", "norm_placement", "norm_gain_init", "batch_size", "seed")
PER_EPOCH = EPOCH_SCALARS
#: the one-value-per-layer probes before training (``<key>_init``, where Metrics declares one)
INIT = tuple(f"{k}_init" for k in EPOCH_SCALARS + EPOCH_BY_LAYER if f"{k}_init" in {f.name for f in fields(Metrics)})
QUARTILES = ("q1", "q2", "q3", "q4")


@dataclass
class Tables:
    """The tidy tables of some run folders (see the module docstring); ``tables["epochs"]`` works too."""

    runs: pd.DataFrame
    epochs: pd.DataFrame
    hidden_norm: pd.DataFrame
    grad_norm: pd.DataFrame
    grad_norm_layer: pd.DataFrame
    aggregate: pd.DataFrame
    comparisons: pd.DataFrame
    claims: pd.DataFrame
    baselines: pd.DataFrame

    def __getitem__(self, name: str) -> pd.DataFrame:
        return getattr(self, name)

    def items(self) -> list[tuple[str, pd.DataFrame]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


def flat(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested keys dotted (``{"model": {"norm": "layer"}}`` -> ``{"model.norm": "layer"}``), a
    two-value ``ci95`` as ``ci95.low`` / ``ci95.high``, any other list (and an empty mapping) as
    it is: one value of its column (:func:`export` writes it as its JSON text)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{name}."))
        elif key == "ci95" and isinstance(value, (list, tuple)) and len(value) == 2:
            out[f"{name}.low"], out[f"{name}.high"] = value
        elif isinstance(value, (list, tuple, dict)):
            out[name] = list(value) if isinstance(value, tuple) else value
        else:
            out[name] = value
    return out


def _frame(rows: list[dict], first: Iterable[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    order = [c for c in first if c in frame.columns]
    return frame[order + [c for c in frame.columns if c not in order]] if rows else pd.DataFrame(columns=list(first))


def _children(folder: Path, summary: dict) -> list[tuple[Path, dict]]:
    """The runs of an experiment folder with their summary.json row (``{}`` when it has none):
    a folder that is its own run (a train run: its metrics.json, or a summary row naming the
    folder itself) is its one run; else the children in summary order, then any without a row
    (an interrupted experiment), earlier attempts (``*.attemptN``) left out. A folder of neither
    (a checking kind's: invariance, gradcheck) has none."""
    by_dir = {r.get("run_dir"): r for r in summary.get("rows") or [] if isinstance(r, dict)}
    if (folder / "metrics.json").is_file() or folder.name in by_dir:
        return [(folder, by_dir.get(folder.name, next(iter(by_dir.values()), {})))]
    subdirs = RunFolder(folder).children(attempts=False)
    ordered = [folder / name for name in by_dir if name and (folder / name).is_dir()]
    return [(d, by_dir.get(d.name, {})) for d in ordered + [d for d in subdirs if d not in ordered]]


def _run_tables(experiment: str, kind: str, run: Path, row: dict, out: dict[str, list[dict]]) -> None:
    """Append the rows of one run folder to the tables ``out``."""
    folder = RunFolder(run)
    manifest = folder.manifest() or {}
    config = folder.config() or {}
    target = (config.get("compare") or {}).get("target_acc", 0.9)
    base = {"experiment": experiment, "run": run.name}
    notes = [] if config else ["no readable config.yaml"]
    try:
        m = folder.metrics()
    except SchemaError as exc:
        notes.append(str(exc))
        model = config.get("model") or {}
        record = {**base, "kind": kind, "status": manifest.get("status"), "family": model.get("family")}
        out["runs"].append({**record, "norm": model.get("norm"), "note": "; ".join(notes), **flat(config)})
        return
    summary = summary_row(m, target, run.name, *run_facts(manifest))
    model = model_label(m.family, m.norm_placement, m.norm_gain_init)
    ident = {**base, "model": model, **{k: getattr(m, k) for k in IDENTITY}}
    if "regime" in row:
        ident["regime"] = row["regime"]
    record = {**base, "kind": kind, "model": model, **flat(summary.to_dict()), **{k: getattr(m, k) for k in INIT}}
    record["warnings"] = "; ".join(summary.warnings)
    if "regime" in row:
        record["regime"] = row["regime"]
    record["note"] = "; ".join(notes)
    out["runs"].append({**record, **{k: v for k, v in flat(config).items() if k not in record}})
    for i, epoch in enumerate(m.epochs):
        values: dict[str, Any] = {k: at_epoch(getattr(m, k), i) for k in PER_EPOCH}
        by_scale = at_epoch(m.saturation_by_scale, i) or [None] * 4
        values |= {f"saturation_by_scale.{q}": v for q, v in zip(QUARTILES, by_scale)}
        for key in EPOCH_BY_LAYER:  # a stacked RNN or LSTM: <probe>_by_layer.l1 .. lL
            values |= {f"{key}.l{j + 1}": v for j, v in enumerate(at_epoch(getattr(m, key), i) or [])}
        out["epochs"].append({**ident, "epoch": epoch, **values})
        for name, series in m.grad_norm.items():
            out["grad_norm"].append({**ident, "epoch": epoch, "parameter": name, "grad_norm": at_epoch(series, i)})
        for name, series in m.grad_norm_layer.items():
            out["grad_norm_layer"].append(
                {**ident, "epoch": epoch, "layer": name, "grad_norm_layer": at_epoch(series, i)}
            )
    # (epoch, quartile, layer, curve): epoch 0 before training; a stacked model's layers (hidden_norm_by_layer)
    curves: list[tuple[int, str, int | None, list | None]] = [(0, "all", None, m.hidden_norm_init)]
    curves += [(0, q, None, c) for q, c in zip(QUARTILES, m.hidden_norm_by_scale_init or [])]
    curves += [(0, "all", j + 1, c) for j, c in enumerate(m.hidden_norm_by_layer_init or [])]
    for i, epoch in enumerate(m.epochs):
        curves.append((epoch, "all", None, at_epoch(m.hidden_norm, i) or []))
        curves += [(epoch, q, None, c) for q, c in zip(QUARTILES, at_epoch(m.hidden_norm_by_scale, i) or [])]
        curves += [(epoch, "all", j + 1, c) for j, c in enumerate(at_epoch(m.hidden_norm_by_layer, i) or [])]
    for epoch, quartile, layer, curve in curves:
        out["hidden_norm"] += [
            {**ident, "epoch": epoch, "quartile": quartile, "layer": layer, "timestep": t + 1, "hidden_norm": v}
            for t, v in enumerate(curve or [])
        ]


def load(*paths: str | Path) -> Tables:
    """Read run folders into tidy DataFrames (see the module docstring).

    Args:
        paths: experiment or train run folders, or runs folders holding them (all their run
            folders); several give one set of tables (``experiment`` tells them apart).

    Returns:
        :class:`Tables`. Floats are the files' numbers (JSON null: NaN or None).

    Raises:
        FileNotFoundError: a path that is not a folder.
        ValueError: no path given.

    Example::

        t = lnbench.load("runs/20260101T000000_000000Z_compare")
        t.epochs.groupby(["family", "norm", "epoch"]).test_acc.mean()
    """
    if not paths:
        raise ValueError("lnbench.load: give at least one run folder or runs folder")
    out: dict[str, list[dict]] = {f.name: [] for f in fields(Tables)}
    for folder in [f for p in paths for f in run_folders(p)]:
        manifest = RunFolder(folder).manifest()
        summary = RunFolder(folder).summary() or {}
        experiment = {"experiment": folder.name}
        if not manifest:  # missing, damaged or empty: nothing to say
            continue
        kind = str(manifest.get("kind") or "?")
        for run, row in _children(folder, summary):
            _run_tables(folder.name, kind, run, row, out)
        for key in ("aggregate", "cells"):
            out["aggregate"] += [{**experiment, **flat(e)} for e in summary.get(key) or [] if isinstance(e, dict)]
        out["comparisons"] += [{**experiment, **flat(c)} for c in summary.get("comparisons") or []]
        claims = [c for c in summary.get("claims") or [] if isinstance(c, dict)]
        # each claim's task (its regime default@adding; trend's keep their names), and the claims a
        # task cannot measure (claims_by_task's n/a cells) as rows of their own
        out["claims"] += [
            {**experiment, **flat(c), "task": str(c.get("regime", "")).partition("@")[2] or DEFAULT_TASK}
            for c in claims
        ]
        out["claims"] += [
            {**experiment, "id": row.get("id"), "claim": row.get("claim"), "family": row.get("family"),
             "metric": row.get("metric"), "task": task, "verdict": "n/a", "reason": cell.get("reason")}
            for row in summary.get("claims_by_task") or [] if isinstance(row, dict)
            for task, cell in (row.get("tasks") or {}).items() if isinstance(cell, dict) and cell.get("verdict") == "n/a"
        ]  # fmt: skip
        baselines = summary.get("baselines") or []
        if isinstance(baselines, dict):  # claims: per regime
            out["baselines"] += [{**experiment, "regime": r, **flat(b)} for r, bs in baselines.items() for b in bs]
        else:
            out["baselines"] += [{**experiment, **flat(b)} for b in baselines]
    first = ("experiment", "run", "model", *IDENTITY, "regime", "epoch")
    return Tables(**{name: _frame(rows, first) for name, rows in out.items()})


def export(tables: Tables, out: str | Path, fmt: str = "csv") -> list[Path]:
    """Write every table as ``out/<table>.csv`` (or ``.parquet``, which needs pyarrow); returns the
    files written. Empty tables are written too (their header), so a script finds every file.
    All or none (:func:`lnbench.records.io.atomic_write_all`): a failed export leaves no file
    of it, whole or cut short, and ``out`` as it was (a folder it created is removed).

    Raises:
        ValueError: an unknown format.
        ImportError: parquet without pyarrow.
        WriteError: a file or ``out`` could not be written (a full disk, a read-only place), naming it.
    """
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"unknown format {fmt!r}; allowed: csv, parquet")
    out = Path(out)
    created = [p for p in (out, *out.parents) if not p.exists()]  # deepest first
    writes = {
        out / f"{name}.{fmt}": (
            functools.partial(_as_text(frame).to_csv, index=False)
            if fmt == "csv"
            else functools.partial(_parquet_ready(_as_text(frame)).to_parquet, index=False)
        )
        for name, frame in tables.items()
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        return atomic_write_all(writes)
    except OSError as exc:
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, WriteError):
            raise
        raise WriteError(exc.errno or 0, exc.strerror or str(exc), str(out)) from None


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """A list or mapping in a cell (a claim's ``runs``) as its JSON text, which a CSV cell holds and
    ``json.loads`` reads back; the frame itself is left as it is."""
    nested = [c for c in frame.columns if any(isinstance(v, (list, dict)) for v in frame[c])]
    if not nested:
        return frame
    frame = frame.copy()
    for col in nested:
        frame[col] = [json.dumps(v) if isinstance(v, (list, dict)) else v for v in frame[col]]
    return frame


def _parquet_ready(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet wants one type per column: a column mixing numbers and text (a config key that is
    a number in one run and null or text in another) is written as text."""
    frame = frame.copy()
    for col in frame.columns:
        kinds = {type(v) for v in frame[col] if v is not None and not (isinstance(v, float) and math.isnan(v))}
        if len(kinds - {int, float}) and len(kinds) > 1:
            frame[col] = [None if v is None else str(v) for v in frame[col]]
    return frame
