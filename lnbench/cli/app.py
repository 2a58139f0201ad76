"""The ``lnbench`` command line: a thin Typer layer over :mod:`lnbench.experiments`.

A mistake the user can fix (bad config key or value, bad argument) is one line on stderr and
exit code 2, before any run folder exists.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from lnbench import __version__
from lnbench.config import MAX_SEED, ConfigError, RunConfig, load_config
from lnbench.config.checks import check_keys_apply, check_memory, check_resume, check_seeds, check_sweep
from lnbench.launchers.executors import usable_cores
from lnbench.names import family_label, plural

if TYPE_CHECKING:
    from lnbench.experiments import ExperimentResult

app = typer.Typer(
    name="lnbench",
    help="Train and compare NoNorm / BatchNorm / LayerNorm RNNs and Transformers on CPU, "
    "check the from-scratch LayerNorm gradients, sweep the batch size, test the claims about LayerNorm, "
    "and measure the paper's invariance table.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    epilog="Example: lnbench compare --set train.epochs=10 --set seeds=[0,1,2,3,4]",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # no torch import: --version answers at once

        console.print(f"lnbench {__version__} (torch {version('torch')}, numpy {version('numpy')})", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Train and compare NoNorm / BatchNorm / LayerNorm RNNs and Transformers on CPU, check the
    from-scratch LayerNorm gradients, sweep the batch size, test the claims about LayerNorm, and
    measure the paper's invariance table."""


# Not a terminal (a pipe, a CI log): 80 columns would wrap the tables; 120 keeps them whole
# (COLUMNS, if set, wins).
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120)
err_console = Console(stderr=True)

SetOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set", "-s", metavar="KEY=VALUE", help="Override a config key, e.g. --set train.epochs=5 (repeatable)."
    ),
]


def _runs_dir_value(value: str | Path) -> Path:
    if not str(value).strip():  # Path("") is ".": an empty argument would write into the current folder
        _fail("--runs-dir: empty; give a folder, e.g. --runs-dir runs")
    return Path(value)


RunsDirOption = Annotated[
    Path,
    typer.Option(
        "--runs-dir", metavar="DIR", parser=str, callback=_runs_dir_value, help="Folder the run folder is created in."
    ),
]
JobsOption = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
        help="Worker processes for the cells (default: the usable CPU cores). Results do not depend on it.",
    ),
]
ResumeOption = Annotated[
    Optional[Path],
    typer.Option(
        "--resume",
        metavar="RUN_DIR",
        help="Continue this earlier experiment folder (same config): keep the cells whose runs finished, run the rest.",
    ),
]
LauncherOption = Annotated[
    str,
    typer.Option(
        "--launcher",
        metavar="NAME",
        help="Where cells run: local (--jobs worker processes) or submitit (Slurm jobs; see the launcher: config section).",
    ),
]
PrintConfigOption = Annotated[
    bool,
    typer.Option(
        "--print-config", help="Print the resolved config (after --set and --seed) and exit; nothing is run or written."
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run", help="List the runs this would start, and their number, and exit; nothing is run or written."
    ),
]
SeedOption = Annotated[
    Optional[int],
    typer.Option("--seed", metavar="N", min=0, max=MAX_SEED, help="Replace the config's seed (and a seeds list)."),
]


def _jobs(jobs: int | None, launcher: str = "local") -> int:
    if jobs is not None and jobs < 1:
        _fail(f"--jobs: must be >= 1, got {jobs}")
    if launcher not in ("local", "submitit"):
        _fail(f"--launcher: unknown {launcher!r}; allowed: local, submitit")
    if launcher == "submitit":
        import importlib.util

        if importlib.util.find_spec("submitit") is None:
            _fail(
                "--launcher submitit: submitit is not installed; pip install 'lnbench[slurm]' (or pip install submitit)"
            )
    return jobs or usable_cores()


def _fail(message: str, code: int = 2, kind: str = "error") -> None:
    for line in message.splitlines() or [""]:  # one line per problem, each saying what it is
        err_console.print(f"lnbench: {kind}: {line}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _prepare(
    config: Optional[Path],
    overrides: Optional[list[str]],
    seed: Optional[int],
    runs_dir: Path,
    check: Callable[[RunConfig], None] | None = None,
) -> RunConfig:
    """Load and validate the config (plus ``check``) and the runs folder, before anything is
    written or shown: any problem is one line and exit code 2."""
    try:
        cfg = load_config(config, overrides or [], seed)
    except ConfigError as exc:
        _fail(str(exc))
    try:
        if check is not None:
            check(cfg)
    except ConfigError as exc:  # checks of the whole experiment: name the file as load_config does
        source = (str(config) if config is not None else "(defaults)") + (" (with --set)" if overrides else "")
        _fail("\n".join(f"{source}: {line}" for line in str(exc).splitlines()))
    _check_runs_dir(runs_dir)
    return cfg


