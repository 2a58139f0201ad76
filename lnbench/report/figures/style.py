"""What every figure shares: means over seeds with their bands, the panels by model group and
norm, legends, layer styles, log axes."""

from __future__ import annotations

import textwrap
import warnings
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from lnbench.names import (
    FAMILY_REGISTRY,
    group_label,
    model_group_of,
    norm_color,
    norm_label,
)
from lnbench.records.schema import Metrics


def is_recurrent_group(group: str) -> bool:
    """Whether a panel's group (``"rnn-separate"``, ``"lstm@0.1"``) is a recurrent family's."""
    info = FAMILY_REGISTRY.get(group.partition("@")[0].partition("-")[0])
    return info is not None and info.recurrent


def as_series(values: Sequence) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def mean_band(runs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, min, max over runs of possibly different lengths (a diverged run stops early)."""
    n = max((len(r) for r in runs), default=0)
    stacked = np.full((len(runs), n), np.nan)
    for i, r in enumerate(runs):
        stacked[i, : len(r)] = r
    with warnings.catch_warnings():  # an all-NaN column (every seed diverged) is expected
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(stacked, 0), np.nanmin(stacked, 0), np.nanmax(stacked, 0)


def by_family_norm(metrics: Sequence[Metrics]) -> dict[str, dict[str, list[Metrics]]]:
    """Runs by model group (:func:`lnbench.names.model_group_of`: ``"rnn-separate"``, ``"lstm@0.1"``), then norm."""
    out: dict[str, dict[str, list[Metrics]]] = defaultdict(lambda: defaultdict(list))
    for m in metrics:
        out[model_group_of(m.family, m.norm_placement, m.norm_gain_init)][m.norm].append(m)
    return out


def panel_title(group: str) -> str:
    """A model group's panel title: ``"RNN (separate)"``, ``"Transformer (pre-norm)"``, ``"LSTM, gains 0.1"``."""
    return group_label(group)


def norm_legend_label(norm: str, runs: list[Metrics], suffix: str = "") -> str:
    label = norm_label(norm) + suffix
    finished = [r for r in runs if r.status != "diverged"] or runs
    if len(finished) > 1:
        label += f", mean of {len(finished)} seeds"
    diverged = sorted(r.diverged_at_epoch for r in runs if r.status == "diverged" and r.diverged_at_epoch)
    if diverged:
        label += f", diverged at epoch {', '.join(map(str, diverged))}"
    return label


def draw_mean_curve(ax, runs: list[Metrics], key: str, norm: str, suffix: str = "", legend: bool = True, **kw) -> None:
    """Mean over seeds of per-epoch ``key`` against epoch, with a min-max band and divergence marks.

    The diverged-run rule of :mod:`lnbench.records.schema`: the mean and band are over the seeds that did
    not diverge; diverged seeds are marked by a dotted line at their epoch (and in the legend).
    Only when every seed diverged are their partial curves averaged, so the group stays visible.
    """
    finished = [r for r in runs if r.status != "diverged"]
    series = [as_series(getattr(r, key) or []) for r in (finished or runs)]
    mean, lo, hi = mean_band(series)
    color = norm_color(norm)
    x = np.arange(1, len(mean) + 1)
    if np.isfinite(mean).sum() == 1:  # a line through one point draws nothing: mark the point
        kw = {"marker": "o", "ms": 5, **({"mfc": "none"} if kw.get("ls") == "--" else {}), **kw}  # dashed: hollow
    ax.plot(x, mean, color=color, label=norm_legend_label(norm, runs, suffix) if legend else "_nolegend_", **kw)
    if len(runs) > 1 and len(mean):
        ax.fill_between(x, lo, hi, color=color, alpha=0.15, linewidth=0)
    if not suffix:
        for r in runs:
            if r.status == "diverged" and r.diverged_at_epoch:
                ax.axvline(r.diverged_at_epoch, color=color, ls=":", lw=1.2)


def add_legend(ax, runs: Sequence[Metrics], extra: Sequence = (), **kw) -> None:
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


def shaded(color: str | None, amount: float) -> tuple:
    """``color`` darkened towards black by ``1 - amount`` (1: the colour itself)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color or "k")
    return (r * amount, g * amount, b * amount)


def family_axes(n: int, title: str):
    fig = Figure(figsize=(6.4 * n, 5.6), layout="constrained")  # room below the axes for the legend
    axes = fig.subplots(1, n, squeeze=False)
    suptitle(fig, title, fontsize=13)
    return fig, axes[0]


def note_empty(ax, why: str) -> None:
    """Say in the middle of the axes ``ax`` why they draw nothing (``why``), without x ticks."""
    ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="0.3")
    ax.set_xticks([])


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
        note_empty(ax, f"nothing to draw on a log scale:\n{why_empty}")
        ax.set_yticks([])
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
