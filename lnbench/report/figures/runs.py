"""The figures of runs (train, compare: the ``run`` group), from their metrics.json files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from lnbench.names import (
    FAMILY_REGISTRY,
    TASKS,
    norm_color,
    norm_label,
    norm_order,
    norm_uses_batch_statistics,
)
from lnbench.records.schema import Metrics, read_metrics
from lnbench.report.figures.registry import RunData, draw, figure, save
from lnbench.report.figures.style import (
    LINESTYLES,
    MARKERS,
    add_legend,
    as_series,
    by_family_norm,
    draw_mean_curve,
    family_axes,
    is_recurrent_group,
    layer_styles,
    mean_band,
    norm_legend_label,
    note_empty,
    panel_title,
    set_log_y,
    shaded,
    suptitle,
)


def figure_training_loss(metrics: Sequence[Metrics]) -> Figure:
    """(1) Train loss (solid, mean over the epoch's mini-batches) and test loss (dashed) per
    epoch, log scale, one panel per family. A widening gap between them is overfitting."""
    groups = by_family_norm(metrics)
    fig, axes = family_axes(len(groups), "Training loss (solid) and test loss (dashed)")
    for ax, (family, norms) in zip(axes, groups.items()):
        runs = [r for rs in norms.values() for r in rs]
        for norm, rs in norms.items():
            draw_mean_curve(ax, rs, "train_loss", norm)
            draw_mean_curve(ax, rs, "test_loss", norm, " test", legend=False, ls="--", lw=1)
        ax.set(title=panel_title(family), xlabel="epoch", ylabel="cross-entropy (nats, log scale)")
        set_log_y(ax, "every run diverged before finishing an epoch")
        ax.grid(alpha=0.3, which="both")
        add_legend(ax, runs, [Line2D([], [], color="k", lw=1, ls="--", label="test loss")])
    return fig


def figure_test_accuracy(
    metrics: Sequence[Metrics], target_acc: float = 0.9, memoryless: float | None = None, chance: float | None = None
) -> Figure:
    """(2) Test accuracy per epoch per norm (eval mode); BatchNorm with batch statistics dashed;
    in every panel the target (dotted), the memoryless baseline's mean accuracy (``memoryless``:
    a linear readout of x_T alone on the same test sets; dash-dotted) and ``chance`` (thin;
    None: 1 / C of the runs' task)."""
    if chance is None:
        chance = 1 / max((m.num_classes for m in metrics), default=2)
    groups = by_family_norm(metrics)
    fig, axes = family_axes(len(groups), "Test accuracy")
    for ax, (family, norms) in zip(axes, groups.items()):
        runs = [r for rs in norms.values() for r in rs]
        for norm, rs in norms.items():
            draw_mean_curve(ax, rs, "test_acc", norm)
            if all(r.test_acc_batch_stats for r in rs):
                draw_mean_curve(ax, rs, "test_acc_batch_stats", norm, " with batch statistics", ls="--", lw=1)
        ax.axhline(target_acc, color="k", lw=0.8, ls=":", label=f"{target_acc:.0%} target")
        if memoryless is not None:
            ax.axhline(memoryless, color="0.35", lw=1, ls="-.", label=f"memoryless baseline {memoryless:.1%}")
        ax.axhline(chance, color="k", lw=0.5, alpha=0.4)
        ax.annotate("chance", (1.0, chance), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                    textcoords="offset points", ha="right", va="bottom", fontsize=7, color="0.4")  # fmt: skip
        shown = [v for r in runs for v in (r.test_acc or []) + (r.test_acc_batch_stats or []) if v is not None]
        if not shown:
            note_empty(ax, "nothing to draw: no run finished an epoch\n(every run diverged in its first)")
        low = min([chance - 0.1, target_acc - 0.05, *shown])  # the target, chance and every curve stay in view
        ax.set(title=panel_title(family), xlabel="epoch", ylabel="test accuracy", ylim=(max(0.0, low - 0.02), 1.01))
        ax.grid(alpha=0.3)
        add_legend(ax, runs)
    return fig


def _mean_curves(curves: list) -> np.ndarray | None:
    arrays = [as_series(c) for c in curves if c]
    return mean_band(arrays)[0] if arrays else None


def _mean_of(values: Sequence[float | None]) -> float | None:
    finite = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(finite)) if finite else None


