"""Figures drawn from metrics.json files only (never from live models).

Every function takes the loaded metrics of finished runs and a path, saves one PNG with the
Agg backend and closes the figure. Runs with several seeds are drawn as the mean over seeds
with a band from the minimum to the maximum.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

NORM_COLORS = {"none": "tab:gray", "batch": "tab:orange", "layer": "tab:blue"}
NORM_LABELS = {"none": "NoNorm", "batch": "BatchNorm", "layer": "LayerNorm"}
FAMILY_LABELS = {"rnn": "RNN", "transformer": "Transformer (pre-norm)"}


def _series(values: Sequence) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _mean_band(runs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, min, max over runs of possibly different lengths (a diverged run stops early)."""
    n = max(len(r) for r in runs)
    stacked = np.full((len(runs), n), np.nan)
    for i, r in enumerate(runs):
        stacked[i, : len(r)] = r
    with warnings.catch_warnings():  # an all-NaN column (every seed diverged) is expected
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(stacked, 0), np.nanmin(stacked, 0), np.nanmax(stacked, 0)


def _by_family_norm(metrics: list[dict]) -> dict[str, dict[str, list[dict]]]:
    out: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for m in metrics:
        out[m["family"]][m["norm"]].append(m)
    return out


def _draw(ax, x: np.ndarray, runs: list[np.ndarray], norm: str, label_suffix: str = "", **kw) -> None:
    mean, lo, hi = _mean_band(runs)
    x = x[: len(mean)]
    label = NORM_LABELS.get(norm, norm) + label_suffix + (f" ({len(runs)} seeds)" if len(runs) > 1 else "")
    ax.plot(x, mean, color=NORM_COLORS.get(norm), label=label, **kw)
    if len(runs) > 1:
        ax.fill_between(x, lo, hi, color=NORM_COLORS.get(norm), alpha=0.15, linewidth=0)


def _family_axes(n: int, title: str):
    fig, axes = plt.subplots(1, n, figsize=(6.2 * n, 4.4), squeeze=False, constrained_layout=True)
    fig.suptitle(title, fontsize=13)
    return fig, axes[0]


def _save(fig, path: str | Path) -> Path:
    for ax in fig.axes:
        if ax.get_xlabel() in ("epoch", "timestep t"):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def _mark_diverged(ax, runs_metrics: list[dict], norm: str) -> None:
    for m in runs_metrics:
        if m.get("status") == "diverged" and m.get("diverged_at_epoch"):
            ax.axvline(m["diverged_at_epoch"], color=NORM_COLORS.get(norm), ls=":", lw=1)


def plot_training_loss(metrics: list[dict], path: str | Path) -> Path:
    """(1) Training loss (mean cross-entropy per epoch, log scale) per norm, one panel per family."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Training loss")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            x = np.arange(1, max(len(r["train_loss"]) for r in runs) + 1)
            _draw(ax, x, [_series(r["train_loss"]) for r in runs], norm)
            _mark_diverged(ax, runs, norm)
        ax.set(title=FAMILY_LABELS.get(family, family), xlabel="epoch", ylabel="train loss (nats, log scale)", yscale="log")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    return _save(fig, path)


def plot_test_accuracy(metrics: list[dict], path: str | Path, target_acc: float = 0.9) -> Path:
    """(2) Test accuracy per epoch per norm (eval mode); BatchNorm with batch statistics dashed."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Test accuracy")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            x = np.arange(1, max(len(r["test_acc"]) for r in runs) + 1)
            _draw(ax, x, [_series(r["test_acc"]) for r in runs], norm)
            if all(r.get("test_acc_batch_stats") for r in runs):
                _draw(ax, x, [_series(r["test_acc_batch_stats"]) for r in runs], norm, " (batch stats)", ls="--", lw=1)
        ax.axhline(target_acc, color="k", lw=0.8, ls=":", label=f"{target_acc:.0%} target")
        ax.axhline(0.5, color="k", lw=0.5, alpha=0.4)
        ax.set(title=FAMILY_LABELS.get(family, family), xlabel="epoch", ylabel="test accuracy", ylim=(0.4, 1.01))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    return _save(fig, path)


