"""The experiments: one training run, compare, batch-size sweep, gradcheck. Orchestration only.

Every command of the CLI is a function here that a notebook can call. Each returns an
:class:`ExperimentResult` (the run folder, the summary rows, the paired comparisons and the
verdicts) and prints nothing; progress is reported through the optional
``on_epoch(label, epoch, epochs)`` callback. Statistics live in :mod:`lnbench.stats`, sentences
in :mod:`lnbench.verdicts`, tables and the aggregate in :mod:`lnbench.report`, the JSON bodies
in :mod:`lnbench.schema`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lnbench import plots, report, verdicts
from lnbench.config import RunConfig, check_sweep
from lnbench.data import make_trend_data
from lnbench.models import build_model, family_label
from lnbench.norms import SingleValueBatchWarning
from lnbench.runs import Run
from lnbench.schema import Metrics, SummaryRow, read_metrics, summary_row
from lnbench.training import train_model

EpochCallback = Callable[[str, int, int], None]


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass
class ExperimentResult:
    """What an experiment wrote (``path``), its rows, aggregate, comparisons and verdicts."""

    path: Path
    status: str
    rows: list[SummaryRow] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    aggregate: list[dict] | None = None
    comparisons: list[verdicts.Comparison] = field(default_factory=list)


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


def run_one(
    cfg: RunConfig,
    parent: str | Path,
    name: str,
    on_epoch: EpochCallback | None = None,
    timestamped: bool = True,
    target_acc: float = 0.9,
    draw_plots: bool = False,
) -> tuple[SummaryRow, Path]:
    """Train one model as its own run folder; the building block of every experiment.

    The run is a pure function of ``cfg``: the data comes from ``cfg.data`` and ``cfg.seed``,
    the initial weights from ``torch.manual_seed(cfg.seed)``, the batch order from the seed.
    ``metrics.json`` is rewritten after every epoch, so an interrupted run keeps its epochs.

    Returns:
        The summary row (see README, "summary.json") and the run folder.
    """
    label = f"{cfg.model.family}/{cfg.model.norm}/bs{cfg.train.batch_size}/seed{cfg.seed}"
    metrics = _metrics_for(cfg)
    with Run(parent, name, cfg.to_yaml(), cfg.seed, "train", timestamped=timestamped) as run:
        data = make_trend_data(**cfg.data.model_dump(), seed=cfg.seed)
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.model, data.input_size, data.seq_len)

        def epoch_done(epoch: int, m: Metrics) -> None:
            run.write_json("metrics.json", m.to_dict())
            if on_epoch is not None:
                on_epoch(label, epoch, cfg.train.epochs)

        threads = torch.get_num_threads()
        torch.set_num_threads(cfg.train.num_threads)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SingleValueBatchWarning)
                train_model(model, data, cfg.train, seed=cfg.seed, on_epoch=epoch_done, metrics=metrics)
        except BaseException as exc:  # keep the finished epochs, saying how the run ended
            metrics.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            run.write_json("metrics.json", metrics.to_dict())
            raise
        finally:
            torch.set_num_threads(threads)
        notes = sorted({str(w.message) for w in caught if issubclass(w.category, SingleValueBatchWarning)})
        for w in caught:  # pass every other warning on unchanged
            if not issubclass(w.category, SingleValueBatchWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        run.manifest["warnings"] = notes
        run.write_json("metrics.json", metrics.to_dict())
        if metrics.status == "diverged":
            run.set_status("diverged", f"diverged in epoch {metrics.diverged_at_epoch}: {metrics.divergence_reason}")
            if on_epoch is not None:  # account for the epochs it will not run
                on_epoch(label, cfg.train.epochs, cfg.train.epochs)
        if draw_plots:
            draw_comparison(run.path, [run.path], target_acc)
    row = summary_row(metrics, target_acc, run.path.name, run.manifest["wall_seconds"], notes)
    return row, run.path


def draw_comparison(path: Path, run_dirs: Sequence[Path], target_acc: float) -> list[str]:
    """Draw the four figures of a train or compare run folder from its runs' metrics files."""
    metrics = [read_metrics(d) for d in run_dirs if (d / "metrics.json").exists()]
    metrics = [m for m in metrics if m.epochs or m.status == "diverged"]
    if not metrics:
        return []
    files = [
        plots.plot_training_loss(metrics, path / "training_loss.png"),
        plots.plot_test_accuracy(metrics, path / "test_accuracy.png", target_acc),
        plots.plot_hidden_norm(metrics, path / "hidden_norm.png"),
        plots.plot_grad_norm(metrics, path / "grad_norm.png"),
    ]
    return [f.name for f in files]


def _summary(kind: str, rows: list[SummaryRow], complete: bool, **extra) -> dict:
    return {"kind": kind, "complete": complete, **extra, "rows": [r.to_dict() for r in rows]}


