"""The recurrent models' initial state h_0 (``model.state_noise_std``, Cooijmans et al. 2016's
``--noise``): the C++ kernel from a given h_0 against the step-by-step Python path (its oracle) in
float64, forward and every gradient; h_0 = 0 given equals no h_0 bit for bit; what the model draws
itself in training and in eval; and a stacked model's layers each from their own h_0."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn.lstm import LSTM
from lnbench.nn.models import build_model
from lnbench.nn.recurrent import EVAL_STATE_NOISE_SEED, eval_state_noise, state_noise
from lnbench.nn.rnn import SimpleRNN

needs_kernel = pytest.mark.skipif(os.environ.get("LNBENCH_KERNELS") == "0", reason="LNBENCH_KERNELS=0")

CASES = [
    pytest.param("lstm", "none", "separate", id="lstm-none"),
    pytest.param("lstm", "layer", "separate", id="lstm-layer"),
    pytest.param("lstm", "batch", "separate", id="lstm-batch"),
    pytest.param("rnn", "layer", "joint", id="rnn-layer-joint"),
    pytest.param("rnn", "batch", "separate", id="rnn-batch-separate"),
    pytest.param("rnn", "rms", "joint", id="rnn-rms-joint"),
]


def make(family, norm, placement, members=None, H=6, n_in=4, T=5, num_layers=1, **keys):
    cfg = ModelConfig(family=family, norm=norm, norm_placement=placement, hidden_size=H, num_layers=num_layers, **keys)
    torch.manual_seed(1)
    if members is None:
        return build_model(cfg, n_in, T).double()
    cls = LSTM if family == "lstm" else SimpleRNN
    return cls.stack([build_model(cfg, n_in, T) for _ in range(members)]).double()


def outputs_and_grads(model, x, y, h0):
    logits, hidden = model(x, return_hidden=True, h0=h0)
    model.zero_grad()
    F.cross_entropy(logits.reshape(-1, 2), y.reshape(-1), reduction="sum").backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logits.detach(), hidden.detach(), grads


@needs_kernel
@pytest.mark.parametrize("members", [None, 2])
@pytest.mark.parametrize(("family", "norm", "placement"), CASES)
def test_the_kernel_from_a_given_h0_matches_the_python_path(family, norm, placement, members):
    """From h_0 drawn at random (two layers: each its own), the kernel's logits, hidden states and
    every parameter's gradient (W_h's includes the t = 1 term dR_1^T h_0) equal the Python path's
    to 1e-10 in float64, in training and in eval."""
    model = make(family, norm, placement, members, num_layers=2)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    lead = () if members is None else (members,)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*lead, 8, 5, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (*lead, 8), generator=g)
    h0 = 0.5 * torch.randn(*lead, 8, 2, 6, generator=g, dtype=torch.float64)
    for training in (True, False):
        model.train(training), reference.train(training)
        (la, ha, ga), (lb, hb, gb) = outputs_and_grads(model, x, y, h0), outputs_and_grads(reference, x, y, h0)
        torch.testing.assert_close(la, lb, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(ha, hb, rtol=1e-10, atol=1e-10)
        assert ga.keys() == gb.keys()
        for name in ga:
            torch.testing.assert_close(ga[name], gb[name], rtol=1e-10, atol=1e-10, msg=name)
    # the state reached the recurrence: from zeros the outputs differ
    zero = outputs_and_grads(reference, x, y, torch.zeros_like(h0))[0]
    assert not torch.allclose(zero, outputs_and_grads(reference, x, y, h0)[0])


@pytest.mark.parametrize("use_kernel", [pytest.param(True, marks=needs_kernel), False], ids=["kernel", "python"])
@pytest.mark.parametrize(("family", "norm", "placement"), CASES[:4])
def test_h0_of_zeros_is_no_h0_bit_for_bit(family, norm, placement, use_kernel):
    """A given h_0 of zeros gives the outputs and gradients of h_0 = 0 (no h0) bit for bit, on
    both paths: the default (state_noise_std 0) trains what it trained before the key."""
    model = make(family, norm, placement).float()
    model.use_kernel = use_kernel
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(8, 5, 4, generator=g), torch.randint(0, 2, (8,), generator=g)
    la, ha, ga = outputs_and_grads(model, x, y, None)
    lb, hb, gb = outputs_and_grads(model, x, y, torch.zeros(8, 1, 6))
    assert torch.equal(la, lb) and torch.equal(ha, hb)
    assert all(torch.equal(ga[n], gb[n]) for n in ga)


def test_the_model_draws_h0_in_training_and_takes_the_fixed_evaluation_noise_in_eval():
    """With state_noise_std s the model draws h_0 itself when none is given: in training from
    torch's global generator (two calls differ; std s over many entries), in eval the rows of
    eval_state_noise (the same every call, for every member); at std 0 it draws nothing."""
    model = make("lstm", "layer", "separate", members=2, H=8, state_noise_std=0.1)
    x = torch.zeros(2, 500, 3, 4, dtype=torch.float64)
    model.train()
    a, b = model.initial_states(x), model.initial_states(x)
    assert a.shape == (2, 500, 1, 8) and not torch.equal(a, b)
    assert float(a.std()) == pytest.approx(0.1, rel=0.05)  # 8000 draws: sd of the estimate ~0.8%
    model.eval()
    expected = 0.1 * torch.randn(500, 1, 8, generator=torch.Generator().manual_seed(EVAL_STATE_NOISE_SEED))
    torch.testing.assert_close(model.initial_states(x)[0], expected.double(), rtol=0, atol=0)
    assert torch.equal(model.initial_states(x)[1], model.initial_states(x)[0])
    assert make("lstm", "layer", "separate", state_noise_std=0.0).initial_states(x[0]) is None


def test_the_evaluation_noise_is_one_fixed_draw_whatever_the_norm():
    """eval_state_noise is std times one fixed standard normal draw: the same for every call and
    norm, and proportional to std (the paired tests compare the same h_0 per test example)."""
    a = eval_state_noise(7, 2, 5, 0.1)
    torch.testing.assert_close(eval_state_noise(7, 2, 5, 0.3), 3 * a)
    assert torch.equal(a, eval_state_noise(7, 2, 5, 0.1))
    g = torch.Generator().manual_seed(9)
    assert state_noise(4, 1, 3, 2.0, g).shape == (4, 1, 3)


def test_a_misshapen_h0_raises_naming_the_shape():
    model = make("rnn", "layer", "joint")
    with pytest.raises(ValueError, match=r"h0 must be \(8, 1, 6\)"):
        model(torch.zeros(8, 5, 4, dtype=torch.float64), h0=torch.zeros(8, 6, dtype=torch.float64))


def test_the_lstm_starts_from_h0_as_its_equations_say():
    """One LSTM step by hand from h_0 and c_0 = 0 (the oracle: eq. (1)-(3) of lnbench.nn.lstm with
    no norm): gates = W_h h_0 + W_x x_1 + b; c_1 = sigmoid(i) tanh(g); h_1 = sigmoid(o) tanh(c_1)."""
    model = make("lstm", "none", "separate", T=1)
    model.use_kernel = False
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 1, 4, generator=g, dtype=torch.float64)
    h0 = torch.randn(3, 1, 6, generator=g, dtype=torch.float64)
    cell, H = model.cell, 6
    gates = h0[:, 0] @ cell.W_h.T + x[:, 0] @ cell.W_x.T + cell.bias
    i, o, g_ = torch.sigmoid(gates[:, :H]), torch.sigmoid(gates[:, 2 * H : 3 * H]), torch.tanh(gates[:, 3 * H :])
    h1 = o * torch.tanh(i * g_)
    torch.testing.assert_close(model(x, return_hidden=True, h0=h0)[1][:, 0], h1, rtol=1e-12, atol=1e-12)
