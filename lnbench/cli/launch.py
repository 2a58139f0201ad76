"""What every experiment command does (:func:`launch`): read its config (:func:`config_spec`:
CONFIG or --resume's own, ``--set``, ``--seed``), run every check of the experiment
(:func:`lnbench.experiments.driver.prepare`), then ``--print-config``, ``--dry-run`` (the very plan
the run would execute) or the run with progress, and print the experiment's own tables (those
report.html shows). A mistake the user can fix is one line on stderr and exit code 2, before any
run folder exists."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from lnbench.cli.console import console, fail, guarded, progress, work_of
from lnbench.cli.options import ExperimentArgs
from lnbench.cli.plan import plan_counts, plan_line, print_plan, resume_line, workers_phrase
from lnbench.cli.results import print_results
from lnbench.config import ConfigError  # not the schema (pydantic): --help answers at once
from lnbench.names import EXPERIMENT_KINDS, plural

if TYPE_CHECKING:
    from lnbench.config import RunConfig


def check_runs_dir(runs_dir: Path, probe: bool = True) -> None:
    """Fail early, with one line (exit code 2) and nothing created, if run folders cannot go under
    ``runs_dir``. With ``probe``, a folder is made in (and removed from) its nearest existing folder:
    ``os.access`` says yes to root in /proc, where making the run folder fails."""
    existing = runs_dir.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail(f"--runs-dir {runs_dir}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"--runs-dir {runs_dir}: {existing} is not writable")
    if probe:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".lnbench-probe-", dir=existing))
        except OSError as exc:
            fail(
                f"--runs-dir {runs_dir}: {existing} is not writable: a folder cannot be made in it ({exc.strerror or exc})"
            )


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


def config_spec(kind: str, args: ExperimentArgs) -> tuple[RunConfig, str]:
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


def launch(
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
    from lnbench.config.checks import check_lr_used
    from lnbench.experiments import driver
    from lnbench.experiments.base import LaunchOptions
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.launchers.executors import usable_cores, worker_count
    from lnbench.records.folder import RunFolder

    exp = EXPERIMENTS[kind] if exp is None else exp
    n_jobs = usable_cores() if jobs is None else jobs
    try:
        cells = driver.prepare(exp, spec, n_jobs, launcher, resume, check_norm=not args.no_check)
        check_lr_used([c for cell in cells for c in cell.cfgs], args.set_ or [])
    except ConfigError as exc:  # checks of the whole experiment: name the config they are about
        lines = str(exc).splitlines()
        fail("\n".join(line if line.startswith(("--", source)) else f"{source}: {line}" for line in lines))
    check_runs_dir(runs_dir, probe=not (args.print_config or args.dry_run))  # those write nothing
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
    plan = driver.resume_plan(cells, resume, exp)  # the child folders read once, for the plan and the run
    to_run = driver.cells_to_run(cells, resume, exp, plan)
    copies = driver.cells_to_copy(cells, resume, exp, plan)  # child run -> the child run it copies
    counts = plan_counts(cells, to_run, copies)
    to_train = counts.train
    if launcher == "local":  # no more workers than cells to train and CPU cores to train them on
        n_jobs = worker_count(n_jobs, len(to_train))
        if to_train and jobs is not None and n_jobs < jobs:
            cores = plural(usable_cores(), "usable CPU core")
            console.print(
                f"--jobs {jobs}: {workers_phrase(n_jobs)} ({plural(len(to_train), 'cell')} to run, {cores})",
                highlight=False,
            )
    if args.dry_run:
        print_plan(to_run, len(cells), resume, copies)
        raise typer.Exit()
    if driver.finished(cells, resume, exp, spec, plan):
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
        console.print(resume_line(resume, counts), highlight=False, soft_wrap=True)
    if to_run:
        console.print(plan_line(kind, to_train, n_jobs, launcher, counts.copies), highlight=False, soft_wrap=True)
    with guarded() as stop:
        from lnbench.experiments.cells import step_cost

        weights = {c.name: step_cost(cell) for cell in to_train for c in cell.cfgs}
        with progress(work_of([c for cell in to_train for c in cell.cfgs], weights)) as on_epoch:
            where = LaunchOptions(runs_dir=runs_dir, on_epoch=on_epoch, jobs=n_jobs, resume=resume, launcher=launcher)
            result = driver.execute(exp, spec, cells, plan=plan, **where)
        stop.folder = result.path
        summary = RunFolder(result.path).summary() or {}
        tables, verdicts = exp.printed_after_run(result.path, summary, result.verdicts)
        print_results(tables, verdicts, result.rows, result.path, result.status, verbose)
    if result.status == "failed":  # what finished is kept and reported above; the command did not succeed
        error = (RunFolder(result.path).manifest() or {}).get("error") or "a run failed"
        fail(f"{error}; run folder: {result.path} (status: failed)", code=1)
    trained = [r for r in result.rows if r.status != "failed"]
    if trained and all(r.status == "diverged" for r in trained):  # nothing learned to report or compare
        what = "the run" if len(trained) == 1 else f"every run ({len(trained)})"
        epochs = sorted({r.diverged_at_epoch for r in trained if r.diverged_at_epoch is not None})
        at = f" at epoch {', '.join(map(str, epochs))}" if epochs else ""
        fail(f"{what} diverged{at} (the results above say why); run folder: {result.path}", code=DIVERGED_EXIT)
    return result.path


#: the exit code of a training command whose every run diverged (docs/cli.md, "Errors and exit codes")
DIVERGED_EXIT = 3
