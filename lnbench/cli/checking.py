"""The checking commands, ``lnbench invariance`` (the paper's Table 1, measured) and ``lnbench
gradcheck`` (the hand-written gradients against finite differences and PyTorch): each one report,
in a run folder or a ``--json`` file, and exit code 1 when a check fails; ``--norm`` adds a
user's own norm."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from lnbench.cli.console import console, fail, guarded, print_table, progress, work_of
from lnbench.cli.launch import check_runs_dir
from lnbench.cli.options import JobsOption, RunsDirOption
from lnbench.config import MAX_SEED  # not the schema (pydantic): --help answers at once
from lnbench.config.words import joined
from lnbench.names import NORM_REGISTRY, plural


def _user_norm(what: str):
    """``--norm PKG.MOD:CLASS`` of invariance and gradcheck: a user's norm, for ``what``."""
    where = "A lnbench.nn.Norm subclass as package.module:ClassName, or an lnbench.norms entry point; repeatable."
    return typer.Option("--norm", metavar="PKG.MOD:CLASS", help=f"{what} {where}")


#: ``--json FILE`` of invariance and gradcheck
JsonOption = Annotated[
    Optional[Path], typer.Option("--json", metavar="FILE", help="Write the report here instead of a run folder.")
]
InvarianceNormOption = Annotated[
    Optional[list[str]], _user_norm("Also measure a norm of your own (its row: measured, not checked).")
]
GradcheckNormOption = Annotated[
    Optional[list[str]], _user_norm("Also run lnbench.testing.check_norm's checks on a norm of your own.")
]


def _user_norms(specs: Optional[list[str]]) -> dict:
    """``--norm`` values -> their classes (lnbench.nn.registry.plugin_norm); a bad one is one line, exit 2."""
    if not specs:
        return {}
    from lnbench.names import is_plugin_norm
    from lnbench.nn.registry import plugin_norm

    out = {}
    for spec in specs:
        if not is_plugin_norm(spec):
            fail(f"--norm {spec}: expected 'package.module:ClassName' or an installed lnbench.norms entry point")
        try:
            out[spec] = plugin_norm(spec).layer
        except ValueError as exc:
            fail(f"--norm: {exc}")
    return out


def invariance(
    seed: Annotated[
        int,
        typer.Option(
            metavar="N", min=0, max=MAX_SEED, help="Seed of the weights, the batch and the random transformations."
        ),
    ] = 0,
    draws: Annotated[
        int,
        typer.Option(
            metavar="N",
            min=1,
            max=1000,
            help="Random draws (delta, gamma, row, case) per cell; the largest change counts.",
        ),
    ] = 5,
    runs_dir: RunsDirOption = Path("runs"),
    json_path: JsonOption = None,
    norm: InvarianceNormOption = None,
) -> None:
    from lnbench.report import check_tables

    users = _user_norms(norm)
    if json_path is None:
        check_runs_dir(runs_dir)
    elif json_path.is_dir() or not json_path.absolute().parent.is_dir():
        fail(f"--json {json_path}: give a file path in an existing folder")
    from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once

    with guarded(epochs=False) as stop:
        unmeasured: dict[str, str] = {}  # a user's norm that raises or is not shaped as its input: not in the table
        try:
            methods = None
            if users:
                from lnbench.nn.invariance import METHODS
                from lnbench.testing import invariance_method, invariance_problem

                unmeasured = {spec: why for spec, cls in users.items() if (why := invariance_problem(cls)) is not None}
                measured = {spec: invariance_method(cls) for spec, cls in users.items() if spec not in unmeasured}
                methods = {**METHODS, **measured}
            cells, path = experiments.invariance(seed, draws, runs_dir, json_path, methods=methods)
        except OSError as exc:
            _report_write_failed(exc, json_path)
        except ValueError as exc:  # lnbench.testing.NormFailure: a user's norm failed while being measured
            if not users:
                raise
            fail(f"--norm: {exc}", code=1)
        stop.folder = None if json_path is not None or path is None else path.parent
        print_table(check_tables.invariance_table([c.to_dict() for c in cells], draws))
        _print_written(path, json_path)
        wrong = [c for c in cells if not c.agrees]
        for spec, why in unmeasured.items():
            console.print(f"[bold red]--norm {spec}: not measured:[/] {why}", highlight=False, soft_wrap=True)
        if wrong:
            console.print(
                f"[bold red]{len(wrong)} of {len(cells)} cells disagree:[/] "
                + "; ".join(
                    f"{c.method} / {c.transformation}: its output is NaN or inf"
                    if c.method in users and not math.isfinite(c.max_change)
                    else f"{c.method} / {c.transformation}: measured {c.measured} (change {c.max_change:.2g}, tolerance {c.tolerance:.2g}), expected {c.expected}"
                    for c in wrong
                ),
                highlight=False,
            )
        if wrong or unmeasured:
            raise typer.Exit(1)
        checked = [c for c in cells if c.method not in users]
        yours = f"; {plural(len(users), 'norm')} of yours measured, not checked" if users else ""
        console.print(
            f"[green]All {len(checked)} cells agree with Ba et al.'s Table 1 (and RMSNorm's row, Zhang & Sennrich's Table 1; "
            f"GroupNorm's, derived){yours}.[/]"
        )


