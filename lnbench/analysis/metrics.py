"""The metrics that comparisons and claims test, declared once: each one's label, its short names
in tables, the units its amounts are shown in, and the bound of a difference of two of its values.

A metric is a :class:`lnbench.records.schema.SummaryRow` field (``final_test_acc``,
``mean_train_loss``), or a value derived from one (``abs_scale_spearman``: the absolute Spearman
correlation of ||h_T|| with the input scale; ``batch_stats_vs_eval``: BatchNorm's test accuracy with
batch statistics minus with running statistics, a sweep's comparison).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """How one metric is named and shown.

    ``label``: in sentences (``final test accuracy``); ``column``: in the claims tables (``test
    acc``); ``pair_column``: in the paired-comparisons tables (``final acc``); an amount is shown as
    ``scale * x`` with ``decimals`` and ``unit`` (`` points``); ``axis_unit``: the unit named on a
    figure's axis; ``bound``: a difference of two values lies within [-bound, bound] (None: unbounded).
    """

    label: str
    column: str
    pair_column: str
    scale: float = 1
    decimals: int = 2
    unit: str = ""
    axis_unit: str = ""
    bound: float | None = None


#: metric -> its :class:`Metric`, in the order tables list them.
METRICS: dict[str, Metric] = {
    "mean_train_loss": Metric(
        "mean train loss (area under the loss curve)",
        "mean train loss",
        "mean train loss",
        decimals=3,
        unit=" nats",
        axis_unit="nats",
    ),
    "final_test_acc": Metric(
        "final test accuracy",
        "test acc",
        "final acc",
        scale=100,
        decimals=1,
        unit=" points",
        axis_unit="points",
        bound=1.0,
    ),
    "abs_scale_spearman": Metric(
        "|Spearman correlation| of ||h_T|| with the input scale",
        "|rho(||h_T||, s)|",
        "|rho(||h_T||, s)|",
        axis_unit="absolute rank correlation",
        bound=1.0,
    ),
    # a divergence claim's: the fraction of a condition's seeds that diverged (lnbench.analysis.claim_catalogue.DIVERGED)
    "diverged": Metric(
        "seeds diverged",
        "seeds diverged",
        "seeds diverged",
        scale=100,
        decimals=0,
        unit="% of seeds",
        axis_unit="percentage points of the seeds",
        bound=1.0,
    ),
    "batch_stats_vs_eval": Metric(
        "test accuracy, batch statistics minus running statistics",
        "BN batch - running stats",
        "BN batch - running stats",
        scale=100,
        decimals=1,
        unit=" points",
        axis_unit="points",
    ),
}


def pair_column(metric: str) -> str:
    """The metric's name in a paired-comparisons table; an unknown metric by its key."""
    return METRICS[metric].pair_column if metric in METRICS else metric


def format_amount(metric: str, x: float, signed: bool = True) -> str:
    """An amount of ``metric`` in its display units: ``+1.5 points``, ``0.020 nats``."""
    m = METRICS[metric]
    return f"{m.scale * x:{'+' if signed else ''}.{m.decimals}f}{m.unit}"


def format_level(metric: str, x: float) -> str:
    """A value (not a difference) of ``metric``: ``93.6%``, ``0.264 nats``, ``0.06``."""
    return f"{x:.1%}" if metric == "final_test_acc" else format_amount(metric, x, signed=False)


def format_interval(metric: str, effect: float, ci: tuple[float, float] | list[float]) -> str:
    """``-0.083 [-0.101, -0.065] nats`` or ``+1.5 [-0.5, +3.5] points``."""
    m = METRICS[metric]
    f = lambda x: f"{m.scale * x:+.{m.decimals}f}"  # noqa: E731
    return f"{f(effect)} [{f(ci[0])}, {f(ci[1])}]{m.unit}"
