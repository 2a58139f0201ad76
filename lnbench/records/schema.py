"""The two JSON bodies every other module shares, as typed structures written and read here only.

- :class:`Metrics`: the body of a run's ``metrics.json`` (per-epoch metrics and probes).
- :class:`SummaryRow`: one row of a compare or sweep table (``summary.json`` ``rows``), derived
  from a :class:`Metrics` by :func:`summary_row`.

The rule for diverged runs lives here, once: a run whose status is ``diverged`` has no final
accuracy or loss (``None``): its weights are not trustworthy, and it enters neither means nor
tests. Tables, aggregates, verdicts and plots all read these fields.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from lnbench.names import FAMILY_NAMES, NORM_KINDS, TASKS, seeds_train_together


def _listed(names: tuple[str, ...]) -> str:
    """``a``, ``b`` or ``c`` as the schema reference writes them."""
    quoted = [f"`{n}`" for n in names]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


SCHEMA_VERSION = 5  # 2: test_correct, test_correct_batch_stats, divergence_reason, batch_norm_stats; 3: probes; 4: val_*, lr;  # 5: warnings


class SchemaError(ValueError):
    """A metrics or summary file this version cannot read; the message names the file."""


def _metric(
    doc: str, *, default: Any = None, factory: Callable[[], Any] | None = None, per_epoch: str | None = None
) -> Any:
    """A :class:`Metrics` field declared once: its default (or ``factory``), what it holds (``doc``,
    docs/schema-reference.md's text) and, for a field recorded per epoch, its shape
    (:data:`PER_EPOCH_SHAPES`), which the readers (``lnbench.load``, TensorBoard) iterate."""
    metadata = {"doc": doc, "per_epoch": per_epoch}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class Metrics:
    """Per-epoch metrics of one run: the body of ``metrics.json`` (fields: :data:`METRICS_DOCS`).

    Lists indexed by epoch hold one value per completed epoch; ``test_correct`` holds one 0/1
    per test sequence for the last completed epoch (so two runs on the same test set can be
    compared pairwise, e.g. by an exact McNemar test).
    """

    family: str = _metric(f"Model family trained: {_listed(FAMILY_NAMES)}.", default="rnn")
    norm: str = _metric(f"Norm kind: {_listed(NORM_KINDS)}, or a user's `package.module:Class`.", default="layer")
    batch_size: int = _metric("Training mini-batch size B.", default=64)
    seed: int = _metric("The run's seed (its data, initial weights and batch order).", default=0)
    hidden_size: int = _metric("Hidden size H of the model.", default=64)
    n_test: int = _metric("Number of test sequences.", default=0)
    n_val: int = _metric(
        "Number of validation sequences (`data.n_val`, carved out of the training data); 0: no validation split.",
        default=0,
    )
    task: str = _metric(f"The task (`data.task`): {_listed(tuple(TASKS))}.", default="trend")
    num_classes: int = _metric(
        "Number of classes C of the task (2 for trend and adding, 10 for digits and mnist); chance is 1 / C.", default=2
    )
    batch_norm_stats: str | None = _metric(
        "RNN with BatchNorm: `pooled` or `per_timestep` running statistics; otherwise null.", default=None
    )
    norm_placement: str | None = _metric(
        "RNN: where the norm sits, `joint` (Ba et al. eq. 4) or `separate`; null for the Transformer.", default=None
    )
    num_layers: int | None = _metric(
        "`model.num_layers`: the RNN's and the LSTM's stacked layers, the Transformer's blocks; null in "
        "files written before it was recorded.",
        default=None,
    )
    norm_gain_init: float | None = _metric(
        "`model.norm_gain_init` as set: the initial value of every norm gain; null: each model's paper's.", default=None
    )
    initial_gain: float | None = _metric(
        "The value the norm gains started at (resolved: 1, or the BN-LSTM's 0.1, when `norm_gain_init` is "
        "null); null for norm none or weight.",
        default=None,
    )
    status: str = _metric(
        "`running` while training, then `completed` or `diverged` (`interrupted` / `failed` if stopped).",
        default="running",
    )
    epochs: list[int] = _metric("The epochs completed, 1..E.", factory=list)
    train_loss: list[float] = _metric(
        "Per epoch: mean cross-entropy over the epoch's mini-batches (nats).", factory=list, per_epoch="scalar"
    )
    test_loss: list[float] = _metric(
        "Per epoch: cross-entropy over the whole test set in eval mode (nats; BatchNorm: running statistics).",
        factory=list,
        per_epoch="scalar",
    )
    test_acc: list[float] = _metric(
        "Per epoch: accuracy over the whole test set in eval mode (a fraction; BatchNorm: running statistics).",
        factory=list,
        per_epoch="scalar",
    )
    val_loss: list[float] = _metric(
        "Per epoch: cross-entropy over the whole validation split in eval mode (nats); empty when `n_val` is 0 "
        "(and in files before version 4).",
        factory=list,
        per_epoch="scalar",
    )
    val_acc: list[float] = _metric(
        "Per epoch: accuracy over the whole validation split in eval mode (a fraction); empty when `n_val` is 0. "
        "Selections (the first epoch at the target, a sweep's best cell) read it when there is one.",
        factory=list,
        per_epoch="scalar",
    )
    lr: list[float] = _metric(
        "Per epoch: the learning rate the epoch trained at (`train.lr_schedule`); empty in files before version 4.",
        factory=list,
        per_epoch="scalar",
    )
    test_acc_batch_stats: list[float] | None = _metric(
        "BatchNorm only, per epoch: test accuracy with the statistics of test mini-batches of "
        "the training batch size; otherwise null.",
        default=None,
        per_epoch="scalar",
    )
    test_acc_running_stats: list[float] | None = _metric(
        "BatchNorm with `model.batch_norm_population: recomputed` only, per epoch: test "
        "accuracy with the running averages of training, measured before the population statistics that `test_acc` "
        "uses are recomputed; otherwise null.",
        default=None,
        per_epoch="scalar",
    )
    test_correct: list[int] | None = _metric(
        "One 0/1 per test sequence at the last completed epoch: 1 where it was classified right "
        "(pairs two runs on the same test set, e.g. for an exact McNemar test).",
        default=None,
    )
    test_correct_batch_stats: list[int] | None = _metric(
        "BatchNorm only: `test_correct` with batch statistics; otherwise null.", default=None
    )
    hidden_norm_init: list[float] = _metric(
        ("T values: mean L2 norm of h_t over the test set at initialisation, as the network behaves in training."),
        factory=list,
    )
    hidden_norm: list[list[float]] = _metric(
        "Per epoch, T values: the same after the epoch (eval mode). Transformer: the residual "
        "stream after the last block, per position.",
        factory=list,
        per_epoch="curve",
    )
    grad_norm: dict[str, list[float]] = _metric(
        "{parameter name: per epoch}: L2 norm of each parameter tensor's gradient, mean over the "
        "epoch's steps (before clipping).",
        factory=dict,
        per_epoch="by_name",
    )
    scale_quartile_edges: list[float] | None = _metric(
        "3 values: the test set's input-scale (s) quartile boundaries the probes group by.", default=None
    )
    hidden_norm_by_scale: list[list[list[float | None]]] = _metric(
        ("Per epoch, 4 x T: mean ||h_t|| per timestep for each quartile of the input scale s (eval mode)."),
        factory=list,
        per_epoch="curve",
    )
    hidden_norm_by_scale_init: list[list[float | None]] | None = _metric(
        "4 x T: the same at initialisation.", default=None
    )
    scale_spearman: list[float | None] = _metric(
        "Per epoch: Spearman correlation of ||h_T|| with s over the test set (1: the state's size "
        "follows the input's scale; 0: it does not); null when undefined.",
        factory=list,
        per_epoch="scalar",
    )
    scale_spearman_init: float | None = _metric("The same at initialisation.", default=None)
    saturation: list[float | None] = _metric(
        "RNN and LSTM, per epoch: fraction of tanh units with |h| > 0.99 over the test set's samples, "
        "timesteps and units (LSTM: of its gate units, sigmoids on tanh's scale); null for the Transformer.",
        factory=list,
        per_epoch="scalar",
    )
    saturation_by_scale: list[list[float | None] | None] = _metric(
        "RNN and LSTM, per epoch, 4 values: `saturation` per input-scale quartile.", factory=list, per_epoch="by_scale"
    )
    saturation_init: float | None = _metric("RNN and LSTM: `saturation` at initialisation.", default=None)
    grad_ratio: list[float | None] = _metric(
        "RNN and LSTM, per epoch: ||dL/dh_1|| / ||dL/dh_T|| on the test set (total derivatives through "
        "the recurrence); << 1: the gradient vanishes going back in time, >> 1: it explodes; null for the Transformer.",
        factory=list,
        per_epoch="scalar",
    )
    grad_ratio_init: float | None = _metric("RNN and LSTM: `grad_ratio` at initialisation.", default=None)
    hidden_norm_by_layer: list[list[list[float]]] | None = _metric(
        "A stacked RNN or LSTM (`model.num_layers` > 1), per epoch, L x T: `hidden_norm` of each "
        "layer, layer 1 first (`hidden_norm` and the other probes without `_by_layer` are layer 1's); null for one layer.",
        default=None,
        per_epoch="curve",
    )
    hidden_norm_by_layer_init: list[list[float]] | None = _metric("L x T: the same at initialisation.", default=None)
    scale_spearman_by_layer: list[list[float | None]] | None = _metric(
        "A stacked RNN or LSTM, per epoch, L values: `scale_spearman` of each layer's h_T.",
        default=None,
        per_epoch="by_layer",
    )
    scale_spearman_by_layer_init: list[float | None] | None = _metric(
        "L values: the same at initialisation.", default=None
    )
    saturation_by_layer: list[list[float | None]] | None = _metric(
        "A stacked RNN or LSTM, per epoch, L values: `saturation` of each layer's units.",
        default=None,
        per_epoch="by_layer",
    )
    saturation_by_layer_init: list[float | None] | None = _metric("L values: the same at initialisation.", default=None)
    grad_ratio_by_layer: list[list[float | None]] | None = _metric(
        "A stacked RNN or LSTM, per epoch, L values: `grad_ratio` of each layer's h_1 and h_T "
        "(total derivatives through the stack: layer l's dL/dh_t takes every path through the layers above).",
        default=None,
        per_epoch="by_layer",
    )
    grad_ratio_by_layer_init: list[float | None] | None = _metric("L values: the same at initialisation.", default=None)
    grad_norm_layer: dict[str, list[float]] = _metric(
        "{layer: per epoch}: `grad_norm` per layer (all tensors of one Linear or norm, e.g. "
        "`head`, `cell.norm`; an RNN's `cell.W_hh` and `cell.W_xh` are layers of their own; a stacked model's layer l "
        "is `cell_<l>`: `cell_2.W_hh`, `cell_2.norm`).",
        factory=dict,
        per_epoch="by_name",
    )
    epoch_seconds: list[float] = _metric(
        "Per epoch: wall time in seconds (a member of a seed ensemble reports the ensemble's).",
        factory=list,
        per_epoch="scalar",
    )
    diverged_at_epoch: int | None = _metric(
        ("The epoch the run diverged in (training stops there and it is not evaluated); otherwise null."), default=None
    )
    divergence_reason: str | None = _metric(
        "Why it diverged (a non-finite loss, gradient, weights or optimizer state, or a loss above "
        "100 ln C nats; a non-finite gradient's names its tensor); otherwise null.",
        default=None,
    )
    warnings: list[str] = _metric(
        "What training noticed and went on with, one sentence each, also in run.json's `warnings` and the "
        "printed notes: a gradient L2 norm above 1e6 (`lnbench.training.gradients.LARGE_GRAD_NORM`), noted once, at its "
        "first step; empty in files before version 5.",
        factory=list,
    )
    schema_version: int = _metric(
        f"{SCHEMA_VERSION}; files of versions 1 to 4 (without the per-example results, the "
        "probes, the validation split and learning rates, or the warnings) are still read.",
        default=SCHEMA_VERSION,
    )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict, source: str = "metrics.json") -> "Metrics":
        """Read a metrics body; version 1 files (no per-example results) are read too.

        Raises:
            SchemaError: a newer ``schema_version`` or a body that is not a mapping.
        """
        if not isinstance(raw, dict):
            raise SchemaError(f"{source}: expected a JSON object")
        version = raw.get("schema_version", 1)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise SchemaError(
                f"{source}: schema_version {version!r} is newer than this lnbench reads ({SCHEMA_VERSION})"
            )
        known = {f.name for f in fields(cls)}
        body = {k: v for k, v in raw.items() if k in known}
        body["schema_version"] = version  # the file's, not this lnbench's: a version 1 file says none
        return cls(**body)


#: The shapes a per-epoch field of :class:`Metrics` comes in (its ``per_epoch`` metadata): one
#: value per epoch; per layer (epochs x L); per input-scale quartile (epochs x 4); a curve over
#: timesteps (epochs x T, x 4 x T, x L x T); by name ({parameter or layer: per epoch}).
PER_EPOCH_SHAPES = ("scalar", "by_layer", "by_scale", "curve", "by_name")


def epoch_fields(shape: str) -> tuple[str, ...]:
    """The :class:`Metrics` fields recorded per epoch in ``shape`` (:data:`PER_EPOCH_SHAPES`), in
    declaration order.

    Raises:
        ValueError: an unknown shape."""
    if shape not in PER_EPOCH_SHAPES:
        raise ValueError(f"per-epoch shape {shape!r}: expected one of {', '.join(PER_EPOCH_SHAPES)}")
    return tuple(f.name for f in fields(Metrics) if f.metadata.get("per_epoch") == shape)


#: The per-epoch fields by shape, read off the fields' declarations: ``lnbench.load``'s tables
#: (:mod:`lnbench.records.tidy`) and TensorBoard's scalars (:mod:`lnbench.experiments.tensorboard`)
#: iterate them, so a new per-epoch field reaches both by its declaration alone.
EPOCH_SCALARS = epoch_fields("scalar")
EPOCH_BY_LAYER = epoch_fields("by_layer")
EPOCH_BY_SCALE = epoch_fields("by_scale")
EPOCH_CURVES = epoch_fields("curve")
EPOCH_BY_NAME = epoch_fields("by_name")

#: What each :class:`Metrics` field holds, from its declaration (docs/schema-reference.md is
#: generated from this). "per epoch": one value per completed epoch; T: the sequence length;
#: *_init: before training, with BatchNorm on batch statistics of mini-batches of the training batch size.
METRICS_DOCS: dict[str, str] = {f.name: f.metadata["doc"] for f in fields(Metrics)}


def at_epoch(values: list | None, i: int) -> Any:
    """The ``i``-th (0-based) epoch's entry of a per-epoch field, or None where it has none (an
    empty or shorter list: an older file, or a probe that was not run)."""
    return values[i] if values is not None and i < len(values) else None


def read_metrics(path: str | Path) -> Metrics:
    """Load ``metrics.json`` (a file, or a run folder holding one).

    Raises:
        SchemaError: unreadable, not JSON, or a newer schema version.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{path}: cannot read metrics ({exc})") from None
    return Metrics.from_dict(raw, str(path))


