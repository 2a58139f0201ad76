"""The experiments: one training run, compare, batch-size sweep, gradcheck.

Every command of the CLI is a function here that a notebook can call. Each returns an
:class:`ExperimentResult` (the run folder, the summary rows and the verdicts) and prints
nothing; progress is reported through the optional ``on_epoch(label, epoch, epochs)`` callback.

Verdicts are computed from the summary rows. Two final accuracies count as different at the
5% level: for single runs by a two-proportion z-test on the test set (binomial standard error
``sqrt(p (1 - p) / n_test)``), for several seeds by Welch's t-test over the seeds.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean, stdev

import torch
from scipy import stats

from lnbench import plots
from lnbench.config import RunConfig, check_sweep
from lnbench.data import make_trend_data
from lnbench.models import build_model
from lnbench.norms import SingleValueBatchWarning
from lnbench.runs import Run
from lnbench.training import History, train_model

EpochCallback = Callable[[str, int, int], None]
Z_95 = 1.96
NORM_NAMES = plots.NORM_LABELS
FAMILY_NAMES = {"rnn": "RNN", "transformer": "Transformer"}


@dataclass
class ExperimentResult:
    """What an experiment wrote (``path``), its table (``rows``) and its verdicts."""

    path: Path
    status: str
    rows: list[dict] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    aggregate: list[dict] | None = None  # compare with several seeds: see aggregate_over_seeds


def _first_epoch_at(acc: list[float], target: float) -> int | None:
    return next((i + 1 for i, a in enumerate(acc) if a is not None and a >= target), None)


def _metrics_body(cfg: RunConfig, hist: History) -> dict:
    return {
        "schema_version": 1,
        "family": cfg.model.family,
        "norm": cfg.model.norm,
        "batch_size": cfg.train.batch_size,
        "seed": cfg.seed,
        "hidden_size": cfg.model.hidden_size,
        "n_test": cfg.data.n_test,
        **hist.to_dict(),
    }


def run_one(
    cfg: RunConfig,
    parent: str | Path,
    name: str,
    on_epoch: EpochCallback | None = None,
    timestamped: bool = True,
    target_acc: float = 0.9,
    draw_plots: bool = False,
) -> tuple[dict, Path]:
    """Train one model as its own run folder; the building block of every experiment.

    The run is a pure function of ``cfg``: the data comes from ``cfg.data`` and ``cfg.seed``,
    the initial weights from ``torch.manual_seed(cfg.seed)``, the batch order from the seed.
    ``metrics.json`` is rewritten after every epoch, so an interrupted run keeps its epochs.

    Returns:
        The summary row (see README, "summary.json") and the run folder.
    """
    label = f"{cfg.model.family}/{cfg.model.norm}/bs{cfg.train.batch_size}/seed{cfg.seed}"
    latest: list[History] = []  # the history as of the last finished epoch
    with Run(parent, name, cfg.to_yaml(), cfg.seed, "train", timestamped=timestamped) as run:
        data = make_trend_data(**cfg.data.model_dump(), seed=cfg.seed)
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.model, data.input_size, data.seq_len)

        def epoch_done(epoch: int, hist: History) -> None:
            latest[:] = [hist]
            run.write_json("metrics.json", _metrics_body(cfg, hist))
            if on_epoch is not None:
                on_epoch(label, epoch, cfg.train.epochs)

        threads = torch.get_num_threads()
        torch.set_num_threads(cfg.train.num_threads)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SingleValueBatchWarning)
                hist = train_model(model, data, cfg.train, seed=cfg.seed, on_epoch=epoch_done)
        except BaseException as exc:  # keep the finished epochs, saying how the run ended
            if latest:
                latest[0].status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                run.write_json("metrics.json", _metrics_body(cfg, latest[0]))
            raise
        finally:
            torch.set_num_threads(threads)
        notes = sorted({str(w.message) for w in caught if issubclass(w.category, SingleValueBatchWarning)})
        for w in caught:  # pass every other warning on unchanged
            if not issubclass(w.category, SingleValueBatchWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        run.manifest["warnings"] = notes
        run.write_json("metrics.json", _metrics_body(cfg, hist))
        if hist.status == "diverged":
            run.set_status("diverged", f"loss became NaN or inf at epoch {hist.diverged_at_epoch}")
            if on_epoch is not None:  # account for the epochs it will not run
                on_epoch(label, cfg.train.epochs, cfg.train.epochs)
        if draw_plots:
            _draw_comparison(run.path, [run.path], target_acc)

    last = lambda xs: xs[-1] if xs else None  # noqa: E731
    row = {
        "family": cfg.model.family,
        "norm": cfg.model.norm,
        "batch_size": cfg.train.batch_size,
        "seed": cfg.seed,
        "status": run.status,
        "epochs_completed": len(hist.epochs),
        "final_test_acc": last(hist.test_acc),
        "final_test_acc_batch_stats": last(hist.test_acc_batch_stats or []),
        "final_train_loss": last(hist.train_loss),
        "final_test_loss": last(hist.test_loss),
        "first_epoch_at_target": _first_epoch_at(hist.test_acc, target_acc),
        "wall_seconds": run.manifest["wall_seconds"],
        "n_test": cfg.data.n_test,
        "warnings": notes,
        "run_dir": run.path.name,
    }
    return row, run.path


def _load_metrics(run_dirs: list[Path]) -> list[dict]:
    out = []
    for d in run_dirs:
        f = d / "metrics.json"
        if f.exists():
            out.append(json.loads(f.read_text()))
    return out


def _draw_comparison(path: Path, run_dirs: list[Path], target_acc: float) -> list[str]:
    metrics = [m for m in _load_metrics(run_dirs) if m["epochs"] or m["status"] == "diverged"]
    if not metrics:
        return []
    files = [
        plots.plot_training_loss(metrics, path / "training_loss.png"),
        plots.plot_test_accuracy(metrics, path / "test_accuracy.png", target_acc),
        plots.plot_hidden_norm(metrics, path / "hidden_norm.png"),
        plots.plot_grad_norm(metrics, path / "grad_norm.png"),
    ]
    return [f.name for f in files]


def _binomial_se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1.0 / n) / n)  # floor: p = 1.0 still has sampling noise


def _distinguishable(p1: float, p2: float, n: int) -> bool:
    """Two single-run accuracies on ``n`` test sequences each: a two-proportion z-test at 5%."""
    return abs(p1 - p2) > Z_95 * math.hypot(_binomial_se(p1, n), _binomial_se(p2, n))


def _differs(a: list[float], b: list[float], n_test: int) -> bool:
    """Do two groups of final accuracies differ at the 5% level?

    One run each: the test-set sampling noise (:func:`_distinguishable`). Several seeds: Welch's
    t-test (``scipy.stats.ttest_ind(equal_var=False)``) over the seeds, whose spread includes
    the test-set noise and the seed-to-seed variation.
    """
    if len(a) < 2 or len(b) < 2:
        return _distinguishable(mean(a), mean(b), n_test)
    if len(set(a)) == 1 and len(set(b)) == 1:  # no spread at all: t is undefined
        return a[0] != b[0] and _distinguishable(a[0], b[0], n_test * len(a))
    return bool(stats.ttest_ind(a, b, equal_var=False).pvalue < 0.05)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def aggregate_over_seeds(rows: list[dict]) -> list[dict]:
    """One row per (family, norm, batch size): mean, standard deviation, min and max over seeds
    of the final test accuracy, mean final train loss, and how many seeds reached the target
    (with their mean first epoch). Diverged seeds count in ``n_diverged`` and not in the means.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["norm"], r["batch_size"]), []).append(r)
    out = []
    for (family, norm, batch_size), rs in groups.items():
        accs = [r["final_test_acc"] for r in rs if r["final_test_acc"] is not None and r["status"] != "diverged"]
        losses = [r["final_train_loss"] for r in rs if r["final_train_loss"] is not None and r["status"] != "diverged"]
        firsts = [r["first_epoch_at_target"] for r in rs if r["first_epoch_at_target"] is not None]
        out.append({
            "family": family,
            "norm": norm,
            "batch_size": batch_size,
            "n_seeds": len(rs),
            "n_diverged": sum(r["status"] == "diverged" for r in rs),
            "mean_final_test_acc": mean(accs) if accs else None,
            "std_final_test_acc": stdev(accs) if len(accs) > 1 else None,
            "min_final_test_acc": min(accs, default=None),
            "max_final_test_acc": max(accs, default=None),
            "mean_final_train_loss": mean(losses) if losses else None,
            "n_reached_target": len(firsts),
            "mean_first_epoch_at_target": mean(firsts) if firsts else None,
        })
    return out


