"""The experiments: one training run, compare, batch-size sweep, gradcheck. Orchestration only.

Every command of the CLI is a function here that a notebook can call. Each returns an
:class:`ExperimentResult` (the run folder, the summary rows, the paired comparisons and the
verdicts) and prints nothing; progress is reported through the optional
``on_epoch(label, epoch, epochs, acc)`` callback (acc: the epoch's test accuracy, or None). Statistics live in :mod:`lnbench.analysis.stats`, sentences
in :mod:`lnbench.analysis.verdicts`, tables and the aggregate in :mod:`lnbench.report.tables`, the JSON bodies
in :mod:`lnbench.records.schema`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lnbench.analysis import claims as claims_mod
from lnbench.analysis import verdicts
from lnbench.config import RunConfig
from lnbench.config.checks import check_sweep
from lnbench.launchers.executors import Executor, Failed, make_launcher
from lnbench.names import plural
from lnbench.nn.models import SimpleRNN, build_model, family_label
from lnbench.nn.norms import SingleValueWarning
from lnbench.records.runs import Run, mark_unfinished, write_json_atomic
from lnbench.records.schema import Metrics, SummaryRow, read_metrics, summary_row
from lnbench.report import figures as plots
from lnbench.report import tables as report
from lnbench.report.figures import draw_run_figures
from lnbench.training import baselines as baselines_mod
from lnbench.training.data import make_trend_data
from lnbench.training.loop import train_members

EpochCallback = Callable[..., None]  # (label, epoch, epochs, acc=None)


@dataclass
class ExperimentResult:
    """What an experiment wrote (``path``), its rows, aggregate, comparisons and verdicts."""

    path: Path
    status: str
    rows: list[SummaryRow] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    aggregate: list[dict] | None = None
    comparisons: list[verdicts.Comparison] = field(default_factory=list)
    baselines: list[dict] | dict[str, list[dict]] | None = None  # claims: per regime
    claims: list[dict] | None = None


def _metrics_for(cfg: RunConfig) -> Metrics:
    bn_stats = cfg.model.batch_norm_stats if cfg.model.norm == "batch" and cfg.model.family == "rnn" else None
    return Metrics(
        family=cfg.model.family,
        norm=cfg.model.norm,
        batch_size=cfg.train.batch_size,
        seed=cfg.seed,
        hidden_size=cfg.model.hidden_size,
        n_test=cfg.data.n_test,
        batch_norm_stats=bn_stats,
    )


def config_hash(cfg: RunConfig) -> str:
    """A child run's identity for ``--resume``: the SHA-256 of its resolved config.yaml (16 hex)."""
    return hashlib.sha256(cfg.to_yaml(model_family_only=True).encode()).hexdigest()[:16]


def _reusable(cell: "Cell") -> list[tuple[SummaryRow, Path]] | None:
    """The rows of a cell whose every run finished (completed or diverged) under the same
    config, read from their folders; None if any must run again."""
    out = []
    for c in cell.cfgs:
        path = cell.parent / c.name
        try:
            manifest = json.loads((path / "run.json").read_text())
        except (OSError, ValueError):
            return None
        if manifest.get("status") not in ("completed", "diverged") or manifest.get("config_hash") != config_hash(c):
            return None
        m = read_metrics(path)
        out.append(
            (summary_row(m, cell.target_acc, path.name, manifest.get("wall_seconds"), manifest.get("warnings")), path)
        )
    return out


def _label(cfg: RunConfig) -> str:
    """A run's progress label, unique within its experiment: the child run's name (a claims run
    has the same family/norm/batch size/seed in several regimes)."""
    return cfg.name


def ensemble_mechanism(cfgs: Sequence[RunConfig]) -> str:
    """How the seeds of one cell train: ``native`` (one RNN ensemble with a member axis) or
    ``sequential`` (one model after another). Measured (README, "Speed"): an RNN ensemble of 5
    seeds costs about 2.4x one seed; a Transformer gains nothing from one, so it runs sequentially.
    An RNN trains as an ensemble even alone (one member): a member's arithmetic does not depend
    on how many others it has, so re-running one seed of a cell reproduces it bit for bit."""
    return "native" if cfgs[0].model.family == "rnn" else "sequential"