def selection_split(m: Metrics) -> str:
    """``val`` if the run has a validation split (``n_val`` > 0), else ``test``: the split every
    selection reads (a target's first epoch, a sweep's best cell)."""
    return "val" if m.n_val > 0 else "test"


def first_epoch_at(test_acc: Sequence[float | None], target: float) -> int | None:
    """The first epoch (1-based) whose accuracy (``test_acc``, or the validation split's) is at or
    above ``target`` (a fraction); None if none is. Reaching the target counts even if the accuracy drops again later."""
    return next((i + 1 for i, a in enumerate(test_acc) if a is not None and a >= target), None)


#: The :class:`SummaryRow` fields kept in memory only (one value per test example)
_PER_EXAMPLE = ("test_correct", "test_correct_batch_stats")


#: what separates a run's note (``Metrics.warnings``) into its fact and its explanation:
#: ``<fact>: <explanation>``, the fact holding no ``": "`` (:func:`lnbench.report.notes.split_note`)
NOTE_WHY = ": "


@dataclass
class SummaryRow:
    """One run in a table: what was trained, how it ended, and its final numbers (fields:
    :data:`SUMMARY_ROW_DOCS`).

    ``final_*`` are the last completed epoch's values (the probes' too: ``final_scale_spearman``,
    ``final_saturation``, ``final_grad_ratio``, see :mod:`lnbench.training.probes`), or None when the run diverged (see the
    module docstring). ``mean_train_loss`` is the area under the train-loss curve divided by
    the number of epochs (nats): convergence speed without a threshold. ``test_correct`` is
    kept in memory for paired tests and not written into summary.json (it is in metrics.json).
    """

    family: str
    norm: str
    batch_size: int
    seed: int
    status: str
    epochs_completed: int
    final_test_acc: float | None
    final_test_acc_batch_stats: float | None
    final_train_loss: float | None
    final_test_loss: float | None
    mean_train_loss: float | None
    first_epoch_at_target: int | None
    n_test: int
    batch_norm_stats: str | None = None
    norm_placement: str | None = None
    norm_gain_init: float | None = None
    initial_gain: float | None = None
    task: str = "trend"
    num_classes: int = 2
    n_val: int = 0
    final_val_acc: float | None = None
    final_val_loss: float | None = None
    selected_on: str = "test"
    final_scale_spearman: float | None = None
    final_saturation: float | None = None
    final_grad_ratio: float | None = None
    wall_seconds: float | None = None
    trained_together: bool | None = None
    warnings: list[str] = field(default_factory=list)
    run_dir: str = ""
    diverged_at_epoch: int | None = None
    divergence_reason: str | None = None
    test_correct: list[int] | None = field(default=None, repr=False)
    test_correct_batch_stats: list[int] | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, row: dict) -> SummaryRow:
        """A summary.json row (extra keys such as ``regime`` dropped).

        Raises:
            TypeError: a row without one of the required fields (of another version)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in known})

    def to_dict(self) -> dict:
        """The fields summary.json holds (all but the per-example ``test_correct*`` lists), as
        :func:`dataclasses.asdict` gives them: lists copied. Skipping those lists, not copying and
        dropping them, matters: summary.json is written after every cell, with every row so far."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), list) else v
            for f in fields(self)
            if f.name not in _PER_EXAMPLE
        }

    @property
    def shares_ensemble_time(self) -> bool:
        """Whether :attr:`wall_seconds` is the time of an ensemble the run trained in with its
        cell's other seeds (so that each of them reports about the same time): :attr:`trained_together`,
        or for a row written before that was recorded, its family's rule then (no size limit)."""
        if self.trained_together is not None:
            return self.trained_together
        return seeds_train_together(self.family, self.norm, self.batch_size)

    @property
    def ok(self) -> bool:
        """Finished without diverging and has a final accuracy."""
        return self.status != "diverged" and self.final_test_acc is not None