def figure_hidden_norm(metrics: Sequence[Metrics]) -> Figure:
    """(3) Does the hidden state's size follow the input's scale? One panel per family and norm,
    one line per quartile of the samples' input scale s (light: smallest quarter, dark:
    largest), the mean L2 norm of h_t per timestep after the last epoch (solid, eval mode) and
    at initialisation (dotted; BatchNorm with batch statistics). Lines that coincide: the
    hidden state does not depend on the input's scale. Each panel states the Spearman
    correlation of ‖h_T‖ with s (and, for the RNN, the fraction of saturated tanh units), the
    mean over seeds. Runs without the probes (metrics.json before schema 3): the mean curve,
    :func:`figure_hidden_norm_mean`."""
    from matplotlib import colormaps

    if not any(m.hidden_norm_by_scale for m in metrics):
        return figure_hidden_norm_mean(metrics)
    groups = by_family_norm(metrics)
    norms_order = norm_order(n for v in groups.values() for n in v)
    rows, cols = len(groups), len(norms_order)
    fig = Figure(figsize=(4.2 * cols + 2.4, 3.6 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey="row")
    seeds = len({m.seed for m in metrics})
    over = f", mean of {seeds} seeds" if seeds > 1 else ""
    suptitle(
        fig,
        f"Hidden-state magnitude per input-scale quartile (test set{over})\nlines apart: ||h_t|| follows the input's scale; lines together: it does not",
    )
    shades = colormaps["viridis"](np.linspace(0.85, 0.1, 4))  # light (small s) to dark (large s)
    for i, (family, norms) in enumerate(groups.items()):
        for j, norm in enumerate(norms_order):
            ax = axes[i, j]
            runs = [r for r in norms.get(norm, []) if r.status != "diverged" and r.hidden_norm_by_scale] or norms.get(
                norm, []
            )
            layers = max((r.num_layers or 1 for r in runs), default=1)
            stacked = f" (layer 1 of {layers})" if layers > 1 else ""  # the probes by scale are layer 1's
            ax.set_title(f"{panel_title(family)}: {norm_label(norm)}{stacked}", fontsize=10)
            if not runs or not any(r.hidden_norm_by_scale for r in runs):
                ax.set_axis_off()
                continue
            for q in range(4):
                final = _mean_curves([r.hidden_norm_by_scale[-1][q] for r in runs if r.hidden_norm_by_scale])
                init = _mean_curves([r.hidden_norm_by_scale_init[q] for r in runs if r.hidden_norm_by_scale_init])
                if final is not None:
                    ax.plot(np.arange(1, len(final) + 1), final, color=shades[q], lw=1.6)
                if init is not None:
                    ax.plot(np.arange(1, len(init) + 1), init, color=shades[q], lw=1.0, ls=":")
            rho = _mean_of([r.scale_spearman[-1] for r in runs if r.scale_spearman])
            rho0 = _mean_of([r.scale_spearman_init for r in runs])
            text = f"Spearman(||h_T||, s): {_fmt(rho)} (init {_fmt(rho0)})"
            sat = _mean_of([r.saturation[-1] for r in runs if r.saturation])
            if sat is not None:
                info = FAMILY_REGISTRY.get(family.partition("@")[0].partition("-")[0])
                text += f"\nsaturated {info.saturating_units if info else 'tanh'} units: {sat:.1%}"
            ax.text(
                0.02,
                0.97,
                text,
                transform=ax.transAxes,
                va="top",
                fontsize=8,
                bbox={"fc": "white", "ec": "0.8", "alpha": 0.85},
            )
            ax.set_xlabel("timestep t")
            if j == 0:
                recurrent = is_recurrent_group(family)
                ax.set_ylabel("mean ||h_t|| (L2)" if recurrent else "mean ||residual stream|| (L2)")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        for ax in axes[i]:
            if ax.axison:
                ax.set_ylim(top=ax.get_ylim()[1] * 1.3)  # headroom for the text box
    edges = [r.scale_quartile_edges for r in metrics if r.scale_quartile_edges]
    e = np.mean(np.array(edges), axis=0) if edges else None
    names = (
        ["smallest", "2nd", "3rd", "largest"]
        if e is None
        else [f"s < {e[0]:.2g}", f"{e[0]:.2g} - {e[1]:.2g}", f"{e[1]:.2g} - {e[2]:.2g}", f"s > {e[2]:.2g}"]
    )
    handles = [Line2D([], [], color=shades[q], lw=2, label=names[q]) for q in range(4)]
    handles += [
        Line2D([], [], color="k", lw=1.6, label="after training"),
        Line2D([], [], color="k", lw=1.0, ls=":", label="at initialisation"),
    ]
    axes[0, -1].legend(
        handles=handles,
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        title="input scale s (quartile)",
        title_fontsize=8,
    )
    return fig


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:+.2f}"


