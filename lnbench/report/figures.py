"""Figures drawn from metrics.json files only (never from live models).

Each ``figure_*`` function takes the loaded :class:`lnbench.records.schema.Metrics` of runs and returns a
:class:`matplotlib.figure.Figure` (no pyplot, so the backend of a notebook that imports lnbench
is never switched); each ``plot_*`` function draws the same figure and saves it as a PNG. Runs
with several seeds are drawn as the mean over seeds with a band from the minimum to the maximum
(the legend says so). A diverged run is drawn up to its last finished epoch, with a dotted
vertical line at the epoch it diverged in (and a legend entry even if it finished no epoch).

The figures each kind draws are records (:class:`lnbench.report.captions.FigureRecord`), declared
at the end of this module, each by one ``@figure`` function (:func:`figure`: file, caption, figure
group, when it applies) that draws it from its group's data (:class:`RunData`, ...); a kind draws
its group with :func:`draw`, and reads its records with :func:`records`.
"""

from __future__ import annotations

import textwrap
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter

from lnbench.names import (
    FAMILY_REGISTRY,
    TASKS,
    family_label,
    group_label,
    model_group_of,
    norm_color,
    norm_label,
    norm_order,
    norm_uses_batch_statistics,
)
from lnbench.records.runs import atomic_write
from lnbench.records.schema import Metrics, read_metrics
from lnbench.report.captions import FigureRecord


def _recurrent(group: str) -> bool:
    """Whether a panel's group (``"rnn-separate"``, ``"lstm@0.1"``) is a recurrent family's."""
    info = FAMILY_REGISTRY.get(group.partition("@")[0].partition("-")[0])
    return info is not None and info.recurrent


