"""RMSNorm and weight normalization in the models: the cells and ensembles that use them, and the
commands (each layer against PyTorch's own: test_rmsnorm.py, test_weightnorm.py)."""

import pytest
import torch
from conftest import runner, tiny_args

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.models import SimpleRNN, build_model
from lnbench.training.loop import train_members, train_model
from lnbench.training.tasks.trend import make_trend_data


@pytest.mark.parametrize("placement", ["joint", "separate"])
def test_weight_normalized_rnn_cell_starts_as_nonorm_and_its_rows_have_length_g(placement):
    torch.manual_seed(0)
    wn = SimpleRNN(ModelConfig(norm="weight", hidden_size=6, norm_placement=placement), 5)
    torch.manual_seed(0)
    plain = SimpleRNN(ModelConfig(norm="none", hidden_size=6, norm_placement=placement), 5)
    x = torch.randn(3, 4, 5)
    torch.testing.assert_close(wn(x), plain(x))
    with torch.no_grad():
        for p in (wn.cell.g,) if placement == "joint" else (wn.cell.g_hh, wn.cell.g_xh):
            p.mul_(torch.linspace(0.5, 2.0, 6))
    W_hh, W_xh = wn.cell.recurrent_weights()
    if placement == "joint":
        torch.testing.assert_close(torch.cat([W_hh, W_xh], dim=1).norm(dim=1), wn.cell.g)
    else:
        torch.testing.assert_close(W_hh.norm(dim=1), wn.cell.g_hh)
        torch.testing.assert_close(W_xh.norm(dim=1), wn.cell.g_xh)


@pytest.mark.parametrize(
    "norm,placement", [("rms", "joint"), ("rms", "separate"), ("weight", "joint"), ("weight", "separate")]
)
def test_rms_and_weight_ensembles_match_their_solo_runs(norm, placement):
    def model(seed):
        torch.manual_seed(seed)
        return build_model(ModelConfig(norm=norm, hidden_size=8, norm_placement=placement), 8, 6)

    def data(seed):
        return make_trend_data(n_train=48, n_test=24, seq_len=6, features=8, seed=seed)

    cfg = TrainConfig(epochs=2, batch_size=16, lr=3e-3)
    members = train_members(SimpleRNN.stack([model(s) for s in (0, 1)]), [data(0), data(1)], cfg, [0, 1])
    for s in (0, 1):
        solo = train_model(model(s), data(s), cfg, seed=s)
        torch.testing.assert_close(
            torch.tensor(members[s].train_loss), torch.tensor(solo.train_loss), atol=1e-5, rtol=1e-5
        )
        assert members[s].test_correct == solo.test_correct


@pytest.mark.e2e  # trains models and writes run folders
def test_rms_and_weight_norm_compare_and_sweep_like_the_others(tmp_path):
    """RMSNorm and weight norm go through ``lnbench compare`` as the built-in norms do: a summary row
    for each of the RNN, the LSTM and the Transformer with each norm, both named in the output;
    and through ``lnbench batchsize-sweep`` beside NoNorm at batch sizes 1 and 16, exit code 0."""
    import json

    from lnbench.cli.app import app

    tiny = tiny_args("seeds=[0,1]", "train.epochs=1", "data.seq_len=4")  # the tiny config: 1 epoch, 4 timesteps
    result = runner.invoke(
        app, ["compare", "--runs-dir", str(tmp_path / "c"), "--set", "compare.norms=[rms,weight]", *tiny]
    )
    assert result.exit_code == 0, result.output
    (run,) = list((tmp_path / "c").iterdir())
    rows = json.loads((run / "summary.json").read_text())["rows"]
    assert {(r["family"], r["norm"]) for r in rows} == {
        (f, n) for f in ("rnn", "lstm", "transformer") for n in ("rms", "weight")
    }
    assert "RMSNorm" in result.output and "WeightNorm" in result.output
    sweep = ["--set", "sweep.norms=[none,rms,weight]", "--set", "sweep.batch_sizes=[1,16]"]
    result = runner.invoke(app, ["batchsize-sweep", "--runs-dir", str(tmp_path / "s"), *sweep, *tiny])
    assert result.exit_code == 0, result.output


def test_the_rms_joint_cell_adds_its_bias_after_the_norm():
    """Zhang & Sennrich eq. 4: f(g a / RMS(a) + b). A memoryless cell (W_hh = 0) is then invariant
    to the input's scale even with a bias; a bias inside the norm would break that."""
    torch.manual_seed(0)
    m = SimpleRNN(ModelConfig(norm="rms", hidden_size=6, norm_placement="joint"), 5).eval()
    with torch.no_grad():
        m.cell.W_hh.zero_()
        m.cell.bias.uniform_(-1.0, 1.0)
    x = 4 * torch.randn(3, 4, 5)
    with torch.no_grad():
        torch.testing.assert_close(m(x, return_hidden=True)[1], m(9.0 * x, return_hidden=True)[1], atol=1e-5, rtol=1e-5)