def _check_runs_dir(runs_dir: Path) -> None:
    """Fail early, with one line and nothing created, if run folders cannot go under ``runs_dir``."""
    existing = runs_dir.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        _fail(f"--runs-dir {runs_dir}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        _fail(f"--runs-dir {runs_dir}: {existing} is not writable")


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def _guarded():
    """Ctrl-C or SIGTERM: say where the partial results are (the run folder keeps them),
    exit 130. A config problem found only when the experiment starts: one line, exit 2."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    except ConfigError as exc:
        _fail(str(exc))
    except KeyboardInterrupt as exc:
        notes = getattr(exc, "__notes__", [])
        where = f"; {notes[-1]}" if notes else ""
        _fail(
            f"stopped by {exc.args[0] if exc.args else 'Ctrl-C'}{where}; finished epochs were kept",
            code=130,
            kind="interrupted",
        )
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _progress(total_epochs: int):
    """Progress over all epochs of all runs; yields the ``on_epoch(label, epoch, epochs,
    acc=None)`` callback. With stdout a terminal: rich's live bar (on stderr). Otherwise (a pipe,
    ``make run > log``, CI): plain lines on stdout, one per finished run and one every
    :func:`_every` epochs of a long run, with the test accuracy and elapsed and remaining time."""
    if sys.stdout.isatty():
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("epochs"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        with _guarded(), Progress(*columns, console=err_console, transient=False) as progress:
            task = progress.add_task("training", total=total_epochs)
            seen: dict[str, int] = {}

            def on_epoch(label: str, epoch: int, epochs: int, acc: float | None = None) -> None:
                progress.advance(task, epoch - seen.get(label, 0))
                seen[label] = epoch
                progress.update(task, description=f"{label} epoch {epoch}/{epochs}")

            yield on_epoch
        return
    with _guarded():
        yield _LogProgress(total_epochs)


def _every(epochs: int) -> int:
    """A long run reports every this many epochs (about five lines a run), a short one only at its end."""
    return max(10, -(-epochs // 5))


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


class _LogProgress:
    """Plain progress lines for a log (see :func:`_progress`)."""

    def __init__(self, total_epochs: int) -> None:
        self.total, self.done, self.seen, self.t0 = total_epochs, 0, {}, time.monotonic()

    def __call__(self, label: str, epoch: int, epochs: int, acc: float | None = None) -> None:
        self.done += epoch - self.seen.get(label, 0)
        self.seen[label] = epoch
        if epoch != epochs and epoch % _every(epochs):
            return
        elapsed = time.monotonic() - self.t0
        remaining = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        what = "finished" if epoch == epochs else f"epoch {epoch}/{epochs}"
        accuracy = f", test acc {acc:.1%}" if acc is not None else ""
        console.print(
            f"[{self.done}/{self.total} epochs] {label} {what}{accuracy}; elapsed {_clock(elapsed)}, remaining ~{_clock(remaining)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _plan(
    planned: list[tuple[str, RunConfig]],
    print_config: bool,
    dry_run: bool,
    configs: dict[str, RunConfig],
    one_model: bool = False,
) -> None:
    """``--print-config`` (the resolved YAML of each config) and ``--dry-run`` (the runs an
    experiment would start: name, family, norm, batch size, seed, epochs): print and exit 0."""
    if print_config:
        for header, cfg in configs.items():
            if header:
                console.print(f"# {header}", markup=False, highlight=False)
            console.print(
                cfg.to_yaml(model_family_only=one_model), markup=False, highlight=False, soft_wrap=True, end=""
            )
        raise typer.Exit()
    if dry_run:
        table = Table(
            title=f"would start {len(planned)} run{'s' * (len(planned) != 1)} (dry run: nothing is run or written)",
            title_justify="left",
        )
        for col in ("run", "model", "norm", "batch size", "seed", "epochs"):
            table.add_column(col, justify="right" if col in ("batch size", "seed", "epochs") else "left")
        for name, c in planned:
            table.add_row(
                name,
                family_label(c.model.family),
                c.model.norm,
                str(c.train.batch_size),
                str(c.seed),
                str(c.train.epochs),
            )
        console.print(table)
        console.print(f"{len(planned)} runs, {sum(c.train.epochs for _, c in planned)} epochs in all", highlight=False)
        raise typer.Exit()


def _seed_runs(cfg: RunConfig, settings: list[dict], name) -> list[tuple[str, RunConfig]]:
    """The child runs of ``settings`` (``section__key`` changes) x the config's seeds."""
    return [
        (f"{name(ch)}_seed{seed}", cfg.with_changes(**ch, seed=seed, seeds=None))
        for ch in settings
        for seed in cfg.seed_list
    ]


