"""The Experiment interface: what every experiment kind implements, and what it returns.

An experiment kind (train, compare, batchsize-sweep, sweep, claims, invariance, gradcheck) is one
module with one :class:`Experiment` subclass, registered in :mod:`lnbench.experiments.registry`.
It says what is specific to it and nothing else (scikit-learn's estimator idea, Hydra's
sweeper/launcher/task split):

- :meth:`Experiment.check`: the checks of the whole experiment (raise ``ConfigError``);
- :meth:`Experiment.plan`: the cells (the seeds of one setting each) it trains, with their names;
- :meth:`Experiment.analyse`: from the rows (one per child run, in plan order) to the rest of
  ``summary.json`` (aggregate, comparisons, verdicts, ...);
- :meth:`Experiment.compute`: the work of a kind that is not cells of training (invariance,
  gradcheck: no cells, one report), whose files the driver writes into the run folder;
- :meth:`Experiment.figures`: draws its figures from the run folder's files only, so that
  ``lnbench report`` redraws exactly what the run drew;
- :meth:`Experiment.tables`: its printed tables, from ``summary.json`` only, so that the terminal
  and ``report.html`` show the same tables.

The one driver (:mod:`lnbench.experiments.driver`) does the rest for every kind: the run folder
and its manifest, the launcher, the baselines, ``--resume``, the partial and final
``summary.json``, the figures and ``report.html``.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from lnbench.config import ConfigError, RunConfig
from lnbench.config.checks import check_memory_of_families, check_seeds
from lnbench.names import DEFAULT_TASK, seeds_train_together
from lnbench.records.folder import RunFolder
from lnbench.records.index import make_headline
from lnbench.records.schema import SchemaError, SummaryRow, read_metrics, run_facts, summary_row
from lnbench.report.captions import FigureRecord, caption_of

EpochCallback = Callable[..., None]  # (label, epoch, epochs, acc), and status= if it takes one


class LaunchOptions(TypedDict, total=False):
    """Where and how an experiment runs, the same for every kind: the keyword arguments of each
    experiment function (``compare(cfg, jobs=2)``) and of :func:`lnbench.experiments.driver.run`,
    each left out at its value in :data:`LAUNCH_DEFAULTS`.

    Keys:
        runs_dir: the folder the experiment's run folder is created in. Default: ``"runs"``.
        on_epoch: called after each epoch of each run, ``(label, epoch, epochs, test accuracy)``
            (and ``status=`` if it takes one); None: nothing. Default: None.
        jobs: local worker processes the cells are shared out to (1: in this process). Default: 1.
        resume: an earlier run folder of the same experiment and config to go on in: its finished
            cells are kept. Default: None.
        launcher: ``"local"`` or ``"submitit"`` (Slurm; ``launcher`` in the config). Default: ``"local"``.
        check_norm: check each user's norm before anything is written
            (:func:`lnbench.experiments.driver.check_plugin_norms`); False: train it unchecked, as
            its runs' run.json then says. Default: True.
        reference: an earlier run folder whose child runs are copied instead of trained where a
            whole cell's runs finished there under the same name and config (their
            ``config_hash``); each copy's run.json names its source (``copy_of``). Default: None.
    """

    runs_dir: str | Path
    on_epoch: EpochCallback | None
    jobs: int
    resume: str | Path | None
    launcher: str
    check_norm: bool
    reference: str | Path | None


#: Each :class:`LaunchOptions` key's value when it is left out.
LAUNCH_DEFAULTS = LaunchOptions(
    runs_dir="runs", on_epoch=None, jobs=1, resume=None, launcher="local", check_norm=True, reference=None
)


def epoch_callback(on_epoch: EpochCallback | None) -> EpochCallback | None:
    """The caller's progress callback as the driver calls it, ``(label, epoch, epochs, acc=None,
    status=None)``: ``on_epoch(label, epoch, epochs, acc)``, the documented signature, always gets
    its four arguments (``acc`` None when there is none); ``status`` (``kept``, ``failed``: what
    became of a run that did not train here) is passed only to a callback that takes a ``status``
    parameter (or ``**kwargs``), as :func:`lnbench.cli.console.progress` does."""
    if on_epoch is None:
        return None
    try:
        parameters = inspect.signature(on_epoch).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): the documented one
        parameters = ()  # type: ignore[assignment]
    takes_status = any(p.name == "status" or p.kind is p.VAR_KEYWORD for p in parameters)

    def report(label: str, epoch: int, epochs: int, acc: float | None = None, status: str | None = None) -> None:
        if status is not None and takes_status:
            on_epoch(label, epoch, epochs, acc, status=status)
        else:
            on_epoch(label, epoch, epochs, acc)

    return report


if TYPE_CHECKING:
    from rich.table import Table

    from lnbench.analysis.comparisons import Comparison


@dataclass
class ExperimentResult:
    """What an experiment wrote (``path``), its rows, aggregate, comparisons and verdicts."""

    path: Path
    status: str
    rows: list[SummaryRow] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    aggregate: list[dict] | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    baselines: list[dict] | dict[str, list[dict]] | None = None  # claims: per regime
    claims: list[dict] | None = None
    items: list = field(default_factory=list)  # what compute() gave the caller: invariance's cells, gradcheck's checks


@dataclass
class Computed:
    """What :meth:`Experiment.compute` did: ``files``, the JSON bodies the driver writes into the
    run folder by file name (``invariance.json``); ``error``, the message run.json records with the
    status ``failed`` (a check that failed), or None; ``items``, the objects the kind's function
    returns to its caller (:class:`lnbench.nn.invariance.Cell`, :class:`lnbench.nn.gradient_checks.Check`)."""

    files: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    items: list = field(default_factory=list)


@dataclass
class Cell:
    """One job: the configs of one cell's seeds and the folder their runs go into (picklable).
    ``setting`` is the cell's ``section__key`` changes to the experiment's config, ``group`` what
    else the experiment needs to place its rows (a claims regime)."""

    cfgs: list[RunConfig]
    parent: Path
    target_acc: float
    setting: dict = field(default_factory=dict)
    group: str = ""
    tensorboard: bool = False  # also write TensorBoard event files into each run folder (--tensorboard)
    manifest: dict = field(default_factory=dict)  # fields added to each of its runs' run.json (norm_check)


def ensemble_mechanism(cfgs: Sequence[RunConfig]) -> str:
    """How the seeds of one cell train: ``native`` (one ensemble with a member axis) or
    ``sequential`` (one model after another).

    Measured (docs/speed.md): an RNN ensemble of 5 seeds costs about 2.4x one seed, so it is
    always ``native``; an LSTM ensemble of 5 costs 2-5x one seed while a member is small, and
    at least five seeds one after another once it is not (T x B x H >= 2^17, as at MNIST by rows
    with H 128 or by pixels, or H >= 512: :data:`lnbench.names.families.LSTM_ENSEMBLE_MAX_TBH`), so an
    LSTM cell is ``sequential`` there. A Transformer step is per-op overhead at small
    batches and compute at large ones: an ensemble of 5 costs 0.35-0.6x of training them one
    after another at batch size 1, 0.7-0.9x at 16 and 1.0-1.2x at 64 (CPU time), so a
    Transformer cell is ``native`` up to batch size 16 (with the norms that have an ensemble form),
    ``sequential`` above: :func:`lnbench.names.seeds_train_together`.

    A ``native`` cell trains as an ensemble even alone (one member): a member's arithmetic does
    not depend on how many others it has, so re-running one seed of a cell reproduces it bit for bit."""
    model, (seq_len, _, _) = cfgs[0].model, cfgs[0].data.shape()
    together = seeds_train_together(model.family, model.norm, cfgs[0].train.batch_size, seq_len, model.hidden_size)
    return "native" if together else "sequential"


def seed_cells(
    cfg: RunConfig,
    settings: list[dict],
    parent: Path,
    target_acc: float,
    name: Callable[[dict], str],
    group: str = "",
) -> list[Cell]:
    """One job per setting (``section__key`` changes) with a child config per seed; settings
    whose seeds train one after another (:func:`ensemble_mechanism`) give one job per seed, so
    that the workers share them out."""
    cells = []
    for changes in settings:
        cfgs = [
            cfg.with_changes(**changes, seed=seed, seeds=None, name=f"{name(changes)}_seed{seed}")
            for seed in cfg.seed_list
        ]
        groups = [cfgs] if ensemble_mechanism(cfgs) == "native" else [[c] for c in cfgs]
        cells += [Cell(members, parent, target_acc, changes, group) for members in groups]
    return cells


def config_hash(cfg: RunConfig) -> str:
    """A child run's identity for ``--resume``: the SHA-256 of its resolved config.yaml (16 hex),
    without the keys added since at their neutral values (:meth:`RunConfig.identity_yaml`)."""
    return hashlib.sha256(cfg.identity_yaml().encode()).hexdigest()[:16]


def finished_run(path: Path, cfg: RunConfig, target_acc: float) -> tuple[SummaryRow, Path] | None:
    """The row of the run folder ``path`` if its run finished (completed or diverged) under
    ``cfg`` (its run.json's ``config_hash``), read from its files; None if it must run again (also
    when its metrics.json is missing or cannot be read: the run is trained again, not trusted)."""
    manifest = RunFolder(path).manifest()
    if manifest is None:
        return None
    if manifest.get("status") not in ("completed", "diverged") or manifest.get("config_hash") != config_hash(cfg):
        return None
    try:
        metrics = read_metrics(path)
    except SchemaError:
        return None
    row = summary_row(metrics, target_acc, path.name, *run_facts(manifest))
    return row, path


def reusable(cell: Cell, parent: Path | None = None) -> list[tuple[SummaryRow, Path]] | None:
    """The rows of a cell whose every run finished (completed or diverged) under the same
    config, read from their folders (in ``parent``, by default the cell's own folder); None if any
    must run again."""
    out = []
    for c in cell.cfgs:
        kept = finished_run((cell.parent if parent is None else parent) / c.name, c, cell.target_acc)
        if kept is None:
            return None
        out.append(kept)
    return out


def copy_sources(cells: Sequence[Cell], kept: Collection[int] = ()) -> dict[int, int]:
    """The cells of a plan whose runs are another cell's, seed for seed, each -> that cell (indices
    of ``cells``): every run's effective config (:meth:`RunConfig.effective_yaml`: the keys that
    change nothing in its model left out, ``model.norm_gain_init`` with NoNorm) equals the other
    cell's, so training it would give the same numbers. Of each set of such cells one is trained
    and the others copy its runs: the first in plan order, or with ``--resume`` one whose runs
    finished (``kept``: their indices; the first of them), as a kept cell is never copied again."""
    same: dict[tuple[str, ...], list[int]] = {}
    for k, cell in enumerate(cells):
        same.setdefault(tuple(c.effective_yaml() for c in cell.cfgs), []).append(k)
    out: dict[int, int] = {}
    for group in same.values():
        source = next((k for k in group if k in kept), group[0])
        out |= {k: source for k in group if k != source and k not in kept}
    return out


def rows_of(summary: dict) -> list[SummaryRow]:
    """The ``rows`` of a summary.json as :class:`SummaryRow` (extra keys such as ``regime`` dropped)."""
    return [SummaryRow.from_dict(r) for r in summary.get("rows", [])]


def comparisons_of(summary: dict) -> list[Comparison]:
    """The ``comparisons`` of a summary.json as :class:`Comparison` objects."""
    from lnbench.analysis.comparisons import Comparison

    return [Comparison.from_dict(c) for c in summary.get("comparisons", [])]


def run_name(path: Path) -> str:
    """The name an experiment folder was run under (its manifest's ``name``), else the folder's."""
    return RunFolder(path).name


class Experiment:
    """One experiment kind. ``spec`` is what the kind is run with: a :class:`RunConfig` for
    train, compare and the sweeps; a :class:`lnbench.experiments.claims.ClaimsSpec` for claims;
    :class:`lnbench.experiments.checks.InvarianceSpec` and ``GradcheckSpec`` for the checks."""

    kind: ClassVar[str]
    #: True for kinds whose seeds are an axis (compare, sweeps, claims): at least two seeds, memory per seed
    seeded: ClassVar[bool] = True
    #: True for a kind whose folder is its one run (train), not a parent of child runs: the driver
    #: trains its one cell into its own timestamped folder, and ``--print-config`` shows only its family's keys
    own_run: ClassVar[bool] = False

    # -- what to run -------------------------------------------------------------------------
    def configs(self, spec: Any) -> dict[str, RunConfig]:
        """The resolved configs (``--print-config``), by header ("" for a single config)."""
        return {"": spec}

    def config_yaml(self, spec: Any) -> str | None:
        """The experiment folder's config.yaml (what ``--resume`` compares); None for a kind run
        without a config (invariance, gradcheck: its folder has none and is not resumed)."""
        return spec.to_yaml()

    def name(self, spec: Any) -> str:
        return spec.name

    def seeds(self, spec: Any) -> int | list[int]:
        """What run.json records as ``seed``: the seeds, or the one seed of a kind that is not seeded."""
        return spec.seed_list

    def check(self, spec: Any) -> None:
        """Raise :class:`lnbench.config.ConfigError` (one line per problem) if ``spec`` cannot run."""
        if self.seeded:
            check_seeds(spec)
        for cfg in self.configs(spec).values():
            families, batch_sizes = self.trained(cfg)
            check_memory_of_families(cfg, families, batch_sizes, len(cfg.seed_list) if self.seeded else 1)

    def trained(self, cfg: RunConfig) -> tuple[list[str], list[int]]:
        """The model families and batch sizes the experiment trains from ``cfg`` (what the memory
        check sizes): ``model.family`` and ``train.batch_size`` unless the experiment sets them."""
        return [cfg.model.family], []

    def plan(self, spec: Any, parent: Path) -> list[Cell]:
        """The cells to train, in the order their rows appear in summary.json."""
        raise NotImplementedError

    def kept(self, cell: Cell) -> list[tuple[SummaryRow, Path]] | None:
        """With ``--resume``: the rows of ``cell`` if its runs finished in the folder (nothing to
        run again), else None (:func:`reusable`)."""
        return reusable(cell)

    def baselines(self, spec: Any) -> Any:
        """The linear baselines of the data of every seed (:mod:`lnbench.training.baselines`)."""
        from lnbench.training.baselines import baselines_for
        from lnbench.training.tasks import make_task_data

        cfgs = [spec.with_changes(seed=seed, seeds=None) for seed in spec.seed_list]
        return baselines_for(cfgs, lambda c: make_task_data(c.data, c.seed))

    def compute(self, spec: Any) -> Computed:
        """The work of a kind that is not cells of training (its :meth:`plan` is empty): run it and
        return the files of its folder and whether it failed (:class:`Computed`). The driver calls
        it inside the run folder, after the cells (a Ctrl-C leaves the folder ``interrupted``), and
        writes the files before :meth:`analyse` and the headline. Default: nothing besides the cells."""
        return Computed()

    # -- what it found -----------------------------------------------------------------------
    def analyse(self, spec: Any, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        """The keys of the final summary.json besides ``kind``, ``complete``, ``rows``, ``figures``."""
        raise NotImplementedError

    def annotate_rows(self, spec: Any, cells: Sequence[Cell], summary_rows: list[dict]) -> None:
        """Add per-row keys to summary.json's rows (e.g. a claims row's regime); none by default."""

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        """Draw the figures of the finished (or interrupted) experiment folder ``path`` from its
        files (summary.json, the children's metrics.json) into the folder ``into`` (default:
        ``path``); returns the file names drawn."""
        return []

    #: the figure group :meth:`figures` draws (``run``: the ``@figure`` functions of that group in
    #: :mod:`lnbench.report.figures`); None: it draws none
    figure_group: ClassVar[str | None] = None

    @property
    def figure_records(self) -> tuple[FigureRecord, ...]:
        """The figures :meth:`figures` draws, as records (file, caption, group, draw function, when:
        :class:`lnbench.report.captions.FigureRecord`): its group's, read on first use, so that
        importing a kind imports no matplotlib."""
        if self.figure_group is None:
            return ()
        from lnbench.report.figures import records

        return records(self.figure_group)

    def draw_figures(self, data: Any, into: Path) -> list[str]:
        """Draw the figures of its group that apply to ``data`` (the group's data:
        :class:`lnbench.report.figures.SweepData`, ...) into the folder ``into``; returns the file
        names drawn (:func:`lnbench.report.figures.draw`)."""
        from lnbench.report.figures import draw

        return draw(self.figure_group, data, into) if self.figure_group is not None else []

    def caption(self, name: str) -> str:
        """The caption report.html shows under its figure file ``name`` (its :attr:`figure_records`'); "" if none."""
        return caption_of(self.figure_records, name)

    def tables(self, path: Path, summary: dict) -> list[Table]:
        """The tables the command prints, from ``summary`` (and ``path``'s files) only."""
        return []

    def printed_after_run(self, path: Path, summary: dict, verdicts: list[str]) -> tuple[list[Table], list[str]]:
        """The tables and verdicts the command prints once its run ends (``lnbench show`` prints
        :meth:`tables` and every verdict): by default the same; a stage that follows a printed one
        (``compare --confirm``'s confirm stage) prints only what it added."""
        return self.tables(path, summary), verdicts

    # -- what ``lnbench ls`` says of it ------------------------------------------------------------
    #: the files its folder holds besides run.json once it has a result (``lnbench ls`` notes a missing one)
    holds: ClassVar[tuple[str, ...]] = ("summary.json",)

    def check_confirmable(self, spec: Any) -> None:
        """``--confirm``: raise :class:`ConfigError` when the pilot ``spec`` cannot be confirmed
        (a kind without a confirm stage: always)."""
        raise ConfigError(f"--confirm: lnbench {self.kind} has no confirm stage")

    def confirm_stage(self, spec: Any, pilot: dict, max_seeds: int) -> tuple[Any, Experiment, Any, float | None]:
        """``--confirm``: from the pilot's results (``pilot``, as a summary.json holds them) the
        confirm stage's spec, its experiment, its plan (with ``fresh``: the fresh seeds it trains)
        and its estimated cost in seconds on one worker (None: nothing to train, or no wall times);
        :mod:`lnbench.experiments.two_stage`."""
        raise ConfigError(f"--confirm: lnbench {self.kind} has no confirm stage")

    def answers(self, spec: Any, summary: dict) -> bool:
        """Whether a finished folder's summary.json is the analysis ``spec`` asks for, so that
        resuming it has nothing to write (default: yes; ``claims --confirm`` of a pilot: no)."""
        return True

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        """Its one-line result for ``lnbench ls`` (:func:`lnbench.records.index.headline_of`), from
        ``summary`` (the summary.json body being written, or read) and the folder's files: the
        best mean final test accuracy over seeds of an aggregate entry (``aggregate``, or a sweep's
        ``cells``), else, before there is one (an interrupted run), the best single run; None
        when it has none yet. The driver writes it into summary.json as ``headline``; a folder of
        an older version, without one, is given this again by ``lnbench ls``.

        Returns:
            :func:`lnbench.records.index.make_headline`'s ``{"label", "value", "text"}``, or None.

        Raises:
            TypeError, ValueError, KeyError, AttributeError: a summary of another version.
        """
        tasks = tasks_of(summary)
        if summary.get("cells"):  # a sweep's best cell as it chose it (on the validation split, if any)
            from lnbench.analysis.grid import best_cells

            chosen = best_cells(summary["cells"])
            if len(chosen) == 1:
                on_val = chosen[0].get("mean_final_val_acc") is not None
                label = f"best{' on val' if on_val else ''} {self.entry_label(chosen[0])}"
                return make_headline(label, chosen[0]["mean_final_test_acc"], tasks)
            if chosen:  # a grid over data.task: a best per task, none across tasks
                label = "; ".join(f"best {self.entry_label(c)}: {c['mean_final_test_acc']:.3f}" for c in chosen)
                return make_headline(label, None, tasks)
        entries = summary.get("aggregate") or summary.get("cells") or []
        best = _best(entries, "mean_final_test_acc", self.entry_label)
        if best is not None:
            return make_headline(f"best {best[1]}", best[0], tasks)
        best = _best(summary.get("rows") or [], "final_test_acc", lambda r: f"{r.get('run_dir', '?')}")
        return make_headline(f"best run {best[1]}", best[0], tasks) if best else None

    def entry_label(self, entry: dict) -> str:
        """How :meth:`headline` names an aggregate entry: a sweep cell by its values
        (``norm=layer, lr=0.01``), else by family, placement and norm (``rnn separate layer``)."""
        if "values" in entry and isinstance(entry["values"], dict):
            return ", ".join(f"{k.split('.')[-1]}={v}" for k, v in entry["values"].items())
        parts = [entry.get("family"), entry.get("norm_placement"), entry.get("norm")]
        return " ".join(str(p) for p in parts if p)


def tasks_of(summary: dict) -> list[str]:
    """The tasks of a summary.json body: its ``tasks`` (claims), else its rows' (sorted)."""
    return summary.get("tasks") or sorted({r.get("task", DEFAULT_TASK) for r in summary.get("rows") or []})


def _best(rows: list[dict], key: str, label: Callable[[dict], str]) -> tuple[float, str] | None:
    """The highest numeric ``key`` of ``rows`` and its row's label, or None."""
    scored = [(r[key], label(r)) for r in rows if isinstance(r.get(key), (int, float))]
    return max(scored, key=lambda s: s[0]) if scored else None
