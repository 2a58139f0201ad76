"""Figures check the data they draw (which epoch, mean over seeds), from hand-made metrics (the
sweep figures: figures/test_sweeps.py)."""

import json

import matplotlib
import numpy as np
import pytest

from lnbench.records.schema import Metrics, read_metrics
from lnbench.report import figures as plots


def _metrics(seed, acc, hidden, norm="layer", init=(1.0, 1.0, 1.0), status="completed", diverged_at=None):
    return Metrics(
        family="rnn",
        norm=norm,
        seed=seed,
        hidden_size=4,
        n_test=100,
        status=status,
        diverged_at_epoch=diverged_at,
        epochs=list(range(1, len(acc) + 1)),
        train_loss=[0.7 - 0.1 * i for i in range(len(acc))],
        test_loss=[0.7 - 0.1 * i for i in range(len(acc))],
        test_acc=list(acc),
        hidden_norm=[list(h) for h in hidden],
        hidden_norm_init=list(init),
        grad_norm_layer={"head": [0.5] * len(acc)},
    )


def _line(ax, label_start):
    (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith(label_start)]
    return line


def test_accuracy_curve_is_the_mean_over_seeds_and_the_band_is_min_to_max():
    runs = [_metrics(0, [0.6, 0.8, 0.9], [[1, 1, 1]] * 3), _metrics(1, [0.7, 0.9, 0.7], [[1, 1, 1]] * 3)]
    fig = plots.figure_test_accuracy(runs, 0.9)
    ax = fig.axes[0]
    line = _line(ax, "LayerNorm")
    np.testing.assert_allclose(line.get_ydata(), [0.65, 0.85, 0.8])
    np.testing.assert_allclose(line.get_xdata(), [1, 2, 3])
    (band,) = ax.collections
    ys = band.get_paths()[0].vertices[:, 1]
    assert np.isclose(ys.min(), 0.6) and np.isclose(ys.max(), 0.9)
    assert "band: min to max over seeds" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert "mean of 2 seeds" in line.get_label()


def test_hidden_norm_draws_the_last_epoch_and_initialisation(tmp_path):
    runs = []
    for m in (
        _metrics(0, [0.6, 0.8], [[9, 9, 9], [1, 2, 3]], init=(5, 5, 5)),
        _metrics(1, [0.6, 0.8], [[9, 9, 9], [3, 4, 5]], init=(7, 7, 7)),
    ):
        (tmp_path / f"m{m.seed}.json").write_text(json.dumps(m.to_dict()))  # through a metrics file
        runs.append(read_metrics(tmp_path / f"m{m.seed}.json"))
    ax = plots.figure_hidden_norm_mean(runs).axes[0]
    np.testing.assert_allclose(_line(ax, "LayerNorm").get_ydata(), [2, 3, 4])  # epoch 2, mean of seeds
    assert plots.figure_hidden_norm(runs).axes[0].get_title() == ax.get_title()  # no probes (schema 2): the mean figure
    dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":" and len(ln.get_ydata())]
    np.testing.assert_allclose(dotted[0].get_ydata(), [6, 6, 6])


def test_a_norm_whose_every_seed_diverged_keeps_a_labelled_curve_at_initialisation():
    """A norm whose seeds all diverged in their first epoch has no trained hidden-norm curve; its
    curve at initialisation is still drawn (the mean over seeds: 6) and is the one line in the
    legend that names its colour, so that a reader can tell it from the others."""
    runs = [
        _metrics(s, [], [], norm="layer", init=(5 + 2 * s,) * 3, status="diverged", diverged_at=1) for s in (0, 1)
    ] + [_metrics(0, [0.6], [[1, 2, 3]], norm="none")]
    ax = plots.figure_hidden_norm_mean(runs).axes[0]
    line = _line(ax, "LayerNorm")
    assert line.get_label() == "LayerNorm (diverged): at initialisation"
    assert line.get_linestyle() == ":" and line.get_color() == plots.norm_color("layer")
    np.testing.assert_allclose(line.get_ydata(), [6, 6, 6])
    assert _line(ax, "NoNorm").get_linestyle() == "-"  # a trained curve, labelled as before


