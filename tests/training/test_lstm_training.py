"""The LSTM in the training loop: seed ensembles bit for bit with solo runs, the probes on
hand-made LSTMs whose values are known, and an LSTM compare end to end (summary, report, resume)."""

import json
import math
from pathlib import Path

import pytest
import torch
from conftest import TINY_OVERRIDES

from lnbench.config import ModelConfig, TrainConfig, load_config
from lnbench.nn.lstm import LSTM
from lnbench.training.loop import train_members, train_model
from lnbench.training.probes import probe_members
from lnbench.training.tasks.trend import make_trend_data

SEEDS = [0, 1, 2]
CFG = TrainConfig(epochs=2, batch_size=16, lr=3e-3, grad_clip=0.5)
KEYS = ("train_loss", "test_loss", "test_acc", "test_acc_batch_stats", "grad_ratio", "saturation", "scale_spearman")


def _data(seed):
    return make_trend_data(n_train=32, n_test=16, seq_len=6, features=8, seed=seed)


def _model(norm, seed, H=8, num_layers=1):
    torch.manual_seed(seed)
    return LSTM(ModelConfig(family="lstm", norm=norm, hidden_size=H, num_layers=num_layers), 8, seq_len=6)


@pytest.mark.parametrize(
    ("norm", "num_layers"),
    [("none", 1), ("batch", 1), ("layer", 1), ("rms", 1), ("weight", 1), ("batch", 2), ("layer", 2)],
)
def test_each_member_is_bit_for_bit_its_one_member_run(norm, num_layers):
    """A cell trains its seeds as one ensemble (lnbench.experiments.base.ensemble_mechanism) and
    ``lnbench train`` one seed as a one-member ensemble: the same numbers, to the last bit (a
    stacked LSTM's every layer too)."""
    models = [_model(norm, s, num_layers=num_layers) for s in SEEDS]
    three = train_members(LSTM.stack(models), [_data(s) for s in SEEDS], CFG, SEEDS)
    one = train_members(LSTM.stack([_model(norm, 2, num_layers=num_layers)]), [_data(2)], CFG, [2])[0]
    by_layer = ("hidden_norm_by_layer", "saturation_by_layer", "grad_ratio_by_layer", "scale_spearman_by_layer")
    for key in (
        *KEYS,
        "hidden_norm",
        "hidden_norm_by_scale",
        "grad_norm",
        "grad_norm_layer",
        "test_correct",
        *by_layer,
    ):
        assert getattr(one, key) == getattr(three[2], key), key
    assert (one.grad_ratio_by_layer is None) == (num_layers == 1)
    assert num_layers == 1 or len(one.grad_ratio_by_layer[-1]) == num_layers
    assert one.status == three[2].status == "completed"


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_each_member_matches_a_plain_models_run(norm):
    members = train_members(
        LSTM.stack([_model(norm, s) for s in SEEDS[:2]]), [_data(s) for s in SEEDS[:2]], CFG, SEEDS[:2]
    )
    for k, s in enumerate(SEEDS[:2]):
        solo = train_model(_model(norm, s), _data(s), CFG, seed=s)
        for key in KEYS:
            torch.testing.assert_close(
                torch.tensor(getattr(members[k], key) or []),
                torch.tensor(getattr(solo, key) or []),
                atol=1e-5,
                rtol=1e-5,
                msg=key,
            )
        assert members[k].test_correct == solo.test_correct


# ---- probes on hand-made LSTMs -----------------------------------------------------------------------


