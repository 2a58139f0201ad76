"""The experiment commands that do more than load a config and run it (:data:`OWN_BODIES`): their
bodies ``(args, **own)`` with their own options, which Typer reads with the shared ones from the
command's composed signature (:func:`lnbench.cli.options.command_parameters`): sweep's ``--grid``,
claims' options, ``--list`` and spec, compare's ``--confirm``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from lnbench.cli.confirm import MAX_SEEDS_DEFAULT, ConfirmOption, MaxSeedsOption, confirm_claims, confirm_compare
from lnbench.cli.console import fail, print_table
from lnbench.cli.launch import config_spec, launch
from lnbench.cli.options import After, ExperimentArgs
from lnbench.cli.results import VerboseOption
from lnbench.config import MAX_SEED, ConfigError  # not the schema (pydantic): --help answers at once
from lnbench.names import TASK_NAMES, family_label

GridOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--grid",
        "-g",
        metavar="KEY=V1,V2",
        help="Sweep KEY (a key of data, model or train) over these values, read as YAML; repeatable. Merged "
        "into the config's sweep.grid (as Hydra does): a key given here replaces its values there, a new one is "
        "added; --dry-run says which key came from where.",
    ),
]


def claims_list_table(listed: list) -> Table:
    """``lnbench claims --list``: each claim, its model, regime (and why), metric, conditions and
    margin, and whether a plain ``lnbench claims`` runs it."""
    from lnbench.analysis.metrics import format_amount
    from lnbench.experiments.claims import run_by

    table = Table(
        title="lnbench claims",
        title_justify="left",
        caption="run: by a plain `lnbench claims`, with --all, or only with --only REGIME",
    )
    for col in ("id", "model", "claim", "regime (why)", "metric", "a vs b", "margin", "run"):
        table.add_column(col, no_wrap=col in ("id", "margin", "run"))
    for c in listed:
        margin = ("+-" if c.direction == "equal" else "") + format_amount(c.metric, c.margin, signed=False)
        table.add_row(
            c.id,
            family_label(c.family),
            c.text,
            f"{c.regime} ({c.why})",
            c.metric,
            c.sides_label(),
            margin,
            run_by(c),
        )
    return table


def with_g(source: str) -> str:
    """:func:`lnbench.cli.launch.config_spec`'s name of a config that ``sweep -g`` changed: ``configs/sweep.yaml (with -g)``,
    ``... (with --set, -g)``."""
    return (
        source.replace(" (with --set)", " (with --set, -g)")
        if source.endswith(" (with --set)")
        else f"{source} (with -g)"
    )


def _sweep(args: ExperimentArgs, grid: GridOption = None, verbose: VerboseOption = False) -> None:
    """``lnbench sweep``: the config's sweep.grid merged with -g (its help: its entry's, lnbench.names)."""
    cfg, source = config_spec("sweep", args)
    origins = None
    if grid:
        from lnbench.config.grid_args import grid_origins, parse_grid_args, with_grid

        try:
            given = parse_grid_args(grid)
            origins = grid_origins(cfg.sweep.grid, given, source)
            source = with_g(source)
            cfg = with_grid(cfg, given, source)
        except ConfigError as exc:
            fail(str(exc))
    launch("sweep", cfg, source, args, origins, verbose)  # the grid's checks name the config "(with -g)" too


def _claims(
    *,
    presets: Annotated[
        Path,
        typer.Option("--presets", metavar="DIR", help="Folder of the regime presets (one REGIME.yaml per regime)."),
    ] = Path("configs/claims"),
    only: Annotated[
        Optional[list[str]],
        typer.Option(
            "--only",
            metavar="CLAIM",
            help="Evaluate only this claim id, or every claim of this regime (repeatable; --only figure6: Ba et al.'s "
            "Figure 6 on MNIST; --only lstm_recipe_rows: Cooijmans et al.'s recipe taken apart on MNIST by rows, which "
            "--all leaves out); see --list.",
        ),
    ] = None,
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Evaluate every claim, the LSTM's, the SGD regimes' and Figure 6's too (a plain run leaves them out for their "
            "cost: --all took 10 min on 2 idle cores, Figure 6 ~2 of them).",
        ),
    ] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the claims and their regimes, then exit.")] = False,
    task: Annotated[
        Optional[list[str]],
        typer.Option(
            "--task",
            metavar="NAME",
            help=f"Run the claims on this task ({', '.join(TASK_NAMES)}; repeatable), each claim in its regime with "
            "the task's data, where the task can measure it. Default: trend.",
        ),
    ] = None,
    tasks: Annotated[
        Optional[str],
        typer.Option("--tasks", metavar="A,B,C", help=f"Several tasks at once, e.g. --tasks {','.join(TASK_NAMES)}."),
    ] = None,
    args: ExperimentArgs,
    num_seeds: Annotated[
        Optional[int],
        typer.Option(
            "--num-seeds",
            metavar="N",
            min=2,
            max=1000,
            help="Train N seeds (seed .. seed + N - 1) in every regime, e.g. the number an inconclusive verdict asks for.",
        ),
        After("--seed"),
    ] = None,
    confirm: ConfirmOption = False,
    max_seeds: MaxSeedsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """``lnbench claims``: its own options, and the claims spec (its help: its entry's, lnbench.names)."""
    from lnbench.analysis import claim_catalogue

    if list_:
        try:
            listed = claim_catalogue.select_claims(only)
        except ConfigError as exc:
            fail(str(exc))
        table = claims_list_table(listed)
        print_table(table)
        return
    from lnbench.experiments.claim_resume import resumed_spec
    from lnbench.experiments.claims import claims_spec, seed_overrides

    overrides, seed = list(args.set_ or []), args.seed
    if num_seeds is not None:
        if any(o.replace(" ", "").startswith(("seeds=", "seed=")) for o in overrides):
            fail("--num-seeds and --set seeds/seed: give one (--num-seeds N with --seed S trains seeds S .. S + N - 1)")
        first = seed if seed is not None else 0
        if first + num_seeds - 1 > MAX_SEED:
            fail(f"--seed {first} --num-seeds {num_seeds}: the last seed, {first + num_seeds - 1}, exceeds {MAX_SEED}")
        overrides += seed_overrides(num_seeds, seed)
        seed = None  # --seed is the first of them, already in the overrides
    names = [*(task or []), *([tasks] if tasks is not None else [])] or None  # None: trend, not asked for
    option = "--tasks" if tasks is not None and not task else "--task"
    try:
        if args.resume is not None:  # the folder's own claims, tasks and regimes; an option may only agree
            given = list(args.set_ or [])
            spec = resumed_spec(args.resume, only, all_, names, given, args.seed, num_seeds, option, presets)
        else:
            spec = claims_spec(only, presets, overrides, seed, everything=all_, tasks=names, option=option)
    except ConfigError as exc:
        fail(str(exc))
    if confirm:
        confirm_claims(spec, str(presets), args, MAX_SEEDS_DEFAULT if max_seeds is None else max_seeds, verbose)
        return
    if max_seeds is not None:
        fail("--max-seeds: it bounds the confirm stage; give it with --confirm")
    launch("claims", spec, str(presets), args, verbose=verbose)


def _compare(
    args: ExperimentArgs,
    confirm: ConfirmOption = False,
    max_seeds: MaxSeedsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """``lnbench compare``: a compare, or with --confirm a pilot and its confirm stage (its help: its entry's)."""
    cfg, source = config_spec("compare", args)
    if not confirm:
        if max_seeds is not None:
            fail("--max-seeds: it bounds the confirm stage; give it with --confirm")
        launch("compare", cfg, source, args, verbose=verbose)
        return
    confirm_compare(cfg, source, args, max_seeds, verbose)


#: the kinds whose command does more than load a config and run it: their bodies (own options)
OWN_BODIES: dict[str, Callable[..., None]] = {"sweep": _sweep, "claims": _claims, "compare": _compare}
