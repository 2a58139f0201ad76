"""The one driver: what every experiment kind does the same way.

:func:`prepare` runs every check an experiment has (its own, the launcher's, ``--resume``'s)
and returns its plan; :func:`run` then creates the run folder and its manifest, sets up the
launcher, fits the baselines, keeps the finished cells of a resumed folder, runs the rest (and
the work of a kind that trains no cells: :meth:`Experiment.compute`), writes the partial and
final ``summary.json``, draws the figures and writes ``report.html``.
The experiment kinds (:mod:`lnbench.experiments.base`) say only what is theirs.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from lnbench.config import ConfigError, RunConfig
from lnbench.config.checks import check_family_reads_task, check_norm_options, check_resume
from lnbench.experiments.base import (
    LAUNCH_DEFAULTS,
    Cell,
    EpochCallback,
    Experiment,
    ExperimentResult,
    LaunchOptions,
    comparisons_of,
    copy_sources,
    epoch_callback,
    reusable,
    rows_of,
)
from lnbench.launchers import interrupts
from lnbench.launchers.executors import Executor, Failed, check_launcher, make_launcher, start_workers
from lnbench.records.folder import RunFolder
from lnbench.records.schema import SummaryRow

if TYPE_CHECKING:
    from lnbench.records.runs import Run


def prepare(
    exp: Experiment,
    spec: Any,
    jobs: int = 1,
    launcher: str = "local",
    resume: str | Path | None = None,
    check_norm: bool = True,
) -> list[Cell]:
    """Every check of running ``exp`` on ``spec`` with these options, then its plan (the cells,
    with their child names and configs). ``--dry-run`` shows exactly this plan. ``check_norm``:
    run :func:`lnbench.testing.first_failure` on each user's norm the cells train (False,
    ``--no-check``: not, and each of its runs' run.json says so: :func:`check_plugin_norms`).

    Raises:
        ConfigError: any problem, one line each (the CLI prints it and exits with code 2).
    """
    exp.check(spec)
    try:
        launcher_cfg = getattr(spec, "launcher", None)
        check_launcher(jobs, launcher, launcher_cfg.cluster if launcher_cfg is not None else "local")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if resume is not None:
        config_yaml = exp.config_yaml(spec)
        if config_yaml is None:  # invariance, gradcheck: a check runs in one go, from no config
            raise ConfigError(f"--resume {resume}: a {exp.kind} run is not resumed (it has no config); run it again")
        check_resume(resume, config_yaml, exp.kind)
        check_not_running(resume)
    cells = exp.plan(spec, Path(resume) if resume is not None else Path("."))
    cfgs = [c for cell in cells for c in cell.cfgs]
    check_norm_options(cfgs)
    check_family_reads_task(cfgs)
    checked = check_plugin_norms(cfgs, check_norm)
    for cell in cells:
        if cell.cfgs[0].model.norm in checked:
            cell.manifest["norm_check"] = checked[cell.cfgs[0].model.norm]
    return cells


#: A user's norm's pre-flight check in its runs' run.json (``norm_check``): it passed, or ``--no-check``.
NORM_CHECKED, NORM_NOT_CHECKED = "passed", "not checked (--no-check)"


def check_plugin_norms(cfgs: Sequence[RunConfig], conformance: bool = True) -> dict[str, str]:
    """Raise ConfigError (one line naming it) for a user's norm class (``model.norm:
    "package.module:ClassName"``) that cannot be imported, is not a :class:`lnbench.nn.Norm`,
    fails one of :data:`lnbench.testing.CHECKS` (``conformance``; in well under a second:
    :func:`lnbench.testing.first_failure`), or fails in the model it is to train in: each
    distinct model with such a norm is built and run forward and backward once, in training
    mode, on a batch of 2 random sequences of its task's shape (:func:`probe_plugin_norm`).
    All before any folder is made. The built-in norms are not checked here: the suite checks them.

    Returns:
        Each user's norm -> what its runs' run.json says of the check (``norm_check``):
        :data:`NORM_CHECKED`, or :data:`NORM_NOT_CHECKED` without ``conformance``.
    """
    from lnbench.names import is_plugin_norm

    plugins = sorted({c.model.norm for c in cfgs if is_plugin_norm(c.model.norm)})
    if not plugins:
        return {}
    from lnbench.nn.registry import norm_kind
    from lnbench.testing import first_failure

    for spec in plugins:
        try:
            cls = norm_kind(spec).layer
        except ValueError as exc:
            raise ConfigError(f"model.norm: {exc}") from None
        failure = first_failure(cls) if conformance and cls is not None else None
        if failure is not None:
            name, message = failure
            raise ConfigError(
                f"model.norm: {spec!r} fails the check {name!r}: {message} (every check: lnbench gradcheck "
                f"--norm {spec}; to train it unchecked: --no-check)"
            )
    probed: set[str] = set()
    for c in cfgs:
        key = f"{c.model.model_dump_json()} {c.data.shape()}"
        if is_plugin_norm(c.model.norm) and key not in probed:
            probed.add(key)
            problem = probe_plugin_norm(c)
            if problem is not None:
                raise ConfigError(f"model.norm: {problem}")
    return dict.fromkeys(plugins, NORM_CHECKED if conformance else NORM_NOT_CHECKED)


def probe_plugin_norm(cfg: RunConfig) -> str | None:
    """Why ``cfg``'s model cannot run with its user's norm, in one line, or None if it can: the
    model is built as training builds it and run forward and backward once (the sum of its
    outputs), in training mode, on a ``(2, T, D)`` batch of standard normal float32 sequences of
    its task's shape; every norm layer of the user's class must return a tensor of its input's
    shape. Torch's global random state is left as it was."""
    import torch

    from lnbench.nn.models import build_model
    from lnbench.nn.registry import norm_kind

    cls = norm_kind(cfg.model.norm).layer
    assert cls is not None  # a user's norm kind has its layer class
    T, D, C = cfg.data.shape()
    where = f"in a {cfg.model.family} of hidden size {cfg.model.hidden_size}, on a batch of shape (2, {T}, {D})"

    def same_shape(module: Any, inputs: tuple[Any, ...], output: Any) -> None:
        given = inputs[0] if inputs else None
        if not (isinstance(output, torch.Tensor) and isinstance(given, torch.Tensor) and output.shape == given.shape):
            got = tuple(output.shape) if isinstance(output, torch.Tensor) else type(output).__name__
            want = tuple(given.shape) if isinstance(given, torch.Tensor) else "?"
            raise ValueError(f"maps {want} to {got}; a norm's output has its input's shape")

    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = build_model(cfg.model, D, T, C).train()
            hooks = [m.register_forward_hook(same_shape) for m in model.modules() if isinstance(m, cls)]
            model(torch.randn(2, T, D)).sum().backward()
            for h in hooks:
                h.remove()
    except Exception as exc:  # the user's code raised, whatever it raised: one line
        from lnbench.testing import one_line

        return f"{cfg.model.norm!r} fails {where}: {one_line(exc)}"
    return None