def plot_hidden_norm(metrics: list[dict], path: str | Path) -> Path:
    """(3) Mean L2 norm of the hidden state per timestep: at initialisation (dotted) and after
    the last epoch (solid). For the Transformer: the residual stream per position."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Hidden-state magnitude over timesteps (test set)")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            final = [_series(r["hidden_norm"][-1]) for r in runs if r["hidden_norm"]]
            init = [_series(r["hidden_norm_init"]) for r in runs if r.get("hidden_norm_init")]
            if final:
                _draw(ax, np.arange(1, len(final[0]) + 1), final, norm, ", last epoch", marker="o", ms=3)
            if init:
                _draw(ax, np.arange(1, len(init[0]) + 1), init, norm, ", init", ls=":", lw=1.2)
        ylabel = "mean ||h_t|| (L2)" if family == "rnn" else "mean ||residual stream|| (L2)"
        sizes = {r.get("hidden_size") for rs in norms.values() for r in rs}
        if family == "rnn" and len(sizes) == 1 and None not in sizes:  # |tanh| < 1
            ax.axhline(np.sqrt(sizes.pop()), color="k", lw=0.7, ls="--", label="bound sqrt(H) of tanh")
        ax.set(title=FAMILY_LABELS.get(family, family), xlabel="timestep t", ylabel=ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_grad_norm(metrics: list[dict], path: str | Path) -> Path:
    """(4) Gradient L2 norm per layer over training (mean over each epoch's steps, log scale):
    rows are model families, columns norms, one line per layer."""
    groups = _by_family_norm(metrics)
    norms_order = [n for n in NORM_LABELS if any(n in v for v in groups.values())]
    rows, cols = len(groups), len(norms_order)
    fig, axes = plt.subplots(
        rows, cols, figsize=(5.0 * cols, 3.9 * rows), squeeze=False, sharey="row", constrained_layout=True
    )
    fig.suptitle("Gradient norm per layer over training", fontsize=13)
    for i, (family, norms) in enumerate(groups.items()):
        for j, norm in enumerate(norms_order):
            ax = axes[i, j]
            runs = norms.get(norm, [])
            ax.set_title(f"{FAMILY_LABELS.get(family, family)} - {NORM_LABELS.get(norm, norm)}", fontsize=10)
            if not runs:
                ax.set_axis_off()
                continue
            cmap = plt.get_cmap("viridis")
            layers = list(runs[0]["grad_norm_layer"])
            for k, layer in enumerate(layers):
                series = [_series(r["grad_norm_layer"][layer]) for r in runs if layer in r["grad_norm_layer"]]
                mean, _, _ = _mean_band(series)
                ax.plot(np.arange(1, len(mean) + 1), mean, color=cmap(k / max(len(layers) - 1, 1)), label=layer)
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            if j == 0:
                ax.set_ylabel("gradient L2 norm (log scale)")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7, ncol=1 + (len(layers) > 6))
    return _save(fig, path)


def plot_sweep(rows: list[dict], key: str, ylabel: str, title: str, path: str | Path, log_y: bool = False) -> Path:
    """Batch-size sweep: ``key`` of each cell against batch size (log2 axis), one line per norm.

    ``rows`` are summary rows with ``norm``, ``batch_size``, ``status`` and ``key``; diverged
    cells are drawn as an x at the bottom of the axes. Accuracies get a 95% binomial error bar
    over the ``n_test`` test sequences. For ``final_test_acc``, BatchNorm's
    accuracy with batch statistics (``final_test_acc_batch_stats``) is drawn dashed.
    """
    fig, ax = plt.subplots(figsize=(7.5, 4.8), constrained_layout=True)
    by_norm: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_norm[r["norm"]].append(r)
    for norm, cells in by_norm.items():
        cells = sorted(cells, key=lambda r: r["batch_size"])
        bs = np.array([c["batch_size"] for c in cells])
        y = _series([c.get(key) for c in cells])
        if key == "final_test_acc" and all(c.get("n_test") for c in cells):  # binomial 95% interval
            n = np.array([c["n_test"] for c in cells], dtype=float)
            err = 1.96 * np.sqrt(np.clip(y * (1 - y), 1 / n, None) / n)
            ax.errorbar(bs, y, yerr=err, marker="o", capsize=3, color=NORM_COLORS.get(norm), label=NORM_LABELS.get(norm, norm))
        else:
            ax.plot(bs, y, marker="o", color=NORM_COLORS.get(norm), label=NORM_LABELS.get(norm, norm))
        if key == "final_test_acc" and any(c.get("final_test_acc_batch_stats") is not None for c in cells):
            yb = _series([c.get("final_test_acc_batch_stats") for c in cells])
            ax.plot(bs, yb, marker="s", ls="--", lw=1, color=NORM_COLORS.get(norm), label=f"{NORM_LABELS.get(norm, norm)} (batch stats)")
        div = bs[[c["status"] == "diverged" for c in cells]]
        if len(div):
            ax.plot(div, np.zeros(len(div)), "x", color=NORM_COLORS.get(norm), ms=9, transform=ax.get_xaxis_transform(), clip_on=False, label=f"{NORM_LABELS.get(norm, norm)} diverged")
    ax.set_xscale("log", base=2)
    all_bs = sorted({r["batch_size"] for r in rows})
    ax.set_xticks(all_bs, [str(b) for b in all_bs])
    if log_y:
        ax.set_yscale("log")
    if key == "final_test_acc":
        ax.axhline(0.5, color="k", lw=0.6, ls=":", label="chance")
    ax.set(title=title, xlabel="batch size (log2 scale)", ylabel=ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, path)