def compare_verdicts(rows: list[dict], n_test: int, epochs: int, target_acc: float) -> list[str]:
    """Which norm reached ``target_acc`` first and whether final accuracies differ, per family.

    Computed from the summary rows only; a difference inside test-set noise is said to be so.
    """
    verdicts = []
    for family in dict.fromkeys(r["family"] for r in rows):
        fam = FAMILY_NAMES.get(family, family)
        by_norm: dict[str, list[dict]] = {}
        for r in rows:
            if r["family"] == family:
                by_norm.setdefault(r["norm"], []).append(r)
        n_seeds = max(len(v) for v in by_norm.values())
        diverged = [NORM_NAMES[n] for n, rs in by_norm.items() if any(r["status"] == "diverged" for r in rs)]
        if diverged:
            verdicts.append(f"{fam}: diverged (NaN/inf loss): {', '.join(diverged)}.")
        reach = {n: [r["first_epoch_at_target"] for r in rs] for n, rs in by_norm.items()}
        reached = {n: mean(e) for n, e in reach.items() if all(x is not None for x in e)}
        never = [NORM_NAMES[n] for n in by_norm if n not in reached]
        if reached:
            order = sorted(reached, key=reached.get)
            unit = "epoch" if n_seeds == 1 else "mean epoch"
            if len(order) > 1 and len(set(reached.values())) == 1:
                names = ", ".join(NORM_NAMES[n] for n in order)
                text = f"{fam}: {names} all reached {target_acc:.0%} test accuracy at {unit} {reached[order[0]]:.3g} (a tie)"
            else:
                ranking = ", ".join(f"{NORM_NAMES[n]} ({unit} {reached[n]:.3g})" for n in order)
                text = f"{fam}: first to {target_acc:.0%} test accuracy: {ranking}"
            if never:
                text += f"; not reached in {plural(epochs, 'epoch')}{' by every seed' if n_seeds > 1 else ''}: {', '.join(never)}"
            verdicts.append(text + ".")
        else:
            verdicts.append(f"{fam}: no norm reached {target_acc:.0%} test accuracy in {plural(epochs, 'epoch')}.")

        finals = {
            n: [r["final_test_acc"] for r in rs]
            for n, rs in by_norm.items()
            if all(r["final_test_acc"] is not None for r in rs)
        }
        if len(finals) > 1:
            best = max(finals, key=lambda n: mean(finals[n]))
            parts = []
            for n, accs in sorted(finals.items(), key=lambda kv: -mean(kv[1])):
                if n == best:
                    continue
                tag = "below" if _differs(finals[best], accs, n_test) else "not distinguishable from"
                parts.append(f"{NORM_NAMES[n]} {mean(accs):.1%} ({tag} it)")
            yardstick = (
                f"5% Welch t-test over {n_seeds} seeds" if n_seeds > 1 else f"5% two-proportion test, n_test={n_test}"
            )
            what = "best mean final test accuracy" if n_seeds > 1 else "best final test accuracy"
            verdicts.append(f"{fam}: {what} {NORM_NAMES[best]} {mean(finals[best]):.1%}; " + "; ".join(parts) + f" [{yardstick}].")
    if rows and max(1, len({r["seed"] for r in rows})) == 1:
        verdicts.append(
            "One seed: epoch rankings can change with the seed; set compare.seeds to several seeds for a spread."
        )
    return verdicts


