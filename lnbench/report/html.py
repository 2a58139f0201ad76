"""``report.html``: one self-contained page per experiment (or several side by side).

Everything on the page is read from the run folders' files (run.json, config.yaml, summary.json
and the PNG figures, inlined as base64), so an old or interrupted run can be reported again. The
page knows no experiment kind: the caller passes each folder's tables (the experiment's
``tables``; :func:`lnbench.experiments.report`), and the figures are whatever PNGs the folder
holds. Rendered by a Jinja2 template (``lnbench/report/templates/report.html.j2``) with
autoescaping; it loads nothing from the network.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import yaml
from rich.table import Table

from lnbench import __version__
from lnbench.records.folder import RunFolder
from lnbench.records.io import utc_now, write_text_atomic
from lnbench.records.schema import SummaryRow
from lnbench.report.captions import FigureRecord, caption_of, place_of
from lnbench.report.notes import run_notes


def _href(path: Path, out_dir: Path) -> str:
    """A link from a page in ``out_dir`` to ``path``: relative, ``/``-separated and URL-encoded
    (a ``#`` or a space in a folder's name would otherwise end or break the link)."""
    return quote(Path(os.path.relpath(path, out_dir)).as_posix())


def _provenance(manifest: dict) -> str:
    """The commit, and for a checkout with uncommitted changes how many files and the diff's hash."""
    commit = manifest.get("git_commit") or "-"
    if not manifest.get("git_dirty"):
        return commit
    changed = manifest.get("git_changed_files") or []
    digest = (manifest.get("git_diff_sha256") or "?")[:12]
    return f"{commit} with uncommitted changes ({len(changed)} files, diff sha256 {digest}...)"


def table_data(table: Table) -> dict:
    """A rich table as plain data for HTML: ``{"title", "columns", "right", "rows", "caption"}``,
    rich markup removed (``right``: the right-aligned columns' indices)."""
    from rich.text import Text

    def plain(x) -> str:
        return Text.from_markup(x).plain if isinstance(x, str) else str(x)

    columns = [plain(c.header) for c in table.columns]
    cells = [[plain(x) for x in c.cells] for c in table.columns]
    rows = [list(r) for r in zip(*cells)] if cells else []
    right = [k for k, c in enumerate(table.columns) if c.justify == "right"]
    return {
        "title": plain(table.title or ""),
        "columns": columns,
        "right": right,
        "rows": rows,
        "caption": plain(table.caption or ""),
    }


def _notes(path: Path, summary: dict | None) -> list[str]:
    """The runs' notes and divergences, as the console prints them (:func:`run_notes`); none for
    a summary.json of another version."""
    try:
        rows = [SummaryRow.from_dict(r) for r in (summary or {}).get("rows", []) if isinstance(r, dict)]
    except TypeError:
        return []
    return run_notes(path, rows)


def _view(
    path: Path, out_dir: Path, tables: list, drawn: Path | None = None, records: Sequence[FigureRecord] = ()
) -> dict:
    folder = RunFolder(path)
    manifest = folder.manifest() or {}
    summary = folder.summary()
    config = folder.config_text() or "(none)"
    found = {p.name: p for folder in (path, drawn) if folder is not None for p in folder.glob("*.png")}
    pngs = sorted(found.values(), key=lambda p: (place_of(records, p.name), p.name))  # in the kind's order

    figures = [
        {
            "file": p.name,
            "caption": caption_of(records, p.name),
            "data": base64.b64encode(p.read_bytes()).decode("ascii"),
        }
        for p in pngs
    ]
    children = []
    for d in folder.children():
        child = RunFolder(d).manifest() or {}
        files = [(f, _href(d / f, out_dir)) for f in ("config.yaml", "metrics.json", "run.json") if (d / f).exists()]
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
        "git_commit": _provenance(manifest),
        "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
        "config": config,
        "tables": [table_data(t) for t in tables],
        "verdicts": (summary or {}).get("verdicts", []),
        "notes": _notes(path, summary),
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
        "git commit": (manifest.get("git_commit") or "-")[:10] + (" (dirty)" if manifest.get("git_dirty") else ""),
    }
    try:
        cfg = yaml.safe_load(config) or {}
        view["overview"]["epochs"] = str(cfg.get("train", {}).get("epochs", "-")) if isinstance(cfg, dict) else "-"
    except yaml.YAMLError:
        pass
    return view


def write_report(
    run_dirs: list[Path],
    out: Path | None = None,
    tables: dict | None = None,
    figures: dict[Path, Path] | None = None,
    figure_records: dict[Path, Sequence[FigureRecord]] | None = None,
) -> Path:
    """Render ``report.html`` for one run folder (default: ``<run>/report.html``) or several side
    by side (``out`` required). Reads the folders' files only; draws nothing (see :func:`redraw`).
    ``figures``: per run folder, a folder of PNGs shown instead of the run folder's own of the
    same names (figures redrawn elsewhere, so that the run folder is not written to).
    ``figure_records``: per run folder, its experiment kind's figures
    (:attr:`lnbench.experiments.base.Experiment.figure_records`), which give each figure file
    its caption and its place on the page; a folder without them shows its figures by name, without captions.

    Raises:
        ValueError: no folder, or several folders and no ``out``.
        WriteError: the page could not be written (it names the file and its folder).
    """
    from jinja2 import Environment, PackageLoader, select_autoescape

    if not run_dirs:
        raise ValueError("report: give at least one run folder")
    if out is None:
        if len(run_dirs) > 1:
            raise ValueError("report: several run folders need an output file")
        out = run_dirs[0] / "report.html"
    env = Environment(loader=PackageLoader("lnbench.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    runs = [
        _view(Path(d), out.parent, (tables or {}).get(d, []), (figures or {}).get(d), (figure_records or {}).get(d, ()))
        for d in run_dirs
    ]
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
    return write_text_atomic(out, html)  # a unique temporary name: concurrent writers do not collide
