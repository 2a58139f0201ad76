"""``report.html``: one self-contained page per experiment (or several side by side).

Everything on the page is read from the run folders' files (run.json, config.yaml, summary.json,
metrics.json, invariance.json / gradcheck.json and the PNG figures, inlined as base64), so an
old or interrupted run can be reported again: :func:`redraw` first draws its figures from the
metrics files. The page is rendered by a Jinja2 template (``lnbench/templates/report.html.j2``)
with autoescaping; it loads nothing from the network.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import fields
from pathlib import Path

import yaml

from lnbench import __version__
from lnbench.records.runs import utc_now
from lnbench.records.schema import SummaryRow, read_metrics, summary_row
from lnbench.report import tables as report
from lnbench.report.figures import CAPTIONS

ORDER = list(CAPTIONS)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _rows(summary: dict) -> list[SummaryRow]:
    known = {f.name for f in fields(SummaryRow)}
    return [SummaryRow(**{k: v for k, v in r.items() if k in known}) for r in summary.get("rows", [])]


def _children(path: Path) -> list[Path]:
    return sorted(d for d in path.iterdir() if d.is_dir() and (d / "run.json").exists())


def redraw(path: Path) -> list[str]:
    """Draw a run folder's figures again from its (and its children's) metrics files, whatever
    state it ended in; returns the files drawn."""
    from lnbench.analysis.claims import ClaimResult
    from lnbench.report import figures as plots

    manifest = _read_json(path / "run.json") or {}
    summary = _read_json(path / "summary.json") or {}
    kind = manifest.get("kind")
    target = summary.get("target_acc", 0.9)
    if kind == "train":
        return plots.draw_run_figures(path, [path], target)
    if kind == "compare":
        return plots.draw_run_figures(path, _children(path), target)
    if kind == "batchsize-sweep":
        rows = [summary_row(read_metrics(d), target, d.name) for d in _children(path) if (d / "metrics.json").exists()]
        if not any(r.ok for r in rows):
            return []
        aggregate = report.aggregate_over_seeds(rows)
        return [
            plots.plot_sweep(
                aggregate,
                "final_test_acc",
                "final test accuracy",
                "test accuracy vs batch size",
                path / "accuracy_vs_batch_size.png",
            ).name,
            plots.plot_sweep(
                aggregate,
                "mean_train_loss",
                "mean train loss over epochs (nats, log scale)",
                "mean training loss vs batch size",
                path / "train_loss_vs_batch_size.png",
                log_y=True,
            ).name,
        ]
    if kind == "sweep" and summary.get("cells"):
        return [
            plots.plot_grid(summary["cells"], key, path / f"accuracy_vs_{key.split('.')[-1]}.png").name
            for key in summary.get("grid", {})
            if key != "model.norm"
        ]
    if kind == "claims" and summary.get("claims"):
        return [plots.plot_claims([ClaimResult(**c) for c in summary["claims"]], path / "claims.png").name]
    return []


def _tables(path: Path, manifest: dict, summary: dict | None) -> list[dict]:
    from lnbench.analysis.verdicts import Comparison

    kind = manifest.get("kind")
    tables = []
    if kind == "train" and (path / "metrics.json").exists():
        m = read_metrics(path)
        tables.append(report.runs_table("the run", [summary_row(m, 0.9, path.name, manifest.get("wall_seconds"))], 0.9))
    elif summary and kind in ("compare", "batchsize-sweep"):
        sweep, target = kind == "batchsize-sweep", summary.get("target_acc", 0.9)
        if summary.get("aggregate") and max(e["n_seeds"] for e in summary["aggregate"]) > 1:
            tables.append(report.aggregate_table(summary["aggregate"], target, sweep))
        if summary.get("baselines"):
            tables.append(report.baselines_table(summary["baselines"]))
        comparisons = [Comparison(**{**c, "ci95": tuple(c["ci95"])}) for c in summary.get("comparisons", [])]
        if comparisons:
            shown = [c for c in comparisons if c.significant] if sweep else comparisons
            title = (
                f"significant paired comparisons ({len(shown)} of {len(comparisons)})"
                if sweep
                else "paired comparisons"
            )
            if shown:
                tables.append(report.comparisons_table(shown, title))
        rows = _rows(summary)
        if rows:
            tables.append(report.runs_table("every run", rows, target, sweep))
    elif summary and kind == "sweep":
        if summary.get("cells"):
            tables.append(report.grid_table(summary["cells"]))
        if summary.get("baselines"):
            tables.append(report.baselines_table(summary["baselines"]))
        comparisons = [Comparison(**{**c, "ci95": tuple(c["ci95"])}) for c in summary.get("comparisons", [])]
        shown = [c for c in comparisons if c.significant]
        if shown:
            tables.append(
                report.comparisons_table(shown, f"significant paired comparisons ({len(shown)} of {len(comparisons)})")
            )
    elif summary and kind == "claims":
        tables.append(report.claims_table(summary.get("claims", [])))
        if summary.get("baselines"):
            tables.append(report.regime_baselines_table(summary["baselines"]))
    elif kind == "invariance":
        inv = _read_json(path / "invariance.json")
        if inv:
            tables.append(report.invariance_table(inv["cells"], inv.get("draws", 0)))
    return [report.table_data(t) for t in tables]


def _view(path: Path, out_dir: Path) -> dict:
    manifest = _read_json(path / "run.json") or {}
    summary = _read_json(path / "summary.json")
    config = (path / "config.yaml").read_text() if (path / "config.yaml").exists() else "(none)"
    pngs = sorted(path.glob("*.png"), key=lambda p: (ORDER.index(p.name) if p.name in ORDER else len(ORDER), p.name))

    def caption(name: str) -> str:
        generic = name.startswith("accuracy_vs_") and name != "accuracy_vs_batch_size.png"
        return CAPTIONS.get(name) or (CAPTIONS["accuracy_vs"] if generic else "")

    figures = [
        {"file": p.name, "caption": caption(p.name), "data": base64.b64encode(p.read_bytes()).decode("ascii")}
        for p in pngs
    ]
    children = []
    for d in _children(path):
        child = _read_json(d / "run.json") or {}
        files = [
            (f, os.path.relpath(d / f, out_dir))
            for f in ("config.yaml", "metrics.json", "run.json")
            if (d / f).exists()
        ]
        children.append({"name": d.name, "status": child.get("status", "?"), "files": files})
    seeds = manifest.get("seed")
    versions = manifest.get("versions", {})
    wall = manifest.get("wall_seconds")
    view = {
        "path": str(path),
        "name": manifest.get("name", path.name),
        "kind": manifest.get("kind", "?"),
        "status": manifest.get("status", "?"),
        "error": manifest.get("error"),
        "command": " ".join(manifest.get("command", []) or []),
        "seeds": seeds,
        "start": manifest.get("start_time"),
        "end": manifest.get("end_time"),
        "wall": "-" if wall is None else f"{wall:.1f} s",
        "git_commit": manifest.get("git_commit") or "-",
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "config": config,
        "tables": _tables(path, manifest, summary),
        "verdicts": (summary or {}).get("verdicts", []),
        "figures": figures,
        "children": children,
    }
    view["overview"] = {
        "folder": path.name,
        "kind": view["kind"],
        "status": view["status"],
        "seeds": str(seeds),
        "wall time": view["wall"],
        "child runs": str(len(children)),
        "git commit": (view["git_commit"] or "-")[:10],
    }
    try:
        cfg = yaml.safe_load(config) or {}
        view["overview"]["epochs"] = str(cfg.get("train", {}).get("epochs", "-")) if isinstance(cfg, dict) else "-"
    except yaml.YAMLError:
        pass
    return view


def write_report(run_dirs: list[Path], out: Path | None = None) -> Path:
    """Render ``report.html`` for one run folder (default: ``<run>/report.html``) or several side
    by side (``out`` required). Reads the folders' files only; draws nothing (see :func:`redraw`).

    Raises:
        ValueError: no folder, or several folders and no ``out``.
    """
    from jinja2 import Environment, PackageLoader, select_autoescape

    if not run_dirs:
        raise ValueError("report: give at least one run folder")
    if out is None:
        if len(run_dirs) > 1:
            raise ValueError("report: several run folders need an output file")
        out = run_dirs[0] / "report.html"
    env = Environment(loader=PackageLoader("lnbench.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    runs = [_view(Path(d), out.parent) for d in run_dirs]
    title = (
        f"lnbench {runs[0]['kind']}: {runs[0]['name']}" if len(runs) == 1 else f"lnbench: {len(runs)} runs side by side"
    )
    html = env.get_template("report.html.j2").render(
        title=title,
        runs=runs,
        written=utc_now(),
        version=__version__,
        overview_keys=["folder", "kind", "status", "seeds", "epochs", "wall time", "child runs", "git commit"],
    )
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out
