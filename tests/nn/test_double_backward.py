"""Second derivatives through every path of LayerNorm, RMSNorm and BatchNorm.

A gradient penalty (WGAN-GP: ``grad(loss, x, create_graph=True)``, then the backward of a norm
of that gradient) needs the backward itself to be differentiable. The oracles: PyTorch's
``torch.nn.functional`` norms, whose double backward is PyTorch's own, and
``torch.autograd.gradgradcheck`` (finite differences of the backward) in float64.
"""

import os

import pytest
import torch
import torch.nn.functional as F

from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.kernels import layernorm_kernel
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.rmsnorm import RMSNorm

EPS = 1e-5
KERNEL = pytest.param(
    "kernel",
    marks=pytest.mark.skipif(os.environ.get("LNBENCH_KERNELS") == "0", reason="LNBENCH_KERNELS=0"),
)


def _layer(path: str, features: int, members: int | None = None) -> LayerNorm:
    ln = LayerNorm(features, eps=EPS, members=members).double()
    ln.use_kernel = path == "kernel"
    if path == "kernel":
        assert layernorm_kernel() is not None, "make setup builds it (python -m lnbench.nn.kernels)"
    return ln


def _randomize(module: torch.nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))


def _penalty_grads(forward, x, params):
    """WGAN-GP: ``loss = sum(w * y)``, ``g = d loss / d x`` with a graph, ``penalty = mean((|g| - 1)^2)
    + loss``; returns d penalty / d (x, *params)."""
    w = torch.randn(x.shape, generator=torch.Generator().manual_seed(7), dtype=x.dtype)
    loss = (w * forward(x)).sum()
    (gx,) = torch.autograd.grad(loss, x, create_graph=True)
    penalty = (gx.flatten(1).norm(dim=1) - 1).square().mean() + loss
    return torch.autograd.grad(penalty, (x, *params))


@pytest.mark.parametrize("path", [KERNEL, "function"])
@pytest.mark.parametrize("shape,members", [((5, 6), None), ((2, 3, 6), None), ((3, 4, 6), 3)])
def test_layernorm_gradient_penalty_matches_torch(path, shape, members):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 20).requires_grad_()
    ln = _layer(path, shape[-1], members)
    _randomize(ln, 1)
    ours = _penalty_grads(ln, x, (ln.gamma, ln.beta))
    gamma, beta = ln.gamma.detach().clone().requires_grad_(), ln.beta.detach().clone().requires_grad_()

    def reference(x):  # F.layer_norm without affine, so gamma and beta may carry a member axis
        return F.layer_norm(x, (shape[-1],), eps=EPS) * gamma + beta

    expected = _penalty_grads(reference, x, (gamma, beta))
    for got, want in zip(ours, expected):
        torch.testing.assert_close(got, want, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("path", [KERNEL, "function"])
def test_layernorm_gradgradcheck(path):
    g = torch.Generator().manual_seed(2)
    ln = _layer(path, 5)
    _randomize(ln, 3)
    x = (torch.randn(3, 5, generator=g, dtype=torch.float64) + 4).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda x, gamma, beta: _apply_with(ln, x, gamma, beta), (x, ln.gamma, ln.beta))


def _apply_with(module, x, *params):
    """``module(x)`` with its parameters replaced by ``params`` (so gradgradcheck can perturb them)."""
    names = [n for n, _ in module.named_parameters()]
    return torch.func.functional_call(module, dict(zip(names, params)), (x,))


def test_rmsnorm_gradient_penalty_matches_torch_and_gradgradcheck():
    g = torch.Generator().manual_seed(4)
    x = (torch.randn(2, 3, 6, generator=g, dtype=torch.float64) + 1).requires_grad_()
    rms = RMSNorm(6, eps=EPS).double()
    _randomize(rms, 5)
    gamma = rms.gamma.detach().clone().requires_grad_()
    ours = _penalty_grads(rms, x, (rms.gamma,))
    expected = _penalty_grads(lambda x: F.rms_norm(x, (6,), gamma, EPS), x, (gamma,))
    for got, want in zip(ours, expected):
        torch.testing.assert_close(got, want, atol=1e-9, rtol=1e-9)
    x = x.detach()[0].requires_grad_()
    assert torch.autograd.gradgradcheck(lambda x, gamma: _apply_with(rms, x, gamma), (x, rms.gamma))


@pytest.mark.parametrize("shape", [(6, 4), (3, 5, 4)])
def test_batchnorm_gradient_penalty_matches_torch_and_gradgradcheck(shape):
    g = torch.Generator().manual_seed(6)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 2 - 3).requires_grad_()
    bn = BatchNorm1d(4, eps=EPS).double().train()
    _randomize(bn, 7)
    gamma, beta = bn.gamma.detach().clone().requires_grad_(), bn.beta.detach().clone().requires_grad_()
    ours = _penalty_grads(bn, x, (bn.gamma, bn.beta))

    def reference(x):  # torch's (B, C, L) layout is our (B, T, H) transposed
        xt = x if x.dim() == 2 else x.transpose(1, 2)
        y = F.batch_norm(xt, None, None, gamma, beta, training=True, eps=EPS)
        return y if x.dim() == 2 else y.transpose(1, 2)

    expected = _penalty_grads(reference, x, (gamma, beta))
    for got, want in zip(ours, expected):
        torch.testing.assert_close(got, want, atol=1e-9, rtol=1e-9)
    x = x.detach().requires_grad_()
    assert torch.autograd.gradgradcheck(lambda x, gamma, beta: _apply_with(bn, x, gamma, beta), (x, bn.gamma, bn.beta))


@pytest.mark.parametrize("path", [KERNEL, "function"])
def test_first_order_gradients_are_unchanged_without_a_graph(path):
    """The double-backward path is taken only with ``create_graph``: without it the gradient has
    no graph (the hand-written backward), with it one; both the same function (float32)."""
    g = torch.Generator().manual_seed(8)
    x = (torch.randn(4, 7, 16, generator=g) * 3 + 50).requires_grad_()
    ln = LayerNorm(16)
    ln.use_kernel = path == "kernel"
    _randomize(ln, 9)
    grad_y = torch.randn(x.shape, generator=g)
    plain = torch.autograd.grad(ln(x), (x, ln.gamma, ln.beta), grad_y)
    graphed = torch.autograd.grad(ln(x), (x, ln.gamma, ln.beta), grad_y, create_graph=True)
    for a, b in zip(plain, graphed):  # the same function, computed by different ops: float32 rounding apart
        torch.testing.assert_close(a, b.detach(), atol=1e-4, rtol=1e-5)
    assert plain[0].grad_fn is None and graphed[0].grad_fn is not None
