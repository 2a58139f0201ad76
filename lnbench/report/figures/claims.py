"""The figures of ``lnbench claims``, from its results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lnbench.names import family_label, norm_color, norm_label, norm_order
from lnbench.records.schema import Metrics
from lnbench.report.figures.registry import ClaimsData, figure, save
from lnbench.report.figures.style import as_series, mean_band, set_log_y, suptitle

VERDICT_COLORS = {"held": "tab:green", "not held": "tab:red", "inconclusive": "tab:gray"}


def figure_claims(results: Sequence) -> Figure:
    """``lnbench claims``: one row per claim, the paired effect a - b (mean over seeds) with its
    interval (95%; a confirm stage's 96%, named in the row's title), in the claim's units; the shaded band is the claim's margin (a directional
    claim needs the interval below 0, an equivalence claim needs it inside the band), the
    colour is the verdict. ``results``: :class:`lnbench.analysis.claims.ClaimResult` objects."""
    from lnbench.analysis.metrics import METRICS

    n = len(results)
    fig = Figure(figsize=(10, 1.15 * n + 1.0), layout="constrained")
    axes = fig.subplots(n, 1, squeeze=False)[:, 0]
    levels = sorted({f"{1 - getattr(r, 'alpha', 0.05):.0%}" for r in results if r.effect is not None}) or ["95%"]
    suptitle(
        fig,
        f"lnbench claims: paired effect a - b over seeds, {' or '.join(levels)} interval (shaded: the claim's margin)",
    )
    for ax, r in zip(axes, results):
        scale, unit = METRICS[r.metric].scale, METRICS[r.metric].axis_unit
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
        ax.set_xlabel(f"{r.a} minus {r.b}: {METRICS[r.metric].label} ({unit}); {claimed}", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
        stage = getattr(r, "stage", "")
        where = {"pilot": "; decided in the pilot", "not decidable": "; not decidable"}.get(stage, "")
        if stage == "confirm":
            where = f"; confirm stage, {r.n_seeds} fresh seeds, {1 - r.alpha:.0%} interval"
        ax.set_title(
            f"{family_label(r.family)}, {r.claim} [{r.regime}]: {r.verdict.upper()}{where}"
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
    from lnbench.analysis.metrics import format_amount

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
    caption="Each claim's paired effect a - b (mean over seeds) with its interval (95%; a confirm stage's level is "
    "named in its row's title); shaded: the claim's margin; colour: the verdict.",
)
def _claims(claims: ClaimsData) -> Figure:
    return figure_claims(claims.results)


def figure_figure6(runs: Sequence[Metrics], setting: str = "", optimizer: str = "") -> Figure:
    """Ba et al. 2016's Figure 6, measured: per batch size (columns, largest first), the training
    negative log-likelihood (the mean train loss of each epoch, log scale; top) and the test error
    (1 - test accuracy, eval mode; bottom) over the epochs, one line per norm (mean over seeds,
    the band from the lowest to the highest seed), in lnbench's colours. ``runs``: the ``figure6``
    regime's metrics; ``setting``: what was trained, a line under the title; ``optimizer``: its
    name in each column's title beside the learning rate (``(SGD, lr 0.1)``; none if "")."""
    batch_sizes = sorted({m.batch_size for m in runs}, reverse=True)
    fig = Figure(figsize=(5.2 * max(1, len(batch_sizes)), 7.0), layout="constrained")
    axes = fig.subplots(2, max(1, len(batch_sizes)), squeeze=False)
    seeds = len({m.seed for m in runs})
    suptitle(
        fig,
        f"Ba et al. 2016, Figure 6, measured: permutation-invariant MNIST, mean of {seeds} seeds (band: lowest to "
        f"highest seed)" + (f"\n{setting}" if setting else ""),
    )
    for col, b in enumerate(batch_sizes):
        at_b = [m for m in runs if m.batch_size == b]
        for norm in norm_order(m.norm for m in at_b):
            of_norm = [m for m in at_b if m.norm == norm]
            for row, values in enumerate(
                ([as_series(m.train_loss) for m in of_norm], [1 - as_series(m.test_acc) for m in of_norm])
            ):
                ax = axes[row, col]
                mean, lo, hi = mean_band(values)
                epochs = range(1, len(mean) + 1)
                color = norm_color(norm)
                ax.plot(epochs, 100 * mean if row else mean, color=color, marker="o", ms=3, label=norm_label(norm))
                ax.fill_between(epochs, 100 * lo if row else lo, 100 * hi if row else hi, color=color, alpha=0.15)
        lr = at_b[0].lr[0] if at_b and at_b[0].lr else None
        how = ", ".join(([optimizer] if optimizer else []) + ([f"lr {lr:g}"] if lr is not None else []))
        axes[0, col].set_title(f"batch size {b}" + (f" ({how})" if how else ""), fontsize=10)
        axes[0, col].set_ylabel("train NLL (nats, mean over the epoch)")
        set_log_y(axes[0, col])
        axes[1, col].set_ylabel("test error (%)")
        for row in (0, 1):
            axes[row, col].set_xlabel("epoch")
            axes[row, col].grid(alpha=0.3)
        axes[0, col].legend(fontsize=8)
    return fig


@figure(
    "figure6.png",
    group="claims",
    caption="Ba et al. 2016's Figure 6, measured (lnbench claims --only figure6): per batch size, the training "
    "negative log-likelihood (top, log scale; the training-mode loss, BatchNorm with its batch's statistics) and "
    "the test error (bottom, eval mode) over the epochs, mean of the seeds with the band from the lowest to the "
    "highest; the sizes under the title.",
    when=lambda claims: bool(claims.figure6),
)
def _figure6(claims: ClaimsData) -> Figure:
    return figure_figure6(claims.figure6, claims.figure6_setting, claims.figure6_optimizer)