def run_cell(
    cfgs: Sequence[RunConfig],
    parent: str | Path,
    on_epoch: EpochCallback | None = None,
    timestamped: bool = False,
    target_acc: float = 0.9,
    draw_plots: bool = False,
) -> list[tuple[SummaryRow, Path]]:
    """Train the seeds of one cell (configs equal but for ``seed`` and ``name``), each into its
    own run folder ``parent/<cfg.name>``; the building block of every experiment.

    Each run is a pure function of its config: its data comes from ``cfg.data`` and ``cfg.seed``,
    its initial weights from ``torch.manual_seed(cfg.seed)``, its batch order from the seed;
    trained in an ensemble (see :func:`ensemble_mechanism`) it follows the same arithmetic, and
    its ``run.json`` says how it was trained (``ensemble``). ``metrics.json`` is rewritten after
    every epoch, so an interrupted run keeps its epochs.

    Returns:
        Per seed, the summary row (README, "summary.json") and the run folder.
    """
    mechanism = ensemble_mechanism(cfgs)
    if mechanism == "sequential" and len(cfgs) > 1:
        return [
            out
            for c in cfgs
            for out in _train_members([c], parent, on_epoch, timestamped, target_acc, draw_plots, mechanism)
        ]
    return _train_members(cfgs, parent, on_epoch, timestamped, target_acc, draw_plots, mechanism)


def run_one(
    cfg: RunConfig,
    parent: str | Path,
    on_epoch: EpochCallback | None = None,
    timestamped: bool = True,
    target_acc: float = 0.9,
    draw_plots: bool = False,
) -> tuple[SummaryRow, Path]:
    """Train one model as its own run folder (``lnbench train``): :func:`run_cell` with one seed."""
    return run_cell([cfg], parent, on_epoch, timestamped, target_acc, draw_plots)[0]


