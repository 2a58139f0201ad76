"""The sweep figure's error bars of several norms sit side by side, not on top of
each other (nudged as in the batch-size figure)."""

import numpy as np
from matplotlib.container import ErrorbarContainer

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
