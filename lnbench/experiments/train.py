"""``lnbench train``: one model trained into its own run folder, with its figures and report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from lnbench.config import ConfigError, RunConfig
from lnbench.config.checks import check_keys_apply
from lnbench.config.yaml12 import show_value
from lnbench.experiments import driver
from lnbench.experiments.base import (
    Cell,
    EpochCallback,
    Experiment,
    ExperimentResult,
    finished_run,
    rows_of,
    run_name,
)
from lnbench.names import DEFAULT_TASK, norm_slug
from lnbench.records.folder import RunFolder
from lnbench.records.index import make_headline
from lnbench.records.schema import SummaryRow, read_metrics, summary_row
from lnbench.report import tables


class Train(Experiment):
    kind = "train"
    figure_group = "run"
    seeded = False  # one model, one seed (``seeds`` is not used)
    own_run = True  # its folder is its one run

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

    def analyse(self, spec: RunConfig, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        return {"target_acc": spec.compare.target_acc, "seeds": [spec.seed], "baselines": baselines}

    def plan(self, spec: RunConfig, parent: Path) -> list[Cell]:
        """One cell of one run; ``parent``: with ``--resume``, the run folder itself (a train run
        is its own folder, not a child)."""
        return [Cell([named(spec)], parent, spec.compare.target_acc)]

    holds = ("metrics.json",)

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        """The final test accuracy (metrics.json's last ``test_acc``), on its task; a run that
        diverged says so first (``diverged at epoch 3, test acc 0.512``: the last epoch it
        recorded, if any)."""
        metrics = folder.raw_metrics() or {}
        accs = metrics.get("test_acc") or []
        if metrics.get("status") == "diverged":
            said = f"diverged at epoch {metrics.get('diverged_at_epoch')}"
            last = accs[-1] if accs and isinstance(accs[-1], (int, float)) else None
            tasks = [metrics.get("task", DEFAULT_TASK)]
            return make_headline(said if last is None else f"{said}, test acc", last, tasks, sep=" ")
        if not accs or not isinstance(accs[-1], (int, float)):
            return None
        return make_headline("test acc", accs[-1], [metrics.get("task", DEFAULT_TASK)], sep=" ")

    def kept(self, cell: Cell) -> list[tuple[SummaryRow, Path]] | None:
        kept = finished_run(cell.parent, cell.cfgs[0], cell.target_acc)
        return None if kept is None else [kept]

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        from lnbench.report.figures import draw_run_figures

        summary = RunFolder(path).summary() or {}
        return draw_run_figures(into or path, [path], summary.get("target_acc", 0.9))

    def tables(self, path: Path, summary: dict) -> list[Table]:
        rows = rows_of(summary)
        if not rows and (path / "metrics.json").exists():  # a folder of an older version, or interrupted
            manifest = RunFolder(path).manifest() or {}
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
    cells = driver.prepare(TRAIN, cfg, resume=resume)  # its one run, named after its model
    for cell in cells:
        cell.tensorboard = tensorboard
    return driver.execute(TRAIN, cfg, cells, runs_dir=runs_dir, on_epoch=on_epoch, resume=resume)