def check_not_running(run_dir: str | Path) -> None:
    """Raise ConfigError if another process is running the folder ``run_dir`` (it holds its lock,
    :mod:`lnbench.records.locks`): two processes would train the same cells into it."""
    from lnbench.records.locks import FolderBusy, holder_of

    holder = holder_of(run_dir)
    if holder is not None:
        raise ConfigError(f"--resume {FolderBusy(Path(run_dir), holder)}")


@dataclass(frozen=True)
class ResumePlan:
    """What resuming a folder keeps of a plan's cells, read from their child folders once
    (:func:`resume_plan`) and handed to whatever needs it: the printed plan, :func:`finished`,
    :func:`execute`.

    Attributes:
        kept: cell index -> its rows and child folders, for each cell whose runs all finished
            under this config (:meth:`Experiment.kept`); empty for a new run.
    """

    kept: dict[int, list[tuple[SummaryRow, Path]]]


def resume_plan(cells: list[Cell], resume: str | Path | None, exp: Experiment | None = None) -> ResumePlan:
    """The cells of ``cells`` whose runs finished in the folder ``resume`` (:meth:`Experiment.kept`
    of ``exp``; without it, :func:`reusable`), each cell's child folders read once."""
    if resume is None:
        return ResumePlan({})
    kept = exp.kept if exp is not None else reusable
    return ResumePlan({k: rows for k, c in enumerate(cells) if (rows := kept(c)) is not None})


def _plan_of(
    cells: list[Cell], resume: str | Path | None, exp: Experiment | None, plan: ResumePlan | None
) -> ResumePlan:
    return resume_plan(cells, resume, exp) if plan is None else plan


