"""The commands that read run folders, never train: ``lnbench report`` (figures redrawn,
report.html), ``export`` (tidy tables), ``ls`` (one line per folder) and ``show`` (a folder's
tables and verdicts, as its run printed them)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from lnbench.cli.console import console, fail, guarded
from lnbench.cli.results import print_results
from lnbench.config.words import joined
from lnbench.names import RUN_KINDS, plural, seeds_phrase

if TYPE_CHECKING:
    from rich.console import RenderableType


def report_cmd(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_DIR...", help=f"Run folders (a {joined(RUN_KINDS)} run)."),
    ],
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            metavar="FILE",
            help="Where to write the page (default: RUN_DIR/report.html for one folder; required for several).",
        ),
    ] = None,
) -> None:
    """Redraw the figures of run folders from their metrics files and write report.html.

    One self-contained page: what was run, the tables with intervals, the verdicts, the baselines,
    every figure with a caption, links to each child run. Several folders: side by side. With
    --out only that file is written: the figures are redrawn for the page, not into the folders.
    """
    for d in run_dirs:
        if not (d / "run.json").is_file():
            fail(f"{d}: not a run folder (no run.json)")
        _check_json_objects(d)
    if len(run_dirs) > 1 and out is None:
        fail("--out: several run folders need an output file, e.g. --out comparison.html")
    if out is not None and (out.is_dir() or not out.absolute().parent.is_dir()):
        fail(f"--out {out}: give a file path in an existing folder")
    from lnbench.experiments import redraw, report

    with guarded(epochs=False), _figures_beside(out, run_dirs) as figures:
        where = ", ".join(map(str, run_dirs))
        try:
            for d in run_dirs:
                where = str(d)
                drawn = redraw(d, figures.get(d))
                console.print(f"{d}: {plural(len(drawn), 'figure')} drawn", highlight=False)
            where = ", ".join(map(str, run_dirs))
            path = report(list(run_dirs), out, figures=figures)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a file that is not what lnbench wrote
            fail(f"{where}: cannot read a file of this run folder (edited or damaged?): {type(exc).__name__}: {exc}")
    console.print(f"Report: {path}", highlight=False, soft_wrap=True)


@contextmanager
def _figures_beside(out: Optional[Path], run_dirs: list[Path]) -> Iterator[dict[Path, Path]]:
    """Where ``lnbench report --out FILE`` draws each run folder's figures: a temporary folder
    beside FILE, removed once the page (which inlines them) is written, so that the run folders
    are only read (one may be read-only). Without --out: nowhere ({}), they go into the folder.

    Raises:
        WriteError: the temporary folder cannot be made (FILE's folder is full or read-only), naming FILE.
    """
    if out is None:
        yield {}
        return
    drawn = None
    try:
        drawn = Path(tempfile.mkdtemp(dir=out.absolute().parent, prefix=f".{out.name}.figures."))
        figures = {d: drawn / str(k) for k, d in enumerate(dict.fromkeys(run_dirs))}
        for folder in figures.values():
            folder.mkdir()
    except OSError as exc:
        from lnbench.records.io import WriteError

        if drawn is not None:
            shutil.rmtree(drawn, ignore_errors=True)
        raise WriteError(exc.errno or 0, exc.strerror or str(exc), str(out)) from None
    try:
        yield figures
    finally:
        shutil.rmtree(drawn, ignore_errors=True)


def _check_json_objects(folder: Path) -> None:
    """Exit 2 (one line) unless the folder's run.json, and its summary.json if there is one, are
    JSON objects: a damaged one would be drawn as an empty run and overwrite report.html."""
    from lnbench.records.folder import DamagedFile, RunFolder

    run = RunFolder(folder)
    try:  # the callers found run.json; summary.json may be missing (stopped before its first cell)
        run.manifest(strict=True)
        run.summary(strict=True)
    except DamagedFile as exc:
        fail(str(exc))


def export_cmd(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_DIR...", help="Run folders, or runs folders (every run folder in them)."),
    ],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder to write the tables into (created).")],
    fmt: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help="csv, or parquet (needs pip install 'lnbench[parquet]').")
    ] = "csv",
) -> None:
    """Write the runs of folders as tidy tables (runs, epochs, hidden_norm, ..., claims): one file each.

    The same tables as lnbench.load(RUN_DIR) in a notebook; columns are the run folders' keys
    (docs/run-folder.md, "Tidy tables").
    """
    import importlib.util

    if fmt not in ("csv", "parquet"):
        fail(f"--format {fmt}: allowed: csv, parquet")
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        fail("--format parquet: needs pyarrow: pip install 'lnbench[parquet]' (or use --format csv)")
    from lnbench.records.index import run_folders

    for d in run_dirs:
        if not d.is_dir():
            fail(f"{d}: no such folder")
        if not run_folders(d):
            fail(f"{d}: neither a run folder (no run.json) nor a folder of run folders; nothing to export")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: is a file; give a folder")
    from lnbench.records.tidy import export, load

    with guarded(epochs=False):
        tables = load(*run_dirs)
        written = export(tables, out, fmt)
    for path in written:
        console.print(f"{path}  ({plural(len(tables[path.stem]), 'row')})", highlight=False, soft_wrap=True)


def _duration(seconds: Optional[float]) -> str:
    if not isinstance(seconds, (int, float)):
        return ""
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


#: the characters of a result ``lnbench ls`` keeps at least on one line (narrower: the table wraps)
LS_KEPT = 16


def _ls_result(e: Any) -> str:
    """A folder's headline, then its notes in parentheses (``partial: 3 runs finished``)."""
    notes = f"({'; '.join(e.notes)})" if e.notes else ""
    return " ".join(part for part in (e.headline, notes) if part)


def ls_table(entries: list, title: str, width: int) -> RenderableType:
    """``lnbench ls``: one row per run folder: name, kind, status, start (UTC), wall time, seeds, and the
    result with the folder's notes (:func:`_ls_result`). One line per folder at ``width`` columns:
    the columns up to seeds whole, the result cut with an ellipsis where it does not fit (keeping
    :data:`LS_KEPT` characters at least; narrower than that, the boxed table laid out by
    :func:`lnbench.report.table_fit.fit`, which wraps)."""
    from rich import box
    from rich.text import Text

    headers = ("folder", "kind", "status", "started (UTC)", "wall", "seeds", "result")
    rows = [
        [
            e.path.name,
            e.kind,
            e.status,
            e.start.strftime("%Y-%m-%d %H:%M") if e.start else "",
            _duration(e.wall_seconds),
            seeds_phrase(e.seeds),
            _ls_result(e),
        ]
        for e in entries
    ]
    longest = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(headers)]
    if sum(longest[:-1]) + min(longest[-1], LS_KEPT) + 2 * (len(headers) - 1) > width:  # the wrapping table
        from lnbench.report.table_fit import fit

        table = Table(title=title, title_justify="left")
        for col in headers:
            table.add_column(col, justify="right" if col == "wall" else "left", no_wrap=col == "started (UTC)")
        for row in rows:
            table.add_row(*row)
        return fit(table, width)
    # the columns up to seeds never wrap; rich narrows the result first (a column that may wrap),
    # whose cells do not wrap: cut with an ellipsis
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        expand=True,  # the result takes the width the other columns leave (ratio), no more
    )
    for col in headers:
        result = col == "result"
        table.add_column(
            col, justify="right" if col == "wall" else "left", no_wrap=not result, ratio=1 if result else None
        )
    for row in rows:
        table.add_row(*row[:-1], Text(row[-1], no_wrap=True, overflow="ellipsis"))
    return table