def _print_written(path: Optional[Path], json_path: Optional[Path]) -> None:
    """Where a checking command wrote its report: the JSON file given, or the run folder and its report.html."""
    if path is None:
        return
    if json_path is not None:
        console.print(f"JSON: {path}", highlight=False, soft_wrap=True)
        return
    console.print(f"Run folder: {path.parent}", highlight=False, soft_wrap=True)
    page = path.parent / "report.html"
    console.print(f"Report: {page}" if page.exists() else f"JSON: {path}", highlight=False, soft_wrap=True)


def _report_write_failed(exc: OSError, json_path: Optional[Path]) -> NoReturn:
    """A check's report could not be written: --json's file (exit 2: the user names it), or a file
    of the run folder (exit 1: a full or read-only disk), one line naming the file."""
    if json_path is not None:
        fail(f"--json {json_path}: cannot write the report ({exc.strerror or exc})")
    fail(str(exc), code=1)


def _parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        fail(f"--shape: {text!r} is not a comma-separated list of ints, e.g. 4,5,8")
    return shape


# its help names the table's rows from the norm registry (:data:`lnbench.nn.invariance.METHODS`: each kind that normalizes)
_ROWS = joined([info.label for info in NORM_REGISTRY.values() if info.normalizes], "and")
invariance.__doc__ = f"""Measure the invariance table of Ba et al. 2016 (Table 1) for {_ROWS}.

    Exit code 0 when every cell agrees with the paper (RMSNorm: Zhang & Sennrich's Table 1), 1 otherwise.
    """


def gradcheck(
    dtype: Annotated[
        str, typer.Option(metavar="DTYPE", help="dtype of the NumPy-vs-PyTorch checks: float16, float32 or float64.")
    ] = "float64",
    shape: Annotated[str, typer.Option(metavar="SHAPE", help="Input shape (..., D), comma-separated.")] = "4,5,8",
    seed: Annotated[int, typer.Option(metavar="N", min=0, max=MAX_SEED, help="Seed of the random inputs.")] = 0,
    runs_dir: RunsDirOption = Path("runs"),
    json_path: JsonOption = None,
    norm: GradcheckNormOption = None,
) -> None:
    """Check the hand-written LayerNorm gradients against finite differences and PyTorch.

    Exit code 0 when every check passes, 1 when any fails.
    """
    shape_tuple = _parse_shape(shape)
    users = _user_norms(norm)
    if json_path is None:
        check_runs_dir(runs_dir)
    elif json_path.is_dir():
        fail(f"--json {json_path}: is a folder; give a file path such as {json_path / 'gradcheck.json'}")
    elif not json_path.absolute().parent.is_dir():
        fail(f"--json {json_path}: the folder {json_path.absolute().parent} does not exist (it is not created)")
    from lnbench import experiments  # imported once the arguments are checked: --help and errors answer at once
    from lnbench.report.check_tables import gradcheck_table

    with guarded(epochs=False) as stop:
        try:
            extra = []
            if users:
                from lnbench.testing import norm_checks

                extra = [c for cls in users.values() for c in norm_checks(cls)]
            checks, path = experiments.gradcheck(dtype, shape_tuple, seed, runs_dir, json_path, extra=extra)
        except ValueError as exc:
            fail(str(exc))
        except OSError as exc:
            _report_write_failed(exc, json_path)
        stop.folder = None if json_path is not None or path is None else path.parent
        report = {"dtype": dtype, "shape": list(shape_tuple), "seed": seed, "checks": [c.to_dict() for c in checks]}
        print_table(gradcheck_table(report))
        _print_written(path, json_path)
        failed = [c for c in checks if not c.passed]
        if failed:
            console.print(
                f"[bold red]{len(failed)} of {len(checks)} checks failed:[/] "
                + "; ".join(f"{c.group}/{c.name}: {c.detail}" for c in failed),
                highlight=False,
            )
            raise typer.Exit(1)
        console.print(f"[green]All {len(checks)} checks passed.[/]")


