"""``lnbench compare``: every model family x norm x seed of a config, on identical data per seed.

Every run of one seed shares the data, the initial weights and the batch order, so the runs are
paired: each norm is compared with NoNorm and with each other norm per family (paired tests over
seeds, McNemar for one seed; Holm within each family; :mod:`lnbench.analysis.verdicts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from lnbench.analysis import verdicts
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.config import RunConfig
from lnbench.config.checks import check_keys_apply, check_not_overridden
from lnbench.experiments import driver
from lnbench.experiments.base import (
    Cell,
    EpochCallback,
    Experiment,
    ExperimentResult,
    comparisons_of,
    rows_of,
    run_name,
    seed_cells,
)
from lnbench.names import has_placements, model_group_of, norm_slug, plural
from lnbench.records.folder import RunFolder
from lnbench.records.schema import SummaryRow
from lnbench.report import tables


def run_folders(path: Path, summary: dict) -> list[Path]:
    """The child run folders behind a summary's rows (a failed cell's folder left out)."""
    return [path / r["run_dir"] for r in summary.get("rows", []) if r.get("run_dir") and r.get("status") != "failed"]


def printed_tables(title: str, path: Path, summary: dict, sweep: bool = False) -> list[Table]:
    """The tables of an experiment over rows: every run, the baselines, the aggregate over seeds
    (with several seeds) and the paired comparisons (a sweep shows the significant ones)."""
    target = summary.get("target_acc", 0.9)
    out = [tables.runs_table(title, rows_of(summary), target, sweep)]
    if summary.get("baselines"):
        out.append(tables.baselines_table(summary["baselines"]))
    aggregate = summary.get("aggregate") or []
    if aggregate and max(e["n_seeds"] for e in aggregate) > 1:
        out.append(tables.aggregate_table(aggregate, target, sweep))
    comparisons = comparisons_of(summary)
    if comparisons and not sweep:
        out.append(tables.comparisons_table(comparisons))
    shown = [c for c in comparisons if c.significant]
    if sweep and shown:
        title = f"significant paired comparisons ({len(shown)} of {len(comparisons)}; all in summary.json)"
        out.append(tables.comparisons_table(shown, title))
    return out


class Compare(Experiment):
    kind = "compare"
    figure_group = "run"

    def check(self, spec: RunConfig) -> None:
        super().check(spec)
        check_keys_apply(spec, spec.compare.families)
        check_not_overridden(spec, {"family": "compare.families", "norm": "compare.norms"})

    def trained(self, cfg: RunConfig) -> tuple[list[str], list[int]]:
        return list(cfg.compare.families), []

    def plan(self, spec: RunConfig, parent: Path) -> list[Cell]:
        """Every family x norm (an RNN in each of ``compare.placements``; each family at each of
        ``compare.norm_gain_inits``), all seeds; children are named ``<family>_<norm>_seed<k>``, with
        placements ``rnn-<placement>_<norm>_seed<k>``, with gains ``lstm-gain0.1_<norm>_seed<k>``."""
        placements = spec.compare.placements
        gains = spec.compare.norm_gain_inits
        settings: list[dict] = []
        for family in spec.compare.families:
            for placement in placements if has_placements(family) and placements else [None]:
                for gain in gains or [spec.model.norm_gain_init]:
                    extra: dict[str, object] = {} if placement is None else {"model__norm_placement": placement}
                    extra |= {} if gains is None else {"model__norm_gain_init": gain}
                    settings += [{"model__family": family, **extra, "model__norm": n} for n in spec.compare.norms]

        def name(c: dict) -> str:
            placement = c.get("model__norm_placement")
            gain = f"-gain{c['model__norm_gain_init']:g}" if c.get("model__norm_gain_init") is not None else ""
            return f"{c['model__family']}{'-' + placement if placement else ''}{gain}_{norm_slug(c['model__norm'])}"

        return seed_cells(spec, settings, parent, spec.compare.target_acc, name)

    def analyse(self, spec: RunConfig, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        target = spec.compare.target_acc
        comparisons = verdicts.compare_comparisons(rows)
        memoryless = verdicts.memoryless_tests(rows, baselines)
        sentences = verdicts.baseline_verdicts(baselines, target)
        sentences += verdicts.compare_verdicts(rows, comparisons, spec.train.epochs, target, memoryless)
        aggregate = aggregate_over_seeds(rows)
        for entry in aggregate:
            group = model_group_of(entry["family"], entry["norm_placement"], entry["norm_gain_init"])
            entry["vs_memoryless"] = memoryless.get((group, entry["norm"]))
        return {
            "target_acc": target,
            "epochs": spec.train.epochs,
            "seeds": spec.seed_list,
            "baselines": baselines,
            "aggregate": aggregate,
            "comparisons": [c.to_dict() for c in comparisons],
            "verdicts": sentences,
        }

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        from lnbench.report.figures import draw_run_figures

        summary = RunFolder(path).summary() or {}
        memoryless = next((b["mean"] for b in summary.get("baselines") or [] if b["name"] == "last_timestep"), None)
        return draw_run_figures(into or path, run_folders(path, summary), summary.get("target_acc", 0.9), memoryless)

    def tables(self, path: Path, summary: dict) -> list[Table]:
        epochs = summary.get("epochs")
        title = f"lnbench compare: {run_name(path)}" + (f" ({plural(epochs, 'epoch')})" if epochs else "")
        return printed_tables(title, path, summary)


COMPARE = Compare()


def compare(
    cfg: RunConfig,
    runs_dir: str | Path = "runs",
    on_epoch: EpochCallback | None = None,
    jobs: int = 1,
    resume: str | Path | None = None,
    launcher: str = "local",
) -> ExperimentResult:
    """``lnbench compare``: every family x norm x seed of ``cfg`` (``compare.families``,
    ``compare.norms``, ``seeds``), on identical data per seed.

    Writes one child run per model, the comparison figures, ``summary.json`` (rows, baselines,
    aggregate, paired comparisons, verdicts) and ``report.html`` into one run folder under
    ``runs_dir``. A diverged child is recorded and the comparison goes on. ``jobs``,
    ``launcher``, ``resume``: see :func:`lnbench.experiments.driver.run`.

    Raises:
        ConfigError: a config the comparison cannot run, before anything is written.
    """
    return driver.run(COMPARE, cfg, runs_dir, on_epoch, jobs, resume, launcher)
