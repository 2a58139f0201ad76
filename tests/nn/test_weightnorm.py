"""lnbench.nn.weightnorm, from scratch, against PyTorch's own weight normalization."""

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn.models import TransformerClassifier
from lnbench.nn.weightnorm import WeightNormLinear


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


def test_the_transformer_with_weight_norm_normalizes_every_linear_and_no_activation():
    m = TransformerClassifier(ModelConfig(family="transformer", norm="weight", hidden_size=8), 4, seq_len=5)
    linears = [mod for mod in m.modules() if isinstance(mod, (nn.Linear, WeightNormLinear))]
    assert linears and all(isinstance(mod, WeightNormLinear) for mod in linears)
    assert m.input_norm is None and isinstance(m.blocks[0].norm_1, nn.Identity)