def _with(cfg: RunConfig, **changes) -> RunConfig:
    """A deep copy of ``cfg`` with dotted-path changes, re-validated."""
    raw = cfg.model_dump(mode="python")
    for key, value in changes.items():
        node = raw
        *parents, leaf = key.split("__")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return RunConfig.model_validate(raw)


def train(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """One training run (``lnbench train``): a run folder with metrics.json and the four plots."""
    row, path = run_one(cfg, runs_dir, cfg.name, on_epoch, target_acc=cfg.compare.target_acc, draw_plots=True)
    return ExperimentResult(path, row["status"], [row])


def compare(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """``lnbench compare``: every family x norm x seed of ``cfg.compare`` on identical data.

    Writes one child run per model, the four comparison plots and summary.json into one run
    folder. A diverged child is recorded and the comparison goes on.
    """
    spec = cfg.compare
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.compare_seeds, "compare") as run:
        rows, dirs = [], []
        for family in spec.families:
            for norm in spec.norms:
                for seed in cfg.compare_seeds:
                    child = _with(cfg, model__family=family, model__norm=norm, seed=seed, name=f"{family}_{norm}_seed{seed}")
                    row, path = run_one(child, run.path, child.name, on_epoch, False, spec.target_acc)
                    rows.append(row)
                    dirs.append(path)
                    run.write_json("summary.json", {"kind": "compare", "complete": False, "rows": rows})
        figures = _draw_comparison(run.path, dirs, spec.target_acc)
        verdicts = compare_verdicts(rows, cfg.data.n_test, cfg.train.epochs, spec.target_acc)
        aggregate = aggregate_over_seeds(rows) if len(cfg.compare_seeds) > 1 else None
        run.write_json(
            "summary.json",
            {"kind": "compare", "complete": True, "target_acc": spec.target_acc, "rows": rows, "aggregate": aggregate, "verdicts": verdicts, "figures": figures},
        )
    return ExperimentResult(run.path, run.status, rows, verdicts, aggregate)


def sweep_verdicts(rows: list[dict], n_test: int) -> list[str]:
    """Per norm: where the final test accuracy falls below the same norm's best batch size, and
    where it falls below NoNorm at the same batch size (which separates the norm's own batch
    dependence from the budget effect of fewer, larger steps). Differences inside test-set
    noise are not reported as degradation."""
    verdicts = []
    cell = {(r["norm"], r["batch_size"]): r for r in rows}
    for norm in dict.fromkeys(r["norm"] for r in rows):
        name = NORM_NAMES.get(norm, norm)
        cells = sorted((r for r in rows if r["norm"] == norm), key=lambda r: r["batch_size"])
        diverged = [r["batch_size"] for r in cells if r["status"] == "diverged"]
        ok = [r for r in cells if r["final_test_acc"] is not None and r["status"] != "diverged"]
        if diverged:
            verdicts.append(f"{name}: diverged at batch size {', '.join(map(str, diverged))}.")
        if not ok:
            continue
        best = max(ok, key=lambda r: r["final_test_acc"])
        low = [r for r in ok if _distinguishable(best["final_test_acc"], r["final_test_acc"], n_test)]
        lo, hi = min(r["final_test_acc"] for r in ok), best["final_test_acc"]
        if len(ok) == 1:
            verdicts.append(f"{name}: test accuracy {hi:.1%} at batch size {best['batch_size']} (one batch size: nothing to compare).")
            continue
        text = f"{name}: test accuracy {lo:.1%} to {hi:.1%} across batch sizes (best at {best['batch_size']})"
        if low:
            worst = ", ".join(f"{r['batch_size']} ({r['final_test_acc']:.1%})" for r in low)
            text += f"; below its best beyond test-set noise at batch size {worst}"
        else:
            text += "; no batch size is below its best beyond test-set noise"
        if norm != "none":
            vs_none = [
                r for r in ok
                if ("none", r["batch_size"]) in cell
                and cell[("none", r["batch_size"])]["final_test_acc"] is not None
                and cell[("none", r["batch_size"])]["final_test_acc"] > r["final_test_acc"]
                and _distinguishable(cell[("none", r["batch_size"])]["final_test_acc"], r["final_test_acc"], n_test)
            ]
            if vs_none:
                text += f"; below NoNorm at the same batch size at {', '.join(str(r['batch_size']) for r in vs_none)}"
            elif ("none", best["batch_size"]) in cell:
                text += "; never below NoNorm at the same batch size beyond test-set noise"
        bs_gap = [
            r for r in ok
            if r["final_test_acc_batch_stats"] is not None
            and _distinguishable(r["final_test_acc"], r["final_test_acc_batch_stats"], n_test)
        ]
        if bs_gap:
            text += "; eval (running stats) vs batch stats differ at " + ", ".join(
                f"{r['batch_size']} ({r['final_test_acc']:.1%} vs {r['final_test_acc_batch_stats']:.1%})" for r in bs_gap
            )
        verdicts.append(text + ".")
    return verdicts


def batchsize_sweep(cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None) -> ExperimentResult:
    """``lnbench batchsize-sweep``: every norm x batch size of ``cfg.sweep``, one model family.

    Every cell uses the same data, seed and initial weights and the same number of epochs
    (so the same number of training samples; smaller batches take more, noisier steps).
    A diverged cell is recorded and the sweep goes on.
    """
    spec = cfg.sweep
    check_sweep(cfg)
    with Run(runs_dir, cfg.name, cfg.to_yaml(), cfg.seed, "batchsize-sweep") as run:
        rows = []
        for norm in spec.norms:
            for bs in spec.batch_sizes:
                child = _with(cfg, model__family=spec.family, model__norm=norm, train__batch_size=bs, name=f"{spec.family}_{norm}_bs{bs}")
                row, _ = run_one(child, run.path, child.name, on_epoch, False, cfg.compare.target_acc)
                rows.append(row)
                run.write_json("summary.json", {"kind": "batchsize-sweep", "complete": False, "rows": rows})
        figures = []
        if any(r["final_test_acc"] is not None for r in rows):
            fam = FAMILY_NAMES.get(spec.family, spec.family)
            figures = [
                plots.plot_sweep(rows, "final_test_acc", "final test accuracy", f"{fam}: test accuracy after {cfg.train.epochs} epochs vs batch size", run.path / "accuracy_vs_batch_size.png").name,
                plots.plot_sweep(rows, "final_train_loss", "final train loss (nats, log scale)", f"{fam}: training loss after {cfg.train.epochs} epochs vs batch size", run.path / "train_loss_vs_batch_size.png", log_y=True).name,
            ]
        verdicts = sweep_verdicts(rows, cfg.data.n_test)
        run.write_json(
            "summary.json",
            {"kind": "batchsize-sweep", "complete": True, "family": spec.family, "epochs": cfg.train.epochs, "lr": cfg.train.lr, "rows": rows, "verdicts": verdicts, "figures": figures},
        )
    return ExperimentResult(run.path, run.status, rows, verdicts)


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