def cells_to_run(
    cells: list[Cell], resume: str | Path | None, exp: Experiment | None = None, plan: ResumePlan | None = None
) -> list[Cell]:
    """The cells a run would train: all of them, or with ``--resume`` those not finished in the
    folder (``plan``, or :func:`resume_plan` read now)."""
    kept = _plan_of(cells, resume, exp, plan).kept
    return [c for k, c in enumerate(cells) if k not in kept]


def cells_to_copy(
    cells: list[Cell], resume: str | Path | None, exp: Experiment | None = None, plan: ResumePlan | None = None
) -> dict[str, str]:
    """Of the cells a run would train (:func:`cells_to_run`), the runs it copies instead, each ->
    the child run it copies (:func:`copy_sources`: runs of the same effective config)."""
    kept = set(_plan_of(cells, resume, exp, plan).kept)
    return {
        c.name: s.name
        for k, source in copy_sources(cells, kept).items()
        for c, s in zip(cells[k].cfgs, cells[source].cfgs)
    }


def finished(
    cells: list[Cell],
    resume: str | Path | None,
    exp: Experiment | None = None,
    spec: Any = None,
    plan: ResumePlan | None = None,
) -> bool:
    """Whether resuming the folder ``resume`` has nothing to do: its run.json says ``completed``,
    its summary.json is complete and answers ``spec`` (:meth:`Experiment.answers`), its
    report.html is written and every cell's runs finished under this config (:func:`cells_to_run`
    is empty). :func:`execute` then leaves it byte for byte."""
    if resume is None:
        return False
    path = Path(resume)
    folder = RunFolder(path)
    manifest, body = folder.manifest() or {}, folder.summary() or {}
    done = manifest.get("status") == "completed" and body.get("complete") is True
    done = done and (exp is None or spec is None or exp.answers(spec, body))
    return done and (path / "report.html").is_file() and not cells_to_run(cells, resume, exp, plan)


def summary(exp: Experiment, path: Path, rows: list[SummaryRow], complete: bool, **extra: Any) -> dict:
    """A summary.json body (docs/run-folder.md, "summary.json") of ``exp``'s folder ``path``, with the kind's
    ``headline`` for ``lnbench ls`` (:meth:`Experiment.headline`) when it has one yet."""
    body = {"kind": exp.kind, "complete": complete, **extra, "rows": [r.to_dict() for r in rows]}
    headline = exp.headline(RunFolder(path), body)
    return body if headline is None else {**body, "headline": headline}


def run(exp: Experiment, spec: Any, **options: Unpack[LaunchOptions]) -> ExperimentResult:
    """Run ``exp`` on ``spec``: :func:`prepare`, then :func:`execute` its plan, as ``options``
    say (:class:`lnbench.experiments.base.LaunchOptions`).

    Raises:
        ConfigError: before anything is written (see :func:`prepare`).
        KeyboardInterrupt: Ctrl-C or SIGTERM; the folder keeps what finished and says so.
    """
    o = LaunchOptions(**{**LAUNCH_DEFAULTS, **options})
    cells = prepare(exp, spec, o["jobs"], o["launcher"], o["resume"], o["check_norm"])
    return execute(exp, spec, cells, **options)


class Entry(Protocol):
    """A kind's notebook function, ``lnbench.experiments.<kind>(cfg, **options)`` (:func:`entry`)."""

    def __call__(self, cfg: RunConfig, **options: Unpack[LaunchOptions]) -> ExperimentResult: ...


def entry(exp: Experiment, doc: str) -> Entry:
    """The notebook function of a kind whose spec is its config: ``f(cfg, **options)`` is
    :func:`run` ``(exp, cfg, **options)``, named after the kind, with the docstring ``doc``."""

    def run_kind(cfg: RunConfig, **options: Unpack[LaunchOptions]) -> ExperimentResult:
        return run(exp, cfg, **options)

    run_kind.__name__ = run_kind.__qualname__ = exp.kind.replace("-", "_")
    run_kind.__module__, run_kind.__doc__ = type(exp).__module__, doc
    return run_kind