def test_diverged_runs_are_marked_and_no_pyplot_backend_switch(tmp_path):
    backend = matplotlib.get_backend()
    runs = [
        _metrics(0, [0.6, 0.7], [[1, 1, 1]] * 2, norm="none", status="diverged", diverged_at=3),
        _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2),
    ]
    path = plots.plot_training_loss(runs, tmp_path / "loss.png")
    assert path.stat().st_size > 10_000 and matplotlib.get_backend() == backend
    ax = plots.figure_training_loss(runs).axes[0]
    assert "NoNorm, diverged at epoch 3" in [ln.get_label() for ln in ax.get_lines()]


def test_a_diverged_seed_is_left_out_of_the_mean_curve():
    runs = [
        _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2),
        _metrics(1, [0.9, 0.9], [[1, 1, 1]] * 2, status="diverged", diverged_at=3),
    ]
    ax = plots.figure_test_accuracy(runs).axes[0]
    line = _line(ax, "LayerNorm")
    np.testing.assert_allclose(line.get_ydata(), [0.6, 0.8])
    assert "diverged at epoch 3" in line.get_label()


def test_hidden_norm_by_scale_draws_one_line_per_quartile_per_norm():
    runs = []
    for seed, shift in ((0, 0.0), (1, 2.0)):
        for norm, spread in (("none", 1.0), ("layer", 0.0)):
            m = _metrics(seed, [0.6, 0.8], [[1, 1, 1]] * 2, norm=norm)
            final = [[1 + spread * q + shift] * 3 for q in range(4)]
            m.hidden_norm_by_scale = [[[0.0] * 3] * 4, final]  # epoch 1 must not be drawn
            m.hidden_norm_by_scale_init = [[5.0 + q] * 3 for q in range(4)]
            m.scale_spearman, m.scale_spearman_init = [0.1, 0.9 * spread + seed * 0.02], 0.5
            m.saturation = [0.0, 0.25 * spread]
            m.scale_quartile_edges = [0.5, 1.0, 2.0]
            runs.append(m)
    fig = plots.figure_hidden_norm(runs)
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    none, layer = by_title["RNN: NoNorm"], by_title["RNN: LayerNorm"]
    solid = [ln for ln in none.get_lines() if ln.get_linestyle() == "-"]
    assert len(solid) == 4
    np.testing.assert_allclose([ln.get_ydata()[0] for ln in solid], [2, 3, 4, 5])  # 1 + q + mean shift 1
    np.testing.assert_allclose(
        [ln.get_ydata()[0] for ln in layer.get_lines() if ln.get_linestyle() == "-"], [2, 2, 2, 2]
    )
    texts = [t.get_text() for t in none.texts]
    assert any("Spearman(||h_T||, s): +0.91 (init +0.50)" in t and "saturated tanh units: 25.0%" in t for t in texts)
    legend = (
        [t.get_text() for t in fig.legends[0].get_texts()]
        if fig.legends
        else [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    )
    assert "s < 0.5" in legend and "s > 2" in legend


def test_log_scale_figures_are_drawn_when_nothing_is_positive_and_name_all_zero_curves(tmp_path):
    """Runs that all diverged in their first epoch still draw (a linear axis that says nothing is
    drawable on a log scale), and a layer whose gradient norm is all 0 is named on the log-scale
    grad_norm figure instead of drawn."""
    dead = [_metrics(s, [], [], norm=n, status="diverged", diverged_at=1) for s in (0, 1) for n in ("none", "layer")]
    for fig_fn in (plots.plot_training_loss, plots.plot_grad_norm):
        assert fig_fn(dead, tmp_path / f"{fig_fn.__name__}.png").stat().st_size > 5_000
    ax = plots.figure_training_loss(dead).axes[0]
    assert ax.get_yscale() == "linear" and any("nothing to draw on a log scale" in t.get_text() for t in ax.texts)
    m = _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2)
    m.grad_norm_layer = {"head": [0.5, 0.4], "cell.W_hh": [0.0, 0.0]}
    fig = plots.figure_grad_norm([m])
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert any(t.get_text() == "all 0, not drawable on a log scale: cell.W_hh" for t in ax.texts)
    plots.save(fig, tmp_path / "g.png")


