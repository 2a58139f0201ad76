"""``lnbench train``: one model trained into its own run folder, with its figures and report."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from lnbench.config import ConfigError, RunConfig
from lnbench.config.checks import check_keys_apply
from lnbench.config.schema import show_value
from lnbench.experiments import driver
from lnbench.experiments.base import Cell, EpochCallback, Experiment, ExperimentResult, read_json, rows_of, run_name
from lnbench.names import norm_slug
from lnbench.records.runs import finishing, write_json_atomic
from lnbench.records.schema import read_metrics, summary_row
from lnbench.report import tables


class Train(Experiment):
    kind = "train"
    seeded = False  # one model, one seed (``seeds`` is not used)

    def config_yaml(self, spec: RunConfig) -> str:
        return spec.to_yaml(model_family_only=True)

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

    def plan(self, spec: RunConfig, parent: Path) -> list[Cell]:
        return [Cell([named(spec)], parent, spec.compare.target_acc)]

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
        return [tables.runs_table(f"lnbench train: {run_name(path)}{seed}", rows, summary.get("target_acc", 0.9))]


def named(cfg: RunConfig) -> RunConfig:
    """``cfg`` named after the model it trains: ``name`` gains ``_<family>_<norm>`` unless it
    holds them already (``train`` -> ``train_rnn_layer``; a compare child's ``rnn_layer_seed0``
    stays), so that the run folder says what it holds whatever the config file is called."""
    model = f"{cfg.model.family}_{norm_slug(cfg.model.norm)}"
    return cfg if model in cfg.name else cfg.with_changes(name=f"{cfg.name}_{model}"[:80])


TRAIN = Train()


def train(
    cfg: RunConfig, runs_dir: str | Path = "runs", on_epoch: EpochCallback | None = None, tensorboard: bool = False
) -> ExperimentResult:
    """``lnbench train``: one model of ``cfg`` (``cfg.seed``) in a new run folder under ``runs_dir``,
    named after the model (:func:`named`): config.yaml, run.json, metrics.json, summary.json with
    its one row, the figures, report.html.

    Raises:
        ConfigError: a config that cannot run, before anything is written.
    """
    from lnbench.experiments.cells import run_one

    (cell,) = driver.prepare(TRAIN, cfg)  # its one run, named after its model
    target = cfg.compare.target_acc
    row, path = run_one(cell.cfgs[0], runs_dir, on_epoch, target_acc=target, tensorboard=tensorboard)
    body = driver.summary(TRAIN.kind, [row], True, target_acc=target, seeds=[cfg.seed])
    with finishing(path):  # a file that cannot be written (a full disk) fails the run, in its run.json
        write_json_atomic(path / "summary.json", body)
        body["figures"] = TRAIN.figures(path)
        write_json_atomic(path / "summary.json", body)
    driver.write_html(TRAIN, path)
    return ExperimentResult(path, row.status, [row])
