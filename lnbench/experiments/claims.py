"""``lnbench claims``: each claim about LayerNorm tested in a regime where it can show.

The claims are in :mod:`lnbench.analysis.claim_catalogue` and their verdict rules in
:mod:`lnbench.analysis.claims`; the regimes are config presets (``configs/claims/<regime>.yaml``,
read by :mod:`lnbench.experiments.claim_regimes`). This experiment trains each setting the selected
claims need once per regime (all seeds) and gives each claim a verdict from the paired runs.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

from rich.table import Table

from lnbench.analysis import ablation, claim_catalogue, claim_tasks
from lnbench.analysis import claims as claim_rules
from lnbench.analysis import confirm as confirm_rules
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.config import ConfigError, RunConfig
from lnbench.config.optimizers import OPTIMIZERS
from lnbench.experiments import claim_regimes, driver
from lnbench.experiments.base import (
    Cell,
    Experiment,
    ExperimentResult,
    LaunchOptions,
    rows_of,
    seed_cells,
    tasks_of,
)
from lnbench.names import plural
from lnbench.records.folder import RunFolder
from lnbench.records.index import make_headline
from lnbench.records.schema import Metrics, SchemaError, SummaryRow
from lnbench.report import claim_tables


@dataclass
class ClaimsSpec:
    """What ``lnbench claims`` runs: the selected claims and the resolved config of each regime."""

    selected: list[claim_catalogue.Claim]
    regimes: dict[str, RunConfig]
    name: str = "claims"
    #: the tasks the claims run on (:mod:`lnbench.analysis.claim_tasks`); ``selected`` holds each
    #: claim once per task where it applies (its regime ``default@adding`` off trend)
    tasks: list[str] = field(default_factory=lambda: ["trend"])
    #: the claims that do not apply to a task: ``{"id", "claim", "family", "task", "reason"}``
    skipped: list[dict] = field(default_factory=list)
    #: ``--confirm``: the confirm stage after the pilot (:class:`ConfirmSpec`); None: a plain run
    confirm: ConfirmSpec | None = None
    #: the folder of the regimes' preset files, named in the checks' messages; None: regimes built in code
    presets: Path | None = None


@dataclass
class ConfirmSpec:
    """The confirm stage of a claims run (:mod:`lnbench.analysis.confirm`): the pilot's rows
    (its folder's summary.json), and ``--max-seeds``."""

    pilot_summary: dict
    max_seeds: int = confirm_rules.MAX_SEEDS


@dataclass
class ConfirmPlan:
    """The two-stage plan of a claims run: per selected claim (in the spec's order, by task),
    the pilot's result, its paired values and its :class:`lnbench.analysis.confirm.Plan`; and
    the fresh seeds of each regime that confirms."""

    claims: list[claim_catalogue.Claim]
    pilot: list[claim_rules.ClaimResult]
    samples: list[claim_rules.ClaimSamples]
    plans: list[confirm_rules.Plan]
    fresh: dict[str, list[int]]

    def regimes_to_run(self) -> dict[str, list[claim_catalogue.Claim]]:
        """Regime -> the claims it confirms (those with fresh seeds)."""
        out: dict[str, list[claim_catalogue.Claim]] = {}
        for c, p in zip(self.claims, self.plans):
            if p.action == "confirm":
                out.setdefault(c.regime, []).append(c)
        return out


def by_setting_of(
    pairs: Sequence[tuple[str, SummaryRow]], variants: Sequence[str] | None = None
) -> dict[tuple, list[SummaryRow]]:
    """Rows by :func:`lnbench.analysis.claim_catalogue.setting_key`, from ``(regime, row)`` pairs
    and each row's variant (its condition's overrides as a name, summary.json's row ``variant``;
    None: no row has one)."""
    out: dict[tuple, list[SummaryRow]] = {}
    for (regime, row), variant in zip(pairs, variants or [""] * len(pairs), strict=True):
        key = claim_catalogue.setting_key(regime, row.family, row.norm, row.batch_size, row.norm_gain_init, variant)
        out.setdefault(key, []).append(row)
    return out


def variants_of(spec: ClaimsSpec, cells: Sequence[Cell]) -> list[str]:
    """Each row's variant (the name of its condition's
    :class:`lnbench.analysis.claim_catalogue.Variant`; empty: none), in plan order: a cell's
    setting is that of one condition (:func:`lnbench.experiments.claim_regimes.cells_needed`)."""
    named = {
        (regime, _frozen(changes)): variant
        for regime, changes, variant in claim_regimes.cells_needed(spec.selected, spec.regimes)
    }
    return [named.get((cell.group, _frozen(cell.setting)), "") for cell in cells for _ in cell.cfgs]


def _frozen(changes: dict) -> tuple:
    return tuple(sorted(changes.items()))


def chance_of(baselines: dict) -> dict[str, float]:
    """Regime -> its chance accuracy (the ``chance`` baseline's mean)."""
    return {name: next(b["mean"] for b in bl if b["name"] == "chance") for name, bl in baselines.items()}


def pilot_seeds(spec: ClaimsSpec) -> dict[str, list[int]]:
    return {name: cfg.seed_list for name, cfg in spec.regimes.items()}


def confirm_plan(spec: ClaimsSpec, by_setting: dict[tuple, list[SummaryRow]], chance: dict[str, float]) -> ConfirmPlan:
    """The pilot's verdicts (its seeds only; one Holm family per task, as a plain run) and the
    confirm stage's plan from them (:func:`lnbench.analysis.confirm.plan_claims`, per task)."""
    assert spec.confirm is not None
    claims: list[claim_catalogue.Claim] = []
    pilot: list[claim_rules.ClaimResult] = []
    samples: list[claim_rules.ClaimSamples] = []
    plans: list[confirm_rules.Plan] = []
    for task in spec.tasks:
        on_task = [c for c in spec.selected if claim_tasks.task_of(c.regime) == task]
        here = claim_rules.claim_samples(on_task, by_setting, spec.regimes, chance, pilot_seeds(spec))
        results = claim_rules.claim_verdicts(on_task, here)
        claims += on_task
        pilot += results
        samples += here
        plans += confirm_rules.plan_claims(on_task, results, here, spec.confirm.max_seeds)
    fresh = {
        regime: confirm_rules.fresh_seeds(spec.regimes[regime].seed_list, n)
        for regime, n in confirm_rules.regime_seeds(claims, plans).items()
    }
    return ConfirmPlan(claims, pilot, samples, plans, fresh)


def confirm_cost(spec: ClaimsSpec, plan: ConfirmPlan) -> float | None:
    """The confirm stage's estimated training time (seconds, one worker): for each setting it
    trains, the pilot's wall time of that setting over its seeds (an ensemble's once, seeds run one
    after another summed), scaled by the fresh seeds over the pilot's (an ensemble's cost grows
    about linearly with its members: an upper estimate). None: the pilot's rows have no wall times."""
    assert spec.confirm is not None
    summary = spec.confirm.pilot_summary
    wall: dict[tuple, float] = {}
    for raw, row in zip(summary.get("rows", []), rows_of(summary)):
        key = claim_catalogue.setting_key(
            raw.get("regime", ""), row.family, row.norm, row.batch_size, row.norm_gain_init, raw.get("variant", "")
        )
        if row.wall_seconds is not None:  # an ensemble's members each record the ensemble's time
            together = row.shares_ensemble_time
            wall[key] = max(wall.get(key, 0.0), row.wall_seconds) if together else wall.get(key, 0.0) + row.wall_seconds
    if not wall:
        return None
    total = 0.0
    for regime, confirmed in plan.regimes_to_run().items():
        cfg = spec.regimes[regime]
        scale = len(plan.fresh[regime]) / max(1, len(cfg.seed_list))
        settings = {cond.setting(c.family, regime, cfg) for c in confirmed for cond in c.conditions}
        total += sum(wall.get(key, 0.0) for key in settings) * scale
    return total


def plan_from_pilot(spec: ClaimsSpec) -> ConfirmPlan:
    """:func:`confirm_plan` from the pilot folder's summary.json (its rows with their regimes,
    its baselines' chance levels)."""
    assert spec.confirm is not None
    summary = spec.confirm.pilot_summary
    rows = rows_of(summary)
    pairs = [(raw.get("regime", ""), row) for raw, row in zip(summary.get("rows", []), rows)]
    variants = [raw.get("variant", "") for raw in summary.get("rows", [])]
    return confirm_plan(spec, by_setting_of(pairs, variants), chance_of(summary.get("baselines") or {}))


#: Model families whose claims a plain ``lnbench claims`` leaves out for their cost: with the ten
#: LSTM claims (their two regimes) ``--all`` took 766 s wall on 2 cores at 5 seeds on the
#: step-by-step recurrence, 368 s on the fused kernel (docs/results.md, 2026-12-02). They stay
#: opt-in so that a plain run stays the short one; ``--all`` or ``--only ID`` runs them.
OPT_IN_FAMILIES: tuple[str, ...] = ("lstm",)

#: Regimes a plain ``lnbench claims`` leaves out: the optimizer as an axis, so that the plain run's
#: claims, and their Holm family, stay those it had before; and Ba et al.'s Figure 6 on MNIST (an MLP,
#: 2 min 27 s on 2 cores alone, 2026-12-07: ``lnbench claims --only figure6``). ``--all`` runs them.
OPT_IN_REGIMES: tuple[str, ...] = ("rnn_sgd", "transformer_sgd", "lstm_sgd", "figure6")

#: Regimes that only ``--only`` runs, not ``--all`` either: the ablation of Cooijmans et al.'s recipe
#: on MNIST (configs/claims/lstm_recipe_rows.yaml, lstm_recipe_pixels.yaml; each header gives its cost),
#: which would add its cost to --all's (~10 min of its 11-minute budget) and its 22 directional claims
#: to --all's Holm family, changing every other claim's Holm p.
ONLY_REGIMES: tuple[str, ...] = ("lstm_recipe_rows", "lstm_recipe_pixels")


def in_default_run(claim: claim_catalogue.Claim) -> bool:
    """Whether a plain ``lnbench claims`` (no ``--only``, no ``--all``) evaluates ``claim``."""
    return claim.family not in OPT_IN_FAMILIES and claim.regime not in OPT_IN_REGIMES + ONLY_REGIMES


def in_all_run(claim: claim_catalogue.Claim) -> bool:
    """Whether ``lnbench claims --all`` evaluates ``claim`` (every claim but :data:`ONLY_REGIMES`')."""
    return claim.regime not in ONLY_REGIMES


def run_by(claim: claim_catalogue.Claim) -> str:
    """What runs ``claim``: ``default`` (a plain ``lnbench claims``), ``--all``, or ``--only REGIME``."""
    if in_default_run(claim):
        return "default"
    return "--all" if in_all_run(claim) else f"--only {claim.regime}"


def check_confirmable(spec: ClaimsSpec) -> None:
    """Raise :class:`ConfigError` if a selected claim has no confirm stage: the confirm stage plans
    seeds for a paired t-test's power, which a divergence claim (Fisher's exact test), an accuracy
    claim that counts a diverged seed at chance, or a claim whose conditions override the regime's
    config (their rows are told apart by their variant, which a pilot's rows do not carry) is not."""
    own = [
        c.id
        for c in spec.selected
        if c.metric == claim_catalogue.DIVERGED or c.diverged_at_chance or any(x.overrides for x in c.conditions)
    ]
    if own:
        raise ConfigError(
            f"--confirm: {', '.join(own[:3])}{' ...' if len(own) > 3 else ''} have no confirm stage (an ablation's "
            "claims: Fisher's exact test, or a diverged seed counted at chance); run them without --confirm"
        )


def claims_spec(
    only: Sequence[str] | None,
    presets: str | Path,
    overrides: Sequence[str] = (),
    seed: int | None = None,
    everything: bool = False,
    tasks: Sequence[str] | None = None,
    option: str = "--task",
) -> ClaimsSpec:
    """The claims ``only`` (if given), else every claim (``everything``) or those of the default
    run (:func:`in_default_run`), and their regimes from ``presets/<regime>.yaml``, with the
    ``--set`` overrides and ``--seed`` applied to every regime; on each of ``tasks`` (None: trend)
    where a claim applies (:mod:`lnbench.analysis.claim_tasks`: off trend, its regime with the task's
    data).

    Raises:
        ConfigError: an unknown claim id or task, a missing or invalid preset, bad seeds, a task on
            which none of the claims applies, ``tasks`` given on which a regime of ``only``'s claims
            measures none (:func:`lnbench.analysis.claim_regimes.check_regimes_take_tasks`).
    """
    chosen = selection(only, everything)
    selected = [c for c in claim_catalogue.CLAIMS if c.id in chosen]
    selected += [claim_catalogue.norm_claim(i) for i in chosen if "@" in i]  # a card's claims (lstm_faster@rms)
    given = tasks is not None
    tasks = claim_regimes.parse_tasks([claim_tasks.CLAIMS_TASK] if tasks is None else tasks, option)
    trend_overrides, task_overrides = claim_regimes.split_overrides(overrides, tasks)
    base = claim_regimes.load_regimes(selected, Path(presets), trend_overrides, seed)
    if given and only:
        claim_regimes.check_regimes_take_tasks(selected, tasks, base, Path(presets), only, option)
    on_tasks, skipped = claim_tasks.claims_on_tasks(selected, tasks)
    if not on_tasks:
        reasons = "; ".join(sorted({f"{s['id']} on {s['task']}: {s['reason']}" for s in skipped}))
        raise ConfigError(f"--task: none of the claims applies ({reasons})")
    regimes = claim_regimes.regimes_on_tasks(base, on_tasks, Path(presets), task_overrides)
    return ClaimsSpec(on_tasks, regimes, tasks=tasks, skipped=skipped, presets=Path(presets))


def claim_ids(spec: ClaimsSpec) -> list[str]:
    """The ids of the claims ``spec`` tests (on one task or more, or on none where none applies), in
    the catalogue's order: what its folder's config.yaml records for ``--resume``."""
    ids = dict.fromkeys([c.id for c in spec.selected] + [s["id"] for s in spec.skipped])
    order = {c.id: k for k, c in enumerate(claim_catalogue.CLAIMS)}
    return sorted(ids, key=lambda i: order.get(i, len(order)))


def seed_overrides(num_seeds: int, seed: int | None) -> list[str]:
    """``--num-seeds N`` (with ``--seed S``, default 0) as ``--set`` overrides: seeds S .. S + N - 1."""
    first = seed if seed is not None else 0
    return [f"seed={first}", f"seeds=[{', '.join(str(first + k) for k in range(num_seeds))}]"]


def selection(only: Sequence[str] | None, everything: bool) -> list[str]:
    """The ids of the claims ``--only`` (or ``--all``; neither: a plain run) selects, as :func:`claims_spec` does."""
    selected = claim_catalogue.select_claims(only)
    if not only:
        selected = [c for c in selected if (in_all_run if everything else in_default_run)(c)]
    return [c.id for c in selected]


class Claims(Experiment):
    kind = "claims"
    figure_group = "claims"

    def configs(self, spec: ClaimsSpec) -> dict[str, RunConfig]:
        return {f"regime: {name}": cfg for name, cfg in spec.regimes.items()}

    def config_yaml(self, spec: ClaimsSpec) -> str:
        return claim_regimes.regimes_yaml(spec.regimes, claim_ids(spec), spec.tasks)

    def name(self, spec: ClaimsSpec) -> str:
        return spec.name

    def seeds(self, spec: ClaimsSpec) -> list[int]:
        fresh = plan_from_pilot(spec).fresh if spec.confirm is not None else {}
        return sorted(
            {s for cfg in spec.regimes.values() for s in cfg.seed_list} | {s for f in fresh.values() for s in f}
        )

    def check(self, spec: ClaimsSpec) -> None:
        """Each regime can run the claims that use it (:func:`lnbench.experiments.claim_regimes.check_regimes`)."""
        claim_regimes.check_regimes(spec.selected, spec.regimes, spec.presets)

    def plan(self, spec: ClaimsSpec, parent: Path) -> list[Cell]:
        """Each setting the claims need, on each regime's seeds; with ``--confirm``, then the
        settings of the claims the confirm stage runs, on their regime's fresh seeds."""
        cells = []
        for regime, changes, variant in claim_regimes.cells_needed(spec.selected, spec.regimes):
            cfg = spec.regimes[regime]
            name = lambda c, r=regime, v=variant: claim_regimes.setting_name(r, c, v)  # noqa: E731
            cells += seed_cells(cfg, [changes], parent, cfg.compare.target_acc, name, group=regime)
        if spec.confirm is None:
            return cells
        plan = plan_from_pilot(spec)
        for regime, confirmed in plan.regimes_to_run().items():
            fresh = plan.fresh[regime]
            cfg = spec.regimes[regime].with_changes(seed=fresh[0], seeds=fresh)
            for _, changes, variant in claim_regimes.cells_needed(confirmed, {regime: cfg}):
                name = lambda c, r=regime, v=variant: claim_regimes.setting_name(r, c, v)  # noqa: E731
                cells += seed_cells(cfg, [changes], parent, cfg.compare.target_acc, name, group=regime)
        return cells

    def answers(self, spec: ClaimsSpec, summary: dict) -> bool:
        """A confirmed run's summary.json answers ``--confirm`` with the same ``--max-seeds``; a
        pilot's does not (its confirm stage is still to be analysed, even with nothing to train)."""
        if spec.confirm is None:
            return True
        return (summary.get("confirm") or {}).get("max_seeds") == spec.confirm.max_seeds

    def baselines(self, spec: ClaimsSpec) -> Any:
        """The baselines of each regime's data; regimes with the same data and seeds (``default``,
        ``separate_placement``, ...) share one fit (a copy each)."""
        fitted: dict[tuple, Any] = {}
        out = {}
        for name, cfg in spec.regimes.items():
            key = (cfg.data.model_dump_json(), tuple(cfg.seed_list))
            if key not in fitted:
                fitted[key] = super().baselines(cfg)
            out[name] = copy.deepcopy(fitted[key])
        return out

    def analyse(self, spec: ClaimsSpec, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        regime_of_row = [cell.group for cell in cells for _ in cell.cfgs]
        variants = variants_of(spec, cells)
        by_setting = by_setting_of(list(zip(regime_of_row, rows)), variants)
        chance = chance_of(baselines)
        results = []
        confirm_record = None
        if spec.confirm is None:
            for task in spec.tasks:  # one Holm family per task, as in a run of that task alone
                on_task = [c for c in spec.selected if claim_tasks.task_of(c.regime) == task]
                results += claim_rules.evaluate_claims(on_task, by_setting, spec.regimes, chance)
        else:
            results, confirm_record = self._two_stage(spec, by_setting, chance)
        out = {
            "seeds": self.seeds(spec),
            "regimes": list(spec.regimes),
            "baselines": baselines,
            "aggregate": self._aggregate(spec, rows, regime_of_row, variants),
            "claims": [r.to_dict() for r in results],
            "verdicts": claim_rules.claim_sentences(results) + ablation.ingredient_sentences(spec.selected, results),
            "tasks": spec.tasks,
        }
        cells_table = ablation.condition_cells(spec.selected, by_setting, spec.regimes)
        if cells_table:  # an ablation's: each condition's seeds diverged and accuracy
            out["cells"] = cells_table
        if confirm_record is not None:
            out["confirm"] = confirm_record
        if spec.tasks != [claim_tasks.CLAIMS_TASK]:
            table = claim_tasks.by_task(results, spec.skipped, spec.tasks)
            out["claims_by_task"] = table
            out["verdicts"] = [*out["verdicts"], *claim_tasks.task_sentences(table, spec.tasks)]
        return out

    def _aggregate(
        self, spec: ClaimsSpec, rows: list[SummaryRow], regime_of_row: list[str], variants: list[str]
    ) -> list[dict]:
        """The aggregate over the pilot's seeds (every row of a run without --confirm: the table is
        the pilot's, as a plain run's; the fresh seeds serve the confirm stage's tests): the rows
        without a variant as always, then each variant's rows apart, its entries with their
        ``variant`` (a condition's overrides: the same norm, batch size and gain, another setting)."""
        seeds = pilot_seeds(spec)
        kept = [
            (r, v)
            for r, regime, v in zip(rows, regime_of_row, variants)
            if spec.confirm is None or r.seed in seeds.get(regime, [])
        ]
        out = aggregate_over_seeds([r for r, v in kept if not v])
        for variant in dict.fromkeys(v for _, v in kept if v):
            out += [e | {"variant": variant} for e in aggregate_over_seeds([r for r, v in kept if v == variant])]
        return out

    def _two_stage(
        self, spec: ClaimsSpec, by_setting: dict[tuple, list[SummaryRow]], chance: dict[str, float]
    ) -> tuple[list[claim_rules.ClaimResult], dict]:
        """The final verdicts of a confirmed run: the pilot's, on its seeds, where it decided;
        the confirm stage's, on the fresh seeds alone, where it was planned (one Holm family per
        task); and the record of the design (summary.json ``confirm``)."""
        assert spec.confirm is not None
        plan = confirm_plan(spec, by_setting, chance)
        results = []
        start = 0
        for task in spec.tasks:
            n = sum(claim_tasks.task_of(c.regime) == task for c in spec.selected)
            part = slice(start, start + n)
            start += n
            claims, plans = plan.claims[part], plan.plans[part]
            fresh_samples: list[claim_rules.ClaimSamples | None] = [None] * len(claims)
            confirmed = [k for k, p in enumerate(plans) if p.action == "confirm"]
            if confirmed:
                read = claim_rules.claim_samples(
                    [claims[k] for k in confirmed], by_setting, spec.regimes, chance, plan.fresh
                )
                for k, sample in zip(confirmed, read):
                    fresh_samples[k] = sample
            results += confirm_rules.confirm_verdicts(claims, plan.pilot[part], plans, fresh_samples, plan.fresh)
        record = {
            "design": "two-stage: pilot decisions kept at level 0.01; the rest planned for "
            f"{confirm_rules.POWER:.0%} power and tested on fresh seeds alone at level {confirm_rules.CONFIRM_ALPHA:g} "
            "(Holm over the confirmed directional claims of a task); family-wise error <= 0.05",
            "pilot_alpha": confirm_rules.PILOT_ALPHA,
            "confirm_alpha": confirm_rules.CONFIRM_ALPHA,
            "power": confirm_rules.POWER,
            "max_seeds": spec.confirm.max_seeds,
            "pilot_seeds": pilot_seeds(spec),
            "fresh_seeds": plan.fresh,
        }
        return results, record

    def annotate_rows(self, spec: ClaimsSpec, cells: Sequence[Cell], summary_rows: list[dict]) -> None:
        """Each row's ``regime``, and its ``variant`` where its condition has overrides."""
        for row, regime, variant in zip(
            summary_rows, [cell.group for cell in cells for _ in cell.cfgs], variants_of(spec, cells)
        ):
            row["regime"] = regime
            if variant:
                row["variant"] = variant

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        from lnbench.report import figures

        summary = RunFolder(path).summary() or {}
        if not summary.get("claims"):
            return []
        results = [claim_rules.ClaimResult(**c) for c in summary["claims"]]
        runs, setting, optimizer = figure6_runs(path, summary)
        by_task, tasks = summary.get("claims_by_task"), summary.get("tasks") or ()
        data = figures.ClaimsData(results, by_task, tasks, runs, setting, optimizer)
        return self.draw_figures(data, into or path)

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        """The claims' verdicts, counted, most frequent first (``2 held, 1 inconclusive``)."""
        if not summary.get("claims"):
            return super().headline(folder, summary)
        counts = Counter(c.get("verdict", "?") for c in summary["claims"])
        label = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))
        return make_headline(label, None, tasks_of(summary))

    def tables(self, path: Path, summary: dict) -> list[Table]:
        results = summary.get("claims") or []
        n_regimes = len(summary.get("regimes") or [])
        title = f"lnbench claims ({plural(len(results), 'claim')}, {plural(n_regimes, 'regime')})"
        out = [claim_tables.claims_table(results, title)]
        if summary.get("cells"):
            out.append(claim_tables.condition_cells_table(summary["cells"]))
        if summary.get("claims_by_task"):
            out.append(claim_tables.claims_by_task_table(summary["claims_by_task"], summary["tasks"]))
        if summary.get("baselines"):
            out.append(claim_tables.regime_baselines_table(summary["baselines"]))
        return out

    def check_confirmable(self, spec: Any) -> None:
        check_confirmable(spec)

    def confirm_stage(self, spec: Any, pilot: dict, max_seeds: int) -> tuple[Any, Experiment, Any, float | None]:
        spec.confirm = ConfirmSpec(pilot, max_seeds)
        plan = plan_from_pilot(spec)
        return spec, self, plan, confirm_cost(spec, plan) if plan.fresh else None