#: What each :class:`SummaryRow` field holds (docs/schema-reference.md is generated from this).
SUMMARY_ROW_DOCS: dict[str, str] = {
    "family": f"Model family: {_listed(FAMILY_NAMES)}.",
    "norm": f"Norm kind: {_listed(NORM_KINDS)}, or a user's `package.module:Class`.",
    "batch_size": "Training mini-batch size B.",
    "seed": "The run's seed.",
    "status": "The run's status (see run.json statuses).",
    "epochs_completed": "Number of epochs completed.",
    "final_test_acc": "Test accuracy after the last epoch (a fraction; eval mode); null if diverged.",
    "final_test_acc_batch_stats": "BatchNorm only: the same with batch statistics; otherwise null.",
    "final_train_loss": "Train loss of the last epoch (nats); null if diverged.",
    "final_test_loss": "Test loss after the last epoch (nats); null if diverged.",
    "mean_train_loss": "Area under the train-loss curve divided by the number of epochs (nats): convergence "
    "speed without a threshold; null if diverged.",
    "first_epoch_at_target": "First epoch (1-based) whose accuracy on the `selected_on` split (validation if "
    "there is one, else test) reached `compare.target_acc`; null if none did (a diverged run's earlier epochs count).",
    "n_test": "Number of test sequences.",
    "n_val": "Number of validation sequences (`data.n_val`); 0: none.",
    "final_val_acc": "Validation accuracy after the last epoch (a fraction; eval mode); null without a validation "
    "split or if diverged.",
    "final_val_loss": "Validation loss after the last epoch (nats); null without a validation split or if diverged.",
    "selected_on": "The split the selections read, `val` (`n_val` > 0) or `test`: `first_epoch_at_target`, and a "
    "sweep's best cell.",
    "task": "The task (`data.task`).",
    "num_classes": "Number of classes C of the task.",
    "batch_norm_stats": "RNN with BatchNorm: `pooled` or `per_timestep`; otherwise null.",
    "norm_placement": "RNN: `joint` or `separate` (the group this row is compared in); null for the Transformer.",
    "norm_gain_init": "`model.norm_gain_init` as set (a set value is part of the group the row is compared in); "
    "null: each model's paper's gains.",
    "initial_gain": "The value the norm gains started at (1, the BN-LSTM's 0.1, or `norm_gain_init`); null for none "
    "and weight.",
    "final_scale_spearman": "Probe after the last epoch: Spearman correlation of ||h_T|| with the input scale s.",
    "final_saturation": "Probe after the last epoch (RNN): fraction of saturated tanh units.",
    "final_grad_ratio": "Probe after the last epoch (RNN): ||dL/dh_1|| / ||dL/dh_T||.",
    "wall_seconds": "Wall time of the run in seconds (a member of a seed ensemble: about the ensemble's, its members' "
    "folders closing in turn; a copy of an identical run: the copying's).",
    "trained_together": "Whether the run trained in one ensemble with its cell's other seeds (run.json's "
    "`ensemble.mechanism` is `native`); null in summaries written before it was recorded.",
    "warnings": "Warnings raised during the run (e.g. BatchNorm at batch size 1).",
    "run_dir": "The child run folder's name inside the experiment's folder.",
    "diverged_at_epoch": "The epoch the run diverged in (as metrics.json); null if it did not.",
    "divergence_reason": "Why it diverged (as metrics.json); null if it did not.",
    "test_correct": "In memory only, for paired tests; not written to summary.json (it is in metrics.json).",
    "test_correct_batch_stats": "In memory only, like `test_correct`.",
}


