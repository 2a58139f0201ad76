"""lnbench.report.figures.sweeps: the sweep figures draw the aggregates' means and intervals, and the
error bars of several norms sit side by side, not on top of each other (nudged as in the
batch-size figure)."""

import numpy as np
from matplotlib.container import ErrorbarContainer

from lnbench.report import figures as plots
from lnbench.report.figures import figure_grid


def _entry(norm, seq_len, acc):
    return {
        "values": {"model.norm": norm, "data.seq_len": seq_len},
        "n_seeds": 3,
        "n_diverged": 0,
        "mean_final_test_acc": acc,
        "std_final_test_acc": 0.02,
        "ci95_final_test_acc": [acc - 0.05, acc + 0.05],
        "mean_mean_train_loss": 0.5,
    }


def test_the_norms_error_bars_are_nudged_apart_within_their_category():
    norms = ("none", "batch", "layer")
    entries = [_entry(n, t, 0.8) for n in norms for t in (10, 20)]  # equal means: the bars would coincide
    fig = figure_grid(entries, "data.seq_len")
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    xs = np.array([c.lines[0].get_xdata() for c in bars])  # (norm, value)
    assert len(bars) == len(norms)
    for k in range(xs.shape[1]):  # at each value: one distinct x per norm, all within the value's category
        assert len(set(xs[:, k])) == len(norms) and np.all(np.abs(xs[:, k] - k) < 0.5)
    assert np.allclose(np.diff(xs, axis=0), np.diff(xs, axis=0)[0, 0])  # evenly spaced, centred on the value
    assert np.allclose(xs.mean(axis=0), [0, 1])


def test_sweep_figure_draws_aggregate_means_with_their_intervals():
    agg = [
        {
            "norm": "layer",
            "batch_size": b,
            "n_seeds": 5,
            "n_diverged": 0,
            "mean_final_test_acc": m,
            "ci95_final_test_acc": [m - 0.02, m + 0.03],
            "mean_final_test_acc_batch_stats": None,
        }
        for b, m in [(1, 0.9), (8, 0.8)]
    ]
    ax = plots.figure_sweep(agg, "final_test_acc", "acc", "t").axes[0]
    (container,) = ax.containers
    np.testing.assert_allclose(container.lines[0].get_ydata(), [0.9, 0.8])
    segs = container.lines[2][0].get_segments()
    np.testing.assert_allclose([s[:, 1] for s in segs], [[0.88, 0.93], [0.78, 0.83]])
    assert "mean of 5 seeds, 95% t interval" in ax.get_title()


def test_sweep_loss_axis_within_a_decade_has_few_tick_labels():
    entries = [
        {"norm": "layer", "batch_size": b, "n_seeds": 2, "n_diverged": 0, "mean_mean_train_loss": v}
        for b, v in ((1, 0.3), (8, 0.5), (64, 0.6))
    ]
    fig = plots.figure_sweep(entries, "mean_train_loss", "loss", "t", log_y=True)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    labels = [
        t.get_text()
        for t in ax.get_yticklabels(minor=True)
        if t.get_text() and ax.get_ylim()[0] <= t.get_position()[1] <= ax.get_ylim()[1]
    ]
    assert 1 <= len(labels) <= 3, labels
