"""lnbench.nn.rmsnorm, from scratch, against PyTorch's own RMSNorm."""

import torch
from torch import nn

from lnbench.nn.rmsnorm import RMSNorm


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