def run_facts(manifest: dict) -> tuple[float | None, list[str] | None, bool | None]:
    """What a run's row takes from its run.json, as :func:`summary_row`'s last arguments: its wall
    time, its warnings, and whether it trained in one ensemble with its cell's other seeds
    (``ensemble.mechanism``: ``native`` or ``sequential``; None if it does not say)."""
    mechanism = (manifest.get("ensemble") or {}).get("mechanism")
    together = None if mechanism is None else mechanism == "native"
    return manifest.get("wall_seconds"), manifest.get("warnings"), together


#: the per-epoch series of metrics.json whose last value a row keeps as ``final_<name>``
FINAL_SERIES = (
    "test_acc",
    "test_acc_batch_stats",
    "train_loss",
    "test_loss",
    "val_acc",
    "val_loss",
    "scale_spearman",
    "saturation",
    "grad_ratio",
)


def summary_row(
    m: Metrics,
    target_acc: float,
    run_dir: str = "",
    wall_seconds: float | None = None,
    warnings: list[str] | None = None,
    trained_together: bool | None = None,
) -> SummaryRow:
    """The table row of one run, with the diverged-run rule applied; its selections read the
    validation split when the run has one (``selected_on``)."""
    diverged = m.status == "diverged"
    selected_on = selection_split(m)
    last = lambda xs: None if diverged or not xs else xs[-1]  # noqa: E731
    finite = [x for x in m.train_loss if x is not None and math.isfinite(x)]
    return SummaryRow(
        family=m.family,
        norm=m.norm,
        batch_size=m.batch_size,
        seed=m.seed,
        status=m.status,
        epochs_completed=len(m.epochs),
        **{f"final_{name}": last(getattr(m, name)) for name in FINAL_SERIES},
        mean_train_loss=None if diverged or not finite else sum(finite) / len(finite),
        first_epoch_at_target=first_epoch_at(m.val_acc if selected_on == "val" else m.test_acc, target_acc),
        n_test=m.n_test,
        batch_norm_stats=m.batch_norm_stats,
        norm_placement=m.norm_placement,
        norm_gain_init=m.norm_gain_init,
        initial_gain=m.initial_gain,
        task=m.task,
        num_classes=m.num_classes,
        n_val=m.n_val,
        selected_on=selected_on,
        wall_seconds=wall_seconds,
        trained_together=trained_together,
        warnings=list(warnings or []),
        run_dir=run_dir,
        diverged_at_epoch=m.diverged_at_epoch if diverged else None,
        divergence_reason=m.divergence_reason if diverged else None,
        test_correct=None if diverged else m.test_correct,
        test_correct_batch_stats=None if diverged else m.test_correct_batch_stats,
    )