def train(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """One training run (``lnbench train``): a run folder with metrics.json and the four plots."""
    row, path = run_one(cfg, runs_dir, cfg.name, on_epoch, target_acc=cfg.compare.target_acc, draw_plots=True)
    return ExperimentResult(path, row.status, [row])


def compare(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """``lnbench compare``: every family x norm x seed of the config, on identical data per seed.

    Writes one child run per model, the four comparison plots and summary.json (rows,
    aggregate, paired comparisons, verdicts) into one run folder. A diverged child is
    recorded and the comparison goes on.
    """
    spec = cfg.compare
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.seed_list, "compare") as run:
        rows, dirs = [], []
        for family in spec.families:
            for norm in spec.norms:
                for seed in cfg.seed_list:
                    child = cfg.with_changes(model__family=family, model__norm=norm, seed=seed, seeds=None, name=f"{family}_{norm}_seed{seed}")
                    row, path = run_one(child, run.path, child.name, on_epoch, False, spec.target_acc)
                    rows.append(row)
                    dirs.append(path)
                    run.write_json("summary.json", _summary("compare", rows, False))
        figures = draw_comparison(run.path, dirs, spec.target_acc)
        comparisons = verdicts.compare_comparisons(rows)
        sentences = verdicts.compare_verdicts(rows, comparisons, cfg.train.epochs, spec.target_acc)
        aggregate = report.aggregate_over_seeds(rows)
        run.write_json(
            "summary.json",
            _summary(
                "compare", rows, True, target_acc=spec.target_acc, seeds=cfg.seed_list, aggregate=aggregate,
                comparisons=[c.to_dict() for c in comparisons], verdicts=sentences, figures=figures,
            ),
        )
    return ExperimentResult(run.path, run.status, rows, sentences, aggregate, comparisons)


def batchsize_sweep(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """``lnbench batchsize-sweep``: every norm x batch size x seed of the config, one family.

    Every cell of one seed uses the same data and initial weights and the same number of epochs
    (so the same number of training samples; smaller batches take more, noisier steps). A
    diverged cell is recorded and the sweep goes on. Comparisons (Holm over the whole sweep):
    each norm vs NoNorm at each batch size, each batch size vs the reference batch size,
    BatchNorm's batch statistics vs running statistics.
    """
    spec = cfg.sweep
    check_sweep(cfg)
    ref = cfg.reference_batch_size
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.seed_list, "batchsize-sweep") as run:
        rows = []
        for norm in spec.norms:
            for bs in spec.batch_sizes:
                for seed in cfg.seed_list:
                    child = cfg.with_changes(
                        model__family=spec.family, model__norm=norm, train__batch_size=bs, seed=seed, seeds=None,
                        name=f"{spec.family}_{norm}_bs{bs}_seed{seed}",
                    )
                    row, _ = run_one(child, run.path, child.name, on_epoch, False, cfg.compare.target_acc)
                    rows.append(row)
                    run.write_json("summary.json", _summary("batchsize-sweep", rows, False))
        aggregate = report.aggregate_over_seeds(rows)
        figures = []
        if any(r.ok for r in rows):
            fam = family_label(spec.family)
            epochs = plural(cfg.train.epochs, "epoch")
            figures = [
                plots.plot_sweep(aggregate, "final_test_acc", "final test accuracy", f"{fam}: test accuracy after {epochs} vs batch size", run.path / "accuracy_vs_batch_size.png").name,
                plots.plot_sweep(aggregate, "mean_train_loss", "mean train loss over epochs (nats, log scale)", f"{fam}: mean training loss over {epochs} vs batch size", run.path / "train_loss_vs_batch_size.png", log_y=True).name,
            ]
        comparisons = verdicts.sweep_comparisons(rows, ref)
        sentences = verdicts.sweep_verdicts(rows, comparisons, ref)
        run.write_json(
            "summary.json",
            _summary(
                "batchsize-sweep", rows, True, family=spec.family, epochs=cfg.train.epochs, lr=cfg.train.lr,
                seeds=cfg.seed_list, reference_batch_size=ref, aggregate=aggregate,
                comparisons=[c.to_dict() for c in comparisons], verdicts=sentences, figures=figures,
            ),
        )
    return ExperimentResult(run.path, run.status, rows, sentences, aggregate, comparisons)


def gradcheck(
    dtype: str = "float64",
    shape: tuple[int, ...] = (4, 5, 8),
    seed: int = 0,
    runs_dir: str | Path | None = "runs",
    json_path: str | Path | None = None,
) -> tuple[list, Path | None]:
    """``lnbench gradcheck``: run :func:`lnbench.gradcheck.run_checks` and write the report.

    The report (``{"dtype", "shape", "seed", "passed", "checks": [...]}``) goes to
    ``json_path`` if given, otherwise to ``gradcheck.json`` in a new run folder under
    ``runs_dir`` (none if ``runs_dir`` is None). The checks run before anything is written, so
    bad arguments leave no folder.

    Returns:
        The list of :class:`lnbench.gradcheck.Check` and the path of the report (or None).

    Raises:
        ValueError: bad ``dtype`` or ``shape`` (the message names which).
        OSError: the report cannot be written.
    """
    from lnbench.gradcheck import run_checks
    from lnbench.runs import write_json_atomic

    checks = run_checks(dtype=dtype, shape=shape, seed=seed)
    report = {
        "dtype": dtype,
        "shape": list(shape),
        "seed": seed,
        "passed": all(c.passed for c in checks),
        "checks": [c.to_dict() for c in checks],
    }
    if json_path is not None:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, report)
        return checks, path
    if runs_dir is None:
        return checks, None
    with Run(runs_dir, "gradcheck", None, seed, "gradcheck") as run:
        path = run.write_json("gradcheck.json", report)
        if not report["passed"]:
            run.set_status("failed", "checks failed: " + ", ".join(c.name for c in checks if not c.passed))
    return checks, path
