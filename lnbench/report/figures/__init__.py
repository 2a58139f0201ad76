"""Figures drawn from metrics.json files only (never from live models).

Each ``figure_*`` function takes the loaded :class:`lnbench.records.schema.Metrics` of runs and returns a
:class:`matplotlib.figure.Figure` (no pyplot, so the backend of a notebook that imports lnbench
is never switched); each ``plot_*`` function draws the same figure and saves it as a PNG. Runs
with several seeds are drawn as the mean over seeds with a band from the minimum to the maximum
(the legend says so). A diverged run is drawn up to its last finished epoch, with a dotted
vertical line at the epoch it diverged in (and a legend entry even if it finished no epoch).

The figures each kind draws are records (:class:`lnbench.report.captions.FigureRecord`), each
declared by one ``@figure`` function (:func:`registry.figure`: file, caption, figure group, when it
applies) that draws it from its group's data (:class:`RunData`, ...), in the module of its group:
:mod:`.runs` (train, compare), :mod:`.sweeps` (the batch-size sweep, ``sweep``), :mod:`.claims`.
A kind draws its group with :func:`draw` and reads its records with :func:`records`;
:mod:`.style` holds what the figures share. This package imports its modules in that order, which
is the order of the groups in docs/figures.md.
"""

from __future__ import annotations

from lnbench.names import norm_color
from lnbench.report.figures.claims import (
    VERDICT_COLORS,
    figure_claims,
    figure_claims_by_task,
    plot_claims,
    plot_claims_by_task,
)
from lnbench.report.figures.registry import (
    FIGURES,
    BatchSizeData,
    ClaimsData,
    RunData,
    SweepData,
    draw,
    figure,
    records,
    save,
)
from lnbench.report.figures.runs import (
    draw_run_figures,
    figure_grad_norm,
    figure_hidden_norm,
    figure_hidden_norm_mean,
    figure_test_accuracy,
    figure_training_loss,
    plot_grad_norm,
    plot_hidden_norm,
    plot_hidden_norm_mean,
    plot_test_accuracy,
    plot_training_loss,
)
from lnbench.report.figures.style import DISTINCT_LOOKS, LINESTYLES, MARKERS, SHADES, layer_styles, set_log_y, suptitle
from lnbench.report.figures.sweeps import figure_grid, figure_sweep, plot_grid, plot_sweep

#: figure file -> its caption, over every group (the catalogue docs/figures.md lists)
CAPTIONS = {r.file: r.caption for shelf in FIGURES.values() for r in shelf}

__all__ = [
    "CAPTIONS",
    "DISTINCT_LOOKS",
    "FIGURES",
    "LINESTYLES",
    "MARKERS",
    "SHADES",
    "VERDICT_COLORS",
    "BatchSizeData",
    "ClaimsData",
    "RunData",
    "SweepData",
    "draw",
    "draw_run_figures",
    "figure",
    "records",
    "save",
    "figure_claims",
    "figure_claims_by_task",
    "figure_grad_norm",
    "figure_grid",
    "figure_hidden_norm",
    "figure_hidden_norm_mean",
    "figure_sweep",
    "figure_test_accuracy",
    "figure_training_loss",
    "layer_styles",
    "norm_color",
    "plot_claims",
    "plot_claims_by_task",
    "plot_grad_norm",
    "plot_grid",
    "plot_hidden_norm",
    "plot_hidden_norm_mean",
    "plot_sweep",
    "plot_test_accuracy",
    "plot_training_loss",
    "set_log_y",
    "suptitle",
]
