"""The figures of the batch-size sweep and of ``lnbench sweep``, from summary.json."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

from lnbench.names import (
    norm_color,
    norm_label,
)
from lnbench.report.figures.registry import BatchSizeData, SweepData, figure, save
from lnbench.report.figures.style import as_series, set_log_y


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
        y = as_series([c.get(f"mean_{key}") for c in cells])
        color, name = norm_color(norm), norm_label(norm)
        if key == "final_test_acc":
            ci = np.array([c["ci95_final_test_acc"] or [np.nan, np.nan] for c in cells], dtype=float)  # (n, 2)
            err = np.abs(np.stack([y - ci[:, 0], ci[:, 1] - y]))
            has_bs = any(c.get("mean_final_test_acc_batch_stats") is not None for c in cells)
            label = f"{name} (eval: running statistics)" if has_bs else name
            ax.errorbar(bs * nudge[norm], y, yerr=err, marker="o", capsize=3, color=color, label=label)
            if has_bs:
                yb = as_series([c.get("mean_final_test_acc_batch_stats") for c in cells])
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
