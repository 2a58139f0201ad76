"""The ``lnbench`` command line: thin Typer commands over the experiments' registry.

Every experiment command is built from its kind's entry (:data:`lnbench.names.EXPERIMENT_KINDS`)
and the shared options (:mod:`lnbench.cli.options`) by :func:`experiment_command`, and does the
same (:func:`_launch`): load the config (``--set``, ``--seed``), run every check of the
experiment (:func:`lnbench.experiments.driver.prepare`), then ``--print-config``, ``--dry-run``
(the very plan the run would execute) or the run with progress, and print the experiment's own
tables (those report.html shows). A mistake the user can fix is one
line on stderr and exit code 2, before any run folder exists. Heavy modules (torch, SciPy,
matplotlib) are imported only once the arguments are checked, so that ``--help`` and errors
answer at once.
"""

from __future__ import annotations

import inspect
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
from rich.table import Table

from lnbench import __version__
from lnbench.cli.console import Command, OneLineErrors, console, fail, guarded, print_table, progress, work_of
from lnbench.cli.options import After, ExperimentArgs, RunsDirOption, command_parameters, shared_names
from lnbench.config import MAX_SEED, ConfigError  # not the schema (pydantic): --help answers at once
from lnbench.names import EXPERIMENT_KINDS, family_label, plural

if TYPE_CHECKING:
    from rich.console import RenderableType

    from lnbench.config import RunConfig
    from lnbench.records.schema import SummaryRow

app = typer.Typer(
    name="lnbench",
    help="Train and compare NoNorm / BatchNorm / LayerNorm RNNs and Transformers on CPU, "
    "check the from-scratch LayerNorm gradients, sweep the batch size, test the claims about LayerNorm, "
    "and measure the paper's invariance table.",
    cls=OneLineErrors,  # a mistake Typer catches is one line, exit 2, as lnbench's own are
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # "rich" read [tensorboard] in a help text as markup and dropped it
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


_USER_NORM = "A lnbench.nn.Norm subclass as package.module:ClassName, or an lnbench.norms entry point; repeatable."
#: ``--norm PKG.MOD:CLASS`` of invariance and gradcheck: a user's norm
InvarianceNormOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--norm",
        metavar="PKG.MOD:CLASS",
        help=f"Also measure a norm of your own (its row: measured, not checked). {_USER_NORM}",
    ),
]
GradcheckNormOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--norm",
        metavar="PKG.MOD:CLASS",
        help=f"Also run lnbench.testing.check_norm's checks on a norm of your own. {_USER_NORM}",
    ),
]


GridOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--grid",
        "-g",
        metavar="KEY=V1,V2",
        help="Sweep KEY (a key of data, model or train) over these values, read as YAML; repeatable. Merged "
        "into the config's sweep.grid (as Hydra does): a key given here replaces its values there, a new one is "
        "added; --dry-run says which key came from where.",
    ),
]


VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Also print the table of every run and the paired comparisons (by default: the table over seeds and the "
        "verdicts; report.html and lnbench show --all have them all).",
    ),
]


def divergences(folder: Path, rows: list[SummaryRow]) -> list[str]:
    """One line per diverged run of the experiment folder ``folder``: its name, the epoch and the
    cause (the row's, else, in a summary.json written before rows carried them, its metrics.json's)."""
    from lnbench.records.folder import RunFolder

    lines = []
    for row in rows:
        if row.status != "diverged":
            continue
        child = folder / row.run_dir if row.run_dir else folder
        run = RunFolder(child if child.is_dir() else folder)  # a train folder is its one run
        epoch, reason = row.diverged_at_epoch, row.divergence_reason
        if reason is None:
            raw = run.raw_metrics() or {}
            epoch, reason = raw.get("diverged_at_epoch"), raw.get("divergence_reason")
        lines.append(
            f"{run.name} diverged at epoch {epoch if epoch is not None else '?'}: {reason or 'no cause recorded'}"
        )
    return lines