def _train_members(cfgs, parent, on_epoch, timestamped, target_acc, draw_plots, mechanism):
    cfg0, epochs = cfgs[0], cfgs[0].train.epochs
    labels = [_label(c) for c in cfgs]
    metrics = [_metrics_for(c) for c in cfgs]
    with ExitStack() as stack:
        runs = [
            stack.enter_context(
                Run(parent, c.name, c.to_yaml(model_family_only=True), c.seed, "train", timestamped=timestamped)
            )
            for c in cfgs
        ]
        for run, c in zip(runs, cfgs):
            run.manifest["ensemble"] = {"mechanism": mechanism, "members": len(cfgs), "seeds": [c.seed for c in cfgs]}
            run.manifest["config_hash"] = config_hash(c)
        datas = [make_trend_data(**c.data.model_dump(), seed=c.seed) for c in cfgs]
        models = []
        for c, d in zip(cfgs, datas):
            torch.manual_seed(c.seed)
            models.append(build_model(c.model, d.input_size, d.seq_len))
        model = SimpleRNN.stack(models) if mechanism == "native" else models[0]

        def epoch_done(epoch: int, ms: list[Metrics]) -> None:
            for run, m, label in zip(runs, ms, labels):
                if m.epochs and m.epochs[-1] == epoch:  # a member that diverged earlier has nothing new
                    run.write_json("metrics.json", m.to_dict())
                    if on_epoch is not None:
                        on_epoch(label, epoch, epochs, m.test_acc[-1] if m.test_acc else None)

        threads = torch.get_num_threads()
        torch.set_num_threads(cfg0.train.num_threads)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SingleValueWarning)
                train_members(model, datas, cfg0.train, [c.seed for c in cfgs], epoch_done, metrics)
        except BaseException as exc:  # keep the finished epochs, saying how the runs ended
            for run, m in zip(runs, metrics):
                if m.status != "diverged":  # a member that diverged before keeps saying so
                    m.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                run.write_json("metrics.json", m.to_dict())
            raise
        finally:
            torch.set_num_threads(threads)
        notes = sorted({str(w.message) for w in caught if issubclass(w.category, SingleValueWarning)})
        for w in caught:  # pass every other warning on unchanged
            if not issubclass(w.category, SingleValueWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        for run, m, label in zip(runs, metrics, labels):
            run.manifest["warnings"] = notes
            run.write_json("metrics.json", m.to_dict())
            if m.status == "diverged":
                run.set_status("diverged", f"diverged in epoch {m.diverged_at_epoch}: {m.divergence_reason}")
                if on_epoch is not None:  # account for the epochs it will not run
                    on_epoch(label, epochs, epochs)
        if draw_plots:
            for run in runs:
                draw_run_figures(run.path, [run.path], target_acc)
    return [
        (summary_row(m, target_acc, run.path.name, run.manifest["wall_seconds"], notes), run.path)
        for run, m in zip(runs, metrics)
    ]


def _baselines(cfg: RunConfig) -> list[dict]:
    """The baselines (:mod:`lnbench.training.baselines`) of the data of every seed of ``cfg``."""
    cfgs = [cfg.with_changes(seed=seed, seeds=None) for seed in cfg.seed_list]
    return baselines_mod.baselines_for(cfgs, lambda c: make_trend_data(**c.data.model_dump(), seed=c.seed))


def _summary(kind: str, rows: list[SummaryRow], complete: bool, **extra) -> dict:
    return {"kind": kind, "complete": complete, **extra, "rows": [r.to_dict() for r in rows]}


def train(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """One training run (``lnbench train``): a run folder with metrics.json and the five plots."""
    row, path = run_one(cfg, runs_dir, on_epoch, target_acc=cfg.compare.target_acc, draw_plots=True)
    html_report(path)
    return ExperimentResult(path, row.status, [row])


@dataclass
class Cell:
    """One job: the configs of one cell's seeds and the folder their runs go into (picklable)."""

    cfgs: list[RunConfig]
    parent: Path
    target_acc: float


def _run_cell_job(cell: Cell, progress: EpochCallback | None) -> list[tuple[SummaryRow, Path]]:
    for c in cell.cfgs:  # a previous attempt (a dead worker, or a resumed experiment): keep what it wrote, aside
        old = cell.parent / c.name
        if old.exists():
            mark_unfinished(old, "failed", "it did not finish; the cell was run again")
            attempt = 1
            while old.with_name(f"{old.name}.attempt{attempt}").exists():
                attempt += 1
            old.rename(old.with_name(f"{old.name}.attempt{attempt}"))
    return run_cell(cell.cfgs, cell.parent, progress, False, cell.target_acc)


def _executor(run: Run, n_cells: int, jobs: int, launcher: str, launcher_cfg) -> Executor:
    """Where an experiment's cells run (``--jobs``, ``--launcher``), recorded in its manifest;
    submitit keeps its files in ``<run folder>/submitit``."""
    run.manifest["jobs"] = min(jobs, n_cells)
    run.manifest["launcher"] = launcher
    return make_launcher(jobs, launcher, run.path / "submitit", launcher_cfg)


def _run_cells(
    run: Run, cells: list[Cell], executor: Executor, on_epoch: EpochCallback | None, kind: str
) -> tuple[list[SummaryRow], list[Path]]:
    """Run every cell on ``executor``; rows and folders in the cells' order, and a partial
    summary.json after each cell. A cell that failed gives ``failed`` rows (no values), the
    others go on, and the experiment ends ``failed``."""
    finished: dict[int, list[tuple[SummaryRow, Path | None]]] = {}
    if run.resume is not None:  # --resume: keep every cell whose runs all finished under this config
        for k, cell in enumerate(cells):
            kept = _reusable(cell)
            if kept is not None:
                finished[k] = kept
                for (row, _), c in zip(kept, cell.cfgs):
                    if on_epoch is not None:
                        on_epoch(_label(c), c.train.epochs, c.train.epochs, row.final_test_acc)
        run.manifest["resumed"][-1]["cells_kept"] = len(finished)
    # the biggest jobs first, so that the last job to finish is a short one; results in cell order
    order = sorted((k for k in range(len(cells)) if k not in finished), key=lambda k: -_cost(cells[k]))

    def done(k: int, outcome) -> None:
        cell = cells[order[k]]
        if isinstance(outcome, Failed):
            for c in cell.cfgs:
                mark_unfinished(cell.parent / c.name, "failed", outcome.error)
                if on_epoch is not None:  # account for the epochs it will not run
                    on_epoch(_label(c), c.train.epochs, c.train.epochs)
            outcome = [(_failed_row(c, cell.target_acc), None) for c in cell.cfgs]
        elif on_epoch is not None and not getattr(executor, "live_progress", True):  # progress per finished job
            for (row, _), c in zip(outcome, cell.cfgs):
                on_epoch(_label(c), c.train.epochs, c.train.epochs, row.final_test_acc)
        finished[order[k]] = outcome
        partial = [row for j in sorted(finished) for row, _ in finished[j]]
        run.write_json("summary.json", _summary(kind, partial, False))

    outcomes = executor.run(_run_cell_job, [cells[k] for k in order], on_epoch, done) if order else []
    failed = sorted(
        {
            f"{cells[order[k]].cfgs[0].name.rsplit('_seed', 1)[0]}: {o.error}"
            for k, o in enumerate(outcomes)
            if isinstance(o, Failed)
        }
    )
    if failed:
        run.set_status("failed", "cells failed: " + "; ".join(failed))
    pairs = [pair for k in range(len(cells)) for pair in finished[k]]
    return [row for row, _ in pairs], [path for _, path in pairs if path is not None]


def _cost(cell: Cell) -> float:
    """A rough relative cost of a cell: steps x members (an RNN ensemble member costs ~1/2)."""
    c = cell.cfgs[0]
    steps = c.train.epochs * -(-c.data.n_train // c.train.batch_size)
    return (
        steps
        * len(cell.cfgs)
        * (0.5 if ensemble_mechanism(cell.cfgs) == "native" else 1.0)
        * (2 if c.model.family == "transformer" else 1)
    )


def _failed_row(cfg: RunConfig, target_acc: float) -> SummaryRow:
    m = _metrics_for(cfg)
    m.status = "failed"
    return summary_row(m, target_acc, cfg.name)


def _seed_cells(
    cfg: RunConfig, settings: list[dict], parent: Path, target_acc: float, name: Callable[[dict], str]
) -> list[Cell]:
    """One job per setting (``section__key`` changes) with a child config per seed; settings
    whose seeds train one after another (:func:`ensemble_mechanism`) give one job per seed, so
    that the workers share them out."""
    cells = []
    for changes in settings:
        cfgs = [
            cfg.with_changes(**changes, seed=seed, seeds=None, name=f"{name(changes)}_seed{seed}")
            for seed in cfg.seed_list
        ]
        groups = [cfgs] if ensemble_mechanism(cfgs) == "native" else [[c] for c in cfgs]
        cells += [Cell(group, parent, target_acc) for group in groups]
    return cells


def compare(
    cfg: RunConfig,
    runs_dir: str | Path = "runs",
    on_epoch: EpochCallback | None = None,
    jobs: int = 1,
    resume: Path | None = None,
    launcher: str = "local",
) -> ExperimentResult:
    """``lnbench compare``: every family x norm x seed of the config, on identical data per seed.

    Writes one child run per model, the four comparison plots and summary.json (rows,
    aggregate, paired comparisons, verdicts) into one run folder. A diverged child is
    recorded and the comparison goes on. The cells (family x norm, all seeds) run on ``jobs``
    worker processes; the results do not depend on ``jobs``. ``resume``: an earlier compare
    folder of the same config (:func:`lnbench.config.checks.check_resume`): the cells whose runs all
    finished are kept, the others run again, and the summary is the same as in one go.
    """
    spec = cfg.compare
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.seed_list, "compare", resume=resume) as run:
        settings = [{"model__family": f, "model__norm": n} for f in spec.families for n in spec.norms]
        cells = _seed_cells(
            cfg, settings, run.path, spec.target_acc, lambda c: f"{c['model__family']}_{c['model__norm']}"
        )
        executor = _executor(run, len(cells), jobs, launcher, cfg.launcher)
        baselines = _baselines(cfg)
        run.write_json("summary.json", _summary("compare", [], False, baselines=baselines))
        rows, dirs = _run_cells(run, cells, executor, on_epoch, "compare")
        figures = draw_run_figures(run.path, dirs, spec.target_acc)
        comparisons = verdicts.compare_comparisons(rows)
        sentences = verdicts.baseline_verdicts(baselines, spec.target_acc)
        sentences += verdicts.compare_verdicts(rows, comparisons, cfg.train.epochs, spec.target_acc)
        aggregate = report.aggregate_over_seeds(rows)
        run.write_json(
            "summary.json",
            _summary(
                "compare",
                rows,
                True,
                target_acc=spec.target_acc,
                seeds=cfg.seed_list,
                baselines=baselines,
                aggregate=aggregate,
                comparisons=[c.to_dict() for c in comparisons],
                verdicts=sentences,
                figures=figures,
            ),
        )
    html_report(run.path)
    html_report(run.path)
    return ExperimentResult(run.path, run.status, rows, sentences, aggregate, comparisons, baselines)


def batchsize_sweep(
    cfg: RunConfig,
    runs_dir: str | Path = "runs",
    on_epoch: EpochCallback | None = None,
    jobs: int = 1,
    resume: Path | None = None,
    launcher: str = "local",
) -> ExperimentResult:
    """``lnbench batchsize-sweep``: every norm x batch size x seed of the config, one family.

    Every cell of one seed uses the same data and initial weights and the same number of epochs
    (so the same number of training samples; smaller batches take more, noisier steps). A
    diverged cell is recorded and the sweep goes on. Comparisons (Holm over the whole sweep):
    each norm vs NoNorm at each batch size, each batch size vs the reference batch size,
    BatchNorm's batch statistics vs running statistics. Cells run on ``jobs`` processes.
    """
    spec = cfg.sweep
    check_sweep(cfg)
    ref = cfg.reference_batch_size
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.seed_list, "batchsize-sweep", resume=resume) as run:
        from lnbench.analysis import (
            grid as grid_mod,  # the batch-size sweep is a preset grid (configs/sweep_batch_size.yaml)
        )

        settings = grid_mod.check_grid(cfg.with_changes(sweep__grid=grid_mod.batch_size_grid(cfg)))
        name = lambda c: f"{spec.family}_{c['model__norm']}_bs{c['train__batch_size']}"  # noqa: E731
        cells = _seed_cells(cfg, settings, run.path, cfg.compare.target_acc, name)
        executor = _executor(run, len(cells), jobs, launcher, cfg.launcher)
        baselines = _baselines(cfg)
        run.write_json("summary.json", _summary("batchsize-sweep", [], False, baselines=baselines))
        rows, _ = _run_cells(run, cells, executor, on_epoch, "batchsize-sweep")
        aggregate = report.aggregate_over_seeds(rows)
        figures = []
        if any(r.ok for r in rows):
            fam = family_label(spec.family)
            epochs = plural(cfg.train.epochs, "epoch")
            figures = [
                plots.plot_sweep(
                    aggregate,
                    "final_test_acc",
                    "final test accuracy",
                    f"{fam}: test accuracy after {epochs} vs batch size",
                    run.path / "accuracy_vs_batch_size.png",
                ).name,
                plots.plot_sweep(
                    aggregate,
                    "mean_train_loss",
                    "mean train loss over epochs (nats, log scale)",
                    f"{fam}: mean training loss over {epochs} vs batch size",
                    run.path / "train_loss_vs_batch_size.png",
                    log_y=True,
                ).name,
            ]
        comparisons = verdicts.sweep_comparisons(rows, ref)
        sentences = verdicts.sweep_verdicts(rows, comparisons, ref)
        run.write_json(
            "summary.json",
            _summary(
                "batchsize-sweep",
                rows,
                True,
                family=spec.family,
                epochs=cfg.train.epochs,
                lr=cfg.train.lr,
                seeds=cfg.seed_list,
                reference_batch_size=ref,
                baselines=baselines,
                aggregate=aggregate,
                comparisons=[c.to_dict() for c in comparisons],
                verdicts=sentences,
                figures=figures,
            ),
        )
    return ExperimentResult(run.path, run.status, rows, sentences, aggregate, comparisons, baselines)


def gradcheck(
    dtype: str = "float64",
    shape: tuple[int, ...] = (4, 5, 8),
    seed: int = 0,
    runs_dir: str | Path | None = "runs",
    json_path: str | Path | None = None,
) -> tuple[list, Path | None]:
    """``lnbench gradcheck``: run :func:`lnbench.nn.gradcheck.run_checks` and write the report.

    The report (``{"dtype", "shape", "seed", "passed", "checks": [...]}``) goes to
    ``json_path`` if given, otherwise to ``gradcheck.json`` in a new run folder under
    ``runs_dir`` (none if ``runs_dir`` is None). The checks run before anything is written, so
    bad arguments leave no folder.

    Returns:
        The list of :class:`lnbench.nn.gradcheck.Check` and the path of the report (or None).

    Raises:
        ValueError: bad ``dtype`` or ``shape`` (the message names which).
        OSError: the report cannot be written.
    """
    from lnbench.nn.gradcheck import run_checks

    checks = run_checks(dtype=dtype, shape=shape, seed=seed)
    report = {
        "dtype": dtype,
        "shape": list(shape),
        "seed": seed,
        "passed": all(c.passed for c in checks),
        "checks": [c.to_dict() for c in checks],
    }
    failed = None if report["passed"] else "checks failed: " + ", ".join(c.name for c in checks if not c.passed)
    return checks, _write_report("gradcheck", report, seed, runs_dir, json_path, failed)


def html_report(path: Path) -> Path | None:
    """Write ``report.html`` into a finished run folder (:mod:`lnbench.report.html`). A failure
    here is a warning: the results are already on disk, and ``lnbench report`` can retry."""
    from lnbench.report.html import write_report

    try:
        return write_report([path])
    except Exception as exc:  # noqa: BLE001
        warnings.warn(
            f"lnbench: report.html not written for {path} ({type(exc).__name__}: {exc}); try lnbench report {path}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


def _write_report(kind: str, report: dict, seed: int, runs_dir, json_path, failed: str | None) -> Path | None:
    """Write a checking command's report to ``json_path`` (its folder must exist: a typo should
    not create folders), or as ``<kind>.json`` in a new run folder under ``runs_dir`` whose status
    is ``failed`` with the message ``failed`` (if not None); nowhere when both are None."""
    if json_path is not None:
        write_json_atomic(Path(json_path), report)
        return Path(json_path)
    if runs_dir is None:
        return None
    with Run(runs_dir, kind, None, seed, kind) as run:
        path = run.write_json(f"{kind}.json", report)
        if failed is not None:
            run.set_status("failed", failed)
    return path


def claims(
    selected: Sequence["claims_mod.Claim"],
    regimes: dict[str, RunConfig],
    runs_dir: str | Path = "runs",
    on_epoch: EpochCallback | None = None,
    jobs: int = 1,
    resume: Path | None = None,
    launcher: str = "local",
) -> ExperimentResult:
    """``lnbench claims``: train what the claims need (each setting of each regime once, all
    seeds) and give each claim a verdict computed from the paired runs
    (:mod:`lnbench.analysis.claims`).

    Writes one run folder: ``config.yaml`` (every regime's resolved config), one child run per
    setting and seed, ``claims.png`` and ``summary.json`` (``claims``: claim, regime, metric,
    effect, ci95, verdict, runs, ...; ``rows``; ``baselines`` per regime).
    """
    seeds = sorted({s for cfg in regimes.values() for s in cfg.seed_list})
    with Run(runs_dir, "claims", claims_mod.regimes_yaml(regimes), seeds, "claims", resume=resume) as run:
        cells, regime_of_cell = [], []
        for regime, changes in claims_mod.cells_needed(selected, regimes):
            cfg = regimes[regime]
            new = _seed_cells(
                cfg, [changes], run.path, cfg.compare.target_acc, lambda c, r=regime: claims_mod.setting_name(r, c)
            )
            cells += new
            regime_of_cell += [regime] * len(new)
        executor = _executor(
            run, len(cells), jobs, launcher, next(iter(regimes.values())).launcher
        )  # --set applies to every regime
        baselines = {name: _baselines(cfg) for name, cfg in regimes.items()}
        run.write_json("summary.json", _summary("claims", [], False, baselines=baselines))
        rows, _ = _run_cells(run, cells, executor, on_epoch, "claims")
        regime_of_row = [regime for cell, regime in zip(cells, regime_of_cell) for _ in cell.cfgs]
        by_setting: dict[tuple, list[SummaryRow]] = {}
        for row, regime in zip(rows, regime_of_row):
            by_setting.setdefault((regime, row.family, row.norm, row.batch_size), []).append(row)
        chance = {name: next(b["mean"] for b in bl if b["name"] == "chance") for name, bl in baselines.items()}
        results = claims_mod.evaluate_claims(selected, by_setting, regimes, chance)
        sentences = claims_mod.claim_sentences(results)
        figures = [plots.plot_claims(results, run.path / "claims.png").name] if results else []
        summary = _summary(
            "claims",
            rows,
            True,
            seeds=seeds,
            regimes=list(regimes),
            baselines=baselines,
            claims=[r.to_dict() for r in results],
            verdicts=sentences,
            figures=figures,
        )
        for row, regime in zip(summary["rows"], regime_of_row):
            row["regime"] = regime
        run.write_json("summary.json", summary)
    html_report(run.path)
    return ExperimentResult(
        run.path,
        run.status,
        rows,
        sentences,
        report.aggregate_over_seeds(rows),
        [],
        baselines,
        [r.to_dict() for r in results],
    )


def invariance(
    seed: int = 0,
    draws: int = 5,
    runs_dir: str | Path | None = "runs",
    json_path: str | Path | None = None,
    methods: dict | None = None,
) -> tuple[list, Path | None]:
    """``lnbench invariance``: measure Ba et al.'s Table 1 (:mod:`lnbench.nn.invariance`) and write
    ``invariance.json`` (``{"seed", "draws", "eps", "agrees", "cells": [...]}``) to ``json_path``
    if given, else into a new run folder under ``runs_dir`` (none if ``runs_dir`` is None).
    The run folder's status is ``failed`` when a cell disagrees with the expected table.

    Returns:
        The :class:`lnbench.nn.invariance.Cell` list and the path of the report (or None).
    """
    from lnbench.nn import invariance as inv

    cells = inv.measure(seed=seed, draws=draws, methods=methods)
    report = {
        "seed": seed,
        "draws": draws,
        "eps": inv.EPS,
        "agrees": all(c.agrees for c in cells),
        "cells": [c.to_dict() for c in cells],
    }
    failed = (
        None
        if report["agrees"]
        else "cells disagree with the expected table: "
        + ", ".join(f"{c.method}/{c.transformation}" for c in cells if not c.agrees)
    )
    path = _write_report("invariance", report, seed, runs_dir, json_path, failed)
    if json_path is None and path is not None:
        html_report(path.parent)
    return cells, path


def sweep(
    cfg: RunConfig,
    runs_dir: str | Path = "runs",
    on_epoch: EpochCallback | None = None,
    jobs: int = 1,
    resume: Path | None = None,
    launcher: str = "local",
) -> ExperimentResult:
    """``lnbench sweep``: every cell of ``sweep.grid`` (:mod:`lnbench.analysis.grid`) x seed.

    Writes one child run per cell and seed (named after the cell's values), a figure of the
    final accuracy against each swept key (one line per norm), report.html and summary.json
    (``grid``, ``cells`` (the aggregate per cell), ``rows`` (each with its cell's ``values``),
    ``comparisons`` (each norm vs NoNorm at every other grid value, Holm over all), ``verdicts``).
    ``resume`` as in :func:`compare`. Cells run on ``jobs`` processes.
    """
    from lnbench.analysis import grid as grid_mod

    settings = grid_mod.check_grid(cfg)
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.seed_list, "sweep", resume=resume) as run:
        cells, setting_of_cell = [], []
        for k, changes in enumerate(settings):
            new = _seed_cells(cfg, [changes], run.path, cfg.compare.target_acc, lambda c: grid_mod.cell_name(c))
            cells += new
            setting_of_cell += [k] * len(new)
        executor = _executor(run, len(cells), jobs, launcher, cfg.launcher)
        baselines = _baselines(cfg) if not any(k.startswith("data__") for k in settings[0]) else None
        run.write_json("summary.json", _summary("sweep", [], False, grid=cfg.sweep.grid))
        rows, _ = _run_cells(run, cells, executor, on_epoch, "sweep")
        setting_of_row = [setting_of_cell[i] for i, cell in enumerate(cells) for _ in cell.cfgs]
        rows_by_setting = [[r for r, k in zip(rows, setting_of_row) if k == j] for j in range(len(settings))]
        entries = grid_mod.aggregate(settings, rows_by_setting)
        comparisons = grid_mod.comparisons(settings, rows_by_setting)
        sentences = grid_mod.sentences(entries, comparisons)
        figures = (
            [
                plots.plot_grid(entries, key, run.path / f"accuracy_vs_{key.split('.')[-1]}.png").name
                for key in cfg.sweep.grid
                if key != "model.norm"
            ]
            if any(e["mean_final_test_acc"] is not None for e in entries)
            else []
        )
        summary = _summary(
            "sweep",
            rows,
            True,
            grid=cfg.sweep.grid,
            seeds=cfg.seed_list,
            baselines=baselines,
            cells=entries,
            comparisons=[c.to_dict() for c in comparisons],
            verdicts=sentences,
            figures=figures,
        )
        for row, k in zip(summary["rows"], setting_of_row):
            row["values"] = entries[k]["values"]
        run.write_json("summary.json", summary)
    html_report(run.path)
    return ExperimentResult(run.path, run.status, rows, sentences, entries, comparisons, baselines)
