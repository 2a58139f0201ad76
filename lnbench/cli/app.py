"""The ``lnbench`` command line: thin Typer commands over the experiments' registry.

Every experiment command is built from its kind's entry (:data:`lnbench.names.EXPERIMENT_KINDS`)
and the shared options (:mod:`lnbench.cli.options`) by :func:`experiment_command`, with a body of
its own where it has options of its own (:mod:`lnbench.cli.bodies`), and does the same
(:func:`lnbench.cli.launch.launch`): load the config (``--set``, ``--seed``), run every check of the
experiment, then ``--print-config``, ``--dry-run`` or the run with progress, and print the
experiment's own tables. The checking commands are :mod:`lnbench.cli.checking`'s, the commands that
read run folders :mod:`lnbench.cli.folders`'. A mistake the user can fix is one line on stderr and
exit code 2, before any run folder exists. Heavy modules (torch, SciPy, matplotlib) are imported
only once the arguments are checked, so that ``--help`` and errors answer at once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Optional

import typer

from lnbench import __version__
from lnbench.cli import checking, folders
from lnbench.cli.bodies import OWN_BODIES
from lnbench.cli.console import Command, OneLineErrors, console
from lnbench.cli.launch import config_spec, launch
from lnbench.cli.options import ExperimentArgs, command_parameters, shared_names
from lnbench.cli.results import VerboseOption
from lnbench.names import EXPERIMENT_KINDS

app = typer.Typer(
    name="lnbench",
    help="Train and compare NoNorm / BatchNorm / LayerNorm RNNs, LSTMs, Transformers and MLPs on CPU, "
    "check the from-scratch LayerNorm gradients, sweep the batch size, test the claims about LayerNorm, "
    "and measure the paper's invariance table.",
    cls=OneLineErrors,  # a mistake Typer catches is one line, exit 2, as lnbench's own are
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # "rich" read [tensorboard] in a help text as markup and dropped it
    epilog="Example: lnbench compare --set train.epochs=10 --set seeds=[0,1,2,3,4]",
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # no torch import: --version answers at once

        console.print(f"lnbench {__version__} (torch {version('torch')}, numpy {version('numpy')})", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Train and compare NoNorm / BatchNorm / LayerNorm RNNs, LSTMs, Transformers and MLPs on CPU, check the
    from-scratch LayerNorm gradients, sweep the batch size, test the claims about LayerNorm, and
    measure the paper's invariance table."""


def experiment_command(
    kind: str, body: Optional[Callable[..., None]] = None, into: typer.Typer = app
) -> Callable[..., None]:
    """Add the command ``lnbench KIND`` to ``into``, built from the kind's entry in
    :data:`lnbench.names.EXPERIMENT_KINDS` (its help, CONFIG, the shared options it takes:
    :mod:`lnbench.cli.options`) and ``body``'s own options (:func:`command_parameters`).

    ``body(args, **own)`` runs it with the shared options as :class:`ExperimentArgs` (a kind
    without one of them gets its default there) and its own by name; default: load the config
    (:func:`lnbench.cli.launch.config_spec`) and run the experiment (:func:`lnbench.cli.launch.launch`). Returns the command.
    """

    def run(args: ExperimentArgs, verbose: VerboseOption = False) -> None:
        cfg, source = config_spec(kind, args)
        launch(kind, cfg, source, args, verbose=verbose)

    shared = ["config", *shared_names(kind)]
    runs = body or run

    def command(**given: Any) -> None:
        runs(args=ExperimentArgs(**{name: given.pop(name) for name in shared if name in given}), **given)

    command.__signature__ = inspect.Signature(command_parameters(kind, runs))  # type: ignore[attr-defined]
    return into.command(kind, cls=Command, help=EXPERIMENT_KINDS[kind].help)(command)


for _kind in EXPERIMENT_KINDS:  # in lnbench --help's order, before invariance
    experiment_command(_kind, OWN_BODIES.get(_kind))
#: the commands that are not an experiment's, after them in lnbench --help's order
for _name, _command in (
    ("invariance", checking.invariance),
    ("report", folders.report_cmd),
    ("gradcheck", checking.gradcheck),
    ("card", checking.card),
    ("export", folders.export_cmd),
    ("ls", folders.ls_cmd),
    ("show", folders.show_cmd),
):
    app.command(_name, cls=Command)(_command)
