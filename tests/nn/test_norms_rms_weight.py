"""RMSNorm and weight normalization, from scratch, against PyTorch's own."""

import pytest
import torch
from conftest import runner, tiny_args
from torch import nn

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.models import SimpleRNN, TransformerClassifier, build_model
from lnbench.nn.rmsnorm import RMSNorm
from lnbench.nn.weightnorm import WeightNormLinear
from lnbench.training.loop import train_members, train_model
from lnbench.training.tasks.trend import make_trend_data


def test_rmsnorm_matches_torch_forward_and_backward_float64():
    torch.manual_seed(0)
    x = (3 + 2 * torch.randn(4, 5, 7, dtype=torch.float64)).requires_grad_()
    ours, ref = RMSNorm(7, eps=1e-6).double(), nn.RMSNorm(7, eps=1e-6).double()
    with torch.no_grad():
        ours.gamma.uniform_(0.5, 1.5)
        ref.weight.copy_(ours.gamma)
    gy = torch.randn(4, 5, 7, dtype=torch.float64)
    y, y_ref = ours(x), ref(x)
    torch.testing.assert_close(y, y_ref, rtol=1e-12, atol=1e-12)
    g_ours = torch.autograd.grad(y, (x, ours.gamma), gy)
    g_ref = torch.autograd.grad(y_ref, (x, ref.weight), gy)
    for a, b in zip(g_ours, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_rmsnorm_passes_gradcheck_and_keeps_half_precision():
    m = RMSNorm(5).double()
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    g = m.gamma.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x, g: torch.func.functional_call(m, {"gamma": g}, (x,)), (x, g))
    xh = torch.tensor([[0.0, 600.0, 300.0]], dtype=torch.float16)  # 600^2 overflows float16
    y = RMSNorm(3)(xh)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y, nn.RMSNorm(3, eps=1e-5)(xh.float()).half())


def test_rmsnorm_ensemble_members_are_independent():
    torch.manual_seed(0)
    m = RMSNorm(4, members=3)
    with torch.no_grad():
        m.gamma.uniform_(0.5, 1.5)
    x = torch.randn(3, 2, 4)
    for s in range(3):
        torch.testing.assert_close(m(x)[s], nn.functional.rms_norm(x[s], (4,), m.gamma[s, 0], 1e-5))


def test_weight_norm_linear_matches_torch_parametrization():
    torch.manual_seed(0)
    ours = WeightNormLinear(6, 4).double()
    ref = nn.utils.parametrizations.weight_norm(nn.Linear(6, 4).double(), dim=0)
    with torch.no_grad():
        ours.g.mul_(torch.linspace(0.5, 2.0, 4, dtype=torch.float64))
        ref.parametrizations.weight.original0.copy_(ours.g.view(4, 1))
        ref.parametrizations.weight.original1.copy_(ours.v)
        ref.bias.copy_(ours.bias)
    x = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    torch.testing.assert_close(ours(x), ref(x))
    gy = torch.randn(5, 4, dtype=torch.float64)
    g_ours = torch.autograd.grad(ours(x), (x, ours.v, ours.g, ours.bias), gy)
    g_ref = torch.autograd.grad(
        ref(x), (x, ref.parametrizations.weight.original1, ref.parametrizations.weight.original0, ref.bias), gy
    )
    for a, b in zip(g_ours, g_ref):
        torch.testing.assert_close(a.reshape(b.shape), b)
    assert torch.autograd.gradcheck(lambda x: ours(x), (x,))


def test_weight_norm_linear_starts_as_the_linear_it_replaces():
    torch.manual_seed(0)
    plain = nn.Linear(6, 4)
    torch.manual_seed(0)
    wn = WeightNormLinear(6, 4)
    torch.testing.assert_close(wn.weight, plain.weight)
    torch.testing.assert_close(wn.g, plain.weight.norm(dim=1))


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


def test_the_transformer_with_weight_norm_normalizes_every_linear_and_no_activation():
    m = TransformerClassifier(ModelConfig(family="transformer", norm="weight", hidden_size=8), 4, seq_len=5)
    linears = [mod for mod in m.modules() if isinstance(mod, (nn.Linear, WeightNormLinear))]
    assert linears and all(isinstance(mod, WeightNormLinear) for mod in linears)
    assert m.input_norm is None and isinstance(m.blocks[0].norm_1, nn.Identity)


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