CLAIMS = Claims()

#: the regime of Ba et al.'s Figure 6 (configs/claims/figure6.yaml), whose learning curves figure6.png draws
FIGURE6_REGIME = "figure6"


def figure6_runs(path: Path, summary: dict) -> tuple[list[Metrics], str, str]:
    """The metrics of the ``figure6`` regime's runs in a claims folder (from summary.json's rows
    and their folders; a run whose metrics cannot be read is left out), a line saying what they
    trained (the task's sizes, the network and the budget) and the optimizer's name (``Adam``,
    ``SGD``; "" if unknown), from the first run's config.yaml."""
    rows = [r for r in summary.get("rows") or [] if r.get("regime") == FIGURE6_REGIME and r.get("run_dir")]
    runs = []
    for row in rows:
        try:
            runs.append(RunFolder(path / row["run_dir"]).metrics())
        except SchemaError:
            continue
    cfg = RunFolder(path / rows[0]["run_dir"]).config() if rows else None
    if not runs or cfg is None:
        return runs, "", ""
    data, model, train = cfg.get("data", {}), cfg.get("model", {}), cfg.get("train", {})
    optimizer = OPTIMIZERS.get(str(train.get("optimizer", next(iter(OPTIMIZERS)))))  # Adam: the default
    n_train = data.get("n_train", 0) - data.get("n_val", 0)
    width = "-".join([str(784)] + [str(model.get("hidden_size"))] * int(model.get("num_layers", 1)) + ["10"])
    setting = (
        f"{n_train} training images (the paper: 55000), {data.get('n_test')} test; MLP {width}, "
        f"{plural(int(train.get('epochs', 0)), 'epoch')} at every batch size"
    )
    return runs, setting, optimizer.torch_class if optimizer is not None else ""


def claims(
    selected: Sequence[claim_catalogue.Claim],
    regimes: dict[str, RunConfig],
    **options: Unpack[LaunchOptions],
) -> ExperimentResult:
    """``lnbench claims``: train what the ``selected`` claims need (each setting of each regime
    once, all seeds) and give each claim a verdict computed from the paired runs.

    Writes one run folder: ``config.yaml`` (every regime's resolved config), one child run per
    setting and seed, ``claims.png``, ``report.html`` and ``summary.json`` (``claims``: claim,
    regime, metric, effect, ci95, verdict, runs, ...; ``rows`` with their ``regime``;
    ``baselines`` per regime). ``options``: :class:`lnbench.experiments.base.LaunchOptions`.
    """
    return driver.run(CLAIMS, ClaimsSpec(list(selected), regimes), **options)