def _print_rows(title: str, rows, target_acc: float, sweep: bool = False) -> None:
    """The summary rows as a table (the same rows are in summary.json), then any warnings."""
    from lnbench.report import tables as report  # imported when a command runs: --help answers at once

    console.print(report.runs_table(title, rows, target_acc, sweep))
    for note in sorted({w for r in rows for w in r.warnings}):
        console.print(f"[dim]note: {note}[/]", highlight=False)


def _print_result(result: ExperimentResult, target_acc: float, sweep: bool = False) -> None:
    from lnbench.report import tables as report  # imported when a command runs: --help answers at once

    if result.baselines:
        console.print(report.baselines_table(result.baselines))
    if result.aggregate and max(e["n_seeds"] for e in result.aggregate) > 1:
        console.print(report.aggregate_table(result.aggregate, target_acc, sweep))
    if result.comparisons and not sweep:
        console.print(report.comparisons_table(result.comparisons))
    if sweep:
        _print_significant(result)
    _print_footer(result)


def _print_significant(result) -> None:
    """The significant paired comparisons of a sweep (all of them are in summary.json)."""
    from lnbench.report import tables as report

    significant = [c for c in result.comparisons if c.significant]
    if significant:
        console.print(
            report.comparisons_table(
                significant,
                f"significant paired comparisons ({len(significant)} of {len(result.comparisons)}; all in summary.json)",
            )
        )


def _print_footer(result) -> None:
    """The verdicts, the run folder and its report.html."""
    for v in result.verdicts:
        console.print(f"- {v}", highlight=False, soft_wrap=True, markup=False)
    console.print(f"Run folder: {result.path}  (status: {result.status})", highlight=False)
    if (result.path / "report.html").exists():
        console.print(f"Report: {result.path / 'report.html'}", highlight=False)


