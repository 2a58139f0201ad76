"""The options every experiment command shares, each declared once, and a kind's command
signature composed from them.

:class:`ExperimentArgs` declares each shared option (flag, help, default) as one field; a kind's
entry in :data:`lnbench.names.EXPERIMENT_KINDS` names the ones its command takes, its CONFIG and
its help. :func:`command_parameters` composes the parameters of its command from those and the
kind's own options, and Typer reads them from the command's ``__signature__`` (``inspect.signature``
honours it), as it reads any function's. Imports neither the experiments nor the config schema:
``--help`` answers at once.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Optional, get_args, get_type_hints

import typer

from lnbench.cli.console import fail
from lnbench.config import MAX_SEED
from lnbench.names import EXPERIMENT_KINDS, EXPERIMENT_OPTIONS


def _set_values(items: Optional[list[str]]) -> Optional[list[str]]:
    """``--set`` as given, refused in one line if it sets a key twice (the last would win unseen, as
    ``-g`` twice is refused); ``lnbench.config.load_config`` itself applies overrides in order."""
    first: dict[str, str] = {}
    for item in items or []:
        key, sep, _ = item.partition("=")
        key = key.strip()
        if sep and key in first:
            fail(f"--set {key}: given twice ({first[key]} and {item.strip()}); give it once")
        first.setdefault(key, item.strip())
    return items


SetOption = Annotated[
    Optional[list[str]],
    typer.Option(
        "--set",
        "-s",
        metavar="KEY=VALUE",
        callback=_set_values,
        help="Override a config key, e.g. --set train.epochs=5 (repeatable, each key once).",
    ),
]


def _runs_dir_value(value: str | Path) -> Path:
    if not str(value).strip():  # Path("") is ".": an empty argument would write into the current folder
        fail("--runs-dir: empty; give a folder, e.g. --runs-dir runs")
    return Path(value)


RunsDirOption = Annotated[
    Path,
    typer.Option(
        "--runs-dir", metavar="DIR", parser=str, callback=_runs_dir_value, help="Folder the run folder is created in."
    ),
]
SeedOption = Annotated[
    Optional[int],
    typer.Option(
        "--seed",
        metavar="N",
        min=0,
        max=MAX_SEED,
        help="The first seed: replaces the config's seed, and a seeds list of k seeds becomes N .. N + k - 1 "
        "(the same number of seeds; seeds unset: N .. N + 4).",
    ),
]
JobsOption = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        metavar="N",
        help="Worker processes for the cells (default: the usable CPU cores). Results do not depend on it.",
    ),
]
PrintConfigOption = Annotated[
    bool,
    typer.Option(
        "--print-config", help="Print the resolved config (after --set and --seed) and exit; nothing is run or written."
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run", help="List the runs this would start, and their number, and exit; nothing is run or written."
    ),
]
ResumeOption = Annotated[
    Optional[Path],
    typer.Option(
        "--resume",
        metavar="RUN_DIR",
        help="Continue this earlier experiment folder with its own config.yaml (or CONFIG, if given, which must "
        "equal it): keep the cells whose runs finished, run the rest.",
    ),
]
LauncherOption = Annotated[
    str,
    typer.Option(
        "--launcher",
        metavar="NAME",
        help="Where cells run: local (--jobs worker processes) or submitit (Slurm jobs; see the launcher: config section).",
    ),
]
TensorBoardOption = Annotated[
    bool,
    typer.Option(
        "--tensorboard",
        help="Also write each run's curves and config as TensorBoard event files into its folder "
        "(tensorboard --logdir RUN_DIR, live); needs pip install 'lnbench[tensorboard]'.",
    ),
]

NoCheckOption = Annotated[
    bool,
    typer.Option(
        "--no-check",
        help="Train a user's norm (model.norm: 'package.module:Class') without checking it first (its gradients, "
        "each example its own, no state, not in place, a finite output: lnbench gradcheck --norm shows them all); "
        "each of its runs' run.json then says norm_check: not checked.",
    ),
]

_OPTION_DEFAULT = "option_default"  # a field's default on the command line, where it differs from its value without


@dataclass(frozen=True)
class ExperimentArgs:
    """The shared options of an experiment command, as given: each field declares one (its flag,
    help and command-line default), in ``--help``'s order (:data:`lnbench.names.EXPERIMENT_OPTIONS`).
    A command without an option runs with the field's default (without --jobs: in process)."""

    config: Optional[Path] = None  # CONFIG: its help and default are the kind's (command_parameters)
    set_: SetOption = None
    runs_dir: RunsDirOption = Path("runs")
    seed: SeedOption = None
    jobs: JobsOption = field(default=1, metadata={_OPTION_DEFAULT: None})  # None: the usable CPU cores
    print_config: PrintConfigOption = False
    dry_run: DryRunOption = False
    resume: ResumeOption = None
    launcher: LauncherOption = "local"
    tensorboard: TensorBoardOption = False
    no_check: NoCheckOption = False


