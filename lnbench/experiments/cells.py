"""Cells: the seeds of one setting, trained together into their child run folders.

A cell is the unit of work a launcher runs (:class:`Cell`, picklable). :func:`run_cell` trains
its seeds (as one ensemble with a member axis, or one after another) and writes one child run
folder per seed; :func:`copy_cell` gives a cell whose runs are another's (the same effective
config) copies of that cell's runs instead; :func:`seed_cells` turns a config and its settings into
cells. Every experiment is made of these; :mod:`lnbench.experiments.driver` runs them.
"""

from __future__ import annotations

import dataclasses
import shutil
import warnings
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from lnbench.config import RunConfig
from lnbench.experiments.base import Cell, EpochCallback, config_hash, ensemble_mechanism
from lnbench.experiments.tensorboard import TensorBoard
from lnbench.names import FAMILY_REGISTRY, has_placements, norm_uses_batch_statistics
from lnbench.nn.base import SingleValueWarning
from lnbench.nn.kernels import ensure_built
from lnbench.nn.models import build_model, ensemble_of, initial_gain
from lnbench.records.folder import RunFolder
from lnbench.records.io import atomic_write
from lnbench.records.runs import Run, mark_unfinished
from lnbench.records.schema import Metrics, SummaryRow, read_metrics, run_facts, summary_row
from lnbench.training import checkpoints, optim
from lnbench.training.loop import train_members
from lnbench.training.tasks import cell_task_data


def metrics_for(cfg: RunConfig) -> Metrics:
    """A run's metrics.json before its first epoch: what run it is (:func:`run_fields`), no values."""
    return Metrics(**run_fields(cfg))


def run_fields(cfg: RunConfig) -> dict[str, Any]:
    """The fields of metrics.json that say what run it is (family, norm, seed, placement, gain, ...),
    from its config; the others are what the run measured."""
    keys = FAMILY_REGISTRY[cfg.model.family].keys
    batch_stats = norm_uses_batch_statistics(cfg.model.norm) and "batch_norm_stats" in keys
    bn_stats = cfg.model.batch_norm_stats if batch_stats else None
    return dict(
        family=cfg.model.family,
        norm=cfg.model.norm,
        batch_size=cfg.train.batch_size,
        seed=cfg.seed,
        hidden_size=cfg.model.hidden_size,
        n_test=cfg.data.n_test,
        n_val=cfg.data.n_val,
        task=cfg.data.task,
        num_classes=cfg.data.shape()[2],
        batch_norm_stats=bn_stats,
        norm_placement=cfg.model.norm_placement if has_placements(cfg.model.family) else None,
        num_layers=cfg.model.num_layers,
        norm_gain_init=cfg.model.norm_gain_init,
        initial_gain=initial_gain(cfg.model),
    )


def label(cfg: RunConfig) -> str:
    """A run's progress label, unique within its experiment: the child run's name (a claims run
    has the same family/norm/batch size/seed in several regimes)."""
    return cfg.name


def run_cell(
    cfgs: Sequence[RunConfig],
    parent: str | Path,
    on_epoch: EpochCallback | None = None,
    timestamped: bool = False,
    target_acc: float = 0.9,
    previous: Sequence[Path | None] | None = None,
    tensorboard: bool = False,
    resume: Path | None = None,
    manifest: dict | None = None,
) -> list[tuple[SummaryRow, Path]]:
    """Train the seeds of one cell (configs equal but for ``seed`` and ``name``), each into its
    own run folder ``parent/<cfg.name>``; the building block of every experiment.

    Each run is a pure function of its config: its data comes from ``cfg.data`` and ``cfg.seed``,
    its initial weights from ``torch.manual_seed(cfg.seed)``, its batch order from the seed;
    trained in an ensemble (see :func:`ensemble_mechanism`) it follows the same arithmetic, and
    its ``run.json`` says how it was trained (``ensemble``). ``metrics.json`` is rewritten after
    every epoch, so an interrupted run keeps its epochs; so is ``checkpoint.pt``
    (:mod:`lnbench.training.checkpoints`), and a completed run saves ``weights.pt``.

    Args:
        previous: per seed, the folder of an earlier attempt at its run (or None): when every seed
            has a checkpoint there of its config and of one epoch, the cell goes on after that
            epoch, exactly as if it had not stopped (:func:`lnbench.training.checkpoints.resumable`).
        tensorboard: also write each run's curves as TensorBoard event files into its folder.
        resume: a cell of one run only: its earlier run folder, which the run goes on in (a train
            run resumed in place, ``lnbench train --resume``) instead of a new folder.
        manifest: fields added to each run's run.json (a user's norm's ``norm_check``).

    Returns:
        Per seed, the summary row (docs/run-folder.md, "summary.json") and the run folder.
    """
    ensure_built()  # in a worker too: a build is never counted in a run's wall_seconds
    mechanism = ensemble_mechanism(cfgs)
    before = list(previous) if previous is not None else [None] * len(cfgs)
    options = (timestamped, target_acc, mechanism)
    if mechanism == "sequential" and len(cfgs) > 1:
        return [
            out
            for c, p in zip(cfgs, before)
            for out in _train_members([c], parent, on_epoch, *options, [p], tensorboard, manifest=manifest)
        ]
    return _train_members(cfgs, parent, on_epoch, *options, before, tensorboard, resume, manifest)