@app.command()
def train(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML config, e.g. configs/train.yaml.")],
    set_: SetOption = None,
    runs_dir: RunsDirOption = Path("runs"),
    seed: SeedOption = None,
    print_config: PrintConfigOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Train one model; write config.yaml, run.json, metrics.json and the plots to a run folder."""
    cfg = _prepare(
        config, set_, seed, runs_dir, check=lambda c: (check_keys_apply(c, [c.model.family]), check_memory(c))
    )
    _plan([(cfg.name, cfg)], print_config, dry_run, {"": cfg}, one_model=True)
    with _progress(cfg.train.epochs) as on_epoch:
        from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

        result = experiments.train(cfg, runs_dir, on_epoch)
    _print_rows(f"lnbench train: {cfg.name}", result.rows, cfg.compare.target_acc)
    _print_result(result, cfg.compare.target_acc)


@app.command()
def compare(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML config.")] = Path("configs/compare.yaml"),
    set_: SetOption = None,
    runs_dir: RunsDirOption = Path("runs"),
    seed: SeedOption = None,
    jobs: JobsOption = None,
    print_config: PrintConfigOption = False,
    dry_run: DryRunOption = False,
    resume: ResumeOption = None,
    launcher: LauncherOption = "local",
) -> None:
    """Train every model family x norm x seed on identical data; plot, tabulate and test them."""
    cfg = _prepare(
        config,
        set_,
        seed,
        runs_dir,
        check=lambda c: (
            check_seeds(c),
            check_keys_apply(c, c.compare.families),
            check_memory(c, len(c.seed_list)),
            resume is not None and check_resume(resume, c.to_yaml(), "compare"),
        ),
    )
    settings = [{"model__family": f, "model__norm": n} for f in cfg.compare.families for n in cfg.compare.norms]
    if print_config or dry_run:
        _plan(
            _seed_runs(cfg, settings, lambda c: f"{c['model__family']}_{c['model__norm']}"),
            print_config,
            dry_run,
            {"": cfg},
        )
    jobs = _jobs(jobs, launcher)
    spec = cfg.compare
    total = len(spec.families) * len(spec.norms) * len(cfg.seed_list) * cfg.train.epochs
    with _progress(total) as on_epoch:
        from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

        result = experiments.compare(cfg, runs_dir, on_epoch, jobs, resume, launcher)
    _print_rows(f"lnbench compare: {cfg.name} ({plural(cfg.train.epochs, 'epoch')})", result.rows, spec.target_acc)
    _print_result(result, spec.target_acc)


@app.command("batchsize-sweep")
def batchsize_sweep(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML config.")] = Path(
        "configs/batchsize_sweep.yaml"
    ),
    set_: SetOption = None,
    runs_dir: RunsDirOption = Path("runs"),
    seed: SeedOption = None,
    jobs: JobsOption = None,
    print_config: PrintConfigOption = False,
    dry_run: DryRunOption = False,
    resume: ResumeOption = None,
    launcher: LauncherOption = "local",
) -> None:
    """Train each norm at each batch size x seed (same data, weights and epochs per seed); plot, tabulate, test."""
    cfg = _prepare(
        config,
        set_,
        seed,
        runs_dir,
        check=lambda c: (
            check_sweep(c),
            check_keys_apply(c, [c.sweep.family]),
            check_memory(c, len(c.seed_list)),
            resume is not None and check_resume(resume, c.to_yaml(), "batchsize-sweep"),
        ),
    )
    if print_config or dry_run:
        from lnbench.analysis import grid as grid_mod

        settings = grid_mod.check_grid(cfg.with_changes(sweep__grid=grid_mod.batch_size_grid(cfg)))
        _plan(
            _seed_runs(cfg, settings, lambda c: f"{cfg.sweep.family}_{c['model__norm']}_bs{c['train__batch_size']}"),
            print_config,
            dry_run,
            {"": cfg},
        )
    jobs = _jobs(jobs, launcher)
    spec = cfg.sweep
    with _progress(len(spec.norms) * len(spec.batch_sizes) * len(cfg.seed_list) * cfg.train.epochs) as on_epoch:
        from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

        result = experiments.batchsize_sweep(cfg, runs_dir, on_epoch, jobs, resume, launcher)
    title = f"lnbench batchsize-sweep: {spec.family}, {plural(cfg.train.epochs, 'epoch')}, lr {cfg.train.lr:g}"
    _print_rows(title, result.rows, cfg.compare.target_acc, sweep=True)
    _print_result(result, cfg.compare.target_acc, sweep=True)


@app.command("sweep")
def sweep_cmd(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML config with a sweep.grid section.")] = Path(
        "configs/sweep.yaml"
    ),
    set_: SetOption = None,
    runs_dir: RunsDirOption = Path("runs"),
    seed: SeedOption = None,
    jobs: JobsOption = None,
    print_config: PrintConfigOption = False,
    dry_run: DryRunOption = False,
    resume: ResumeOption = None,
    launcher: LauncherOption = "local",
) -> None:
    """Train every cell of sweep.grid (the product of its values) x seed; tabulate, test each norm vs NoNorm, plot."""
    from lnbench.analysis import grid as grid_mod

    cfg = _prepare(
        config,
        set_,
        seed,
        runs_dir,
        check=lambda c: (
            check_seeds(c),
            grid_mod.check_grid(c),
            check_memory(c, len(c.seed_list)),
            resume is not None and check_resume(resume, c.to_yaml(), "sweep"),
        ),
    )
    settings = grid_mod.check_grid(cfg)
    if print_config or dry_run:
        _plan(_seed_runs(cfg, settings, grid_mod.cell_name), print_config, dry_run, {"": cfg})
    jobs = _jobs(jobs, launcher)
    with _progress(len(settings) * len(cfg.seed_list) * cfg.train.epochs) as on_epoch:
        from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

        result = experiments.sweep(cfg, runs_dir, on_epoch, jobs, resume, launcher)
    from lnbench.report import tables as report

    if result.baselines:
        console.print(report.baselines_table(result.baselines))
    console.print(
        report.grid_table(
            result.aggregate, f"lnbench sweep: {cfg.name}, {len(settings)} cells x {len(cfg.seed_list)} seeds"
        )
    )
    _print_significant(result)
    _print_footer(result)


@app.command()
def claims(
    presets: Annotated[
        Path, typer.Option("--presets", metavar="DIR", help="Folder of the regime presets (<regime>.yaml).")
    ] = Path("configs/claims"),
    only: Annotated[
        Optional[list[str]],
        typer.Option("--only", metavar="CLAIM", help="Evaluate only this claim id (repeatable); see --list."),
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the claims and their regimes, then exit.")] = False,
    set_: SetOption = None,
    runs_dir: RunsDirOption = Path("runs"),
    seed: SeedOption = None,
    jobs: JobsOption = None,
    print_config: PrintConfigOption = False,
    dry_run: DryRunOption = False,
    resume: ResumeOption = None,
    launcher: LauncherOption = "local",
) -> None:
    """Test each claim about LayerNorm in a regime where it can show; verdicts from paired runs.

    Each claim (e.g. "LayerNorm converges faster than NoNorm") is evaluated in a regime preset
    from --presets (default 5 seeds): held, not held or inconclusive, computed from the paired
    differences over seeds (Holm-corrected over the directional claims). --set and --seed apply
    to every preset.
    """
    from lnbench.analysis import claims as claims_mod
    from lnbench.report import tables as report

    if list_:
        try:
            listed = claims_mod.select_claims(only)
        except ConfigError as exc:
            _fail(str(exc))
        table = Table(title="lnbench claims", title_justify="left")
        for col in ("id", "model", "claim", "regime (why)", "metric", "a vs b", "margin"):
            table.add_column(col, no_wrap=col in ("id", "margin"))
        for c in listed:
            margin = ("+-" if c.direction == "equal" else "") + claims_mod.format_amount(
                c.metric, c.margin, signed=False
            )
            table.add_row(
                c.id,
                family_label(c.family),
                c.text,
                f"{c.regime} ({c.why})",
                c.metric,
                f"{c.a.label()} vs {c.b.label()}",
                margin,
            )
        console.print(table)
        return
    try:
        selected = claims_mod.select_claims(only)
        regimes = claims_mod.load_regimes(selected, presets, set_ or [], seed)
        if resume is not None:
            check_resume(resume, claims_mod.regimes_yaml(regimes), "claims")
    except ConfigError as exc:
        _fail(str(exc))
    if print_config or dry_run:
        planned = [
            run
            for regime, changes in claims_mod.cells_needed(selected, regimes)
            for run in _seed_runs(regimes[regime], [changes], lambda c, r=regime: claims_mod.setting_name(r, c))
        ]
        _plan(planned, print_config, dry_run, {f"regime: {name}": cfg for name, cfg in regimes.items()})
    _check_runs_dir(runs_dir)
    jobs = _jobs(jobs, launcher)
    total = sum(
        len(regimes[r].seed_list) * regimes[r].train.epochs for r, _ in claims_mod.cells_needed(selected, regimes)
    )
    with _progress(total) as on_epoch:
        from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

        result = experiments.claims(selected, regimes, runs_dir, on_epoch, jobs, resume, launcher)
    table = report.claims_table(result.claims or [], f"lnbench claims ({len(selected)} claims, {len(regimes)} regimes)")
    console.print(table)
    if result.baselines:
        console.print(report.regime_baselines_table(result.baselines))
    _print_footer(result)


@app.command()
def invariance(
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of the weights, the batch and the random transformations.")
    ] = 0,
    draws: Annotated[
        int,
        typer.Option(
            min=1, max=1000, help="Random draws (delta, gamma, row, case) per cell; the largest change counts."
        ),
    ] = 5,
    runs_dir: RunsDirOption = Path("runs"),
    json_path: Annotated[
        Optional[Path], typer.Option("--json", help="Write the report here instead of a run folder.")
    ] = None,
) -> None:
    """Measure the invariance table of Ba et al. 2016 (Table 1) for batch, weight, layer and RMS norm.

    Exit code 0 when every cell agrees with the paper (RMSNorm: Zhang & Sennrich's Table 1), 1 otherwise.
    """
    from lnbench.report import tables as report

    if json_path is None:
        _check_runs_dir(runs_dir)
    elif json_path.is_dir() or not json_path.absolute().parent.is_dir():
        _fail(f"--json {json_path}: give a file path in an existing folder")
    from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

    try:
        cells, path = experiments.invariance(seed, draws, runs_dir, json_path)
    except OSError as exc:
        _fail(f"--json {json_path}: cannot write the report ({exc.strerror})")
    table = report.invariance_table([c.to_dict() for c in cells], draws)
    console.print(table)
    console.print(f"Report: {path}", highlight=False)
    wrong = [c for c in cells if not c.agrees]
    if wrong:
        console.print(
            f"[bold red]{len(wrong)} of {len(cells)} cells disagree:[/] "
            + "; ".join(
                f"{c.method} / {c.transformation}: measured {c.measured} (change {c.max_change:.2g}, tolerance {c.tolerance:.2g}), expected {c.expected}"
                for c in wrong
            ),
            highlight=False,
        )
        raise typer.Exit(1)
    console.print(
        f"[green]All {len(cells)} cells agree with Ba et al.'s Table 1 (and RMSNorm's row, Zhang & Sennrich's Table 1).[/]"
    )


@app.command("report")
def report_cmd(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(metavar="RUN_DIR...", help="Run folders (a compare, sweep, claims, train or invariance run)."),
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
    every figure with a caption, links to each child run. Several folders: side by side.
    """
    for d in run_dirs:
        if not (d / "run.json").is_file():
            _fail(f"{d}: not a run folder (no run.json)")
    if len(run_dirs) > 1 and out is None:
        _fail("--out: several run folders need an output file, e.g. --out comparison.html")
    if out is not None and (out.is_dir() or not out.absolute().parent.is_dir()):
        _fail(f"--out {out}: give a file path in an existing folder")
    from lnbench.report.html import redraw, write_report

    for d in run_dirs:
        drawn = redraw(d)
        console.print(f"{d}: {len(drawn)} figure{'s' * (len(drawn) != 1)} drawn", highlight=False)
    path = write_report(list(run_dirs), out)
    console.print(f"Report: {path}", highlight=False)


def _parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        _fail(f"--shape: {text!r} is not a comma-separated list of ints, e.g. 4,5,8")
    return shape


@app.command()
def gradcheck(
    dtype: Annotated[
        str, typer.Option(help="dtype of the NumPy-vs-PyTorch checks: float16, float32 or float64.")
    ] = "float64",
    shape: Annotated[str, typer.Option(help="Input shape (..., D), comma-separated.")] = "4,5,8",
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the random inputs.")] = 0,
    runs_dir: RunsDirOption = Path("runs"),
    json_path: Annotated[
        Optional[Path], typer.Option("--json", help="Write the report here instead of a run folder.")
    ] = None,
) -> None:
    """Check the hand-written LayerNorm gradients against finite differences and PyTorch.

    Exit code 0 when every check passes, 1 when any fails.
    """
    shape_tuple = _parse_shape(shape)
    if json_path is None:
        _check_runs_dir(runs_dir)
    elif json_path.is_dir():
        _fail(f"--json {json_path}: is a folder; give a file path such as {json_path / 'gradcheck.json'}")
    elif not json_path.absolute().parent.is_dir():
        _fail(f"--json {json_path}: the folder {json_path.absolute().parent} does not exist (it is not created)")
    try:
        from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

        checks, path = experiments.gradcheck(dtype, shape_tuple, seed, runs_dir, json_path)
    except ValueError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"--json {json_path}: cannot write the report ({exc.strerror})")
    table = Table(title=f"lnbench gradcheck: dtype {dtype}, shape {shape}, seed {seed}", title_justify="left")
    for col, justify in [
        ("group", "left"),
        ("check", "left"),
        ("max abs error", "right"),
        ("rel error", "right"),
        ("tolerance", "right"),
        ("result", "left"),
    ]:
        table.add_column(col, justify=justify)
    for c in checks:
        result = "[green]PASS[/]" if c.passed else "[bold red]FAIL[/]"
        errors = [f"{e:.2e}" if math.isfinite(e) else "-" for e in (c.max_abs_error, c.rel_error)]
        table.add_row(c.group, c.name, *errors, f"{c.tolerance:.0e}", result)
    console.print(table)
    console.print("rel error = max|a - b| / max(max(|a| + |b|), tiny)", style="dim", highlight=False)
    failed = [c for c in checks if not c.passed]
    console.print(f"Report: {path}", highlight=False)
    if failed:
        console.print(
            f"[bold red]{len(failed)} of {len(checks)} checks failed:[/] "
            + "; ".join(f"{c.group}/{c.name}: {c.detail}" for c in failed),
            highlight=False,
        )
        raise typer.Exit(1)
    console.print(f"[green]All {len(checks)} checks passed.[/]")
