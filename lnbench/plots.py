"""Figures drawn from metrics.json files only (never from live models).

Every function takes the loaded metrics of runs and a path, saves one PNG with the Agg backend
and closes the figure. Runs with several seeds are drawn as the mean over seeds with a band from
the minimum to the maximum. A diverged run is drawn up to its last finished epoch, with a dotted
vertical line at the epoch it diverged in (and a legend entry even if it finished no epoch).
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
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

NORM_COLORS = {"none": "tab:gray", "batch": "tab:orange", "layer": "tab:blue"}
NORM_LABELS = {"none": "NoNorm", "batch": "BatchNorm", "layer": "LayerNorm"}
FAMILY_LABELS = {"rnn": "RNN", "transformer": "Transformer (pre-norm)"}


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


def _by_family_norm(metrics: list[dict]) -> dict[str, dict[str, list[dict]]]:
    out: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for m in metrics:
        out[m["family"]][m["norm"]].append(m)
    return out


def _norm_label(norm: str, runs: list[dict], suffix: str = "") -> str:
    label = NORM_LABELS.get(norm, norm) + suffix
    if len(runs) > 1:
        label += f" ({len(runs)} seeds)"
    diverged = sorted(r["diverged_at_epoch"] for r in runs if r.get("status") == "diverged" and r.get("diverged_at_epoch"))
    if diverged:
        label += f", diverged at epoch {', '.join(map(str, diverged))}"
    return label


def _draw(ax, runs: list[dict], key: str, norm: str, suffix: str = "", legend: bool = True, **kw) -> None:
    """Mean over seeds of per-epoch ``key`` against epoch, with a min-max band and divergence marks."""
    series = [_series(r.get(key) or []) for r in runs]
    mean, lo, hi = _mean_band(series)
    color = NORM_COLORS.get(norm)
    x = np.arange(1, len(mean) + 1)
    ax.plot(x, mean, color=color, label=_norm_label(norm, runs, suffix) if legend else "_nolegend_", **kw)
    if len(runs) > 1 and len(mean):
        ax.fill_between(x, lo, hi, color=color, alpha=0.15, linewidth=0)
    if not suffix:
        for r in runs:
            if r.get("status") == "diverged" and r.get("diverged_at_epoch"):
                ax.axvline(r["diverged_at_epoch"], color=color, ls=":", lw=1.2)


def _family_axes(n: int, title: str):
    fig, axes = plt.subplots(1, n, figsize=(6.4 * n, 4.6), squeeze=False, constrained_layout=True)
    fig.suptitle(title, fontsize=13)
    return fig, axes[0]


def _save(fig, path: str | Path) -> Path:
    for ax in fig.axes:
        if ax.get_xlabel() in ("epoch", "timestep t"):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_training_loss(metrics: list[dict], path: str | Path) -> Path:
    """(1) Train loss (solid, mean over the epoch's mini-batches) and test loss (dashed) per
    epoch, log scale, one panel per family. A widening gap between them is overfitting."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Training loss (solid) and test loss (dashed)")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            _draw(ax, runs, "train_loss", norm)
            _draw(ax, runs, "test_loss", norm, " test", legend=False, ls="--", lw=1)
        handles = ax.get_legend_handles_labels()[0]
        ax.set(title=FAMILY_LABELS.get(family, family), xlabel="epoch", ylabel="cross-entropy (nats, log scale)", yscale="log")
        ax.grid(alpha=0.3, which="both")
        ax.legend(handles=handles + [Line2D([], [], color="k", lw=1, ls="--", label="test loss")], fontsize=9)
    return _save(fig, path)


