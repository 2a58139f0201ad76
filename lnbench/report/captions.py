"""Figures as records: each figure an experiment kind draws is a :class:`FigureRecord` (its file,
the function that draws it, its caption), and the kind owns its records
(:attr:`lnbench.experiments.base.Experiment.figure_records`). report.html asks the kind of a
folder for each figure's caption, so two kinds that draw the same file name (a sweep over
``train.batch_size`` and the batch-size sweep both draw ``accuracy_vs_batch_size.png``) each show
their own. Torch- and matplotlib-free: the kinds import it at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

#: figure file -> how to read it (one line, shown under the figure)
CAPTIONS = {
    "training_loss.png": "Train loss (solid) and test loss (dashed) per epoch, log scale; with several seeds the mean, "
    "the band from the lowest to the highest seed. A steeper early fall is faster optimisation; a test loss that turns up is overfitting.",
    "test_accuracy.png": "Test accuracy per epoch in eval mode (mean over seeds, band min to max), one panel per model "
    "(an RNN per norm placement); dotted: the target; dash-dotted: the memoryless baseline (a linear readout of x_T alone "
    "on the same test sets): a curve at or below it has not learned the memory task; thin: chance. BatchNorm with batch "
    "statistics is dashed.",
    "hidden_norm.png": "Mean ||h_t|| per timestep for each quartile of the input scale s, after training (solid) and at "
    "initialisation (dotted). Lines apart: the state's size follows the input's scale; together: it does not.",
    "hidden_norm_mean.png": "Mean ||h_t|| over all test sequences per timestep, after training (solid) and at initialisation (dotted); "
    "a stacked RNN or LSTM: one curve per layer (line style and marker).",
    "grad_norm.png": "L2 norm of each layer's gradient over training (mean over each epoch's steps), log scale, one panel per model and norm.",
    "accuracy_vs_batch_size.png": "Final test accuracy against batch size (log2 axis), mean over seeds with 95% t intervals; "
    "BatchNorm with batch statistics dashed.",
    "train_loss_vs_batch_size.png": "Mean train loss over the epochs against batch size (log axes).",
    "accuracy_vs": "Final test accuracy against one swept key, one line per norm (mean over seeds, 95% t interval; averaged over the other keys).",
    "claims_by_task.png": "Each claim's verdict on each task (rows: claims, columns: tasks), with its paired effect a - b "
    "(accuracy in points, train loss in nats); n/a: the task cannot measure the claim's metric.",
    "claims.png": "Each claim's paired effect a - b (mean over seeds) with its 95% interval; shaded: the claim's margin; colour: the verdict.",
}


@dataclass(frozen=True)
class FigureRecord:
    """One figure of an experiment kind.

    Attributes:
        file: its file name (``test_accuracy.png``), or a pattern with ``*`` for a family of
            files (a sweep's ``accuracy_vs_*.png``, one per swept key).
        draw: the name of the :mod:`lnbench.report.figures` function that draws it (``plot_grid``).
        caption: how to read it (one line, shown under the figure in report.html).
    """

    file: str
    draw: str
    caption: str

    def names(self, name: str) -> bool:
        """Whether the file ``name`` is this figure's."""
        return fnmatchcase(name, self.file)


def caption_of(records: Sequence[FigureRecord], name: str) -> str:
    """The caption of the file ``name`` among a kind's ``records`` (the first that names it); "" if none does."""
    return next((r.caption for r in records if r.names(name)), "")


def _records(*files: tuple[str, str]) -> tuple[FigureRecord, ...]:
    return tuple(FigureRecord(file, draw, CAPTIONS[file]) for file, draw in files)


#: the figures of runs (train, compare): :func:`lnbench.report.figures.draw_run_figures`
RUN_FIGURES = _records(
    ("training_loss.png", "plot_training_loss"),
    ("test_accuracy.png", "plot_test_accuracy"),
    ("hidden_norm.png", "plot_hidden_norm"),
    ("hidden_norm_mean.png", "plot_hidden_norm_mean"),
    ("grad_norm.png", "plot_grad_norm"),
)
#: the batch-size sweep's
BATCH_SIZE_FIGURES = _records(
    ("accuracy_vs_batch_size.png", "plot_sweep"), ("train_loss_vs_batch_size.png", "plot_sweep")
)
#: a sweep's: one per swept key (the batch-size sweep's file name too, with this caption)
GRID_FIGURES = (FigureRecord("accuracy_vs_*.png", "plot_grid", CAPTIONS["accuracy_vs"]),)
#: the claims'
CLAIMS_FIGURES = _records(("claims.png", "plot_claims"), ("claims_by_task.png", "plot_claims_by_task"))