def _inputs(n=40, T=5, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = torch.exp(torch.linspace(math.log(0.25), math.log(4.0), n))
    X = s[:, None, None] * torch.randn(n, T, D, generator=g)
    return X.unsqueeze(0), (torch.arange(n) % 2).unsqueeze(0), s.unsqueeze(0)


def test_saturation_counts_the_lstms_gates():
    """W_h = W_x = 0: every step sees only b. i at +10 and o at -10 saturate (sigmoid 0.99995 and
    0.00005), f at 0 (0.5) does not, g at 0 (tanh 0) does not, and c_t = 0.5 c + sigmoid(10) tanh(0)
    = 0 keeps tanh(c_t) at 0: 2H of the 5H units, 0.4, whatever the input's scale."""
    X, y, s = _inputs()
    model = _model("none", 0, H=6)
    with torch.no_grad():
        model.cell.W_h.zero_(), model.cell.W_x.zero_()
        model.cell.bias.copy_(
            torch.cat([torch.full((6,), 10.0), torch.zeros(6), torch.full((6,), -10.0), torch.zeros(6)])
        )
    (p,) = probe_members(model, X, y, s)
    assert p.saturation == pytest.approx(0.4)
    assert p.saturation_by_scale == pytest.approx([0.4] * 4)


def test_grad_ratio_of_an_lstm_at_its_zero_state():
    """W_x = 0, b = 0, W_h zero but for the g rows, a I: every h_t and c_t stays 0 and every gate
    is sigmoid(0) = 1/2. A change dh_1 moves c_2 by a/2 dh_1 and h_t = c_t / 2; then
    dc_t = dc_{t-1} / 2 + a/2 dh_{t-1} = (1/2 + a/4) dc_{t-1}: dh_T/dh_1 = a/4 (1/2 + a/4)^(T-2)."""
    X, y, s = _inputs(T=5)
    model = _model("none", 0, H=6)
    a = 1.5
    with torch.no_grad():
        model.cell.W_x.zero_(), model.cell.bias.zero_(), model.cell.W_h.zero_()
        model.cell.W_h[18:24].copy_(a * torch.eye(6))  # the g rows
    (p,) = probe_members(model, X, y, s)
    assert p.grad_ratio == pytest.approx(a / 4 * (0.5 + a / 4) ** 3, rel=1e-5)


def test_probes_tell_the_ln_lstms_scale_invariant_state_from_the_lstms():
    X, y, s = _inputs(n=80)
    (plain,) = probe_members(_model("none", 0), 4 * X, y, s)
    (layer,) = probe_members(_model("layer", 0), 4 * X, y, s)
    assert plain.scale_spearman > 0.5  # ||h_T|| grows with s
    quartiles = torch.tensor(plain.hidden_norm_by_scale)
    assert (quartiles[3] > quartiles[0]).all()
    assert abs(layer.scale_spearman) < 0.3
    with torch.no_grad():
        logits, h = _model("layer", 0).eval()(4 * X[0], return_hidden=True)
    torch.testing.assert_close(torch.tensor(layer.hidden_norm), h.norm(dim=-1).mean(0))
    assert layer.acc == (logits.argmax(-1) == y[0]).sum().item() / y.shape[1]


# ---- end to end: compare, report, resume -------------------------------------------------------------------


@pytest.mark.e2e
def test_an_lstm_compare_trains_as_ensembles_reports_and_resumes(tmp_path):
    from lnbench.experiments import driver
    from lnbench.experiments.registry import EXPERIMENTS

    spec = load_config(None, [*TINY_OVERRIDES, "seeds=[0,1]", "compare.families=[lstm]", "compare.norms=[batch,layer]"])
    exp = EXPERIMENTS["compare"]
    plan = driver.prepare(exp, spec)
    assert [len(cell.cfgs) for cell in plan] == [2, 2]  # one native ensemble per norm
    result = driver.run(exp, spec, runs_dir=tmp_path)
    assert [(r.family, r.norm, r.seed) for r in result.rows] == [
        ("lstm", "batch", 0),
        ("lstm", "batch", 1),
        ("lstm", "layer", 0),
        ("lstm", "layer", 1),
    ]
    child = Path(result.path) / result.rows[0].run_dir
    manifest = json.loads((child / "run.json").read_text())
    assert manifest["ensemble"] == {"mechanism": "native", "members": 2, "seeds": [0, 1]}
    metrics = json.loads((child / "metrics.json").read_text())
    assert metrics["family"] == "lstm" and len(metrics["saturation"]) == 2 and metrics["test_acc_batch_stats"]
    assert "forget_bias: 1.0" in (child / "config.yaml").read_text()
    assert "norm_placement" not in (child / "config.yaml").read_text()
    assert "LSTM" in (result.path / "report.html").read_text()
    before = json.loads((result.path / "summary.json").read_text())["rows"]
    again = driver.run(exp, spec, runs_dir=tmp_path, resume=result.path)
    assert driver.cells_to_run(driver.prepare(exp, spec, resume=result.path), result.path) == []
    assert again.status == "completed"
    assert json.loads((result.path / "summary.json").read_text())["rows"] == before


def test_gradient_clipping_is_bit_for_bit_with_eight_or_more_parameter_tensors():
    """The clipping coefficient of a member is summed over its own tensors' norms alone: a sum over
    dim 0 of the (P, S) table rounded differently for S = 1 and S = 3 once P >= 8 (an RNN with
    separate LayerNorms has 9 tensors, an LN-LSTM 11)."""
    from lnbench.nn.models import SimpleRNN, build_model

    def rnn(seed):
        torch.manual_seed(seed)
        return build_model(ModelConfig(norm="layer", hidden_size=8, norm_placement="separate"), 8, 6)

    cfg = TrainConfig(epochs=2, batch_size=4, lr=3e-3, grad_clip=0.05)  # 16 clipped steps
    three = train_members(SimpleRNN.stack([rnn(s) for s in SEEDS]), [_data(s) for s in SEEDS], cfg, SEEDS)
    one = train_members(SimpleRNN.stack([rnn(2)]), [_data(2)], cfg, [2])[0]
    assert len(one.grad_norm) == 9
    assert one.train_loss == three[2].train_loss and one.grad_norm == three[2].grad_norm


def test_the_report_shows_the_lstm_as_a_recurrent_model():
    """The hidden-norm figures label the LSTM's h_t (not a residual stream), draw its bound sqrt(H)
    (|h_t| = sigmoid(o) |tanh| < 1) and call its saturation that of gate units; the runs table
    says its seeds trained as one ensemble."""
    from lnbench.records.schema import Metrics, summary_row
    from lnbench.report.figures import figure_hidden_norm, figure_hidden_norm_mean
    from lnbench.report.tables import runs_table

    runs = [
        Metrics(
            family="lstm",
            norm="layer",
            hidden_size=16,
            seed=seed,
            n_test=4,
            status="completed",
            epochs=[1],
            train_loss=[0.6],
            test_loss=[0.6],
            test_acc=[0.5],
            hidden_norm_init=[0.5, 1.0],
            hidden_norm=[[1.0, 2.0]],
            hidden_norm_by_scale=[[[1.0, 2.0]] * 4],
            hidden_norm_by_scale_init=[[0.5, 1.0]] * 4,
            scale_spearman=[0.1],
            saturation=[0.25],
        )
        for seed in (0, 1)
    ]
    ax = figure_hidden_norm_mean(runs).axes[0]
    assert ax.get_ylabel() == "mean ||h_t|| (L2)"
    assert [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"] == [4.0]  # sqrt(16)
    by_scale = figure_hidden_norm(runs).axes[0]
    assert by_scale.get_ylabel() == "mean ||h_t|| (L2)"
    assert "saturated gate units: 25.0%" in by_scale.texts[0].get_text()
    table = runs_table("t", [summary_row(m, 0.9, f"lstm_layer_seed{m.seed}") for m in runs], 0.9)
    assert "the seeds of a cell that trains as one ensemble" in str(table.caption)


@pytest.mark.parametrize("norm", ["batch", "layer"])
def test_an_lstm_continued_from_its_checkpoint_is_bit_identical_and_a_member_loads_alone(norm):
    """Checkpoints with the LSTM (BN-LSTM: per-timestep statistics with the members on
    axis 1, and the fixed beta_h and beta_x, which Adam never sees): stopped after epoch 2 of 3 and
    continued, it equals the uninterrupted run; each member's weights load into its model alone."""
    import io

    from lnbench.records.schema import Metrics
    from lnbench.training import checkpoints

    cfg = TrainConfig(epochs=3, batch_size=16, lr=3e-3)

    def roundtrip(obj):
        buf = io.BytesIO()
        torch.save(obj, buf)
        buf.seek(0)
        return torch.load(buf, weights_only=True)

    def setup():
        solo = [_model(norm, s) for s in SEEDS[:2]]
        return [_data(s) for s in SEEDS[:2]], solo, LSTM.stack(solo)

    datas, _, model = setup()
    full = train_members(model, datas, cfg, SEEDS[:2])
    datas, solo, stopped = setup()
    hists, saved = [Metrics() for _ in SEEDS[:2]], {}

    def checkpoint(epoch, opt, gens, scheduler):
        states = checkpoints.member_states(stopped, solo[0], opt, gens, hists, epoch, scheduler)
        saved[epoch] = [roundtrip(s) for s in states]

    def interrupt(epoch, ms):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_members(stopped, datas, cfg, SEEDS[:2], interrupt, hists, None, checkpoint)
    datas, _, resumed = setup()
    again = train_members(resumed, datas, cfg, SEEDS[:2], resume_from=saved[2])

    def without_time(m):
        return {k: v for k, v in m.to_dict().items() if k != "epoch_seconds"}

    assert [without_time(m) for m in again] == [without_time(m) for m in full]
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    model.eval()
    with torch.no_grad():
        logits = model(torch.stack([d.X_test for d in datas]))
    for s, weights in enumerate(checkpoints.member_weights(model, solo[0])):
        alone = _model(norm, 99)
        alone.load_state_dict(roundtrip(weights))
        with torch.no_grad():
            torch.testing.assert_close(alone.eval()(datas[s].X_test), logits[s], atol=1e-6, rtol=0)


# ---- which LSTM cells train their seeds as one ensemble -------------------------------------------


@pytest.mark.parametrize(
    "data,batch_size,hidden_size,mechanism",
    [
        ({}, 64, 64, "native"),  # the default sizes: T 20 x B 64 x H 64
        ({"seq_len": 31}, 64, 64, "native"),  # T B H = 2^17 - 4096: just below the limit
        ({"seq_len": 32}, 64, 64, "sequential"),  # T B H = 2^17
        ({"task": "mnist", "mnist_order": "rows"}, 64, 64, "native"),  # T 28: 115k
        ({"task": "mnist", "mnist_order": "rows"}, 64, 128, "sequential"),  # T 28: 229k
        ({"task": "mnist", "mnist_order": "pixels"}, 64, 100, "sequential"),  # T 784: 5.0M
        ({"task": "mnist", "mnist_order": "pixels"}, 1, 100, "native"),  # T 784, B 1: 78k
        ({}, 4, 511, "native"),
        ({}, 4, 512, "sequential"),  # the members' weights (4 MB each) no longer share the cache
    ],
)
def test_an_lstm_cell_trains_its_seeds_one_after_another_once_a_member_is_large(
    data, batch_size, hidden_size, mechanism
):
    """An LSTM cell's seeds train as one ensemble while a member's T x B x H is below 2^17 and its
    hidden size below 512, else one after another: the bounds of lnbench.names, measured in
    docs/speed.md (a 5-member step cost more than five one-seed steps beyond them). The RNN's
    ensembles stay native at any of these sizes."""
    from lnbench.config import RunConfig
    from lnbench.experiments.base import ensemble_mechanism

    def cfg(family):
        return RunConfig.model_validate(
            {
                "model": {"family": family, "norm": "layer", "hidden_size": hidden_size},
                "train": {"batch_size": batch_size},
                "data": {"n_train": 64, **data},
            }
        )

    assert ensemble_mechanism([cfg("lstm")]) == mechanism
    assert ensemble_mechanism([cfg("rnn")]) == "native"


def test_a_large_lstm_cells_rows_say_each_seed_reports_its_own_time(tmp_path):
    """A sequential LSTM cell (H 512) writes ``trained_together: false`` in each row and run.json's
    ``ensemble.mechanism`` ``sequential``, and its seeds are the runs a one-member ensemble gives
    (the same test predictions; the losses within 1e-5, as a plain model's run and a member's
    are); a row from a summary written before the field existed falls back to the family's rule."""
    from lnbench.experiments.cells import run_cell
    from lnbench.records.schema import SummaryRow

    cfgs = [
        load_config(
            None, [*TINY_OVERRIDES, "model.family=lstm", "model.norm=layer", "model.hidden_size=512"]
        ).with_changes(seed=s, seeds=None, name=f"seed{s}")
        for s in (0, 1)
    ]
    rows = run_cell(cfgs, tmp_path)
    assert [r.trained_together for r, _ in rows] == [False, False]
    assert [r.shares_ensemble_time for r, _ in rows] == [False, False]
    for r, path in rows:
        assert json.loads((path / "run.json").read_text())["ensemble"] == {
            "mechanism": "sequential",
            "members": 1,
            "seeds": [r.seed],
        }
    cfg = cfgs[1]
    data = make_trend_data(cfg.data.n_train, cfg.data.n_test, cfg.data.seq_len, cfg.data.features, seed=1)
    torch.manual_seed(1)
    member = train_members(LSTM.stack([LSTM(cfg.model, 8, seq_len=5)]), [data], cfg.train, [1])[0]
    solo = json.loads((rows[1][1] / "metrics.json").read_text())
    assert solo["test_correct"] == member.test_correct
    torch.testing.assert_close(torch.tensor(solo["train_loss"]), torch.tensor(member.train_loss), atol=1e-5, rtol=1e-5)
    old = SummaryRow(**{**rows[0][0].__dict__, "trained_together": None})
    assert old.shares_ensemble_time  # the LSTM's rule before a member's size counted
