"""lnbench.nn.layernorm against torch.nn.LayerNorm and hand-computed values."""

import pytest
import torch
from torch import nn

from lnbench.nn.layernorm import LayerNorm


def _random_affine(ref: nn.Module, ours: nn.Module) -> None:
    """Give the torch module and ours the same random gamma (weight) and beta (bias)."""
    g = torch.Generator().manual_seed(1)
    gamma, beta = torch.randn(2, *ref.weight.shape, generator=g)
    with torch.no_grad():
        ref.weight.copy_(gamma), ref.bias.copy_(beta)
        ours.gamma.copy_(gamma), ours.beta.copy_(beta)


@pytest.mark.parametrize("shape", [(8, 16), (4, 5, 16), (2, 3, 4, 16)])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_layernorm_matches_torch_forward_and_gradients(shape, dtype, tol):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=g) * 3 + 50).to(dtype)  # non-zero mean
    ours, ref = LayerNorm(16).to(dtype), nn.LayerNorm(16).to(dtype)
    _random_affine(ref, ours)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    y1, y2 = ours(x1), ref(x2)
    torch.testing.assert_close(y1, y2, atol=tol, rtol=tol)
    grad_y = torch.randn(shape, generator=g).to(dtype)
    y1.backward(grad_y)
    y2.backward(grad_y)
    torch.testing.assert_close(x1.grad, x2.grad, atol=tol * 10, rtol=tol * 10)
    torch.testing.assert_close(ours.gamma.grad, ref.weight.grad, atol=tol * 10, rtol=tol * 10)
    torch.testing.assert_close(ours.beta.grad, ref.bias.grad, atol=tol * 10, rtol=tol * 10)


def test_layernorm_large_mean_float32_no_cancellation():
    x = torch.tensor([[40000.0, 40001.0, 40002.0, 40003.0]])
    expected = torch.tensor([[-1.3416355, -0.4472118, 0.4472118, 1.3416355]])
    torch.testing.assert_close(LayerNorm(4)(x), expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(LayerNorm(4)(x), nn.LayerNorm(4)(x), atol=1e-6, rtol=0)


def test_layernorm_constant_row_gives_beta_exactly():
    ln = LayerNorm(4)
    with torch.no_grad():
        ln.beta.copy_(torch.tensor([0.5, -1.0, 2.0, 3.25]))
        ln.gamma.copy_(torch.tensor([7.0, 7.0, 7.0, 7.0]))
    y = ln(torch.full((3, 4), 1234.0))
    assert torch.equal(y, ln.beta.detach().expand(3, 4))


def test_layernorm_rejects_wrong_feature_axis():
    with pytest.raises(ValueError, match="last axis 4"):
        LayerNorm(4)(torch.zeros(2, 5))


def test_layer_norm_over_one_feature_warns_once():
    from lnbench.nn.base import SingleValueWarning
    from lnbench.nn.layernorm import LayerNorm as _LN

    ln = _LN(1)
    with pytest.warns(SingleValueWarning, match="LayerNorm over one feature"):
        ln(torch.randn(4, 1))
    import warnings as _w

    with _w.catch_warnings():
        _w.simplefilter("error")
        ln(torch.randn(4, 1))  # once per module
        _LN(2)(torch.randn(4, 2))
