"""``lnbench train``: one model trained into its own run folder, with its figures and report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from lnbench.config import ConfigError, RunConfig
from lnbench.config.checks import check_keys_apply
from lnbench.config.schema import show_value
from lnbench.experiments import driver
from lnbench.experiments.base import (
    Cell,
    EpochCallback,
    Experiment,
    ExperimentResult,
    finished_run,
    read_json,
    rows_of,
    run_name,
)
from lnbench.names import norm_slug
from lnbench.records.runs import finishing, write_json_atomic
from lnbench.records.schema import SummaryRow, read_metrics, summary_row
from lnbench.report import tables


class Train(Experiment):
    kind = "train"
    seeded = False  # one model, one seed (``seeds`` is not used)

    def config_yaml(self, spec: RunConfig) -> str:
        return named(spec).to_yaml(model_family_only=True)  # what its run folder's config.yaml holds

    def seeds(self, spec: RunConfig) -> list[int]:
        return [spec.seed]

    def name(self, spec: RunConfig) -> str:
        return named(spec).name

    def check(self, spec: RunConfig) -> None:
        super().check(spec)
        check_keys_apply(spec, [spec.model.family])
        if spec.seeds is not None and spec.seeds != [spec.seed]:
            raise ConfigError(
                f"seeds: {show_value(spec.seeds)}: train trains one model, with seed ({spec.seed}); "
                "remove seeds (compare, the sweeps and claims train each of them), or pick one with --seed N"
            )

    def baselines(self, spec: RunConfig) -> Any:
        return super().baselines(spec.with_changes(seeds=[spec.seed]))  # of its one seed's data

    def plan(self, spec: RunConfig, parent: Path) -> list[Cell]:
        """One cell of one run; ``parent``: with ``--resume``, the run folder itself (a train run
        is its own folder, not a child)."""
        return [Cell([named(spec)], parent, spec.compare.target_acc)]

    def kept(self, cell: Cell) -> list[tuple[SummaryRow, Path]] | None:
        kept = finished_run(cell.parent, cell.cfgs[0], cell.target_acc)
        return None if kept is None else [kept]

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        from lnbench.report.figures import draw_run_figures

        summary = read_json(path / "summary.json") or {}
        return draw_run_figures(into or path, [path], summary.get("target_acc", 0.9))

    def tables(self, path: Path, summary: dict) -> list[Table]:
        rows = rows_of(summary)
        if not rows and (path / "metrics.json").exists():  # a folder of an older version, or interrupted
            manifest = read_json(path / "run.json") or {}
            rows = [summary_row(read_metrics(path), 0.9, path.name, manifest.get("wall_seconds"))]
        seed = f" (seed {rows[0].seed})" if rows else ""
        out = [tables.runs_table(f"lnbench train: {run_name(path)}{seed}", rows, summary.get("target_acc", 0.9))]
        if summary.get("baselines"):  # a folder of an older version has none
            out.append(tables.baselines_table(summary["baselines"]))
        return out


def named(cfg: RunConfig) -> RunConfig:
    """``cfg`` named after the model it trains: ``name`` gains ``_<family>_<norm>`` unless it
    holds them already (``train`` -> ``train_rnn_layer``; a compare child's ``rnn_layer_seed0``
    stays), so that the run folder says what it holds whatever the config file is called."""
    model = f"{cfg.model.family}_{norm_slug(cfg.model.norm)}"
    return cfg if model in cfg.name else cfg.with_changes(name=f"{cfg.name}_{model}"[:80])


TRAIN = Train()


def train(
    cfg: RunConfig,
    runs_dir: str | Path = "runs",
    on_epoch: EpochCallback | None = None,
    tensorboard: bool = False,
    resume: str | Path | None = None,
) -> ExperimentResult:
    """``lnbench train``: one model of ``cfg`` (``cfg.seed``) in a new run folder under ``runs_dir``,
    named after the model (:func:`named`): config.yaml, run.json, metrics.json, summary.json with
    its one row and the baselines of its data, the figures, report.html.

    ``resume``: an interrupted or failed train run folder of the same config, continued in place
    from its last finished epoch (its checkpoint.pt; without a usable one, from epoch 1), with the
    metrics of a run in one go; a finished one (its summary and report written) is left as it is.

    Raises:
        ConfigError: a config that cannot run, or a ``resume`` folder of another kind or config, or
            one in use, before anything is written.
    """
    from lnbench.experiments.cells import label, run_one

    (cell,) = driver.prepare(TRAIN, cfg, resume=resume)  # its one run, named after its model
    target = cfg.compare.target_acc
    kept = TRAIN.kept(cell) if resume is not None else None
    if kept is not None:
        ((row, path),) = kept
        if on_epoch is not None:
            on_epoch(label(cell.cfgs[0]), cfg.train.epochs, cfg.train.epochs, row.final_test_acc)
        if driver.finished([cell], resume, TRAIN):  # nothing to do: the folder stays byte for byte
            return ExperimentResult(path, row.status, [row])
    else:
        folder = Path(resume) if resume is not None else None
        row, path = run_one(cell.cfgs[0], runs_dir, on_epoch, target_acc=target, tensorboard=tensorboard, resume=folder)
    baselines = TRAIN.baselines(cfg)
    body = driver.summary(TRAIN.kind, [row], True, target_acc=target, seeds=[cfg.seed], baselines=baselines)
    with finishing(path):  # a file that cannot be written (a full disk) fails the run, in its run.json
        write_json_atomic(path / "summary.json", body)
        body["figures"] = TRAIN.figures(path)
        write_json_atomic(path / "summary.json", body)
    driver.write_html(TRAIN, path)
    return ExperimentResult(path, row.status, [row])