def figure_hidden_norm_mean(metrics: Sequence[Metrics]) -> Figure:
    """(3b) Mean L2 norm of the hidden state per timestep after the last epoch (solid, eval mode)
    and at initialisation (dotted, as in training: BatchNorm with batch statistics); a norm whose
    every seed diverged before its last epoch has only the dotted curve, labelled so. For the
    Transformer: the residual stream after the block. Several seeds: the mean over seeds. A
    stacked RNN or LSTM (``hidden_norm_by_layer``): one curve per layer, each with its own line
    style and marker (the norm keeps its colour), labelled ``layer l``."""
    groups = by_family_norm(metrics)
    fig, axes = family_axes(len(groups), "Hidden-state magnitude over timesteps (test set)")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            finished = [r for r in runs if r.status != "diverged"] or runs  # the diverged-run rule
            layers = max((len(r.hidden_norm_by_layer_init or []) for r in runs), default=0)
            color = norm_color(norm)
            for k in range(max(layers, 1)):
                if layers > 1:  # layer k + 1 of a stacked model
                    final = [as_series(r.hidden_norm_by_layer[-1][k]) for r in finished if r.hidden_norm_by_layer]
                    init = [as_series(r.hidden_norm_by_layer_init[k]) for r in runs if r.hidden_norm_by_layer_init]
                    look = {"ls": LINESTYLES[k % len(LINESTYLES)], "marker": MARKERS[k % len(MARKERS)]}
                    suffix = f", layer {k + 1}"
                else:
                    final = [as_series(r.hidden_norm[-1]) for r in finished if r.hidden_norm]  # the last epoch
                    init = [as_series(r.hidden_norm_init) for r in runs if r.hidden_norm_init]
                    look, suffix = {"marker": "o"}, ""
                if final:
                    mean = mean_band(final)[0]
                    label = norm_legend_label(norm, runs, suffix)
                    ax.plot(np.arange(1, len(mean) + 1), mean, color=color, ms=3, label=label, **look)
                if init:  # labelled only where no trained curve names the colour (every seed diverged first)
                    mean = mean_band(init)[0]
                    alone = {} if final else {"label": f"{norm_label(norm)}{suffix} (diverged): at initialisation"}
                    ax.plot(
                        np.arange(1, len(mean) + 1),
                        mean,
                        color=color,
                        ls=":",
                        lw=1.2,
                        marker=look["marker"],
                        ms=2,
                        **alone,
                    )
        ylabel = "mean ||h_t|| (L2)" if is_recurrent_group(family) else "mean ||residual stream|| (L2)"
        sizes = {r.hidden_size for rs in norms.values() for r in rs}
        if is_recurrent_group(family) and len(sizes) == 1 and None not in sizes:  # |h_t| < 1
            ax.axhline(np.sqrt(sizes.pop()), color="k", lw=0.7, ls="--", label="sqrt(H), the bound of tanh")
        batch_stats = [norm_label(n) for n in norms if norm_uses_batch_statistics(n)]
        init_note = "dotted: at initialisation" + (
            f" ({', '.join(batch_stats)}: batch statistics)" if batch_stats else ""
        )
        ax.plot([], [], color="k", ls=":", lw=1.2, label=init_note)
        ax.set(title=panel_title(family), xlabel="timestep t", ylabel=ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    return fig


def figure_grad_norm(metrics: Sequence[Metrics]) -> Figure:
    """(4) Gradient L2 norm per layer over training (mean over each epoch's steps, log scale):
    rows are model families, columns norms, one line per layer. Colour is the norm, as in every
    figure (each panel in shades of its norm's colour); a layer is told apart by its line style,
    marker and shade (:func:`layer_styles`), the same in every panel of a row and in the row's
    one legend (in greys of the same shades)."""
    groups = by_family_norm(metrics)
    norms_order = norm_order(n for v in groups.values() for n in v)
    rows, cols = len(groups), len(norms_order)
    n_layers = max((len(m.grad_norm_layer) for m in metrics), default=0)
    ncol = -(-n_layers // 14)
    fig = Figure(figsize=(4.6 * cols + 2.6 * max(ncol, 1), 3.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey="row")
    seeds = len({m.seed for m in metrics})
    over = f", mean of {seeds} seeds" if seeds > 1 else ""
    suptitle(
        fig,
        f"Gradient norm per layer over training\n(L2 norm of each layer's gradient, mean over each epoch's steps{over})",
    )
    for i, (family, norms) in enumerate(groups.items()):
        layers = list(dict.fromkeys(layer for rs in norms.values() for r in rs for layer in r.grad_norm_layer))
        style = layer_styles(layers)
        for j, norm in enumerate(norms_order):
            ax = axes[i, j]
            runs = norms.get(norm, [])
            ax.set_title(f"{panel_title(family)}: {norm_label(norm)}", fontsize=10)
            if not runs:
                ax.set_axis_off()
                continue
            for layer in layers:
                series = [as_series(r.grad_norm_layer[layer]) for r in runs if layer in r.grad_norm_layer]
                if series:
                    mean = mean_band(series)[0]
                    st = style[layer]
                    ax.plot(
                        np.arange(1, len(mean) + 1),
                        mean,
                        color=shaded(norm_color(norm), st["shade"]),
                        ls=st["ls"],
                        marker=st["marker"],
                        ms=3.5,
                        markevery=max(1, len(mean) // 8),
                        lw=1.3,
                        label=layer,
                    )
                    if st["number"] is not None and np.isfinite(mean).any():
                        last = int(np.flatnonzero(np.isfinite(mean))[-1])
                        ax.annotate(
                            str(st["number"]),
                            (last + 1, mean[last]),
                            fontsize=6,
                            xytext=(2, 0),
                            textcoords="offset points",
                        )
            set_log_y(ax, "no finished epoch, or every gradient is 0")
            ax.set_xlabel("epoch")
            if j == 0:
                ax.set_ylabel("gradient L2 norm (log scale)")
            ax.grid(alpha=0.3, which="both")
        handles = [  # as the panels draw them, a grey of the same shade standing for the norms' colours
            Line2D(
                [],
                [],
                color=shaded("0.6", style[layer]["shade"]),
                ls=style[layer]["ls"],
                marker=style[layer]["marker"],
                ms=4,
                lw=1.3,
                label=layer if style[layer]["number"] is None else f"{style[layer]['number']}: {layer}",
            )
            for layer in layers
        ]
        ncol = -(-len(layers) // 14)  # at most 14 entries a column, so a deep model's legend stays on the figure
        axes[i, -1].legend(
            handles=handles,
            fontsize=8 if ncol == 1 else 7,
            ncol=ncol,
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            title="layer",
            title_fontsize=8,
        )
    return fig


def plot_training_loss(metrics: Sequence[Metrics], path: str | Path) -> Path:
    """Save :func:`figure_training_loss` as a PNG."""
    return save(figure_training_loss(metrics), path)


def plot_test_accuracy(
    metrics: Sequence[Metrics], path: str | Path, target_acc: float = 0.9, memoryless: float | None = None
) -> Path:
    """Save :func:`figure_test_accuracy` as a PNG."""
    return save(figure_test_accuracy(metrics, target_acc, memoryless), path)


def plot_hidden_norm_mean(metrics: Sequence[Metrics], path: str | Path) -> Path:
    """Save :func:`figure_hidden_norm_mean` as a PNG."""
    return save(figure_hidden_norm_mean(metrics), path)


def plot_hidden_norm(metrics: Sequence[Metrics], path: str | Path) -> Path:
    """Save :func:`figure_hidden_norm` as a PNG."""
    return save(figure_hidden_norm(metrics), path)


def plot_grad_norm(metrics: Sequence[Metrics], path: str | Path) -> Path:
    """Save :func:`figure_grad_norm` as a PNG."""
    return save(figure_grad_norm(metrics), path)


def _has_scale(run: RunData) -> bool:
    """Every run's task has an input scale s (trend's), which :func:`figure_hidden_norm` is by."""
    return all(TASKS[m.task].has_scale for m in run.metrics if m.task in TASKS)


@figure(
    "training_loss.png",
    group="run",
    caption="Train loss (solid) and test loss (dashed) per epoch, log scale; with several seeds the mean, the band "
    "from the lowest to the highest seed. A steeper early fall is faster optimisation; a test loss that turns up is "
    "overfitting.",
)
def _training_loss(run: RunData) -> Figure:
    return figure_training_loss(run.metrics)


@figure(
    "test_accuracy.png",
    group="run",
    caption="Test accuracy per epoch in eval mode (mean over seeds, band min to max), one panel per model (an RNN "
    "per norm placement); dotted: the target; dash-dotted: the memoryless baseline (a linear readout of x_T alone on "
    "the same test sets): a curve at or below it has not learned the memory task; thin: chance. BatchNorm with batch "
    "statistics is dashed.",
)
def _test_accuracy(run: RunData) -> Figure:
    return figure_test_accuracy(run.metrics, run.target_acc, run.memoryless)


@figure(
    "hidden_norm.png",
    group="run",
    caption="Mean ||h_t|| per timestep for each quartile of the input scale s, after training (solid) and at "
    "initialisation (dotted). Lines apart: the state's size follows the input's scale; together: it does not. "
    "A stacked RNN or LSTM: its first layer (the panel says so).",
    when=_has_scale,
)
def _hidden_norm(run: RunData) -> Figure:
    return figure_hidden_norm(run.metrics)


def _has_timesteps(run: RunData) -> bool:
    """Some run reads a sequence (the MLP's one vector has no timesteps to draw a state over)."""
    return any(len(m.hidden_norm_init or []) > 1 for m in run.metrics)


@figure(
    "hidden_norm_mean.png",
    group="run",
    caption="Mean ||h_t|| over all test sequences per timestep, after training (solid) and at initialisation "
    "(dotted); a stacked RNN or LSTM: one curve per layer (line style and marker). Not drawn for the MLP (one "
    "vector per example: no timesteps).",
    when=_has_timesteps,
)
def _hidden_norm_mean(run: RunData) -> Figure:
    return figure_hidden_norm_mean(run.metrics)


@figure(
    "grad_norm.png",
    group="run",
    caption="L2 norm of each layer's gradient over training (mean over each epoch's steps), log scale, one panel "
    "per model and norm.",
)
def _grad_norm(run: RunData) -> Figure:
    return figure_grad_norm(run.metrics)


def draw_run_figures(
    into: Path, run_dirs: Sequence[Path], target_acc: float, memoryless: float | None = None
) -> list[str]:
    """Draw the ``run`` figures of a train or compare run folder into the folder ``into`` from its
    runs' metrics files; ``memoryless``: the memoryless baseline's mean accuracy, drawn in the
    accuracy figure. Returns the file names drawn (none when no run finished an epoch or diverged)."""
    metrics = [read_metrics(d) for d in run_dirs if (d / "metrics.json").exists()]
    metrics = [m for m in metrics if m.epochs or m.status == "diverged"]
    return draw("run", RunData(metrics, target_acc, memoryless), into) if metrics else []