def execute(
    exp: Experiment, spec: Any, cells: list[Cell], plan: ResumePlan | None = None, **options: Unpack[LaunchOptions]
) -> ExperimentResult:
    """Execute the plan ``cells`` of a prepared experiment (:func:`prepare`), as ``options`` say
    (:class:`lnbench.experiments.base.LaunchOptions`): one experiment
    folder under ``runs_dir`` (or, with ``resume``, that earlier folder again), one child run
    per seed of each cell.

    The cells run on ``jobs`` local worker processes or as Slurm jobs (``launcher``); the results
    do not depend on where. A cell that fails gives ``failed`` rows and the others go on; the
    experiment then ends ``failed``. A kind whose work is not cells of training (invariance,
    gradcheck) does it in the folder (:meth:`Experiment.compute`): its files are written, and a
    check that failed makes the folder ``failed`` with its message. ``resume``: the cells whose runs all finished under the
    same config are kept, the others run again, and the summary is the one of a run in one go;
    a folder with nothing left to do (:func:`finished`) is not written to (its results are read).
    ``plan``: what resuming keeps (:func:`resume_plan`), when the caller has read it already.
    """
    from lnbench.nn.kernels import ensure_built
    from lnbench.records.locks import FolderBusy
    from lnbench.records.runs import Run

    o = LaunchOptions(**{**LAUNCH_DEFAULTS, **options})
    runs_dir, jobs, resume, launcher = o["runs_dir"], o["jobs"], o["resume"], o["launcher"]
    on_epoch = epoch_callback(o["on_epoch"])
    plan = resume_plan(cells, resume, exp) if plan is None else plan
    if resume is not None and finished(cells, resume, exp, spec, plan):  # nothing to do: the folder stays as it is
        body = RunFolder(resume).summary() or {}
        return _result(Path(resume), "completed", rows_of(body), body)
    if exp.own_run:
        return _execute_own_run(exp, spec, cells, runs_dir, on_epoch, resume, plan)
    configs = exp.configs(spec)
    if cells:  # a first build (~30-60 s) says so, and is no run's time; a kind that trains no cells needs none
        ensure_built()
        try:  # workers that cannot start (an unguarded script) stop it here, before its folder exists
            start_workers(jobs, launcher)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    # the folder's lock is held from its creation (or resumption) until report.html is written
    folder = Run(
        runs_dir, exp.name(spec), exp.config_yaml(spec), exp.seeds(spec), exp.kind, resume=resume, keep_lock=True
    )
    try:
        with folder:
            for cell in cells:
                cell.parent = folder.path
            executor = _executor(folder, len(cells), jobs, launcher, configs)
            checks = {c.cfgs[0].model.norm: c.manifest["norm_check"] for c in cells if "norm_check" in c.manifest}
            if checks:  # a user's norm: checked before training, or not (--no-check)
                folder.manifest["norm_check"] = checks
            fit = Baselines(lambda: exp.baselines(spec), background=not getattr(executor, "in_process", False))
            folder.write_json("summary.json", summary(exp, folder.path, [], False, **fit.so_far()))
            rows = _run_cells(folder, cells, executor, on_epoch, exp, fit, o["reference"], plan)
            baselines = fit.result()
            computed = exp.compute(spec)
            for name, report in computed.files.items():
                folder.write_json(name, report)
            if computed.error is not None:
                folder.set_status("failed", computed.error)
            body = summary(exp, folder.path, rows, True, **exp.analyse(spec, cells, rows, baselines))
            exp.annotate_rows(spec, cells, body["rows"])
            folder.write_json("summary.json", body)
            body["figures"] = exp.figures(folder.path)
            folder.write_json("summary.json", body)
        write_html(exp, folder.path)
    except FolderBusy as exc:  # raised on entry, before anything was written
        raise ConfigError(f"--resume {exc}") from None
    finally:
        folder.unlock()
    return _result(folder.path, folder.status, rows, body, computed.items)


def _execute_own_run(
    exp: Experiment,
    spec: Any,
    cells: list[Cell],
    runs_dir: str | Path,
    on_epoch: EpochCallback | None,
    resume: str | Path | None,
    plan: ResumePlan,
) -> ExperimentResult:
    """:func:`execute` for a kind whose folder is its one run (:attr:`Experiment.own_run`: train):
    the run is trained into its own timestamped folder under ``runs_dir`` (or continued in the
    folder ``resume`` from its last checkpoint; kept as it is when it finished), then its
    summary.json, figures and report.html are written as for any experiment."""
    from lnbench.experiments.cells import label, run_one
    from lnbench.records.io import write_json_atomic
    from lnbench.records.runs import finishing

    (cell,) = cells
    cfg = cell.cfgs[0]
    kept = plan.kept.get(0) if resume is not None else None
    if kept is not None:
        ((row, path),) = kept
        if on_epoch is not None:
            on_epoch(label(cfg), cfg.train.epochs, cfg.train.epochs, row.final_test_acc)
    else:
        folder = Path(resume) if resume is not None else None
        row, path = run_one(
            cfg,
            runs_dir,
            on_epoch,
            target_acc=cell.target_acc,
            tensorboard=cell.tensorboard,
            resume=folder,
            manifest=cell.manifest,
        )
    baselines = exp.baselines(spec)
    body = summary(exp, path, [row], True, **exp.analyse(spec, cells, [row], baselines))
    with finishing(path):  # a file that cannot be written (a full disk) fails the run, in its run.json
        write_json_atomic(path / "summary.json", body)
        body["figures"] = exp.figures(path)
        write_json_atomic(path / "summary.json", body)
    write_html(exp, path)
    return ExperimentResult(path, row.status, [row])