def card(
    norm: Annotated[
        str,
        typer.Argument(
            metavar="NORM",
            help="A built-in norm (layer, batch, rms, group, weight) or a norm of your own: package.module:ClassName "
            "or an lnbench.norms entry point.",
            show_default=False,
        ),
    ],
    runs_dir: RunsDirOption = Path("runs"),
    seeds: Annotated[
        int, typer.Option(metavar="N", min=2, max=100, help="Seeds of each claim of the science section.")
    ] = 3,
    jobs: JobsOption = None,
    science: Annotated[
        bool,
        typer.Option(
            "--science/--no-science", help="Train the science section's claims (minutes), or measure the rest only."
        ),
    ] = True,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Also the LSTM's batch-size claim, Ba et al.'s Figure 6 and sequential MNIST by rows with the "
            "published recipe (tens of minutes).",
        ),
    ] = False,
    reference: Annotated[
        Optional[Path],
        typer.Option(
            metavar="DIR",
            help="An earlier card's folder: its runs of the same config (NoNorm's, LayerNorm's, BatchNorm's) are "
            "copied, not trained again.",
            show_default=False,
        ),
    ] = None,
    draws: Annotated[
        int, typer.Option(metavar="N", min=1, max=1000, help="Random draws per cell of its Table 1 row.")
    ] = 3,
    repeats: Annotated[
        int, typer.Option(metavar="N", min=1, max=1000, help="Timings per cost measurement (the median counts).")
    ] = 15,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what the card measures and trains, and exit; nothing is written.")
    ] = False,
) -> None:
    """Measure a norm's report card: conformance, gradients, invariances, cost and its claims, beside LayerNorm's.

    One run folder with card.json, card.md and card.html; the science section's claims (the norm, NoNorm, LayerNorm
    and BatchNorm on the same data and seeds) in its science folder. About 20-40 s without training, ~3-10 min with
    it on 2 cores. Exit code 0 when the card was made, whatever its verdicts (a norm that fails conformance gets a
    card that says so); 2 for a bad NORM or option.
    """
    from lnbench.config import ConfigError
    from lnbench.experiments import driver
    from lnbench.experiments.base import reusable
    from lnbench.experiments.card import CARD, CardSpec, science_folder, science_seconds, science_spec
    from lnbench.experiments.card import card as make_card
    from lnbench.experiments.claims import CLAIMS
    from lnbench.launchers.executors import usable_cores, worker_count

    if reference is not None and not science:
        fail("--reference and --no-science: give one of them (--reference reuses the science section's runs)")
    try:
        CARD.check(CardSpec(norm, draws, repeats))
        claims_spec, pairs = science_spec(norm, seeds, full) if science else (None, [])
        cells = driver.prepare(CLAIMS, claims_spec, check_norm=False) if claims_spec is not None else []
        earlier = science_folder(reference) if reference is not None else None
    except ConfigError as exc:
        fail(str(exc))
    copied = [cell for cell in cells if earlier is not None and reusable(cell, earlier) is not None]
    to_train = [cell for cell in cells if cell not in copied]
    runs = [c for cell in to_train for c in cell.cfgs]
    n_jobs = worker_count(usable_cores() if jobs is None else jobs, len(to_train))
    if dry_run:
        reused = f", {plural(len(copied), 'cell')} copied from {earlier}" if earlier is not None else ""
        trained = (
            f"science: {plural(len(pairs), 'claim')} of {norm} (and of LayerNorm and BatchNorm): "
            f"{plural(len(runs), 'run')} in {plural(len(to_train), 'cell')} to train{reused}, "
            f"{plural(seeds, 'seed')}, on {n_jobs} worker process{'' if n_jobs == 1 else 'es'}, "
            f"about {round(science_seconds(to_train) / 60) or 1} min on 2 idle cores (a rough estimate from the "
            "training steps, scaled by a measured card)"
            if science
            else "science: not trained (--no-science)"
        )
        console.print(
            f"card {norm}: lnbench.testing's checks; gradcheck and gradgradcheck (float64) alone and in a tiny LSTM "
            "and Transformer; its Table 1 row beside LayerNorm's and BatchNorm's; its cost as ratios to LayerNorm's "
            f"(~20-40 s); {trained}",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit()
    check_runs_dir(runs_dir)
    with guarded() as stop:
        with progress(work_of(runs)) as on_epoch:
            report, path = make_card(
                norm,
                runs_dir,
                draws,
                repeats,
                seeds,
                science,
                full,
                jobs=n_jobs,
                on_epoch=on_epoch if runs else None,
                reference=earlier,
            )
        stop.folder = path
        print_table(CARD.table(report))
        if report["science"]["claims"]:
            print_table(CARD.science_table(report))
        if report["science"].get("confirm") and path is not None:
            console.print(report["science"]["confirm"].replace("CARD", str(path)), highlight=False, soft_wrap=True)
        if not report["conformance"]["passed"]:
            console.print(
                f"[bold red]{report['label']} failed conformance:[/] every other section was measured on a norm "
                "that failed it.",
                highlight=False,
                soft_wrap=True,
            )
        if path is not None:
            console.print(f"Run folder: {path}", highlight=False, soft_wrap=True)
            console.print(f"Card: {path / 'card.html'} (and card.md, card.json)", highlight=False, soft_wrap=True)
