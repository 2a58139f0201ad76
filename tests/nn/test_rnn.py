"""lnbench.nn.rnn: the simple RNN's shapes and the equations its cell implements, against hand-written references."""

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn.models import RNNCellWithNorm, SimpleRNN


def test_rnn_cell_is_tanh_of_layer_normalized_summed_inputs():
    torch.manual_seed(0)
    cell = RNNCellWithNorm(ModelConfig(norm="layer", hidden_size=8))
    x, h = torch.randn(3, 8), torch.randn(3, 8)
    a = h @ cell.W_hh.T + x @ cell.W_xh.T
    expected = torch.tanh(F.layer_norm(a, (8,), cell.norm.gamma, cell.norm.beta, eps=1e-5))
    torch.testing.assert_close(cell(x, h), expected)
    assert cell.W_hh.shape == (8, 8) and cell.W_xh.shape == (8, 8) and cell.bias is None


def test_rnn_cell_without_norm_has_a_bias():
    torch.manual_seed(0)
    cell = RNNCellWithNorm(ModelConfig(norm="none", hidden_size=4))
    with torch.no_grad():
        cell.bias.fill_(0.3)
    x, h = torch.randn(2, 4), torch.randn(2, 4)
    torch.testing.assert_close(cell(x, h), torch.tanh(h @ cell.W_hh.T + x @ cell.W_xh.T + 0.3))


@pytest.mark.parametrize("norm", ["none", "batch", "layer"])
def test_simple_rnn_shapes_and_hidden_states(norm):
    torch.manual_seed(0)
    model = SimpleRNN(ModelConfig(norm=norm, hidden_size=7), input_size=5, num_classes=2)
    x = torch.randn(4, 6, 5)
    logits, hidden = model(x, return_hidden=True)
    assert logits.shape == (4, 2) and hidden.shape == (4, 6, 7)
    torch.testing.assert_close(logits, model.head(hidden[:, -1]))  # logits come from h_T
    assert hidden.abs().max() < 1  # tanh


def test_same_seed_gives_same_initial_weights_for_every_norm():
    weights = []
    for norm in ["none", "batch", "layer"]:
        torch.manual_seed(3)
        m = SimpleRNN(ModelConfig(norm=norm, hidden_size=8), 8)
        weights.append((m.cell.W_hh.detach(), m.cell.W_xh.detach(), m.head.weight.detach()))
    for w in weights[1:]:
        assert all(torch.equal(a, b) for a, b in zip(weights[0], w))
