"""lnbench.nn.ensemble_linear: each member's slice of an EnsembleLinear is a plain linear layer."""

import torch
from torch.nn import functional as F

from lnbench.nn.ensemble_linear import EnsembleLinear


def test_ensemble_linear_is_each_members_linear():
    gen = torch.Generator().manual_seed(1)
    for bias in (True, False):
        layer = EnsembleLinear(2, 6, 4, bias=bias)
        with torch.no_grad():
            for p in layer.parameters():
                p.copy_(torch.randn(p.shape, generator=gen))
        x = torch.randn(2, 3, 5, 6, generator=gen)  # (S, B, T, in)
        y = layer(x)
        for s in range(2):
            b = layer.bias[s, 0] if layer.bias is not None else None
            torch.testing.assert_close(y[s], F.linear(x[s], layer.weight[s], b))
    assert [n for n, _ in EnsembleLinear(2, 3, 4, bias=False).named_parameters()] == ["weight"]