def _result(path: Path, status: str, rows: list[SummaryRow], body: dict, items: list | None = None) -> ExperimentResult:
    """What :func:`execute` returns: the folder, its status, its rows, the summary.json ``body``'s
    results and what :meth:`Experiment.compute` gave the caller (``items``)."""
    return ExperimentResult(
        path,
        status,
        rows,
        body.get("verdicts", []),
        body.get("aggregate", body.get("cells")),
        comparisons_of(body),
        body.get("baselines"),
        body.get("claims"),
        items or [],
    )


def write_html(exp: Experiment, path: Path) -> Path | None:
    """Write ``report.html`` into a finished run folder. A page that cannot be written (a full
    disk) fails the folder: its run.json says so when it can, and the WriteError is raised. Any
    other failure here is a warning: the results are already on disk, and ``lnbench report`` can retry."""
    from lnbench.records.io import WriteError
    from lnbench.records.runs import record_failure
    from lnbench.report.html import write_report

    try:
        import jinja2  # noqa: F401  the renderer's import first: a Ctrl-C during it is raised here, not after the page

        interrupts.raise_pending()
        tables = {path: exp.tables(path, RunFolder(path).summary() or {})}
        return write_report([path], tables=tables, figure_records={path: exp.figure_records})
    except (WriteError, KeyboardInterrupt) as exc:  # Ctrl-C too: run.json and the CLI's line say where it stopped
        record_failure(path, exc)
        raise
    except Exception as exc:  # noqa: BLE001
        warnings.warn(
            f"lnbench: report.html not written for {path} ({type(exc).__name__}: {exc}); try lnbench report {path}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


class Baselines:
    """An experiment's baselines (:meth:`Experiment.baselines`), fitted in a background thread
    while the cells train in other processes (``background``), else at once.

    ``claims --all`` fits ~100 logistic regressions on its regimes' data (~15 s on 2 cores); in
    the background the first cells need not wait for them. The fit holds no lock the main thread
    needs; it is a daemon thread, so a Ctrl-C does not wait for it.

    Args:
        fit: computes the baselines.
        background: fit in a thread; False (the cells train in this process, ``--jobs 1``): now.

    Raises:
        Exception: whatever ``fit`` raised, from the constructor (not ``background``) or from
            :meth:`result`.
    """

    def __init__(self, fit: Callable[[], Any], background: bool) -> None:
        self._fit, self._done = fit, threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        if background:
            threading.Thread(target=self._run, name="lnbench-baselines", daemon=True).start()
        else:
            self._value = fit()
            self._done.set()

    def _run(self) -> None:
        try:
            self._value = self._fit()
        except BaseException as exc:  # noqa: BLE001  re-raised by result() in the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def so_far(self) -> dict[str, Any]:
        """``{"baselines": ...}`` once fitted (without error), else ``{}``: a partial summary.json's key."""
        return {"baselines": self._value} if self._done.is_set() and self._error is None else {}

    def result(self) -> Any:
        """The baselines, waiting for the fit to end; raises what the fit raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


def _executor(run: Run, n_cells: int, jobs: int, launcher: str, configs: dict[str, RunConfig]) -> Executor:
    """Where an experiment's cells run (``--jobs``, ``--launcher``, its first config's ``launcher``
    section), recorded in its manifest unless it has none (a kind without cells: invariance,
    gradcheck); submitit keeps its files in ``<run folder>/submitit``."""
    if n_cells:
        run.manifest["jobs"] = min(jobs, n_cells)
        run.manifest["launcher"] = launcher
    launcher_cfg = next(iter(configs.values())).launcher if configs else None
    return make_launcher(jobs, launcher, run.path / "submitit", launcher_cfg)


def _run_cells(
    run: Run,
    cells: list[Cell],
    executor: Executor,
    on_epoch: EpochCallback | None,
    exp: Experiment,
    baselines: Baselines,
    reference: str | Path | None,
    plan: ResumePlan,
) -> list[SummaryRow]:
    """Run every cell on ``executor``; rows in the cells' order, and a partial summary.json after
    each cell (with the baselines once they are fitted). A cell whose runs are another's (:func:`copy_sources`) is not trained: once that
    cell's runs finished, it gets copies of them (:func:`lnbench.experiments.cells.copy_cell`). A
    cell that failed gives ``failed`` rows (no values), and so do its copies; the others go on,
    and the experiment ends ``failed``."""
    from lnbench.experiments.cells import copy_cell, copy_runs, cost, ending, failed_row, label, run_cell_job
    from lnbench.records.runs import mark_unfinished
    from lnbench.training.tasks import forget_cell_data

    finished: dict[int, list[SummaryRow]] = {}
    if run.resume is not None:  # --resume: keep every cell whose runs all finished under this config
        for k, cell in enumerate(cells):
            if k in plan.kept:
                finished[k] = [row for row, _ in plan.kept[k]]
                for row, c in zip(finished[k], cell.cfgs):
                    if on_epoch is not None:
                        on_epoch(label(c), c.train.epochs, c.train.epochs, row.final_test_acc, status="kept")
        run.manifest["resumed"][-1]["cells_kept"] = len(finished)
    if reference is not None:  # cells that finished in an earlier folder under the same config: copied
        copied = 0
        for k, cell in enumerate(cells):
            found = None if k in finished else reusable(cell, Path(reference))
            if found is not None:
                finished[k] = [row for row, _ in copy_runs(cell, [path for _, path in found], on_epoch)]
                copied += 1
        run.manifest["reference"] = {"folder": str(Path(reference).resolve()), "cells_copied": copied}
    sources = copy_sources(cells, finished)
    copies: dict[int, list[int]] = {}
    for k, source in sources.items():
        copies.setdefault(source, []).append(k)

    def copy_from(source: int) -> None:
        """Give the copies of the cell ``source`` (finished: kept, trained or failed) their rows."""
        for k in copies.get(source, []):
            if any(row.status == "failed" for row in finished[source]):
                finished[k] = [failed_row(c, cells[k].target_acc) for c in cells[k].cfgs]
            else:
                finished[k] = [row for row, _ in copy_cell(cells[k], cells[source], on_epoch)]

    for k in sorted(finished):
        copy_from(k)
    # the biggest jobs first, so that the last job to finish is a short one; results in cell order
    order = sorted(
        (k for k in range(len(cells)) if k not in finished and k not in sources), key=lambda k: -cost(cells[k])
    )

    def done(k: int, outcome: Any) -> None:
        cell = cells[order[k]]
        if isinstance(outcome, Failed):
            for c in cell.cfgs:
                mark_unfinished(cell.parent / c.name, "failed", outcome.error)
                if on_epoch is not None:  # account for the epochs it will not run
                    on_epoch(label(c), c.train.epochs, c.train.epochs, status="failed")
            finished[order[k]] = [failed_row(c, cell.target_acc) for c in cell.cfgs]
        else:
            if on_epoch is not None and not getattr(executor, "live_progress", True):  # progress per finished job
                for (row, _), c in zip(outcome, cell.cfgs):
                    said = ending(row.status, row.diverged_at_epoch)
                    on_epoch(label(c), c.train.epochs, c.train.epochs, row.final_test_acc, said)
            finished[order[k]] = [row for row, _ in outcome]
        copy_from(order[k])
        partial = [row for j in sorted(finished) for row in finished[j]]
        run.write_json("summary.json", summary(exp, run.path, partial, False, **baselines.so_far()))

    try:
        outcomes = executor.run(run_cell_job, [cells[k] for k in order], on_epoch, done) if order else []
    finally:
        forget_cell_data()  # what the cells trained in this process kept (--jobs 1); workers end with theirs
    failed = sorted(
        {
            f"{cells[order[k]].cfgs[0].name.rsplit('_seed', 1)[0]}: {o.error}"
            for k, o in enumerate(outcomes)
            if isinstance(o, Failed)
        }
    )
    if failed:
        run.set_status("failed", "cells failed: " + "; ".join(failed))
    return [row for k in range(len(cells)) for row in finished[k]]