def test_a_deep_model_gets_a_distinct_colour_per_layer_and_a_legend_on_the_figure(tmp_path):
    """22 layers get 22 distinct (line style, marker, shade) looks, every one a shade of the norm's
    colour, and the legend and the title lie inside the figure (Agg's rendered extents)."""
    m = _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2)
    m.family = "transformer"
    m.grad_norm_layer = {f"blocks.{k}.mlp": [0.1 * (k + 1), 0.2] for k in range(22)}
    fig = plots.figure_grad_norm([m])
    lines = fig.axes[0].get_lines()
    looks = {
        (ln.get_linestyle(), ln.get_marker(), tuple(np.round(matplotlib.colors.to_rgb(ln.get_color()), 3)))
        for ln in lines
    }
    assert len(lines) == 22 and len(looks) == 22  # every layer looks different
    # colour means the norm: every line is a shade of LayerNorm's colour (the same hue)
    base = np.array(matplotlib.colors.to_rgb(plots.norm_color("layer")))
    for ln in lines:
        rgb = np.array(matplotlib.colors.to_rgb(ln.get_color()))
        np.testing.assert_allclose(rgb / rgb.max(), base / base.max(), atol=1e-6)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    legend = fig.axes[0].get_legend().get_window_extent(renderer)
    assert legend.x1 <= fig.bbox.x1 + 1 and legend.y0 >= fig.bbox.y0 - 1  # inside the figure
    title = fig._suptitle.get_window_extent(renderer)
    assert title.x0 >= fig.bbox.x0 - 1 and title.x1 <= fig.bbox.x1 + 1


def test_test_accuracy_shows_a_low_target_and_low_curves():
    runs = [_metrics(0, [0.2, 0.3], [[1, 1, 1]] * 2)]
    ax = plots.figure_test_accuracy(runs, target_acc=0.25).axes[0]
    lo, hi = ax.get_ylim()
    assert lo < 0.2 - 0.01 and hi >= 1.0


def test_one_epoch_is_singular_in_the_verdicts():
    from lnbench.analysis import verdicts
    from lnbench.records.schema import summary_row

    m = _metrics(0, [0.6], [[1, 1, 1]])
    lines = verdicts.compare_verdicts([summary_row(m, 0.9)], [], 1, 0.9)
    assert any("within 1 epoch:" in line for line in lines) and not any("1 epochs" in line for line in lines)


