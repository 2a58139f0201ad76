"""The compiled LayerNorm kernel against torch.nn.functional.layer_norm and the Python Function."""

import os

import pytest
import torch
import torch.nn.functional as F

from lnbench.nn.kernels import layernorm_kernel
from lnbench.nn.layernorm import LayerNorm

pytestmark = pytest.mark.skipif(os.environ.get("LNBENCH_KERNELS") == "0", reason="LNBENCH_KERNELS=0")


def test_the_kernel_is_built():
    assert layernorm_kernel() is not None, "make setup builds it (python -m lnbench.nn.kernels)"


@pytest.mark.parametrize("shape", [(8, 16), (4, 5, 16), (1, 16), (0, 16)])
def test_kernel_matches_torch_and_the_python_function_in_float64(shape):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 50).requires_grad_()
    gamma, beta = torch.randn(2, 16, generator=g, dtype=torch.float64).requires_grad_().unbind(0)
    gamma, beta = gamma.detach().requires_grad_(), beta.detach().requires_grad_()
    grad_y = torch.randn(shape, generator=g, dtype=torch.float64)
    results = []
    for impl in ("kernel", "function", "torch"):
        for t in (x, gamma, beta):
            t.grad = None
        if impl == "torch":
            y = F.layer_norm(x, (16,), gamma, beta, 1e-5)
        else:
            ln = LayerNorm(16).double()
            ln.use_kernel = impl == "kernel"
            with torch.no_grad():
                ln.gamma.copy_(gamma), ln.beta.copy_(beta)
            y = ln(x)
            gamma_grad = lambda: ln.gamma.grad  # noqa: E731
        y.backward(grad_y)
        results.append((y.detach(), x.grad.clone(), (gamma.grad if impl == "torch" else gamma_grad()).clone()))
    for a, b in zip(results[0], results[2]):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)
    for a, b in zip(results[0], results[1]):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


def test_kernel_gradcheck_and_ensemble_rows():
    kernel = layernorm_kernel()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, 6, generator=g, dtype=torch.float64, requires_grad=True)  # (S, B, D)
    gamma = torch.randn(3, 1, 6, generator=g, dtype=torch.float64, requires_grad=True)  # one row per member
    beta = torch.randn(3, 1, 6, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, a, b: kernel.layer_norm(x, a, b, 1e-5), (x, gamma, beta))
    for s in range(3):  # member s is LayerNorm with its own gamma and beta
        torch.testing.assert_close(
            kernel.layer_norm(x, gamma, beta, 1e-5)[s], F.layer_norm(x[s], (6,), gamma[s, 0], beta[s, 0], 1e-5)
        )


def test_kernel_float32_large_mean_and_constant_row():
    ln = LayerNorm(4)
    x = torch.tensor([[40000.0, 40001.0, 40002.0, 40003.0], [7.0, 7.0, 7.0, 7.0]])
    with torch.no_grad():
        ln.beta.copy_(torch.tensor([0.5, -1.0, 2.0, 3.25]))
    y = ln(x)
    torch.testing.assert_close(
        y[0], torch.tensor([-1.3416355, -0.4472118, 0.4472118, 1.3416355]) + ln.beta.detach(), atol=1e-6, rtol=0
    )
    assert torch.equal(y[1], ln.beta.detach())  # constant row: x_hat = 0, y = beta exactly