def ls_cmd(
    runs_dir: Annotated[
        Path, typer.Argument(metavar="RUNS_DIR", help="A runs folder (or one run folder).", show_default=False)
    ] = Path("runs"),
    kind: Annotated[
        Optional[str],
        typer.Option("--kind", metavar="KIND", help=f"Only this kind: {', '.join(RUN_KINDS)}."),
    ] = None,
    status: Annotated[
        Optional[str],
        typer.Option("--status", metavar="STATUS", help="Only this status: completed, interrupted, failed, ..."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", min=1, help="At most N folders.")] = 20,
) -> None:
    """List the run folders under RUNS_DIR, newest first: kind, status, start, wall time, seeds, result.

    Read from the folders' files only; a folder that is half written or of another version says so.
    """
    from lnbench.experiments.registry import EXPERIMENTS, index
    from lnbench.records.runs import STATUSES

    if kind is not None and kind not in EXPERIMENTS:
        fail(f"--kind {kind}: allowed: {', '.join(EXPERIMENTS)}")
    if status is not None and status not in STATUSES:
        fail(f"--status {status}: allowed: {', '.join(STATUSES)}")
    if not runs_dir.is_dir():
        fail(f"{runs_dir}: no such folder")
    entries = index(runs_dir, kind, status)
    shown = entries[:limit]
    more = f", {len(entries) - len(shown)} older not shown (--limit)" if len(entries) > len(shown) else ""
    if not shown:
        console.print(f"{runs_dir}: no run folders" + (" of that kind or status" if kind or status else ""))
        return
    console.print(ls_table(shown, f"{runs_dir}: {plural(len(entries), 'run folder')}{more}", console.width))


def show_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A run folder (finished or interrupted).")],
    all_: Annotated[
        bool, typer.Option("--all", help="Also the table of every run and the paired comparisons (as --verbose).")
    ] = False,
) -> None:
    """Print a run folder's tables, baselines and verdicts again, from its files, as the run printed them."""
    from lnbench.experiments.base import rows_of
    from lnbench.experiments.registry import experiment_of
    from lnbench.records.folder import RunFolder

    folder = RunFolder(run_dir)
    manifest = folder.manifest()
    if manifest is None:
        fail(f"{run_dir}: not a run folder (no readable run.json)")
    exp = experiment_of(run_dir)
    if exp is None:
        fail(f"{run_dir}: unknown kind {manifest.get('kind')!r} (a newer lnbench?)")
    _check_json_objects(run_dir)
    summary = folder.summary()
    if summary is None and exp.seeded:
        console.print(
            f"note: {run_dir} has no summary.json yet: it stopped before its first cell finished",
            style="dim",
            markup=False,
        )
    elif summary is not None and not summary.get("complete", True):
        from lnbench.records.folder import read_object

        pilot = read_object(run_dir / "pilot_summary.json")
        if pilot:  # an interrupted confirm stage: its pilot's results stand, and --confirm goes on with it
            console.print(
                f"note: its confirm stage did not finish ({plural(len(summary.get('rows') or []), 'run')} had "
                f"finished); the pilot's results follow; lnbench {manifest.get('kind')} --resume {run_dir} --confirm "
                "goes on (with the folder's own config)",
                style="dim",
                markup=False,
            )
            summary = pilot
        else:
            console.print(f"note: partial: {plural(len(summary.get('rows') or []), 'run')} had finished", style="dim")
    summary = summary or {}
    try:
        printed = exp.tables(run_dir, summary)
        rows = rows_of(summary)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        console.print(
            f"note: summary.json of another version: its tables cannot be printed ({exc!r})", style="dim", markup=False
        )
        printed, rows = [], []
    print_results(printed, summary.get("verdicts") or [], rows, run_dir, manifest.get("status"), all_)
