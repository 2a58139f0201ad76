"""Ba et al. 2016's Figure 6 as a claims regime (``lnbench claims --only figure6``): the MLP on flat
MNIST at batch sizes 128 and 4, each at the learning rate ``train.lr_by_batch_size`` gives it, four
claims with verdicts, and the paper's figure drawn from the runs' own metrics."""

import json

import numpy as np
import pytest
from conftest import runner
from matplotlib.colors import to_rgba

from lnbench.analysis.claim_catalogue import select_claims
from lnbench.cli.app import app
from lnbench.config import load_config
from lnbench.experiments.claims import figure6_runs
from lnbench.names import norm_color
from lnbench.records.schema import Metrics
from lnbench.report.figures.claims import figure_figure6

FIGURE6 = ["mlp_bn_batch_size_4", "mlp_ln_batch_size", "mlp_ln_faster_than_bn_bs4", "mlp_ln_vs_bn_bs128"]


def test_only_a_regime_selects_its_claims_and_the_preset_is_the_papers_network():
    """``--only figure6`` is the regime's four claims; its preset is 784-1000-1000-10 on flat MNIST with
    BatchNorm's unbiased variance and a learning rate per batch size."""
    assert [c.id for c in select_claims(["figure6"])] == FIGURE6
    cfg = load_config("configs/claims/figure6.yaml")
    assert cfg.data.task == "mnist" and cfg.data.shape() == (1, 784, 10)
    assert (cfg.model.family, cfg.model.hidden_size, cfg.model.num_layers) == ("mlp", 1000, 2)
    assert cfg.model.batch_norm_unbiased and set(cfg.train.lr_by_batch_size or {}) == {4, 128}
    assert cfg.data.n_val > 0  # the learning rates were chosen on it


def test_a_run_trains_at_its_batch_sizes_rate():
    cfg = load_config(None, ["train.lr_by_batch_size={4: 1e-4, 128: 3e-3}", "train.lr=0.02"])
    assert cfg.with_changes(train__batch_size=4).train.batch_lr == 1e-4
    assert cfg.with_changes(train__batch_size=128).train.batch_lr == 3e-3
    assert cfg.with_changes(train__batch_size=64).train.batch_lr == 0.02  # not listed: lr


def _metrics(norm, batch_size, seed, losses, accs):
    m = Metrics(family="mlp", norm=norm, batch_size=batch_size, seed=seed)
    m.epochs, m.train_loss, m.test_acc, m.lr = list(range(1, len(losses) + 1)), losses, accs, [1e-3] * len(losses)
    return m


def test_the_figure_has_the_papers_panels_and_draws_the_seed_mean():
    """One column per batch size (largest first), the train NLL above (log scale) and the test error in
    percent below, one line per norm in its colour at the mean over seeds."""
    runs = [
        _metrics(norm, b, s, [1.0 + s, 0.5 + s], [0.9, 0.95 - 0.01 * s])
        for norm in ("none", "batch", "layer")
        for b in (4, 128)
        for s in (0, 1)
    ]
    fig = figure_figure6(runs, "4000 training images", "SGD")
    axes = fig.axes
    assert len(axes) == 4
    assert [axes[i].get_title() for i in (0, 1)] == ["batch size 128 (SGD, lr 0.001)", "batch size 4 (SGD, lr 0.001)"]
    assert axes[0].get_yscale() == "log"
    layer = next(line for line in axes[2].lines if line.get_label() == "LayerNorm")
    assert np.allclose(layer.get_ydata(), [10.0, 5.5])  # 100 x (1 - mean acc)
    none = next(line for line in axes[0].lines if line.get_label() == "NoNorm")
    assert np.allclose(none.get_ydata(), [1.5, 1.0]) and to_rgba(none.get_color()) == to_rgba(norm_color("none"))


@pytest.mark.e2e  # trains models and writes run folders
def test_claims_only_figure6_gives_four_verdicts_and_the_figure(tmp_path):
    sets = [
        "seeds=[0,1]",
        "train.epochs=2",
        "data.n_train=240",
        "data.n_val=40",
        "data.n_test=100",
        "model.hidden_size=16",
        "train.lr_by_batch_size={4: 1e-3, 128: 3e-3}",
    ]
    args = ["claims", "--only", "figure6", "--runs-dir", str(tmp_path), "--jobs", "1"]
    result = runner.invoke(app, [*args, *[a for s in sets for a in ("--set", s)]])
    assert result.exit_code == 0, result.output
    (run,) = list(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert [c["id"] for c in summary["claims"]] == FIGURE6
    assert all(c["verdict"] in ("held", "not held", "inconclusive") for c in summary["claims"])
    assert "figure6.png" in summary["figures"] and (run / "figure6.png").stat().st_size > 10_000
    lrs = {}
    for row in summary["rows"]:
        metrics = json.loads((run / row["run_dir"] / "metrics.json").read_text())
        lrs[row["batch_size"]] = metrics["lr"][0]
    assert lrs == {4: 1e-3, 128: 3e-3}
    chance = next(b["mean"] for b in summary["baselines"]["figure6"] if b["name"] == "chance")
    assert chance == pytest.approx(0.1, abs=0.05)  # 10 classes
    # the line under the figure's title says what trained, from the first run's config.yaml
    _, setting, optimizer = figure6_runs(run, summary)
    assert optimizer == "Adam" and "(Adam, lr 0.001)" in figure_figure6(*figure6_runs(run, summary)).axes[1].get_title()
    assert setting == "200 training images (the paper: 55000), 100 test; MLP 784-16-16-10, 2 epochs at every batch size"
    first = run / summary["rows"][0]["run_dir"] / "config.yaml"
    first.write_text(first.read_text().replace("epochs: 2", "epochs: 1"))
    assert figure6_runs(run, summary)[1].endswith("; MLP 784-16-16-10, 1 epoch at every batch size")


def test_a_run_of_the_mlp_draws_no_state_over_timesteps():
    """The MLP reads one vector (T = 1): hidden_norm_mean.png, a state over timesteps, is not drawn for
    it, and is for a model that reads a sequence."""
    from lnbench.report.figures.registry import RunData, records

    (record,) = [r for r in records("run") if r.file == "hidden_norm_mean.png"]
    mlp, rnn = Metrics(family="mlp"), Metrics(family="rnn")
    mlp.hidden_norm_init, rnn.hidden_norm_init = [3.0], [1.0, 2.0, 3.0]
    assert not record.when(RunData([mlp])) and record.when(RunData([mlp, rnn]))


def test_one_epoch_is_one_tick_on_the_epoch_axis(tmp_path):
    """A run of one epoch draws its epoch axis with the one tick "1", not 0.945 ... 1.050."""
    from lnbench.report.figures.registry import save
    from lnbench.report.figures.runs import figure_test_accuracy

    m = _metrics("layer", 64, 0, [0.5], [0.8])
    m.family = "rnn"
    fig = figure_test_accuracy([m])
    save(fig, tmp_path / "a.png")
    (ax,) = [a for a in fig.axes if a.get_xlabel() == "epoch"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1"] and ax.get_xlim() == (0.5, 1.5)