def flag_of(name: str) -> str:
    """The flag of an :class:`ExperimentArgs` field (``set_`` -> ``--set``, ``runs_dir`` -> ``--runs-dir``)."""
    return "--" + name.rstrip("_").replace("_", "-")


class After:
    """``Annotated`` metadata of a kind's own option: ``--help`` lists it right after the shared
    option ``flag`` (claims' --num-seeds after --seed), not after them all."""

    def __init__(self, flag: str) -> None:
        self.flag = flag


def config_help(kind: str) -> str:
    """CONFIG's help of ``lnbench KIND``, from its entry."""
    info = EXPERIMENT_KINDS[kind]
    what = f"YAML config{' ' + info.config_holds if info.config_holds else ''}"
    own = "with --resume: the folder's own config.yaml"
    return (
        f"{what}, e.g. {info.config} ({own})." if info.config_required else f"{what} (default: {info.config}; {own})."
    )


def _with_help(annotation: Any, help: str) -> Any:
    """``annotation`` (``Annotated[T, typer.Option(...)]``) with another help text."""
    base, option, *rest = get_args(annotation)
    option = copy.copy(option)
    option.help = help
    return Annotated[base, option, *rest]


def _keyword(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def shared_names(kind: str) -> list[str]:
    """The :class:`ExperimentArgs` fields that ``lnbench KIND`` takes as options (its entry's), in order."""
    info = EXPERIMENT_KINDS[kind]
    unknown = [o for o in (*info.options, *info.option_help) if o not in EXPERIMENT_OPTIONS]
    if unknown:
        raise ValueError(f"{kind}: unknown shared option {unknown[0]}; allowed: {', '.join(EXPERIMENT_OPTIONS)}")
    return [f.name for f in fields(ExperimentArgs)[1:] if flag_of(f.name) in info.options]


def command_parameters(kind: str, body: Callable[..., None]) -> list[inspect.Parameter]:
    """The parameters of ``lnbench KIND``: CONFIG (if the kind has one), then ``body``'s own options
    before its :class:`ExperimentArgs` parameter, the shared options its entry names (with the help
    its entry gives them), and ``body``'s own options after it (one marked :class:`After` right
    after that shared option).

    Raises:
        ValueError: the entry names an option that is not shared, or ``body`` has no ``args`` parameter.
    """
    info, taken = EXPERIMENT_KINDS[kind], shared_names(kind)
    hints = get_type_hints(ExperimentArgs, include_extras=True)
    shared = []
    for f in fields(ExperimentArgs)[1:]:
        if f.name in taken:
            help = info.option_help.get(flag_of(f.name))
            annotation = hints[f.name] if help is None else _with_help(hints[f.name], help)
            shared.append(_keyword(f.name, annotation, f.metadata.get(_OPTION_DEFAULT, f.default)))
    own = list(inspect.signature(body, eval_str=True).parameters.values())
    names = [p.name for p in own]
    if "args" not in names:
        raise ValueError(f"{kind}: its command's body takes no args (ExperimentArgs) parameter")
    cut = names.index("args")
    params = [_keyword(p.name, p.annotation, p.default) for p in own[:cut]] + shared
    for p in own[cut + 1 :]:
        after = [m.flag for m in getattr(p.annotation, "__metadata__", ()) if isinstance(m, After)]
        at = [flag_of(q.name) for q in params].index(after[0]) + 1 if after else len(params)
        params.insert(at, _keyword(p.name, p.annotation, p.default))
    if info.config is not None:
        config = Annotated[Optional[Path], typer.Argument(metavar="CONFIG", help=config_help(kind), show_default=False)]
        params.insert(0, _keyword("config", config, None))
    return params