def _series(values: Sequence) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _mean_band(runs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, min, max over runs of possibly different lengths (a diverged run stops early)."""
    n = max((len(r) for r in runs), default=0)
    stacked = np.full((len(runs), n), np.nan)
    for i, r in enumerate(runs):
        stacked[i, : len(r)] = r
    with warnings.catch_warnings():  # an all-NaN column (every seed diverged) is expected
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(stacked, 0), np.nanmin(stacked, 0), np.nanmax(stacked, 0)


def _by_family_norm(metrics: Sequence[Metrics]) -> dict[str, dict[str, list[Metrics]]]:
    """Runs by model group (:func:`lnbench.names.model_group_of`: ``"rnn-separate"``, ``"lstm@0.1"``), then norm."""
    out: dict[str, dict[str, list[Metrics]]] = defaultdict(lambda: defaultdict(list))
    for m in metrics:
        out[model_group_of(m.family, m.norm_placement, m.norm_gain_init)][m.norm].append(m)
    return out


def _title(group: str) -> str:
    """A model group's panel title: ``"RNN (separate)"``, ``"Transformer (pre-norm)"``, ``"LSTM, gains 0.1"``."""
    return group_label(group)


def _norm_label(norm: str, runs: list[Metrics], suffix: str = "") -> str:
    label = norm_label(norm) + suffix
    finished = [r for r in runs if r.status != "diverged"] or runs
    if len(finished) > 1:
        label += f", mean of {len(finished)} seeds"
    diverged = sorted(r.diverged_at_epoch for r in runs if r.status == "diverged" and r.diverged_at_epoch)
    if diverged:
        label += f", diverged at epoch {', '.join(map(str, diverged))}"
    return label


def _draw(ax, runs: list[Metrics], key: str, norm: str, suffix: str = "", legend: bool = True, **kw) -> None:
    """Mean over seeds of per-epoch ``key`` against epoch, with a min-max band and divergence marks.

    The diverged-run rule of :mod:`lnbench.records.schema`: the mean and band are over the seeds that did
    not diverge; diverged seeds are marked by a dotted line at their epoch (and in the legend).
    Only when every seed diverged are their partial curves averaged, so the group stays visible.
    """
    finished = [r for r in runs if r.status != "diverged"]
    series = [_series(getattr(r, key) or []) for r in (finished or runs)]
    mean, lo, hi = _mean_band(series)
    color = norm_color(norm)
    x = np.arange(1, len(mean) + 1)
    if np.isfinite(mean).sum() == 1:  # a line through one point draws nothing: mark the point
        kw = {"marker": "o", "ms": 5, **({"mfc": "none"} if kw.get("ls") == "--" else {}), **kw}  # dashed: hollow
    ax.plot(x, mean, color=color, label=_norm_label(norm, runs, suffix) if legend else "_nolegend_", **kw)
    if len(runs) > 1 and len(mean):
        ax.fill_between(x, lo, hi, color=color, alpha=0.15, linewidth=0)
    if not suffix:
        for r in runs:
            if r.status == "diverged" and r.diverged_at_epoch:
                ax.axvline(r.diverged_at_epoch, color=color, ls=":", lw=1.2)


def _legend(ax, runs: Sequence[Metrics], extra: Sequence = (), **kw) -> None:
    """The axes' legend plus ``extra`` handles, and a note on the band when seeds are averaged;
    below the axes, so that it never covers a curve."""
    handles = ax.get_legend_handles_labels()[0] + list(extra)
    if len({m.seed for m in runs}) > 1:
        handles.append(Patch(color="k", alpha=0.15, label="band: min to max over seeds"))
    ax.legend(
        handles=handles, **{"loc": "upper center", "bbox_to_anchor": (0.5, -0.14), "ncol": 2, "fontsize": 8, **kw}
    )


def suptitle(fig: Figure, text: str, fontsize: float = 11) -> None:
    """``fig.suptitle`` with every line wrapped to the figure's width (a long title was cut at
    both edges of a one-panel figure)."""
    per_line = max(20, int(fig.get_figwidth() * 72 / (0.55 * fontsize)))  # ~0.55 em per character
    fig.suptitle("\n".join(textwrap.fill(line, per_line) for line in text.split("\n")), fontsize=fontsize)


LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
SHADES = (1.0, 0.72, 0.45)  # of the norm's colour in a panel; of a grey in the legend
#: layers told apart by (line style, marker, shade) alone; a deeper model's layers are numbered too
DISTINCT_LOOKS = len(LINESTYLES) * len(MARKERS) * len(SHADES)


def layer_styles(layers: Sequence[str]) -> dict[str, dict]:
    """How each layer is told apart in the gradient-norm figure without using colour (colour
    means the norm in every figure): a line style, a marker and a shade of the norm's colour.

    The first :data:`DISTINCT_LOOKS` (96) layers each get a different (line style, marker, shade),
    neighbours differing in both line style and marker; beyond that, looks repeat and every
    layer also gets a ``number`` (1, 2, ...), written at the end of its line and in the legend.
    """
    numbered = len(layers) > DISTINCT_LOOKS
    out = {}
    for k, layer in enumerate(layers):
        block, r = divmod(k % (len(LINESTYLES) * len(MARKERS)), len(MARKERS))  # a bijection on 32 pairs
        out[layer] = {
            "ls": LINESTYLES[(r + block) % len(LINESTYLES)],
            "marker": MARKERS[r],
            "shade": SHADES[(k // (len(LINESTYLES) * len(MARKERS))) % len(SHADES)],
            "number": k + 1 if numbered else None,
        }
    return out


def _shade(color: str | None, amount: float) -> tuple:
    """``color`` darkened towards black by ``1 - amount`` (1: the colour itself)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color or "k")
    return (r * amount, g * amount, b * amount)


def _family_axes(n: int, title: str):
    fig = Figure(figsize=(6.4 * n, 5.6), layout="constrained")  # room below the axes for the legend
    axes = fig.subplots(1, n, squeeze=False)
    suptitle(fig, title, fontsize=13)
    return fig, axes[0]


def set_log_y(ax, why_empty: str = "no positive value to draw") -> None:
    """Put ``ax`` on a log y scale if it has anything positive to draw, and say what it cannot show.

    A log axis cannot show 0, negative or non-finite values: matplotlib raises when no value is
    positive, and silently drops a curve that is all zeros. Here the axis stays linear with a
    note (``why_empty``) when no line has a positive finite value, and every labelled line that is
    entirely 0 is named in a note on the axes ("all 0: ..., not drawable on a log scale")."""
    lines = [
        ln for ln in ax.get_lines() if len(ln.get_ydata()) and ln.get_transform() == ax.transData
    ]  # not axvline marks
    values = [np.asarray(ln.get_ydata(), dtype=float) for ln in lines]
    if not any((v[np.isfinite(v)] > 0).any() for v in values):
        ax.text(
            0.5,
            0.5,
            f"nothing to draw on a log scale:\n{why_empty}",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=9,
            color="0.3",
        )
        ax.set_yticks([])
        ax.set_xticks([])
        ax.set_ylabel(ax.get_ylabel().replace(", log scale", "").replace(" (log scale)", ""))
        return
    ax.set_yscale("log")
    zero = [
        ln.get_label()
        for ln, v in zip(lines, values)
        if not ln.get_label().startswith("_") and v[np.isfinite(v)].size and (v[np.isfinite(v)] == 0).all()
    ]
    if zero:
        ax.text(
            0.01,
            0.01,
            "all 0, not drawable on a log scale: " + ", ".join(zero),
            transform=ax.transAxes,
            fontsize=7,
            color="0.3",
            va="bottom",
        )


def save(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` as a PNG at 120 dpi (integer ticks on epoch and timestep axes), atomically
    (:func:`lnbench.records.runs.atomic_write`): a full disk leaves no truncated PNG behind.

    Raises:
        WriteError: the file could not be written (it names the file and its folder).
    """
    for ax in fig.axes:
        if ax.get_xlabel() in ("epoch", "timestep t"):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=120))


def figure_training_loss(metrics: Sequence[Metrics]) -> Figure:
    """(1) Train loss (solid, mean over the epoch's mini-batches) and test loss (dashed) per
    epoch, log scale, one panel per family. A widening gap between them is overfitting."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Training loss (solid) and test loss (dashed)")
    for ax, (family, norms) in zip(axes, groups.items()):
        runs = [r for rs in norms.values() for r in rs]
        for norm, rs in norms.items():
            _draw(ax, rs, "train_loss", norm)
            _draw(ax, rs, "test_loss", norm, " test", legend=False, ls="--", lw=1)
        ax.set(title=_title(family), xlabel="epoch", ylabel="cross-entropy (nats, log scale)")
        set_log_y(ax, "every run diverged before finishing an epoch")
        ax.grid(alpha=0.3, which="both")
        _legend(ax, runs, [Line2D([], [], color="k", lw=1, ls="--", label="test loss")])
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
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Test accuracy")
    for ax, (family, norms) in zip(axes, groups.items()):
        runs = [r for rs in norms.values() for r in rs]
        for norm, rs in norms.items():
            _draw(ax, rs, "test_acc", norm)
            if all(r.test_acc_batch_stats for r in rs):
                _draw(ax, rs, "test_acc_batch_stats", norm, " with batch statistics", ls="--", lw=1)
        ax.axhline(target_acc, color="k", lw=0.8, ls=":", label=f"{target_acc:.0%} target")
        if memoryless is not None:
            ax.axhline(memoryless, color="0.35", lw=1, ls="-.", label=f"memoryless baseline {memoryless:.1%}")
        ax.axhline(chance, color="k", lw=0.5, alpha=0.4)
        ax.annotate("chance", (1.0, chance), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                    textcoords="offset points", ha="right", va="bottom", fontsize=7, color="0.4")  # fmt: skip
        shown = [v for r in runs for v in (r.test_acc or []) + (r.test_acc_batch_stats or []) if v is not None]
        if not shown:
            ax.text(
                0.5,
                0.5,
                "nothing to draw: no run finished an epoch\n(every run diverged in its first)",
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=9,
                color="0.3",
            )
            ax.set_xticks([])
        low = min([chance - 0.1, target_acc - 0.05, *shown])  # the target, chance and every curve stay in view
        ax.set(title=_title(family), xlabel="epoch", ylabel="test accuracy", ylim=(max(0.0, low - 0.02), 1.01))
        ax.grid(alpha=0.3)
        _legend(ax, runs)
    return fig


def _mean_curves(curves: list) -> np.ndarray | None:
    arrays = [_series(c) for c in curves if c]
    return _mean_band(arrays)[0] if arrays else None


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
    groups = _by_family_norm(metrics)
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
            ax.set_title(f"{_title(family)}: {norm_label(norm)}", fontsize=10)
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
                recurrent = _recurrent(family)
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
    and at initialisation (dotted, as in training: BatchNorm with batch statistics). For the
    Transformer: the residual stream after the block. Several seeds: the mean over seeds. A
    stacked RNN or LSTM (``hidden_norm_by_layer``): one curve per layer, each with its own line
    style and marker (the norm keeps its colour), labelled ``layer l``."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Hidden-state magnitude over timesteps (test set)")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            finished = [r for r in runs if r.status != "diverged"] or runs  # the diverged-run rule
            layers = max((len(r.hidden_norm_by_layer_init or []) for r in runs), default=0)
            color = norm_color(norm)
            for k in range(max(layers, 1)):
                if layers > 1:  # layer k + 1 of a stacked model
                    final = [_series(r.hidden_norm_by_layer[-1][k]) for r in finished if r.hidden_norm_by_layer]
                    init = [_series(r.hidden_norm_by_layer_init[k]) for r in runs if r.hidden_norm_by_layer_init]
                    look = {"ls": LINESTYLES[k % len(LINESTYLES)], "marker": MARKERS[k % len(MARKERS)]}
                    suffix = f", layer {k + 1}"
                else:
                    final = [_series(r.hidden_norm[-1]) for r in finished if r.hidden_norm]  # the last epoch
                    init = [_series(r.hidden_norm_init) for r in runs if r.hidden_norm_init]
                    look, suffix = {"marker": "o"}, ""
                if final:
                    mean = _mean_band(final)[0]
                    label = _norm_label(norm, runs, suffix)
                    ax.plot(np.arange(1, len(mean) + 1), mean, color=color, ms=3, label=label, **look)
                if init:
                    mean = _mean_band(init)[0]
                    ax.plot(np.arange(1, len(mean) + 1), mean, color=color, ls=":", lw=1.2, marker=look["marker"], ms=2)
        ylabel = "mean ||h_t|| (L2)" if _recurrent(family) else "mean ||residual stream|| (L2)"
        sizes = {r.hidden_size for rs in norms.values() for r in rs}
        if _recurrent(family) and len(sizes) == 1 and None not in sizes:  # |h_t| < 1
            ax.axhline(np.sqrt(sizes.pop()), color="k", lw=0.7, ls="--", label="sqrt(H), the bound of tanh")
        batch_stats = [norm_label(n) for n in norms if norm_uses_batch_statistics(n)]
        init_note = "dotted: at initialisation" + (
            f" ({', '.join(batch_stats)}: batch statistics)" if batch_stats else ""
        )
        ax.plot([], [], color="k", ls=":", lw=1.2, label=init_note)
        ax.set(title=_title(family), xlabel="timestep t", ylabel=ylabel)
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
    groups = _by_family_norm(metrics)
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
            ax.set_title(f"{_title(family)}: {norm_label(norm)}", fontsize=10)
            if not runs:
                ax.set_axis_off()
                continue
            for layer in layers:
                series = [_series(r.grad_norm_layer[layer]) for r in runs if layer in r.grad_norm_layer]
                if series:
                    mean = _mean_band(series)[0]
                    st = style[layer]
                    ax.plot(
                        np.arange(1, len(mean) + 1),
                        mean,
                        color=_shade(norm_color(norm), st["shade"]),
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
                color=_shade("0.6", style[layer]["shade"]),
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


def figure_sweep(
    aggregate: Sequence[dict], key: str, ylabel: str, title: str, log_y: bool = False, chance: float = 0.5
) -> Figure:
    """Batch-size sweep: the mean over seeds of ``key`` against batch size (log2 axis), one line
    per norm, from :func:`lnbench.analysis.aggregate.aggregate_over_seeds` entries.

    ``key`` is ``final_test_acc`` (drawn with its 95% interval: a t interval over seeds, or the
    Wilson interval over the test set for one seed; BatchNorm's batch-statistics accuracy
    dashed) or ``mean_train_loss``. A cell where every seed diverged is an x at the bottom; the
    norms are nudged apart on the x axis so that the bars do not hide each other.
    """
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.subplots()
    by_norm: dict[str, list[dict]] = defaultdict(list)
    for e in aggregate:
        by_norm[e["norm"]].append(e)
    nudge = {norm: 2 ** (0.06 * (k - (len(by_norm) - 1) / 2)) for k, norm in enumerate(by_norm)}
    n_seeds = max((e["n_seeds"] for e in aggregate), default=1)
    later = []
    for norm, cells in by_norm.items():
        cells = sorted(cells, key=lambda e: e["batch_size"])
        bs = np.array([c["batch_size"] for c in cells], dtype=float)
        y = _series([c.get(f"mean_{key}") for c in cells])
        color, name = norm_color(norm), norm_label(norm)
        if key == "final_test_acc":
            ci = np.array([c["ci95_final_test_acc"] or [np.nan, np.nan] for c in cells], dtype=float)  # (n, 2)
            err = np.abs(np.stack([y - ci[:, 0], ci[:, 1] - y]))
            has_bs = any(c.get("mean_final_test_acc_batch_stats") is not None for c in cells)
            label = f"{name} (eval: running statistics)" if has_bs else name
            ax.errorbar(bs * nudge[norm], y, yerr=err, marker="o", capsize=3, color=color, label=label)
            if has_bs:
                yb = _series([c.get("mean_final_test_acc_batch_stats") for c in cells])
                later.append((bs * nudge[norm], yb, color, f"{name} with batch statistics"))
        else:
            ax.plot(bs, y, marker="o", color=color, label=name)
        div = bs[[c["n_diverged"] == c["n_seeds"] for c in cells]]
        if len(div):
            ax.plot(
                div,
                np.zeros(len(div)),
                "x",
                color=color,
                ms=9,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                label=f"{name} diverged",
            )
    for x, yb, color, label in later:
        ax.plot(x, yb, marker="s", ms=4, ls="--", lw=1, color=color, label=label)
    ax.set_xscale("log", base=2)
    all_bs = sorted({e["batch_size"] for e in aggregate})
    ax.set_xticks(all_bs, [str(b) for b in all_bs])
    ax.xaxis.set_minor_formatter(NullFormatter())
    if log_y:
        set_log_y(ax, "every cell diverged")
        finite = [v for e in aggregate if (v := e.get(f"mean_{key}")) is not None and v > 0]
        if finite and max(finite) / min(finite) > 10:  # several decades: the decades are labelled
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:  # within one decade the minor ticks carry the labels: three of them, not eight
            ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 3.0, 5.0)))
            ax.yaxis.set_minor_formatter(FormatStrFormatter("%.2g"))
    if key == "final_test_acc":
        ax.axhline(chance, color="k", lw=0.6, ls=":", label="chance")
        what = f"mean of {n_seeds} seeds, 95% t interval" if n_seeds > 1 else "95% Wilson interval over the test set"
        title += f"\n({what})"
    elif n_seeds > 1:
        title += f"\n(mean of {n_seeds} seeds)"
    ax.set(title=title, xlabel="batch size (log2 scale)", ylabel=ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
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


def plot_sweep(
    aggregate: Sequence[dict],
    key: str,
    ylabel: str,
    title: str,
    path: str | Path,
    log_y: bool = False,
    chance: float = 0.5,
) -> Path:
    """Save :func:`figure_sweep` as a PNG."""
    return save(figure_sweep(aggregate, key, ylabel, title, log_y, chance), path)


VERDICT_COLORS = {"held": "tab:green", "not held": "tab:red", "inconclusive": "tab:gray"}


def figure_claims(results: Sequence) -> Figure:
    """``lnbench claims``: one row per claim, the paired effect a - b (mean over seeds) with its
    95% interval, in the claim's units; the shaded band is the claim's margin (a directional
    claim needs the interval below 0, an equivalence claim needs it inside the band), the
    colour is the verdict. ``results``: :class:`lnbench.analysis.claims.ClaimResult` objects."""
    from lnbench.analysis.claims import METRICS

    n = len(results)
    fig = Figure(figsize=(10, 1.15 * n + 1.0), layout="constrained")
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    suptitle(fig, "lnbench claims: paired effect a - b over seeds, 95% interval (shaded: the claim's margin)")
    for ax, r in zip(axes, results):
        scale = 100 if r.metric == "final_test_acc" else 1
        unit = (
            "points"
            if r.metric == "final_test_acc"
            else ("nats" if r.metric == "mean_train_loss" else "absolute rank correlation")
        )
        m = r.margin * scale
        ax.axvspan(-m, m, color="0.9", zorder=0)
        ax.axvline(0, color="k", lw=0.8)
        color = VERDICT_COLORS.get(r.verdict, "k")
        if r.effect is not None:
            lo, hi = r.ci95[0] * scale, r.ci95[1] * scale
            ax.errorbar(
                [r.effect * scale],
                [0],
                xerr=[[r.effect * scale - lo], [hi - r.effect * scale]],
                fmt="o",
                color=color,
                capsize=4,
                ms=6,
            )
            span = max(abs(lo), abs(hi), 2 * m)
            ax.set_xlim(-1.15 * span, 1.15 * span)
        else:
            ax.text(0.5, 0.5, f"not tested: {r.reason}", transform=ax.transAxes, ha="center", va="center", fontsize=8)
        ax.set_yticks([])
        claimed = "claimed: inside the band" if r.direction == "equal" else "claimed: below 0"
        ax.set_xlabel(f"{r.a} minus {r.b}: {METRICS[r.metric][0]} ({unit}); {claimed}", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_title(
            f"{family_label(r.family)}, {r.claim} [{r.regime}]: {r.verdict.upper()}"
            + (" (borderline: another machine can flip it)" if r.borderline else ""),
            fontsize=9,
            loc="left",
            color=color,
        )
    return fig


def figure_claims_by_task(table: Sequence[dict], tasks: Sequence[str]) -> Figure:
    """``lnbench claims --tasks``: the claim x task grid (``summary.json`` ``claims_by_task``),
    each cell coloured by its verdict (grey: inconclusive; pale: the task cannot measure the claim)
    and labelled with the verdict and the paired effect a - b (points of accuracy, nats, or an
    absolute rank correlation)."""
    from lnbench.analysis.claims import format_amount

    n, k = len(table), len(tasks)
    fig = Figure(figsize=(3.0 + 2.2 * k, 0.45 * n + 1.4), layout="constrained")
    ax = fig.subplots()
    suptitle(fig, "lnbench claims on each task: verdicts (Holm within each task)")
    for i, row in enumerate(table):
        for j, task in enumerate(tasks):
            v = row["tasks"].get(task)
            if v is None:
                color, text = "white", "-"
            elif v["verdict"] == "n/a":
                color, text = "0.95", "n/a"
            else:
                color = VERDICT_COLORS.get(v["verdict"], "k")
                effect = v.get("effect")
                shown = "" if effect is None else "\n" + format_amount(row["metric"], effect)
                text = v["verdict"] + (" (b)" if v.get("borderline") else "") + shown
            alpha = 0.55 if v is not None and v["verdict"] not in ("n/a",) else 1.0
            ax.add_patch(Rectangle((j, n - 1 - i), 1, 1, facecolor=color, alpha=alpha, edgecolor="white", lw=2))
            ax.text(j + 0.5, n - 0.5 - i, text, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, k)
    ax.set_ylim(0, n)
    ax.set_xticks([j + 0.5 for j in range(k)], list(tasks))
    ax.xaxis.tick_top()
    ax.set_yticks(
        [n - 0.5 - i for i in range(n)],
        [f"{family_label(r['family']).split(' (')[0]}: {r['id']}" for r in table],
        fontsize=7,
    )
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_xlabel("cell: the verdict and the paired effect a - b ((b): borderline)", fontsize=8)
    return fig


def plot_claims_by_task(table: Sequence[dict], tasks: Sequence[str], path: str | Path) -> Path:
    """Save :func:`figure_claims_by_task` as a PNG."""
    return save(figure_claims_by_task(table, tasks), path)


def plot_claims(results: Sequence, path: str | Path) -> Path:
    """Save :func:`figure_claims` as a PNG."""
    return save(figure_claims(results), path)


def figure_grid(entries: Sequence[dict], key: str) -> Figure:
    """``lnbench sweep``: the final test accuracy against one swept ``key``, one line per norm
    (colour: the norm), each point the mean over the cells at that value of the mean over seeds,
    with the mean of their 95% t intervals over seeds; values in the grid's order (categorical).
    The norms are nudged apart on the x axis (as in :func:`figure_sweep`) so that their bars do
    not hide each other."""
    from lnbench.analysis.grid import by_key

    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
    ax = fig.subplots()
    lines = by_key(entries, key)
    values = list(dict.fromkeys(e["values"][key] for e in entries))
    x_of = {v: i for i, v in enumerate(values)}
    step = min(0.08, 0.4 / max(len(lines) - 1, 1))  # at most 0.4 of a category between the outermost norms
    for k, (norm, points) in enumerate(lines.items()):
        xs = np.array([x_of[v] for v, _, _ in points], dtype=float) + step * (k - (len(lines) - 1) / 2)
        ys = np.array([m for _, m, _ in points])
        lo = np.array([c[0] for _, _, c in points])
        hi = np.array([c[1] for _, _, c in points])
        err = np.abs(np.stack([ys - lo, hi - ys]))
        label = norm_label(norm) if norm != "all" else "all cells"
        ax.errorbar(
            xs,
            ys,
            yerr=np.nan_to_num(err),
            marker="o",
            capsize=3,
            color=norm_color(norm) if norm != "all" else "k",
            label=label,
        )
    ax.set_xticks(range(len(values)), [str(v) for v in values])
    others = [k for k in entries[0]["values"] if k not in (key, "model.norm")] if entries else []
    avg = f"; mean over {', '.join(k.split('.')[-1] for k in others)}" if others else ""
    n = max((e["n_seeds"] for e in entries), default=0)
    ax.set(
        xlabel=key,
        ylabel="final test accuracy",
        title=f"Final test accuracy vs {key}\n(mean of {n} seeds, 95% t interval{avg})",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_grid(entries: Sequence[dict], key: str, path: str | Path) -> Path:
    """Save :func:`figure_grid` as a PNG."""
    return save(figure_grid(entries, key), path)


# -- The figures each group draws, as records -------------------------------------------------
#
# A figure is one function below declared with its record by @figure: its file, its caption, the
# figure group that draws it (the kinds that draw the group name it: train and compare draw "run")
# and when it applies. It takes the group's data (RunData, ...) and returns a Figure; the group's
# drawing (draw) saves every figure of the group that applies, in the order declared here, which
# is also the order report.html shows them in and docs/figures.md lists them in.

#: figure group -> its records, in the order declared (:func:`figure`)
FIGURES: dict[str, list[FigureRecord]] = {}

_F = TypeVar("_F", bound=Callable[..., Any])


def figure(file: str, *, group: str, caption: str, when: Callable[[Any], bool] | None = None) -> Callable[[_F], _F]:
    """Declare the decorated function as the figure ``file`` of ``group`` with its ``caption``
    (:class:`lnbench.report.captions.FigureRecord`), drawn when ``when(data)`` is true (None: always).

    The function takes the group's data (``run``: :class:`RunData`; ``batchsize-sweep``:
    :class:`BatchSizeData`; ``sweep``: :class:`SweepData`; ``claims``: :class:`ClaimsData`) and
    returns a :class:`matplotlib.figure.Figure`, or for a ``file`` with ``*`` yields
    ``(part, Figure)`` pairs, saved as ``file`` with ``part`` for the ``*``.

    Raises:
        ValueError: ``file`` is already a figure of ``group``.
    """

    def register(function: _F) -> _F:
        shelf = FIGURES.setdefault(group, [])
        if any(r.file == file for r in shelf):
            raise ValueError(f"figure {file} is already a figure of the group {group!r}")
        shelf.append(FigureRecord(file, caption, group, function, when))
        return function

    return register


def records(group: str) -> tuple[FigureRecord, ...]:
    """The figures of ``group`` (:data:`FIGURES`), in the order declared; () for a group with none."""
    return tuple(FIGURES.get(group, ()))


def draw(group: str, data: Any, into: Path) -> list[str]:
    """Draw every figure of ``group`` that applies to ``data`` (its record's ``when``) into the
    folder ``into``, in the order declared; returns the file names drawn.

    Raises:
        WriteError: a figure could not be written (:func:`save`).
    """
    drawn = []
    for record in records(group):
        if record.when is not None and not record.when(data):
            continue
        made = record.function(data)  # a Figure, or for a pattern (part, Figure) pairs: saved as each comes
        pairs = [("", made)] if isinstance(made, Figure) else made
        drawn += [save(fig, into / record.file.replace("*", part)).name for part, fig in pairs]
    return drawn


@dataclass(frozen=True)
class RunData:
    """What the ``run`` figures (train, compare) are drawn from: the runs' metrics, the target
    accuracy, and the memoryless baseline's mean accuracy (None: not drawn)."""

    metrics: Sequence[Metrics]
    target_acc: float = 0.9
    memoryless: float | None = None


@dataclass(frozen=True)
class BatchSizeData:
    """What the ``batchsize-sweep`` figures are drawn from: the aggregate over seeds
    (:func:`lnbench.analysis.aggregate.aggregate_over_seeds`), the family's label, the epochs as
    text (``2 epochs``) and chance (1 / C)."""

    aggregate: Sequence[dict]
    family: str
    epochs: str
    chance: float = 0.5


@dataclass(frozen=True)
class SweepData:
    """What the ``sweep`` figures are drawn from: summary.json's ``cells`` and the swept keys
    drawn against (not ``model.norm``: a line per norm)."""

    entries: Sequence[dict]
    keys: Sequence[str]


@dataclass(frozen=True)
class ClaimsData:
    """What the ``claims`` figures are drawn from: the claims' results
    (:class:`lnbench.analysis.claims.ClaimResult`), summary.json's ``claims_by_task`` (None:
    one task) and its ``tasks``."""

    results: Sequence
    by_task: Sequence[dict] | None = None
    tasks: Sequence[str] = ()


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
    "initialisation (dotted). Lines apart: the state's size follows the input's scale; together: it does not.",
    when=_has_scale,
)
def _hidden_norm(run: RunData) -> Figure:
    return figure_hidden_norm(run.metrics)


