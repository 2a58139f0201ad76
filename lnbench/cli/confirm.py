"""``--confirm`` of compare and claims: the pilot (run now, or --resume's folder), the confirm
stage's plan from its results, printed and pinned in the folder's confirm.json, then the confirm
stage on fresh seeds in the same folder (:func:`_two_stage`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from lnbench.cli.console import console, fail, print_table
from lnbench.cli.launch import launch
from lnbench.cli.options import ExperimentArgs
from lnbench.config import ConfigError  # not the schema (pydantic): --help answers at once
from lnbench.names import plural

if TYPE_CHECKING:
    from lnbench.config import RunConfig


MAX_SEEDS_DEFAULT = 20  # lnbench.analysis.confirm.MAX_SEEDS (not imported: --help answers at once)
ConfirmOption = Annotated[
    bool,
    typer.Option(
        "--confirm",
        help="Settle what the run leaves open: after the pilot (this run, or --resume DIR's), each question it leaves "
        "undecided or borderline is run on the fresh seeds it needs for 80% power, and decided on them alone "
        "(docs/statistics.md, 'Confirmatory runs'). With --resume DIR --dry-run: print the plan.",
    ),
]
MaxSeedsOption = Annotated[
    Optional[int],
    typer.Option(
        "--max-seeds",
        metavar="N",
        min=2,
        max=1000,
        help="With --confirm: the most fresh seeds a question may take; one that needs more is reported as not "
        "decidable, and nothing is run for it. Default: 20.",
    ),
]


def _pilot_summary(exp: Any, spec: Any, folder: Path, launcher: str) -> dict:
    """The pilot's results as a summary.json holds them (``rows``, each with its cell's group, a
    claims regime; ``baselines``), its rows read from its finished child runs: the folder's
    summary.json is the confirm stage's once that started (an interrupted confirm has its partial one)."""
    from lnbench.experiments import driver
    from lnbench.records.folder import RunFolder

    try:
        cells = driver.prepare(exp, spec, 1, launcher, folder)
    except ConfigError as exc:
        fail(str(exc))
    rows = [row.to_dict() | {"regime": cell.group} for cell in cells for row, _ in exp.kept(cell) or []]
    return {"rows": rows, "baselines": (RunFolder(folder).summary() or {}).get("baselines")}


def confirm_claims(spec: Any, source: str, args: ExperimentArgs, max_seeds: int, verbose: bool) -> None:
    """``lnbench claims --confirm``: :func:`_two_stage` with the claims' plan."""
    from lnbench.experiments.claims import ConfirmSpec, check_confirmable, confirm_cost, plan_from_pilot
    from lnbench.report import confirm_tables

    try:
        check_confirmable(spec)
    except ConfigError as exc:
        fail(str(exc))

    def confirmed(summary: dict) -> tuple[Any, Table, Optional[float], Any, dict]:
        spec.confirm = ConfirmSpec(summary, max_seeds)
        plan = plan_from_pilot(spec)
        cost = confirm_cost(spec, plan) if plan.fresh else None
        return spec, confirm_tables.confirm_plan_table(plan, max_seeds), cost, None, plan.fresh

    _two_stage("claims", spec, source, args, verbose, confirmed, max_seeds)


def confirm_compare(cfg: RunConfig, source: str, args: ExperimentArgs, max_seeds: Optional[int], verbose: bool) -> None:
    """``lnbench compare --confirm``: :func:`_two_stage` with the compare's plan (``max_seeds``: None, the default)."""
    from lnbench.experiments.compare import CONFIRMED_COMPARE, ConfirmCompareSpec, compare_cost, compare_plan
    from lnbench.report import confirm_tables

    if len(cfg.seed_list) < 2:
        fail(f"--confirm: seeds: the pilot needs at least 2 seeds to plan from (got {cfg.seed_list})")
    limit = MAX_SEEDS_DEFAULT if max_seeds is None else max_seeds

    def confirmed(summary: dict) -> tuple[Any, Table, Optional[float], Any, dict]:
        confirm_spec = ConfirmCompareSpec(cfg, summary, limit)
        plan = compare_plan(confirm_spec)
        cost = compare_cost(confirm_spec, plan) if plan.fresh else None
        return confirm_spec, confirm_tables.compare_plan_table(plan, limit), cost, CONFIRMED_COMPARE, plan.fresh

    _two_stage("compare", cfg, source, args, verbose, confirmed, limit)