def print_results(
    tables: list[Table],
    verdicts: list[str],
    notes: list[str],
    folder: Path,
    everything: bool,
    rows: Sequence[SummaryRow] = (),
) -> None:
    """A finished experiment's tables (all of them with ``everything``, else
    :func:`lnbench.report.tables.brief`'s and one line naming the others), its notes, a line per
    diverged run of ``rows`` (:func:`divergences`) and its verdicts, each verdict wrapped to the
    console's width under its dash."""
    import textwrap

    from lnbench.report.tables import RunsTable, brief

    shown, left = (tables, []) if everything else brief(tables)
    for table in shown:
        print_table(table)
    for note in notes:
        console.print(f"note: {note}", style="dim", markup=False, highlight=False)
    for line in divergences(folder, list(rows)):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    width = max(console.width, 40)
    for verdict in verdicts:
        console.print(
            textwrap.fill(verdict, width, initial_indent="- ", subsequent_indent="  ", break_long_words=False),
            highlight=False,
            soft_wrap=True,
            markup=False,
        )
    if left:
        what = " and ".join(
            dict.fromkeys("every run's table" if isinstance(t, RunsTable) else "the paired comparisons" for t in left)
        )
        console.print(
            f"Not printed: {what} (--verbose; lnbench show --all {folder}; report.html)",
            style="dim",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def check_runs_dir(runs_dir: Path) -> None:
    """Fail early, with one line and nothing created, if run folders cannot go under ``runs_dir``."""
    existing = runs_dir.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail(f"--runs-dir {runs_dir}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"--runs-dir {runs_dir}: {existing} is not writable")


def _load(config: Optional[Path], overrides: Optional[list[str]], seed: Optional[int]) -> RunConfig:
    from lnbench.config import load_config

    try:
        return load_config(config, overrides or [], seed)
    except ConfigError as exc:
        fail(str(exc))


def _config_of(config: Optional[Path], resume: Optional[Path], default: str, kind: str) -> Path:
    """The config file of a command: CONFIG if given; else, with ``--resume DIR``, the folder's
    own config.yaml (the one it was run with), once its run.json says it is a ``kind`` folder
    (a compare's config read as a sweep's would fail on a key, not on the kind); else ``default``."""
    if config is not None:
        return config
    if resume is None:
        return Path(default)
    if not (resume / "config.yaml").is_file():
        fail(f"--resume {resume}: not an experiment folder (no config.yaml)")
    from lnbench.config.checks import check_not_a_child
    from lnbench.records.folder import RunFolder

    try:
        check_not_a_child(resume)  # a compare's child is a train folder too, but resumed with its compare
    except ConfigError as exc:
        fail(str(exc))
    found = RunFolder(resume).kind
    if found != kind:
        fail(f"--resume {resume}: a {found!r} folder, not {kind!r}; resume it with lnbench {found}")
    return resume / "config.yaml"


def _source(config: Optional[Path], overrides: Optional[list[str]]) -> str:
    """How a check names the config: its file (or the defaults), and whether --set changed it."""
    return (str(config) if config is not None else "(defaults)") + (" (with --set)" if overrides else "")


def with_g(source: str) -> str:
    """:func:`_source` of a config that ``sweep -g`` changed: ``configs/sweep.yaml (with -g)``,
    ``... (with --set, -g)``."""
    return (
        source.replace(" (with --set)", " (with --set, -g)")
        if source.endswith(" (with --set)")
        else f"{source} (with -g)"
    )


def _launch(
    kind: str,
    spec: Any,
    source: str,
    args: ExperimentArgs,
    note: Optional[str] = None,
    verbose: bool = False,
    exp: Any = None,
) -> Path:
    """Check, plan and run the experiment ``kind`` on ``spec`` with the shared options ``args``; print
    its tables and verdicts (``note``: a line printed before the plan of ``--dry-run`` or the run,
    e.g. where a grid came from; ``verbose``: every table, :func:`print_results`; ``exp``: the
    experiment, default the kind's: a confirm stage's). Returns the folder."""
    runs_dir, jobs, launcher, resume = args.runs_dir, args.jobs, args.launcher, args.resume
    from lnbench.experiments import driver
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.launchers.executors import usable_cores, worker_count
    from lnbench.records.folder import RunFolder

    exp = EXPERIMENTS[kind] if exp is None else exp
    n_jobs = usable_cores() if jobs is None else jobs
    try:
        cells = driver.prepare(exp, spec, n_jobs, launcher, resume)
    except ConfigError as exc:  # checks of the whole experiment: name the config they are about
        lines = str(exc).splitlines()
        fail("\n".join(line if line.startswith(("--", source)) else f"{source}: {line}" for line in lines))
    check_runs_dir(runs_dir)
    if args.tensorboard:
        from lnbench.experiments.tensorboard import INSTALL, available

        if not available():
            fail(f"--tensorboard: the tensorboard package is not installed; {INSTALL}")
        for cell in cells:
            cell.tensorboard = True
    if args.print_config:
        for header, cfg in exp.configs(spec).items():
            if header:
                console.print(f"# {header}", markup=False, highlight=False)
            console.print(
                cfg.to_yaml(model_family_only=exp.own_run), markup=False, highlight=False, soft_wrap=True, end=""
            )
        raise typer.Exit()
    if note is not None:
        console.print(note, highlight=False, soft_wrap=True, markup=False)
    to_run = driver.cells_to_run(cells, resume, exp)
    copies = driver.cells_to_copy(cells, resume, exp)  # child run -> the child run it copies
    to_train = [cell for cell in to_run if cell.cfgs[0].name not in copies]
    if launcher == "local":  # no more workers than cells to train and CPU cores to train them on
        n_jobs = worker_count(n_jobs, len(to_train))
        if to_train and jobs is not None and n_jobs < jobs:
            cores = plural(usable_cores(), "usable CPU core")
            console.print(
                f"--jobs {jobs}: {_workers(n_jobs)} ({plural(len(to_train), 'cell')} to run, {cores})", highlight=False
            )
    if args.dry_run:
        _print_plan(to_run, len(cells), resume, copies)
        raise typer.Exit()
    if driver.finished(cells, resume, exp, spec):
        console.print(
            f"Nothing to do: {resume} is completed ({plural(len(cells), 'cell')}, every run finished); "
            f"lnbench show {resume} prints its results",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit()
    if resume is not None and not os.access(resume, os.W_OK | os.X_OK):
        why = "a read-only file system" if os.statvfs(resume).f_flag & os.ST_RDONLY else "its permissions"
        fail(f"--resume {resume}: the folder is not writable ({why}); nothing was changed")
    if resume is not None:
        n_kept = len(cells) - len(to_run)
        console.print(
            f"Resuming {resume}: {plural(n_kept, 'cell')} kept, {len(to_run)} to run", highlight=False, soft_wrap=True
        )
    if to_run:
        console.print(plan_line(kind, to_train, n_jobs, launcher, len(copies)), highlight=False, soft_wrap=True)
    with guarded() as stop:
        from lnbench.experiments.cells import step_cost

        weights = {c.name: step_cost(cell) for cell in to_train for c in cell.cfgs}
        with progress(work_of([c for cell in to_train for c in cell.cfgs], weights)) as on_epoch:
            result = driver.execute(exp, spec, cells, runs_dir, on_epoch, n_jobs, resume, launcher)
        stop.folder = result.path
        summary = RunFolder(result.path).summary() or {}
        notes = sorted({w for r in result.rows for w in r.warnings})
        print_results(exp.tables(result.path, summary), result.verdicts, notes, result.path, verbose, result.rows)
        console.print(f"Run folder: {result.path}  (status: {result.status})", highlight=False, soft_wrap=True)
        if (result.path / "report.html").exists():
            console.print(f"Report: {result.path / 'report.html'}", highlight=False, soft_wrap=True)
    if result.status == "failed":  # what finished is kept and reported above; the command did not succeed
        error = (RunFolder(result.path).manifest() or {}).get("error") or "a run failed"
        fail(f"{error}; run folder: {result.path} (status: failed)", code=1)
    return result.path


def _print_plan(cells: list, n_cells: int, resume: Optional[Path], copies: dict[str, str]) -> None:
    """``--dry-run``: the child runs the experiment would start (with --resume: only those), and
    which of them it would copy (``copies``: child run -> the child run it copies) instead of training."""
    planned = [c for cell in cells for c in cell.cfgs]
    n = len(planned)
    kept = f"; {plural(n_cells - len(cells), 'cell')} of {resume} kept" if resume is not None else ""
    if n == 0:
        console.print(f"would start no run (dry run: nothing is run or written{kept})", highlight=False, soft_wrap=True)
        return
    print_table(
        plan_table(planned, f"would start {plural(n, 'run')} (dry run: nothing is run or written{kept})", copies)
    )
    trained = [c for c in planned if c.name not in copies]
    line = f"{plural(len(trained), 'run')}, {plural(sum(c.train.epochs for c in trained), 'epoch')} in all"
    if copies:
        line = f"{plural(len(trained), 'run')} trained ({plural(sum(c.train.epochs for c in trained), 'epoch')}) and {_copies(len(copies))}"
    console.print(line, highlight=False, soft_wrap=True)


def _workers(jobs: int) -> str:
    return f"{jobs} worker processes" if jobs > 1 else "1 process"


def _copies(n: int) -> str:
    """``6 copies of identical runs``: runs of the same effective config as another, copied, not trained."""
    return "1 copy of an identical run" if n == 1 else f"{n} copies of identical runs"


def plan_line(kind: str, cells: list, jobs: int, launcher: str, copies: int = 0) -> str:
    """The line an experiment starts with, at once (a log shows nothing else until a run finishes):
    the runs it trains, their cells, seeds and where they run, and how many runs it copies from
    identical ones (``copies``) instead of training them."""
    cfgs = [c for cell in cells for c in cell.cfgs]
    if not cfgs:  # --resume with only copies left
        return f"{kind}: {_copies(copies)}, no run to train"
    where = f"on {_workers(jobs)}"
    if launcher != "local":
        where = f"as {plural(len(cells), 'job')} of {launcher}"
    what = f"{plural(len(cfgs), 'run')} in {plural(len(cells), 'cell')}" if len(cells) > 1 else plural(len(cfgs), "run")
    seeds = sorted({c.seed for c in cfgs})
    epochs = f"({plural(sum(c.train.epochs for c in cfgs), 'epoch')})"
    copied = f" and {_copies(copies)}" if copies else ""
    return f"{kind}: {what} {epochs}{copied}, {'seeds' if len(seeds) > 1 else 'seed'} {_seeds(seeds)}, {where}"


def plan_table(planned: list[RunConfig], title: str, copies: Optional[dict[str, str]] = None) -> Table:
    """The runs of a plan (``--dry-run``): name, model, norm, batch size, seed, epochs, and with
    ``copies`` (child run -> the child run it copies) the run each copy is copied from."""
    copies = copies or {}
    table = Table(title=title, title_justify="left")
    columns = ("run", "model", "norm", "batch size", "seed", "epochs") + (("copy of",) if copies else ())
    for col in columns:
        table.add_column(col, justify="right" if col in ("batch size", "seed", "epochs") else "left")
    for c in planned:
        table.add_row(
            c.name,
            family_label(c.model.family),
            c.model.norm,
            str(c.train.batch_size),
            str(c.seed),
            str(c.train.epochs),
            *((copies.get(c.name, ""),) if copies else ()),
        )
    return table


def claims_list_table(listed: list) -> Table:
    """``lnbench claims --list``: each claim, its model, regime (and why), metric, conditions and
    margin, and whether a plain ``lnbench claims`` runs it."""
    from lnbench.analysis.metrics import format_amount
    from lnbench.experiments.claims import in_default_run

    table = Table(
        title="lnbench claims", title_justify="left", caption="run: by a plain `lnbench claims`, or with --all"
    )
    for col in ("id", "model", "claim", "regime (why)", "metric", "a vs b", "margin", "run"):
        table.add_column(col, no_wrap=col in ("id", "margin", "run"))
    for c in listed:
        margin = ("+-" if c.direction == "equal" else "") + format_amount(c.metric, c.margin, signed=False)
        table.add_row(
            c.id,
            family_label(c.family),
            c.text,
            f"{c.regime} ({c.why})",
            c.metric,
            c.sides_label(),
            margin,
            "default" if in_default_run(c) else "--all",
        )
    return table


def _config_spec(kind: str, args: ExperimentArgs) -> tuple[RunConfig, str]:
    """The config of ``lnbench KIND`` as given (CONFIG, its entry's default or --resume's own;
    --set; --seed), and how a check names it."""
    info = EXPERIMENT_KINDS[kind]
    if args.config is None and args.resume is None and info.config_required:
        fail(f"CONFIG: missing; give a config file, e.g. lnbench {kind} {info.config} (or --resume RUN_DIR)")
    config = _config_of(args.config, args.resume, info.config or "", kind)
    cfg = _load(config, args.set_, args.seed if info.seeded else None)
    if not info.seeded and args.seed is not None:  # one model, one seed: a seeds list is dropped, not shifted
        cfg = cfg.with_changes(seed=args.seed, seeds=None)
    return cfg, _source(config, args.set_)


def experiment_command(
    kind: str, body: Optional[Callable[..., None]] = None, into: typer.Typer = app
) -> Callable[..., None]:
    """Add the command ``lnbench KIND`` to ``into``, built from the kind's entry in
    :data:`lnbench.names.EXPERIMENT_KINDS` (its help, CONFIG, the shared options it takes:
    :mod:`lnbench.cli.options`) and ``body``'s own options (:func:`command_parameters`).

    ``body(args, **own)`` runs it with the shared options as :class:`ExperimentArgs` (a kind
    without one of them gets its default there) and its own by name; default: load the config
    (:func:`_config_spec`) and run the experiment (:func:`_launch`). Returns the command.
    """

    def run(args: ExperimentArgs, verbose: VerboseOption = False) -> None:
        cfg, source = _config_spec(kind, args)
        _launch(kind, cfg, source, args, verbose=verbose)

    shared = ["config", *shared_names(kind)]
    runs = body or run

    def command(**given: Any) -> None:
        runs(args=ExperimentArgs(**{name: given.pop(name) for name in shared if name in given}), **given)

    command.__signature__ = inspect.Signature(command_parameters(kind, runs))  # type: ignore[attr-defined]
    return into.command(kind, cls=Command, help=EXPERIMENT_KINDS[kind].help)(command)


def _sweep(args: ExperimentArgs, grid: GridOption = None, verbose: VerboseOption = False) -> None:
    """``lnbench sweep``: the config's sweep.grid merged with -g (its help: its entry's, lnbench.names)."""
    cfg, source = _config_spec("sweep", args)
    origins = None
    if grid:
        from lnbench.config.grid_args import grid_origins, parse_grid_args, with_grid

        try:
            given = parse_grid_args(grid)
            origins = grid_origins(cfg.sweep.grid, given, source)
            source = with_g(source)
            cfg = with_grid(cfg, given, source)
        except ConfigError as exc:
            fail(str(exc))
    _launch("sweep", cfg, source, args, origins, verbose)  # the grid's checks name the config "(with -g)" too


def _user_norms(specs: Optional[list[str]]) -> dict:
    """``--norm`` values -> their classes (lnbench.nn.registry.plugin_norm); a bad one is one line, exit 2."""
    if not specs:
        return {}
    from lnbench.names import is_plugin_norm
    from lnbench.nn.registry import plugin_norm

    out = {}
    for spec in specs:
        if not is_plugin_norm(spec):
            fail(f"--norm {spec}: expected 'package.module:ClassName' or an installed lnbench.norms entry point")
        try:
            out[spec] = plugin_norm(spec).layer
        except ValueError as exc:
            fail(f"--norm: {exc}")
    return out


def _pilot_summary(exp: Any, spec: Any, folder: Path, launcher: str) -> dict:
    """The pilot's results as a summary.json holds them (``rows``, each with its cell's group, a
    claims regime; ``baselines``), its rows read from its finished child runs: the folder's
    summary.json is the confirm stage's once that started (an interrupted confirm has its partial one)."""
    from lnbench.experiments import driver
    from lnbench.records.folder import RunFolder

    try:
        cells = driver.prepare(exp, spec, 1, launcher, folder)
    except ConfigError as exc:
        fail(str(exc))
    rows = [row.to_dict() | {"regime": cell.group} for cell in cells for row, _ in exp.kept(cell) or []]
    return {"rows": rows, "baselines": (RunFolder(folder).summary() or {}).get("baselines")}


MAX_SEEDS_DEFAULT = 20  # lnbench.analysis.confirm.MAX_SEEDS (not imported: --help answers at once)
ConfirmOption = Annotated[
    bool,
    typer.Option(
        "--confirm",
        help="Settle what the run leaves open: after the pilot (this run, or --resume DIR's), each question it leaves "
        "undecided or borderline is run on the fresh seeds it needs for 80% power, and decided on them alone "
        "(docs/statistics.md, 'Confirmatory runs'). With --resume DIR --dry-run: print the plan.",
    ),
]
MaxSeedsOption = Annotated[
    Optional[int],
    typer.Option(
        "--max-seeds",
        metavar="N",
        min=2,
        max=1000,
        help="With --confirm: the most fresh seeds a question may take; one that needs more is reported as not "
        "decidable, and nothing is run for it. Default: 20.",
    ),
]


def _claims(
    *,
    presets: Annotated[
        Path,
        typer.Option("--presets", metavar="DIR", help="Folder of the regime presets (one REGIME.yaml per regime)."),
    ] = Path("configs/claims"),
    only: Annotated[
        Optional[list[str]],
        typer.Option(
            "--only",
            metavar="CLAIM",
            help="Evaluate only this claim id, or every claim of this regime (repeatable; --only figure6: Ba et al.'s "
            "Figure 6 on MNIST); see --list.",
        ),
    ] = None,
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Evaluate every claim, the LSTM's, the SGD regimes' and Figure 6's too (a plain run leaves them out for their "
            "cost: --all takes ~20 min on 2 cores, Figure 6 ~14 of them).",
        ),
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the claims and their regimes, then exit.")] = False,
    task: Annotated[
        Optional[list[str]],
        typer.Option(
            "--task",
            metavar="NAME",
            help="Run the claims on this task (trend, adding, digits, mnist; repeatable), each claim in its regime with "
            "the task's data, where the task can measure it. Default: trend.",
        ),
    ] = None,
    tasks: Annotated[
        Optional[str],
        typer.Option("--tasks", metavar="A,B,C", help="Several tasks at once, e.g. --tasks trend,adding,digits,mnist."),
    ] = None,
    args: ExperimentArgs,
    num_seeds: Annotated[
        Optional[int],
        typer.Option(
            "--num-seeds",
            metavar="N",
            min=2,
            max=1000,
            help="Train N seeds (seed .. seed + N - 1) in every regime, e.g. the number an inconclusive verdict asks for.",
        ),
        After("--seed"),
    ] = None,
    confirm: ConfirmOption = False,
    max_seeds: MaxSeedsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """``lnbench claims``: its own options, and the claims spec (its help: its entry's, lnbench.names)."""
    from lnbench.analysis import claim_catalogue

    if list_:
        try:
            listed = claim_catalogue.select_claims(only)
        except ConfigError as exc:
            fail(str(exc))
        table = claims_list_table(listed)
        print_table(table)
        return
    from lnbench.experiments.claims import claims_spec

    if all_ and only:
        fail("--all and --only: give one of them (--all evaluates every claim, --only the ones named)")
    overrides, seed = list(args.set_ or []), args.seed
    if num_seeds is not None:
        if any(o.replace(" ", "").startswith(("seeds=", "seed=")) for o in overrides):
            fail("--num-seeds and --set seeds/seed: give one (--num-seeds N with --seed S trains seeds S .. S + N - 1)")
        first = seed if seed is not None else 0
        if first + num_seeds - 1 > MAX_SEED:
            fail(f"--seed {first} --num-seeds {num_seeds}: the last seed, {first + num_seeds - 1}, exceeds {MAX_SEED}")
        overrides += [f"seed={first}", f"seeds=[{', '.join(str(first + k) for k in range(num_seeds))}]"]
        seed = None  # --seed is the first of them, already in the overrides
    names = [*(task or []), *([tasks] if tasks is not None else [])] or None  # None: trend, not asked for
    option = "--tasks" if tasks is not None and not task else "--task"
    try:
        spec = claims_spec(only, presets, overrides, seed, everything=all_, tasks=names, option=option)
    except ConfigError as exc:
        fail(str(exc))
    if confirm:
        _confirm_claims(spec, str(presets), args, MAX_SEEDS_DEFAULT if max_seeds is None else max_seeds, verbose)
        return
    if max_seeds is not None:
        fail("--max-seeds: it bounds the confirm stage; give it with --confirm")
    _launch("claims", spec, str(presets), args, verbose=verbose)


def _confirm_claims(spec: Any, source: str, args: ExperimentArgs, max_seeds: int, verbose: bool) -> None:
    """``lnbench claims --confirm``: :func:`_two_stage` with the claims' plan."""
    from lnbench.experiments.claims import ConfirmSpec, confirm_cost, plan_from_pilot
    from lnbench.report import tables

    def confirmed(summary: dict) -> tuple[Any, Table, Optional[float], Any, dict]:
        spec.confirm = ConfirmSpec(summary, max_seeds)
        plan = plan_from_pilot(spec)
        cost = confirm_cost(spec, plan) if plan.fresh else None
        return spec, tables.confirm_plan_table(plan, max_seeds), cost, None, plan.fresh

    _two_stage("claims", spec, source, args, verbose, confirmed, max_seeds)


def _two_stage(
    kind: str,
    spec: Any,
    source: str,
    args: ExperimentArgs,
    verbose: bool,
    confirmed: Callable[[dict], tuple[Any, Table, Optional[float], Any, dict]],
    max_seeds: int,
) -> None:
    """``--confirm``: the pilot (run now, or --resume's folder, finished first if it is not), the
    confirm stage's plan from its rows (``confirmed(summary)``: the confirm stage's spec, its plan
    table, its estimated cost in seconds, its experiment (None: the kind's), its fresh seeds),
    printed, then the confirm stage in the same folder (or, with --dry-run, the runs it would
    start). The plan is pinned in the folder's confirm.json when the confirm stage starts: a later
    --confirm whose plan differs (another --max-seeds) is refused, since it would test seeds
    already looked at."""
    import dataclasses

    from lnbench.experiments import driver
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.records.folder import RunFolder

    exp = EXPERIMENTS[kind]
    if args.resume is None:
        note = (
            "--confirm: the confirm stage is planned from the pilot's results; once the pilot has run, "
            f"lnbench {kind} --resume DIR --confirm --dry-run prints its plan"
            if args.dry_run
            else None
        )
        folder = _launch(kind, spec, source, args, note=note, verbose=verbose)
    else:
        folder = Path(args.resume)
        try:
            cells = driver.prepare(exp, spec, 1, args.launcher, folder)
        except ConfigError as exc:
            fail(str(exc))
        if driver.cells_to_run(cells, folder, exp):
            if args.dry_run:
                console.print(
                    f"--confirm: the pilot in {folder} is not finished; lnbench {kind} --resume {folder} (with the "
                    "pilot's options) finishes it, then the confirm stage can be planned",
                    highlight=False,
                    soft_wrap=True,
                )
            _launch(kind, spec, source, args, verbose=verbose)  # with --dry-run: its plan, and exit
    confirm_spec, table, cost, confirm_exp, fresh = confirmed(_pilot_summary(exp, spec, folder, args.launcher))
    pinned = folder / "confirm.json"
    record = {"max_seeds": max_seeds, "fresh_seeds": fresh}
    if pinned.is_file():
        import json

        stored = json.loads(pinned.read_text())
        if stored != json.loads(json.dumps(record)):
            fail(
                f"--confirm: {folder}'s confirm stage was planned with --max-seeds {stored.get('max_seeds')} "
                f"(fresh seeds {stored.get('fresh_seeds')}); another plan would test seeds already looked at: "
                f"give --max-seeds {stored.get('max_seeds')} (with the same lnbench)"
            )
    print_table(table)
    if cost is not None:
        console.print(
            f"confirm stage: about {cost / 60:.1f} min of training on one worker (the pilot's wall time of each "
            "setting, scaled by its fresh seeds)",
            highlight=False,
            soft_wrap=True,
        )
    if (
        not args.dry_run and not pinned.is_file()
    ):  # the plan, and the pilot's summary.json (the confirm stage rewrites it)
        from lnbench.records.io import write_json_atomic

        pilot = RunFolder(folder).summary() or {}
        if pilot.get("complete") and "confirm" not in pilot:  # the pilot's own (not an interrupted stage's partial one)
            write_json_atomic(folder / "pilot_summary.json", pilot)
        write_json_atomic(pinned, record)
    _launch(kind, confirm_spec, source, dataclasses.replace(args, resume=folder), verbose=verbose, exp=confirm_exp)


def _compare(
    args: ExperimentArgs,
    confirm: ConfirmOption = False,
    max_seeds: MaxSeedsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """``lnbench compare``: a compare, or with --confirm a pilot and its confirm stage (its help: its entry's)."""
    cfg, source = _config_spec("compare", args)
    if not confirm:
        if max_seeds is not None:
            fail("--max-seeds: it bounds the confirm stage; give it with --confirm")
        _launch("compare", cfg, source, args, verbose=verbose)
        return
    from lnbench.experiments.compare import CONFIRMED_COMPARE, ConfirmCompareSpec, compare_cost, compare_plan
    from lnbench.report import tables

    if len(cfg.seed_list) < 2:
        fail(f"--confirm: seeds: the pilot needs at least 2 seeds to plan from (got {cfg.seed_list})")
    limit = MAX_SEEDS_DEFAULT if max_seeds is None else max_seeds

    def confirmed(summary: dict) -> tuple[Any, Table, Optional[float], Any, dict]:
        confirm_spec = ConfirmCompareSpec(cfg, summary, limit)
        plan = compare_plan(confirm_spec)
        cost = compare_cost(confirm_spec, plan) if plan.fresh else None
        return confirm_spec, tables.compare_plan_table(plan, limit), cost, CONFIRMED_COMPARE, plan.fresh

    _two_stage("compare", cfg, source, args, verbose, confirmed, limit)


#: the kinds whose command does more than load a config and run it: their bodies (own options)
OWN_BODIES: dict[str, Callable[..., None]] = {"sweep": _sweep, "claims": _claims, "compare": _compare}
for _kind in EXPERIMENT_KINDS:  # in lnbench --help's order, before invariance
    experiment_command(_kind, OWN_BODIES.get(_kind))


@app.command(cls=Command)
def invariance(
    seed: Annotated[
        int,
        typer.Option(
            metavar="N", min=0, max=MAX_SEED, help="Seed of the weights, the batch and the random transformations."
        ),
    ] = 0,
    draws: Annotated[
        int,
        typer.Option(
            metavar="N",
            min=1,
            max=1000,
            help="Random draws (delta, gamma, row, case) per cell; the largest change counts.",
        ),
    ] = 5,
    runs_dir: RunsDirOption = Path("runs"),
    json_path: Annotated[
        Optional[Path], typer.Option("--json", metavar="FILE", help="Write the report here instead of a run folder.")
    ] = None,
    norm: InvarianceNormOption = None,
) -> None:
    """Measure the invariance table of Ba et al. 2016 (Table 1) for batch, weight, layer, RMS and group norm.

    Exit code 0 when every cell agrees with the paper (RMSNorm: Zhang & Sennrich's Table 1), 1 otherwise.
    """
    from lnbench.report import tables

    users = _user_norms(norm)
    if json_path is None:
        check_runs_dir(runs_dir)
    elif json_path.is_dir() or not json_path.absolute().parent.is_dir():
        fail(f"--json {json_path}: give a file path in an existing folder")
    from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

    with guarded(epochs=False) as stop:
        unmeasured: dict[str, str] = {}  # a user's norm that raises or is not shaped as its input: not in the table
        try:
            methods = None
            if users:
                from lnbench.nn.invariance import METHODS
                from lnbench.testing import invariance_method, invariance_problem

                unmeasured = {spec: why for spec, cls in users.items() if (why := invariance_problem(cls)) is not None}
                measured = {spec: invariance_method(cls) for spec, cls in users.items() if spec not in unmeasured}
                methods = {**METHODS, **measured}
            cells, path = experiments.invariance(seed, draws, runs_dir, json_path, methods=methods)
        except OSError as exc:
            _report_write_failed(exc, json_path)
        except ValueError as exc:  # lnbench.testing.NormFailure: a user's norm failed while being measured
            if not users:
                raise
            fail(f"--norm: {exc}", code=1)
        stop.folder = None if json_path is not None or path is None else path.parent
        print_table(tables.invariance_table([c.to_dict() for c in cells], draws))
        _print_written(path, json_path)
        wrong = [c for c in cells if not c.agrees]
        for spec, why in unmeasured.items():
            console.print(f"[bold red]--norm {spec}: not measured:[/] {why}", highlight=False, soft_wrap=True)
        if wrong:
            console.print(
                f"[bold red]{len(wrong)} of {len(cells)} cells disagree:[/] "
                + "; ".join(
                    f"{c.method} / {c.transformation}: its output is NaN or inf"
                    if c.method in users and not math.isfinite(c.max_change)
                    else f"{c.method} / {c.transformation}: measured {c.measured} (change {c.max_change:.2g}, tolerance {c.tolerance:.2g}), expected {c.expected}"
                    for c in wrong
                ),
                highlight=False,
            )
        if wrong or unmeasured:
            raise typer.Exit(1)
        checked = [c for c in cells if c.method not in users]
        yours = f"; {plural(len(users), 'norm')} of yours measured, not checked" if users else ""
        console.print(
            f"[green]All {len(checked)} cells agree with Ba et al.'s Table 1 (and RMSNorm's row, Zhang & Sennrich's Table 1; "
            f"GroupNorm's, derived){yours}.[/]"
        )


def _print_written(path: Optional[Path], json_path: Optional[Path]) -> None:
    """Where a checking command wrote its report: the JSON file given, or the run folder and its report.html."""
    if path is None:
        return
    if json_path is not None:
        console.print(f"JSON: {path}", highlight=False, soft_wrap=True)
        return
    console.print(f"Run folder: {path.parent}", highlight=False, soft_wrap=True)
    page = path.parent / "report.html"
    console.print(f"Report: {page}" if page.exists() else f"JSON: {path}", highlight=False, soft_wrap=True)


@app.command("report", cls=Command)
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


def _report_write_failed(exc: OSError, json_path: Optional[Path]) -> NoReturn:
    """A check's report could not be written: --json's file (exit 2: the user names it), or a file
    of the run folder (exit 1: a full or read-only disk), one line naming the file."""
    if json_path is not None:
        fail(f"--json {json_path}: cannot write the report ({exc.strerror or exc})")
    fail(str(exc), code=1)


def _parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        fail(f"--shape: {text!r} is not a comma-separated list of ints, e.g. 4,5,8")
    return shape


@app.command(cls=Command)
def gradcheck(
    dtype: Annotated[
        str, typer.Option(metavar="DTYPE", help="dtype of the NumPy-vs-PyTorch checks: float16, float32 or float64.")
    ] = "float64",
    shape: Annotated[str, typer.Option(metavar="SHAPE", help="Input shape (..., D), comma-separated.")] = "4,5,8",
    seed: Annotated[int, typer.Option(metavar="N", min=0, max=MAX_SEED, help="Seed of the random inputs.")] = 0,
    runs_dir: RunsDirOption = Path("runs"),
    json_path: Annotated[
        Optional[Path], typer.Option("--json", metavar="FILE", help="Write the report here instead of a run folder.")
    ] = None,
    norm: GradcheckNormOption = None,
) -> None:
    """Check the hand-written LayerNorm gradients against finite differences and PyTorch.

    Exit code 0 when every check passes, 1 when any fails.
    """
    shape_tuple = _parse_shape(shape)
    users = _user_norms(norm)
    if json_path is None:
        check_runs_dir(runs_dir)
    elif json_path.is_dir():
        fail(f"--json {json_path}: is a folder; give a file path such as {json_path / 'gradcheck.json'}")
    elif not json_path.absolute().parent.is_dir():
        fail(f"--json {json_path}: the folder {json_path.absolute().parent} does not exist (it is not created)")
    from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once
    from lnbench.report.tables import gradcheck_table

    with guarded(epochs=False) as stop:
        try:
            extra = []
            if users:
                from lnbench.testing import norm_checks

                extra = [c for cls in users.values() for c in norm_checks(cls)]
            checks, path = experiments.gradcheck(dtype, shape_tuple, seed, runs_dir, json_path, extra=extra)
        except ValueError as exc:
            fail(str(exc))
        except OSError as exc:
            _report_write_failed(exc, json_path)
        stop.folder = None if json_path is not None or path is None else path.parent
        report = {"dtype": dtype, "shape": list(shape_tuple), "seed": seed, "checks": [c.to_dict() for c in checks]}
        print_table(gradcheck_table(report))
        _print_written(path, json_path)
        failed = [c for c in checks if not c.passed]
        if failed:
            console.print(
                f"[bold red]{len(failed)} of {len(checks)} checks failed:[/] "
                + "; ".join(f"{c.group}/{c.name}: {c.detail}" for c in failed),
                highlight=False,
            )
            raise typer.Exit(1)
        console.print(f"[green]All {len(checks)} checks passed.[/]")


@app.command("export", cls=Command)
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


def _seeds(seeds: list[int]) -> str:
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(str(s) for s in seeds)


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
    :func:`lnbench.report.tables.fit`, which wraps)."""
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
            _seeds(e.seeds),
            _ls_result(e),
        ]
        for e in entries
    ]
    longest = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(headers)]
    if sum(longest[:-1]) + min(longest[-1], LS_KEPT) + 2 * (len(headers) - 1) > width:  # the wrapping table
        from lnbench.report.tables import fit

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


@app.command("ls", cls=Command)
def ls_cmd(
    runs_dir: Annotated[
        Path, typer.Argument(metavar="RUNS_DIR", help="A runs folder (or one run folder).", show_default=False)
    ] = Path("runs"),
    kind: Annotated[
        Optional[str],
        typer.Option("--kind", metavar="KIND", help="Only this kind: train, compare, sweep, claims, ..."),
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


@app.command("show", cls=Command)
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
                "(with the pilot's options) goes on",
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
    notes = sorted({w for r in rows for w in r.warnings})
    print_results(printed, summary.get("verdicts") or [], notes, run_dir, all_, rows)
    console.print(f"Run folder: {run_dir}  (status: {manifest.get('status')})", highlight=False, soft_wrap=True)
    if (run_dir / "report.html").exists():
        console.print(f"Report: {run_dir / 'report.html'}", highlight=False, soft_wrap=True)