@figure(
    "hidden_norm_mean.png",
    group="run",
    caption="Mean ||h_t|| over all test sequences per timestep, after training (solid) and at initialisation "
    "(dotted); a stacked RNN or LSTM: one curve per layer (line style and marker).",
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


@figure(
    "accuracy_vs_batch_size.png",
    group="batchsize-sweep",
    caption="Final test accuracy against batch size (log2 axis), mean over seeds with 95% t intervals; BatchNorm "
    "with batch statistics dashed.",
)
def _accuracy_vs_batch_size(sweep: BatchSizeData) -> Figure:
    title = f"{sweep.family}: test accuracy after {sweep.epochs} vs batch size"
    return figure_sweep(sweep.aggregate, "final_test_acc", "final test accuracy", title, chance=sweep.chance)


@figure(
    "train_loss_vs_batch_size.png",
    group="batchsize-sweep",
    caption="Mean train loss over the epochs against batch size (log axes).",
)
def _train_loss_vs_batch_size(sweep: BatchSizeData) -> Figure:
    ylabel = "mean train loss over epochs (nats, log scale)"
    title = f"{sweep.family}: mean training loss over {sweep.epochs} vs batch size"
    return figure_sweep(sweep.aggregate, "mean_train_loss", ylabel, title, log_y=True)


@figure(
    "accuracy_vs_*.png",
    group="sweep",
    caption="Final test accuracy against one swept key, one line per norm (mean over seeds, 95% t interval; "
    "averaged over the other keys).",
)
def _accuracy_vs_keys(sweep: SweepData) -> Iterator[tuple[str, Figure]]:
    for key in sweep.keys:  # accuracy_vs_lr.png for train.lr
        yield key.split(".")[-1], figure_grid(sweep.entries, key)


@figure(
    "claims_by_task.png",
    group="claims",
    caption="Each claim's verdict on each task (rows: claims, columns: tasks), with its paired effect a - b "
    "(accuracy in points, train loss in nats); n/a: the task cannot measure the claim's metric.",
    when=lambda claims: bool(claims.by_task),
)
def _claims_by_task(claims: ClaimsData) -> Figure:
    return figure_claims_by_task(claims.by_task or [], claims.tasks)


@figure(
    "claims.png",
    group="claims",
    caption="Each claim's paired effect a - b (mean over seeds) with its 95% interval; shaded: the claim's margin; "
    "colour: the verdict.",
)
def _claims(claims: ClaimsData) -> Figure:
    return figure_claims(claims.results)


#: figure file -> its caption, over every group (the catalogue docs/figures.md lists)
CAPTIONS = {r.file: r.caption for shelf in FIGURES.values() for r in shelf}


def draw_run_figures(
    into: Path, run_dirs: Sequence[Path], target_acc: float, memoryless: float | None = None
) -> list[str]:
    """Draw the ``run`` figures of a train or compare run folder into the folder ``into`` from its
    runs' metrics files; ``memoryless``: the memoryless baseline's mean accuracy, drawn in the
    accuracy figure. Returns the file names drawn (none when no run finished an epoch or diverged)."""
    metrics = [read_metrics(d) for d in run_dirs if (d / "metrics.json").exists()]
    metrics = [m for m in metrics if m.epochs or m.status == "diverged"]
    return draw("run", RunData(metrics, target_acc, memoryless), into) if metrics else []
