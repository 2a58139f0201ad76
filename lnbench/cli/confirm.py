"""``--confirm`` of compare and claims: the pilot (run now, or --resume's folder), the confirm
stage's plan from its results, printed and pinned in the folder's confirm.json, then the confirm
stage on fresh seeds in the same folder (:func:`_two_stage`, the steps of
:mod:`lnbench.experiments.two_stage`)."""

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


def confirm_claims(spec: Any, source: str, args: ExperimentArgs, max_seeds: int, verbose: bool) -> None:
    """``lnbench claims --confirm``: :func:`_two_stage` with the claims' plan table."""
    from lnbench.report import confirm_tables

    _two_stage("claims", spec, source, args, verbose, max_seeds, confirm_tables.confirm_plan_table)


def confirm_compare(cfg: RunConfig, source: str, args: ExperimentArgs, max_seeds: Optional[int], verbose: bool) -> None:
    """``lnbench compare --confirm``: :func:`_two_stage` with the compare's plan table (``max_seeds``: None, the default)."""
    from lnbench.report import confirm_tables

    limit = MAX_SEEDS_DEFAULT if max_seeds is None else max_seeds
    _two_stage("compare", cfg, source, args, verbose, limit, confirm_tables.compare_plan_table)


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
    max_seeds: int,
    plan_table: Callable[[Any, int], Table],
) -> None:
    """``--confirm``: the steps of :mod:`lnbench.experiments.two_stage`, printed: the pilot (run now,
    or --resume's folder, finished first if it is not), the confirm stage's plan from its rows
    (``plan_table(plan, max_seeds)``) and its cost, then the confirm stage in the same folder (or,
    with --dry-run, the runs it would start). A folder whose confirm.json pins another plan
    (another --max-seeds) is refused, since it would test seeds already looked at."""
    import dataclasses

    from lnbench.experiments import driver, two_stage
    from lnbench.experiments.registry import EXPERIMENTS

    exp = EXPERIMENTS[kind]
    try:
        exp.check_confirmable(spec)
    except ConfigError as exc:
        fail(str(exc))
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
    try:
        stage = two_stage.plan_stage(kind, spec, folder, max_seeds, args.launcher)
        two_stage.check_pinned(stage)
    except ConfigError as exc:
        fail(str(exc))
    print_table(plan_table(stage.plan, max_seeds))
    if stage.cost is not None:
        console.print(
            f"confirm stage: about {stage.cost / 60:.1f} min of training on one worker (the pilot's wall time of each "
            "setting, scaled by its fresh seeds)",
            highlight=False,
            soft_wrap=True,
        )
    if not args.dry_run:
        two_stage.pin(stage)
    confirm_exp = None if stage.experiment is exp else stage.experiment
    launch(kind, stage.spec, source, dataclasses.replace(args, resume=folder), verbose=verbose, exp=confirm_exp)