def plot_test_accuracy(metrics: list[dict], path: str | Path, target_acc: float = 0.9) -> Path:
    """(2) Test accuracy per epoch per norm (eval mode); BatchNorm with batch statistics dashed."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Test accuracy")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            _draw(ax, runs, "test_acc", norm)
            if all(r.get("test_acc_batch_stats") for r in runs):
                _draw(ax, runs, "test_acc_batch_stats", norm, " (batch stats)", ls="--", lw=1)
        ax.axhline(target_acc, color="k", lw=0.8, ls=":", label=f"{target_acc:.0%} target")
        ax.axhline(0.5, color="k", lw=0.5, alpha=0.4)
        ax.set(title=FAMILY_LABELS.get(family, family), xlabel="epoch", ylabel="test accuracy", ylim=(0.4, 1.01))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=9)
    return _save(fig, path)


def plot_hidden_norm(metrics: list[dict], path: str | Path) -> Path:
    """(3) Mean L2 norm of the hidden state per timestep after the last epoch (solid) and at
    initialisation (dotted). For the Transformer: the residual stream after the block."""
    groups = _by_family_norm(metrics)
    fig, axes = _family_axes(len(groups), "Hidden-state magnitude over timesteps (test set)")
    for ax, (family, norms) in zip(axes, groups.items()):
        for norm, runs in norms.items():
            final = [_series(r["hidden_norm"][-1]) for r in runs if r["hidden_norm"]]
            init = [_series(r["hidden_norm_init"]) for r in runs if r.get("hidden_norm_init")]
            color = NORM_COLORS.get(norm)
            if final:
                mean = _mean_band(final)[0]
                ax.plot(np.arange(1, len(mean) + 1), mean, color=color, marker="o", ms=3, label=_norm_label(norm, runs))
            if init:
                mean = _mean_band(init)[0]
                ax.plot(np.arange(1, len(mean) + 1), mean, color=color, ls=":", lw=1.2)
        ylabel = "mean ||h_t|| (L2)" if family == "rnn" else "mean ||residual stream|| (L2)"
        sizes = {r.get("hidden_size") for rs in norms.values() for r in rs}
        if family == "rnn" and len(sizes) == 1 and None not in sizes:  # |tanh| < 1
            ax.axhline(np.sqrt(sizes.pop()), color="k", lw=0.7, ls="--", label="sqrt(H), the bound of tanh")
        ax.plot([], [], color="k", ls=":", lw=1.2, label="dotted: at initialisation")
        ax.set(title=FAMILY_LABELS.get(family, family), xlabel="timestep t", ylabel=ylabel)
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.25)  # headroom for the legend
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", ncol=2)
    return _save(fig, path)


def plot_grad_norm(metrics: list[dict], path: str | Path) -> Path:
    """(4) Gradient L2 norm per layer over training (mean over each epoch's steps, log scale):
    rows are model families, columns norms, one line per layer; a layer has one colour
    throughout, and each row has one legend."""
    groups = _by_family_norm(metrics)
    norms_order = [n for n in NORM_LABELS if any(n in v for v in groups.values())]
    rows, cols = len(groups), len(norms_order)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.6 * cols + 2.6, 3.8 * rows), squeeze=False, sharey="row", constrained_layout=True
    )
    fig.suptitle("Gradient norm per layer over training (L2 norm of each layer's gradient, mean over steps)", fontsize=12)
    palette = plt.get_cmap("tab20").colors
    for i, (family, norms) in enumerate(groups.items()):
        layers = list(dict.fromkeys(layer for rs in norms.values() for r in rs for layer in r["grad_norm_layer"]))
        shades = [*range(0, 20, 2), *range(1, 20, 2)]  # tab20's ten dark colours first, then the light ones
        color = {layer: palette[shades[k % 20]] for k, layer in enumerate(layers)}
        for j, norm in enumerate(norms_order):
            ax = axes[i, j]
            runs = norms.get(norm, [])
            ax.set_title(f"{FAMILY_LABELS.get(family, family)}: {NORM_LABELS.get(norm, norm)}", fontsize=10)
            if not runs:
                ax.set_axis_off()
                continue
            for layer in layers:
                series = [_series(r["grad_norm_layer"][layer]) for r in runs if layer in r["grad_norm_layer"]]
                if series:
                    mean = _mean_band(series)[0]
                    ax.plot(np.arange(1, len(mean) + 1), mean, color=color[layer], lw=1.4)
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            if j == 0:
                ax.set_ylabel("gradient L2 norm (log scale)")
            ax.grid(alpha=0.3, which="both")
        handles = [Line2D([], [], color=color[layer], lw=2, label=layer) for layer in layers]
        axes[i, -1].legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), title="layer", title_fontsize=8)
    return _save(fig, path)


def plot_sweep(rows: list[dict], key: str, ylabel: str, title: str, path: str | Path, log_y: bool = False) -> Path:
    """Batch-size sweep: ``key`` of each cell against batch size (log2 axis), one line per norm.

    ``rows`` are summary rows with ``norm``, ``batch_size``, ``status`` and ``key``; diverged
    cells are drawn as an x at the bottom of the axes. Accuracies get a 95% binomial error bar
    over the ``n_test`` test sequences; the norms are nudged apart on the x axis so that the
    bars do not hide each other. For ``final_test_acc``, BatchNorm's accuracy with batch
    statistics (``final_test_acc_batch_stats``) is drawn dashed.
    """
    fig, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
    by_norm: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_norm[r["norm"]].append(r)
    nudge = {norm: 2 ** (0.06 * (k - (len(by_norm) - 1) / 2)) for k, norm in enumerate(by_norm)}
    later = []
    for norm, cells in by_norm.items():
        cells = sorted(cells, key=lambda r: r["batch_size"])
        bs = np.array([c["batch_size"] for c in cells], dtype=float)
        y = _series([c.get(key) for c in cells])
        color, name = NORM_COLORS.get(norm), NORM_LABELS.get(norm, norm)
        if key == "final_test_acc" and all(c.get("n_test") for c in cells):  # binomial 95% interval
            n = np.array([c["n_test"] for c in cells], dtype=float)
            err = 1.96 * np.sqrt(np.clip(y * (1 - y), 1 / n, None) / n)
            ax.errorbar(bs * nudge[norm], y, yerr=err, marker="o", capsize=3, color=color, label=name)
        else:
            ax.plot(bs, y, marker="o", color=color, label=name)
        if key == "final_test_acc" and any(c.get("final_test_acc_batch_stats") is not None for c in cells):
            yb = _series([c.get("final_test_acc_batch_stats") for c in cells])
            later.append((bs * nudge[norm], yb, color, f"{name} with batch statistics"))
        div = bs[[c["status"] == "diverged" for c in cells]]
        if len(div):
            ax.plot(div, np.zeros(len(div)), "x", color=color, ms=9, transform=ax.get_xaxis_transform(), clip_on=False, label=f"{name} diverged")
    for x, yb, color, label in later:
        ax.plot(x, yb, marker="s", ms=4, ls="--", lw=1, color=color, label=label)
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