def run_one(
    cfg: RunConfig,
    parent: str | Path,
    on_epoch: EpochCallback | None = None,
    timestamped: bool = True,
    target_acc: float = 0.9,
    tensorboard: bool = False,
    resume: Path | None = None,
    manifest: dict | None = None,
) -> tuple[SummaryRow, Path]:
    """Train one model as its own run folder (``lnbench train``): :func:`run_cell` with one seed;
    ``resume``: an earlier run folder of ``cfg`` to go on in, from its checkpoint if it has one;
    ``manifest``: fields added to its run.json."""
    previous = None if resume is None else [resume]
    return run_cell([cfg], parent, on_epoch, timestamped, target_acc, previous, tensorboard, resume, manifest)[0]


def _train_members(
    cfgs: Sequence[RunConfig],
    parent: str | Path,
    on_epoch: EpochCallback | None,
    timestamped: bool,
    target_acc: float,
    mechanism: str,
    previous: Sequence[Path | None],
    tensorboard: bool,
    resume: Path | None = None,
    manifest: dict | None = None,
) -> list[tuple[SummaryRow, Path]]:
    """Train ``cfgs`` (one cell's seeds: one ensemble for ``mechanism`` native, else one model)
    into their child run folders under ``parent``, each going on from its ``previous`` attempt's
    checkpoint where every one has one; the rows and folders, per seed (see :func:`run_cell`)."""
    cfg0, epochs = cfgs[0], cfgs[0].train.epochs
    labels = [label(c) for c in cfgs]
    metrics = [metrics_for(c) for c in cfgs]
    with ExitStack() as stack:
        runs = [
            stack.enter_context(
                Run(parent, c.name, c.to_yaml(model_family_only=True), c.seed, "train", timestamped, resume=resume)
            )
            for c in cfgs
        ]
        for run, c in zip(runs, cfgs):
            run.manifest["ensemble"] = {"mechanism": mechanism, "members": len(cfgs), "seeds": [c.seed for c in cfgs]}
            run.manifest["config_hash"] = config_hash(c)
            run.manifest.update(manifest or {})
        datas = [cell_task_data(c.data, c.seed) for c in cfgs]  # the same seed's data as its regime's other cells
        models = []
        for c, d in zip(cfgs, datas):
            torch.manual_seed(c.seed)
            models.append(build_model(c.model, d.input_size, d.seq_len, d.num_classes))
        model = ensemble_of(models) if mechanism == "native" else models[0]
        for run, c in zip(runs, cfgs):  # what train.weight_decay decays: the same names for every member
            run.manifest["weight_decay_groups"] = optim.decay_groups(model, c.train)

        hashes = [run.manifest["config_hash"] for run in runs]
        states = checkpoints.resumable(previous, hashes, epochs)
        boards = [TensorBoard(run.path, c) for run, c in zip(runs, cfgs)] if tensorboard else []
        for board, m in zip(boards, metrics):
            stack.callback(board.close, m)
        if states is not None:  # go on from the earlier attempt's checkpoints, which move here
            for run, st, p, m, name in zip(runs, states, previous, metrics, labels):
                assert p is not None  # resumable() found a checkpoint in every earlier folder
                run.manifest["resumed_from"] = {"run_dir": p.name, "epoch": st["epoch"]}
                (p / checkpoints.CHECKPOINT).replace(run.path / checkpoints.CHECKPOINT)  # in place: stays
                m.__dict__.update(Metrics.from_dict(st["metrics"]).__dict__)
                run.write_json("metrics.json", m.to_dict())
                if on_epoch is not None:
                    on_epoch(name, st["epoch"], epochs, m.test_acc[-1] if m.test_acc else None)
            for board, m in zip(boards, metrics):
                for epoch in m.epochs:
                    board.epoch(m, epoch)

        def save_checkpoints(
            epoch: int, opt: torch.optim.Optimizer, gens: list[torch.Generator], scheduler: LRScheduler | None
        ) -> None:
            states = checkpoints.member_states(model, models[0], opt, gens, metrics, epoch, scheduler)
            for run, st, digest in zip(runs, states, hashes):
                checkpoints.save(run.path / checkpoints.CHECKPOINT, {**st, "config_hash": digest})

        def epoch_done(epoch: int, ms: list[Metrics]) -> None:
            each: list[TensorBoard | None] = [*boards] if boards else [None] * len(runs)
            for run, m, name, board in zip(runs, ms, labels, each):
                if m.epochs and m.epochs[-1] == epoch:  # a member that diverged earlier has nothing new
                    run.write_json("metrics.json", m.to_dict())
                    if board is not None:
                        board.epoch(m, epoch)
                    if on_epoch is not None:
                        on_epoch(name, epoch, epochs, m.test_acc[-1] if m.test_acc else None)

        threads = torch.get_num_threads()
        torch.set_num_threads(cfg0.train.num_threads)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SingleValueWarning)
                seeds = [c.seed for c in cfgs]
                train_members(model, datas, cfg0.train, seeds, epoch_done, metrics, states, save_checkpoints)
        except BaseException as exc:  # keep the finished epochs, saying how the runs ended
            for run, m in zip(runs, metrics):
                if m.status != "diverged":  # a member that diverged before keeps saying so
                    m.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
                run.write_json("metrics.json", m.to_dict())
            raise
        finally:
            torch.set_num_threads(threads)
        notes = sorted({str(w.message) for w in caught if issubclass(w.category, SingleValueWarning)})
        for w in caught:  # pass every other warning on unchanged
            if not issubclass(w.category, SingleValueWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        for run, m, name, weights in zip(runs, metrics, labels, checkpoints.member_weights(model, models[0])):
            run.manifest["warnings"] += notes  # after what the run noted before (a soft or taken-over lock)
            run.manifest["warnings"] += [w for w in m.warnings if w not in run.manifest["warnings"]]  # this member's
            run.write_json("metrics.json", m.to_dict())
            if m.status == "completed":
                checkpoints.save(run.path / checkpoints.WEIGHTS, weights)
            (run.path / checkpoints.CHECKPOINT).unlink(missing_ok=True)  # finished: nothing to go on from
            if m.status == "diverged":
                run.set_status("diverged", f"diverged in epoch {m.diverged_at_epoch}: {m.divergence_reason}")
                if on_epoch is not None:  # account for the epochs it will not run, saying why
                    on_epoch(name, epochs, epochs, None, ending("diverged", m.diverged_at_epoch))
    return [
        (summary_row(m, target_acc, run.path.name, *run_facts(run.manifest)), run.path) for run, m in zip(runs, metrics)
    ]


def ending(status: str, diverged_at_epoch: int | None) -> str | None:
    """What the progress line says of a run that ended ``status`` instead of ``finished``:
    ``diverged at epoch 3``; None for a run that trained to its end (passed positionally, as a
    worker's progress queue forwards it)."""
    return f"diverged at epoch {diverged_at_epoch}" if status == "diverged" else None


def set_aside(cell: Cell) -> list[Path | None]:
    """Per run of ``cell``, the folder of a previous attempt at it (a dead worker's, or a resumed
    experiment's), renamed ``<name>.attempt<k>`` and marked ``failed`` if it still says running, or
    None: what it wrote is kept, and the run gets a new folder."""
    previous: list[Path | None] = []
    for c in cell.cfgs:
        old = cell.parent / c.name
        previous.append(None)
        if old.exists():
            mark_unfinished(old, "failed", "it did not finish; the cell was run again")
            attempt = 1
            while old.with_name(f"{old.name}.attempt{attempt}").exists():
                attempt += 1
            previous[-1] = old.rename(old.with_name(f"{old.name}.attempt{attempt}"))
    return previous


def run_cell_job(cell: Cell, progress: EpochCallback | None) -> list[tuple[SummaryRow, Path]]:
    previous = set_aside(cell)
    return run_cell(
        cell.cfgs, cell.parent, progress, False, cell.target_acc, previous, cell.tensorboard, manifest=cell.manifest
    )


def copy_cell(cell: Cell, source: Cell, on_epoch: EpochCallback | None = None) -> list[tuple[SummaryRow, Path]]:
    """Give each run of ``cell`` the finished run of ``source`` of its seed instead of training it
    (their effective configs are equal, so training would give the same numbers:
    :func:`lnbench.experiments.base.copy_sources`).

    Each copy is a run folder under its own name (a previous attempt set aside, :func:`set_aside`):
    its own config.yaml; the source's metrics.json with the fields that say what run it is
    (:func:`run_fields`: ``norm_placement``, ``norm_gain_init``, ...) its own; the source's
    weights.pt; a run.json with ``copy_of`` (the source folder's name), its own ``config_hash``
    and the source's status (completed or diverged, with its error), ``ensemble``,
    ``weight_decay_groups`` and ``warnings``; with ``cell.tensorboard`` its event files, written
    from its metrics. Its row is the source's but for those fields and its wall time.

    Returns:
        Per seed, the summary row and the run folder, as :func:`run_cell`.
    """
    return copy_runs(cell, [source.parent / src.name for src in source.cfgs], on_epoch, same_folder=True)


def copy_runs(
    cell: Cell, sources: list[Path], on_epoch: EpochCallback | None = None, same_folder: bool = False
) -> list[tuple[SummaryRow, Path]]:
    """Give each run of ``cell`` the finished run folder of ``sources`` (one per seed, in order) as
    :func:`copy_cell` does; ``copy_of`` is the source's name when it is in the same folder
    (``same_folder``), else its absolute path (``--reference``: another run's child)."""
    set_aside(cell)
    out = []
    for cfg, src in zip(cell.cfgs, sources):
        copy_of = src.name if same_folder else str(src.resolve())
        row, path = _copy_run(cfg, src, cell.parent, cell.target_acc, cell.tensorboard, copy_of)
        if on_epoch is not None:
            on_epoch(label(cfg), cfg.train.epochs, cfg.train.epochs, row.final_test_acc, status="copied")
        out.append((row, path))
    return out


def _copy_run(
    cfg: RunConfig, source: Path, parent: Path, target_acc: float, tensorboard: bool, copy_of: str
) -> tuple[SummaryRow, Path]:
    original = RunFolder(source).manifest() or {}
    m = dataclasses.replace(read_metrics(source), **run_fields(cfg))
    with Run(parent, cfg.name, cfg.to_yaml(model_family_only=True), cfg.seed, "train", timestamped=False) as run:
        run.manifest["copy_of"] = copy_of
        run.manifest["config_hash"] = config_hash(cfg)
        for key in ("ensemble", "weight_decay_groups"):
            run.manifest[key] = original.get(key)
        run.manifest["warnings"] += [w for w in original.get("warnings", []) if w not in run.manifest["warnings"]]
        if (source / checkpoints.WEIGHTS).exists():
            with open(source / checkpoints.WEIGHTS, "rb") as f:
                atomic_write(run.path / checkpoints.WEIGHTS, lambda out: shutil.copyfileobj(f, out))
        run.write_json("metrics.json", m.to_dict())
        if tensorboard:
            board = TensorBoard(run.path, cfg)
            for epoch in m.epochs:
                board.epoch(m, epoch)
            board.close(m)
        if original.get("status") == "diverged":
            run.set_status("diverged", original.get("error"))
    row = summary_row(m, target_acc, run.path.name, *run_facts(run.manifest))
    return row, run.path


#: A training step's fixed cost (dispatching its ops), in examples of the batch: a step costs
#: about ``STEP_OVERHEAD_EXAMPLES + batch_size`` examples' work. Measured in ``lnbench claims --all``
#: (2026-12-03): a step at batch size 1 took 0.1-0.2x one at 64 for every family.
STEP_OVERHEAD_EXAMPLES = 10


def step_cost(cell: Cell) -> float:
    """The relative cost of a training step of one run of ``cell`` (a member of an ensemble, or a
    run trained alone): its family's :attr:`~lnbench.names.FamilyInfo.cost` at batch size 64,
    halved when the cell's seeds train as one ensemble (a member of 5 costs about half a run alone;
    docs/speed.md), scaled to its batch size by :data:`STEP_OVERHEAD_EXAMPLES` (a step at batch
    size 1 costs ~0.15 of one at 64, not 1/64), times ``model.num_layers`` (each layer is one more
    recurrence, or one more block). For scheduling the cells (:func:`cost`) and the progress bar's
    remaining time."""
    cfg = cell.cfgs[0]
    batch = (STEP_OVERHEAD_EXAMPLES + cfg.train.batch_size) / (STEP_OVERHEAD_EXAMPLES + 64)
    ensemble = 0.5 if ensemble_mechanism(cell.cfgs) == "native" else 1.0
    return ensemble * batch * FAMILY_REGISTRY[cfg.model.family].cost * cfg.model.num_layers


def cost(cell: Cell) -> float:
    """A rough relative cost of a cell: steps x members x :func:`step_cost`."""
    c = cell.cfgs[0]
    steps = c.train.epochs * -(-(c.data.n_train - c.data.n_val) // c.train.batch_size)
    return steps * len(cell.cfgs) * step_cost(cell)


def failed_row(cfg: RunConfig, target_acc: float) -> SummaryRow:
    m = metrics_for(cfg)
    m.status = "failed"
    return summary_row(m, target_acc, cfg.name)