def test_legends_sit_outside_the_axes_and_say_what_the_band_is():
    """The legends of the test-accuracy and training-loss figures lie outside the axes (no overlap
    of the rendered extents), so they hide no curve, and say what the band is."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    runs = [_metrics(0, [0.6, 0.8, 0.9], [[1, 1, 1]] * 3), _metrics(1, [0.7, 0.9, 0.7], [[1, 1, 1]] * 3)]
    for fig in (plots.figure_test_accuracy(runs), plots.figure_training_loss(runs)):
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw(renderer)
        ax = fig.axes[0]
        legend = ax.get_legend()
        assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
        assert "band: min to max over seeds" in [t.get_text() for t in legend.get_texts()]


def test_a_one_epoch_run_marks_its_one_point():
    """A line through one point draws nothing: every one-point curve gets a marker."""
    runs = [_metrics(0, [0.6], [[1, 1, 1]]), _metrics(0, [0.7], [[1, 1, 1]], norm="none")]
    runs[0].test_acc_batch_stats = [0.65]
    # train and test loss of two norms; the test accuracy of two, and one with batch statistics
    for fig, n in ((plots.figure_training_loss(runs), 4), (plots.figure_test_accuracy(runs), 3)):
        curves = [ln for ln in fig.axes[0].get_lines() if np.isfinite(np.asarray(ln.get_ydata(), float)).sum() == 1]
        assert len(curves) == n
        assert all(ln.get_marker() not in (None, "None", "", " ") and ln.get_markersize() >= 4 for ln in curves)
        hollow = [ln.get_markerfacecolor() == "none" for ln in curves]
        assert hollow == [ln.get_linestyle() == "--" for ln in curves]  # dashed (test loss, batch stats): hollow
    two = plots.figure_test_accuracy([_metrics(0, [0.6, 0.7], [[1, 1, 1]] * 2)])
    assert _line(two.axes[0], "LayerNorm").get_marker() in (None, "None", "")  # a line is a line: no marker


def _looks(lines):
    return [
        (ln.get_linestyle(), ln.get_marker(), tuple(np.round(matplotlib.colors.to_rgb(ln.get_color()), 4)))
        for ln in lines
    ]


@pytest.mark.parametrize("n_layers", [10, 22, 96])
def test_every_layer_looks_different_in_the_legend_and_as_in_its_panel(n_layers):
    """Layers that differ only in shade (10 layers with 8 (line style, marker) pairs; 22 layers with
    num_layers 3) get distinct legend entries: each entry is unique and matches its lines, with the
    same line style and marker and a grey of the same shade as the panel's shade of the norm's colour."""
    m = _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2)
    m.family = "transformer"
    m.grad_norm_layer = {f"blocks.{k}.mlp": [0.1 * (k + 1), 0.2] for k in range(n_layers)}
    other = _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2, norm="batch")
    other.family, other.grad_norm_layer = "transformer", m.grad_norm_layer
    fig = plots.figure_grad_norm([m, other])
    legend = fig.axes[-1].get_legend()
    entries = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert len(entries) == n_layers and len(set(_looks(entries.values()))) == n_layers
    grey = np.array(matplotlib.colors.to_rgb("0.6"))
    for ax, norm in zip(fig.axes, ("batch", "layer")):
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert len(set(_looks(lines.values()))) == n_layers  # and in each panel
        base = np.array(matplotlib.colors.to_rgb(plots.norm_color(norm)))
        for name, ln in lines.items():
            handle = entries[name]
            assert (handle.get_linestyle(), handle.get_marker()) == (ln.get_linestyle(), ln.get_marker())
            shade = np.array(matplotlib.colors.to_rgb(ln.get_color())) / base
            np.testing.assert_allclose(np.array(matplotlib.colors.to_rgb(handle.get_color())) / grey, shade, atol=1e-6)


def test_beyond_the_distinct_looks_every_layer_is_numbered_in_its_panel_and_the_legend():
    n_layers = plots.DISTINCT_LOOKS + 4
    m = _metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2)
    m.family = "transformer"
    m.grad_norm_layer = {f"layer{k}": [0.1 * (k + 1), 0.2] for k in range(n_layers)}
    ax = plots.figure_grad_norm([m]).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"{k + 1}: layer{k}" for k in range(n_layers)]
    numbers = {t.get_text(): t.xy for t in ax.texts if t.get_text().isdigit()}
    assert sorted(numbers, key=int) == [str(k + 1) for k in range(n_layers)]
    assert numbers["7"] == (2, 0.2)  # at the end of its line


def test_the_accuracy_figures_chance_line_is_one_over_the_tasks_classes():
    from lnbench.records.schema import Metrics
    from lnbench.report.figures import figure_test_accuracy

    def chance_lines(num_classes):
        m = Metrics(norm="layer", epochs=[1, 2], test_acc=[0.3, 0.4], train_loss=[2.0, 1.5], num_classes=num_classes)
        ax = figure_test_accuracy([m]).axes[0]
        annotated = [t for t in ax.texts if t.get_text() == "chance"]
        return [tuple(line.get_ydata()) for line in ax.lines if line.get_alpha() == 0.4], annotated, ax.get_ylim()[0]

    lines, labels, low = chance_lines(10)
    assert lines == [(0.1, 0.1)] and len(labels) == 1 and low <= 0.1  # digits: 10 classes, in view
    assert chance_lines(2)[0] == [(0.5, 0.5)]


def test_a_stacked_models_hidden_norm_is_drawn_per_layer_and_its_gradients_per_layer(tmp_path):
    """A 2-layer RNN's hidden_norm_mean.png has one curve per layer (the last epoch's
    hidden_norm_by_layer, mean over seeds), told apart by line style and marker; grad_norm.png a
    line per layer of each recurrent layer (cell.*, cell_2.*). A one-layer run draws as before."""
    runs = []
    for seed, (top, init) in enumerate((([4, 5, 6], [2, 2, 2]), ([6, 7, 8], [4, 4, 4]))):
        m = _metrics(seed, [0.6, 0.8], [[9, 9, 9], [1, 2, 3]], init=(5, 5, 5))
        m.num_layers = 2
        m.hidden_norm_by_layer = [[[9, 9, 9], [9, 9, 9]], [[1, 2, 3], top]]  # epochs x L x T
        m.hidden_norm_by_layer_init = [[5, 5, 5], init]
        m.grad_norm_layer = {"cell.W_hh": [0.1, 0.2], "cell_2.W_hh": [0.3, 0.4], "head": [0.5, 0.5]}
        (tmp_path / f"m{seed}.json").write_text(json.dumps(m.to_dict()))
        runs.append(read_metrics(tmp_path / f"m{seed}.json"))
    ax = plots.figure_hidden_norm_mean(runs).axes[0]
    layer_1, layer_2 = _line(ax, "LayerNorm, layer 1"), _line(ax, "LayerNorm, layer 2")
    np.testing.assert_allclose(layer_1.get_ydata(), [1, 2, 3])
    np.testing.assert_allclose(layer_2.get_ydata(), [5, 6, 7])  # the mean of the seeds' layer 2
    assert (layer_1.get_linestyle(), layer_1.get_marker()) != (layer_2.get_linestyle(), layer_2.get_marker())
    dotted = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":" and len(ln.get_ydata())]
    np.testing.assert_allclose(dotted[1].get_ydata(), [3, 3, 3])
    labels = [ln.get_label() for ln in plots.figure_grad_norm(runs).axes[0].get_lines()]
    assert labels == ["cell.W_hh", "cell_2.W_hh", "head"]
    plots.save(plots.figure_hidden_norm_mean(runs), tmp_path / "h.png")


@pytest.mark.parametrize("draw", [plots.figure_grad_norm, plots.figure_hidden_norm])
def test_a_users_norm_has_its_own_column_after_the_built_in_norms(draw):
    """``compare.norms=[none, layer, "pkg.mod:MyNorm"]``: the per-norm panels have a column for
    each norm of the runs, the user's norm after the built-in ones (not only the registry's kinds)."""
    mine = "toy_norms:ScaleNorm"
    runs = [_metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2, norm=n) for n in (mine, "none", "layer")]
    for m in runs:
        m.hidden_norm_by_scale = [[[1.0, 1.0, 1.0]] * 4] * 2
        m.hidden_norm_by_scale_init = [[1.0, 1.0, 1.0]] * 4
    fig = draw(runs)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["RNN: NoNorm", "RNN: LayerNorm", "RNN: ScaleNorm"]


def test_the_per_scale_panel_of_a_stacked_model_says_it_is_layer_1():
    """hidden_norm.png draws the probes by input scale, which are layer 1's: a stacked model's
    panel title says "layer 1 of N" (a one-layer model's says nothing), so they are not read as the
    top layer's."""
    runs = [_metrics(s, [0.6, 0.8], [[1, 1, 1]] * 2) for s in range(2)]
    for m in runs:
        m.num_layers = 3
        m.hidden_norm_by_scale = [[[1.0, 1.0, 1.0]] * 4] * 2
        m.hidden_norm_by_scale_init = [[1.0, 1.0, 1.0]] * 4
    titles = [ax.get_title() for ax in plots.figure_hidden_norm(runs).axes if ax.get_title()]
    assert titles == ["RNN: LayerNorm (layer 1 of 3)"]
    for m in runs:
        m.num_layers = 1
    assert [ax.get_title() for ax in plots.figure_hidden_norm(runs).axes if ax.get_title()] == ["RNN: LayerNorm"]


def test_two_norms_of_ones_own_get_two_colours_kept_in_every_figure():
    """Two users' norms get two different colours of USER_NORM_COLORS (none a built-in norm's),
    the same each time asked and in the figure; the built-in norms keep theirs."""
    from lnbench.names import NORM_REGISTRY, USER_NORM_COLORS, norm_color

    a, b = "pkg_colour_test.a:NormA", "pkg_colour_test.b:NormB"
    first, second = norm_color(a), norm_color(b)
    assert first != second and {first, second} <= set(USER_NORM_COLORS)
    assert norm_color(a) == first and norm_color("layer") == "tab:blue"  # kept; built-ins as they were
    assert not set(USER_NORM_COLORS) & {info.color for info in NORM_REGISTRY.values()}
    runs = [_metrics(0, [0.6, 0.8], [[1, 1, 1]] * 2, norm=n) for n in (a, b)]
    ax = plots.figure_test_accuracy(runs, 0.9).axes[0]
    colours = {ln.get_label(): ln.get_color() for ln in ax.get_lines() if ln.get_label().startswith("Norm")}
    assert colours == {"NormA": first, "NormB": second}, colours
