"""``lnbench compare``: every model family x norm x seed of a config, on identical data per seed.

Every run of one seed shares the data, the initial weights and the batch order, so the runs are
paired: each norm is compared with NoNorm and with each other norm per family (paired tests over
seeds, McNemar for one seed; Holm within each family; :mod:`lnbench.analysis.comparisons`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from lnbench.analysis import confirm as confirm_rules
from lnbench.analysis import verdicts
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.analysis.comparisons import Comparison, compare_comparisons, memoryless_tests, model_group
from lnbench.config import ConfigError, RunConfig
from lnbench.config.checks import check_keys_apply, check_not_overridden
from lnbench.experiments import driver
from lnbench.experiments.base import (
    Cell,
    Experiment,
    comparisons_of,
    copy_sources,
    rows_of,
    run_name,
    seed_cells,
)
from lnbench.names import has_placements, model_group_of, norm_slug, plural, seeds_phrase
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
        comparisons = compare_comparisons(rows)
        memoryless = memoryless_tests(rows, baselines)
        sentences = verdicts.baseline_verdicts(baselines, target)
        copied = {c.name for k in copy_sources(cells) for c in cells[k].cfgs}
        sentences += verdicts.compare_verdicts(rows, comparisons, spec.train.epochs, target, memoryless, copied)
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

    def check_confirmable(self, spec: Any) -> None:
        if len(spec.seed_list) < 2:
            raise ConfigError(f"--confirm: seeds: the pilot needs at least 2 seeds to plan from (got {spec.seed_list})")

    def confirm_stage(self, spec: Any, pilot: dict, max_seeds: int) -> tuple[Any, Experiment, Any, float | None]:
        confirm_spec = ConfirmCompareSpec(spec, pilot, max_seeds)
        plan = compare_plan(confirm_spec)
        cost = compare_cost(confirm_spec, plan) if plan.fresh else None
        return confirm_spec, CONFIRMED_COMPARE, plan, cost


COMPARE = Compare()


compare = driver.entry(
    COMPARE,
    """``lnbench compare``: every family x norm x seed of ``cfg`` (``compare.families``,
    ``compare.norms``, ``seeds``), on identical data per seed.

    Writes one child run per model, the comparison figures, ``summary.json`` (rows, baselines,
    aggregate, paired comparisons, verdicts) and ``report.html`` into one run folder under
    ``runs_dir``. A diverged child is recorded and the comparison goes on. ``options``:
    :class:`lnbench.experiments.base.LaunchOptions`.

    Raises:
        ConfigError: a config the comparison cannot run, before anything is written.
    """,
)


@dataclass
class ConfirmCompareSpec:
    """``lnbench compare --confirm``'s confirm stage: the compare's config, its pilot folder's
    summary.json, and ``--max-seeds``."""

    cfg: RunConfig
    pilot_summary: dict
    max_seeds: int = confirm_rules.MAX_SEEDS


@dataclass
class ComparePlan:
    """The pilot's comparisons (its seeds), their plans, and each model group's norms with the
    fresh seeds they train."""

    pilot: list[Comparison]
    plans: list[confirm_rules.Plan]
    fresh: dict[str, dict[str, list[int]]]  # model group -> norm -> fresh seeds


def compare_plan(spec: ConfirmCompareSpec, rows: Sequence[SummaryRow] | None = None) -> ComparePlan:
    """The confirm stage's plan from the pilot's rows (``rows``' pilot seeds; default: the pilot
    folder's summary.json rows): :func:`lnbench.analysis.confirm.plan_comparisons`."""
    seeds = set(spec.cfg.seed_list)
    pilot_rows = [r for r in (rows_of(spec.pilot_summary) if rows is None else rows) if r.seed in seeds]
    pilot = compare_comparisons(pilot_rows)
    plans = confirm_rules.plan_comparisons(pilot_rows, pilot, spec.max_seeds)
    fresh = {
        group: {norm: confirm_rules.fresh_seeds(spec.cfg.seed_list, n) for norm, n in norms.items()}
        for group, norms in confirm_rules.group_seeds(pilot, plans).items()
    }
    return ComparePlan(pilot, plans, fresh)


def compare_cost(spec: ConfirmCompareSpec, plan: ComparePlan) -> float | None:
    """The confirm stage's estimated training time (seconds, one worker): each (model group,
    norm) it trains at the pilot's wall time of that cell (an ensemble's once, seeds one after
    another summed), scaled by its fresh seeds over the pilot's. None: no wall times."""
    seeds = set(spec.cfg.seed_list)
    wall: dict[tuple[str, str], float] = {}
    for r in rows_of(spec.pilot_summary):
        if r.seed in seeds and r.wall_seconds is not None:
            key = (model_group(r), r.norm)
            together = r.shares_ensemble_time
            wall[key] = max(wall.get(key, 0.0), r.wall_seconds) if together else wall.get(key, 0.0) + r.wall_seconds
    if not wall:
        return None
    scale = 1 / max(1, len(seeds))
    return sum(wall.get((g, n), 0.0) * len(f) * scale for g, norms in plan.fresh.items() for n, f in norms.items())


class ConfirmedCompare(Compare):
    """``lnbench compare --confirm``: a compare's folder (kind ``compare``) with its pilot cells
    and the fresh-seed cells of the comparisons the pilot left open
    (:mod:`lnbench.analysis.confirm`); the spec is a :class:`ConfirmCompareSpec`, whose config
    the plain compare (:data:`COMPARE`) checks, plans and analyses."""

    def configs(self, spec: Any) -> dict[str, RunConfig]:
        return COMPARE.configs(spec.cfg)

    def config_yaml(self, spec: Any) -> str | None:
        return COMPARE.config_yaml(spec.cfg)

    def name(self, spec: Any) -> str:
        return COMPARE.name(spec.cfg)

    def seeds(self, spec: Any) -> int | list[int]:
        fresh = {s for norms in compare_plan(spec).fresh.values() for seeds in norms.values() for s in seeds}
        return sorted(set(spec.cfg.seed_list) | fresh)

    def check(self, spec: Any) -> None:
        COMPARE.check(spec.cfg)

    def plan(self, spec: Any, parent: Path) -> list[Cell]:
        """The pilot's cells, then each confirmed (model group, norm) on its fresh seeds."""
        cells = COMPARE.plan(spec.cfg, parent)
        fresh = compare_plan(spec).fresh
        for cell in list(cells):
            c = cell.cfgs[0]
            group = model_group_of(c.model.family, c.model.norm_placement, c.model.norm_gain_init)
            seeds = fresh.get(group, {}).get(c.model.norm)
            if seeds and c.seed == spec.cfg.seed_list[0]:
                prefix = c.name.rpartition("_seed")[0]

                def name(_: dict, prefix: str = prefix) -> str:  # the pilot's name: <prefix>_seed<k>
                    return prefix

                cfg = spec.cfg.with_changes(seed=seeds[0], seeds=seeds)
                cells += seed_cells(cfg, [cell.setting], parent, spec.cfg.compare.target_acc, name)
        return cells

    def baselines(self, spec: Any) -> Any:
        return COMPARE.baselines(spec.cfg)

    def answers(self, spec: Any, summary: dict) -> bool:
        return (summary.get("confirm") or {}).get("max_seeds") == spec.max_seeds

    def printed_after_run(self, path: Path, summary: dict, verdicts: list[str]) -> tuple[list[Table], list[str]]:
        """The confirm stage's own result, the pilot's having been printed before it: the table of
        every comparison with the stage that decided it, and the confirm stage's sentences."""
        confirm = summary.get("confirm") or {}
        fresh = sorted({s for norms in (confirm.get("fresh_seeds") or {}).values() for f in norms.values() for s in f})
        title = f"confirmed comparisons (pilot seeds {seeds_phrase(confirm.get('pilot_seeds') or [])}"
        title += f", fresh seeds {seeds_phrase(fresh)})" if fresh else ", no fresh seeds)"
        return [
            tables.comparisons_table(comparisons_of(summary), title, detail=False)
        ], confirm_rules.comparison_sentences(comparisons_of(summary))

    def analyse(self, spec: Any, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        """The pilot's analysis (its seeds' rows: the aggregate table, the memoryless tests, the
        verdicts), with its comparisons replaced by the two-stage ones, and the design's record."""
        seeds = set(spec.cfg.seed_list)
        pilot_cells = [cell for cell in cells if cell.cfgs[0].seed in seeds]
        pilot_rows = [r for r in rows if r.seed in seeds]
        out = COMPARE.analyse(spec.cfg, pilot_cells, pilot_rows, baselines)
        plan = compare_plan(spec, rows)
        fresh_seeds = sorted({s for norms in plan.fresh.values() for f in norms.values() for s in f})
        fresh_rows = [r for r in rows if r.seed in set(fresh_seeds)]
        final = confirm_rules.confirm_comparisons(plan.pilot, plan.plans, fresh_rows, spec.cfg.seed_list, fresh_seeds)
        out["comparisons"] = [c.to_dict() for c in final]
        out["verdicts"] = [*out["verdicts"], *confirm_rules.comparison_sentences(final)]
        out["confirm"] = {
            "design": "two-stage: pilot comparisons kept where Holm p < 0.01; the rest planned for "
            f"{confirm_rules.POWER:.0%} power and tested on fresh seeds alone at level {confirm_rules.CONFIRM_ALPHA:g} "
            "(Holm over the confirmed comparisons of a family); family-wise error <= 0.05",
            "pilot_alpha": confirm_rules.PILOT_ALPHA,
            "confirm_alpha": confirm_rules.CONFIRM_ALPHA,
            "power": confirm_rules.POWER,
            "max_seeds": spec.max_seeds,
            "pilot_seeds": spec.cfg.seed_list,
            "fresh_seeds": plan.fresh,
        }
        return out


CONFIRMED_COMPARE = ConfirmedCompare()