def _worst_case(exp: Any, spec: Any, max_seeds: int, launcher: str) -> str:
    """The confirm stage's largest possible size, before the pilot has run: every setting of the
    pilot on ``max_seeds`` fresh seeds (no question decided in the pilot, every one confirmable)."""
    from lnbench.experiments import driver

    try:
        configs = [c for cell in driver.prepare(exp, spec, 1, launcher, check_norm=False) for c in cell.cfgs]
    except ConfigError:
        return ""  # the pilot's own plan says what is wrong
    seeds = exp.seeds(spec)
    n_seeds = len(seeds) if isinstance(seeds, list) else 1
    if not configs or n_seeds < 1:
        return ""
    settings = max(1, len(configs) // n_seeds)
    epochs = sum(c.train.epochs for c in configs) * max_seeds // n_seeds
    return (
        f"At most, the confirm stage trains each of the pilot's {plural(settings, 'setting')} on --max-seeds "
        f"{max_seeds} fresh seeds: up to {plural(settings * max_seeds, 'run')} ({epochs} epochs), "
        f"{max_seeds / n_seeds:.3g} times the pilot's training"
    )


def _two_stage(
    kind: str,
    spec: Any,
    source: str,
    args: ExperimentArgs,
    verbose: bool,
    confirmed: Callable[[dict], tuple[Any, Table, Optional[float], Any, dict]],
    max_seeds: int,
) -> None:
    """``--confirm``: the pilot (run now, or --resume's folder, finished first if it is not), the
    confirm stage's plan from its rows (``confirmed(summary)``: the confirm stage's spec, its plan
    table, its estimated cost in seconds, its experiment (None: the kind's), its fresh seeds),
    printed, then the confirm stage in the same folder (or, with --dry-run, the runs it would
    start). The plan is pinned in the folder's confirm.json when the confirm stage starts: a later
    --confirm whose plan differs (another --max-seeds) is refused, since it would test seeds
    already looked at."""
    import dataclasses

    from lnbench.experiments import driver
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.records.folder import RunFolder

    exp = EXPERIMENTS[kind]
    if args.resume is None:
        note = (
            "--confirm: the confirm stage is planned from the pilot's results; once the pilot has run, "
            f"lnbench {kind} --resume DIR --confirm --dry-run prints its plan. {_worst_case(exp, spec, max_seeds, args.launcher)}"
            if args.dry_run
            else None
        )
        folder = launch(kind, spec, source, args, note=note, verbose=verbose)
    else:
        folder = Path(args.resume)
        try:
            cells = driver.prepare(exp, spec, 1, args.launcher, folder)
        except ConfigError as exc:
            fail(str(exc))
        if driver.cells_to_run(cells, folder, exp):
            if args.dry_run:
                console.print(
                    f"--confirm: the pilot in {folder} is not finished; lnbench {kind} --resume {folder} (its own "
                    "config) finishes it, then the confirm stage can be planned",
                    highlight=False,
                    soft_wrap=True,
                )
            launch(kind, spec, source, args, verbose=verbose)  # with --dry-run: its plan, and exit
    confirm_spec, table, cost, confirm_exp, fresh = confirmed(_pilot_summary(exp, spec, folder, args.launcher))
    pinned = folder / "confirm.json"
    record = {"max_seeds": max_seeds, "fresh_seeds": fresh}
    if pinned.is_file():
        import json

        stored = json.loads(pinned.read_text())
        if stored != json.loads(json.dumps(record)):
            fail(
                f"--confirm: {folder}'s confirm stage was planned with --max-seeds {stored.get('max_seeds')} "
                f"(fresh seeds {stored.get('fresh_seeds')}); another plan would test seeds already looked at: "
                f"give --max-seeds {stored.get('max_seeds')} (with the same lnbench)"
            )
    print_table(table)
    if cost is not None:
        console.print(
            f"confirm stage: about {cost / 60:.1f} min of training on one worker (the pilot's wall time of each "
            "setting, scaled by its fresh seeds)",
            highlight=False,
            soft_wrap=True,
        )
    if (
        not args.dry_run and not pinned.is_file()
    ):  # the plan, and the pilot's summary.json (the confirm stage rewrites it)
        from lnbench.records.io import write_json_atomic

        pilot = RunFolder(folder).summary() or {}
        if pilot.get("complete") and "confirm" not in pilot:  # the pilot's own (not an interrupted stage's partial one)
            write_json_atomic(folder / "pilot_summary.json", pilot)
        write_json_atomic(pinned, record)
    launch(kind, confirm_spec, source, dataclasses.replace(args, resume=folder), verbose=verbose, exp=confirm_exp)
