"""The few-row Linear kernel (lnbench/nn/csrc/linear.cpp) is torch.nn.functional.linear: its output and
its gradients for x, W and b against F.linear's in float64, at every row count it takes (each its own
compiled block), widths that are and are not a whole number of vectors, with and without a bias;
and the MLP routes a plain Linear on a few rows through it and anything else to torch."""

import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lnbench.config import ModelConfig
from lnbench.nn import few_row_linear
from lnbench.nn.kernels import linear_kernel
from lnbench.nn.mlp import MLP

KERNELS_OFF = os.environ.get("LNBENCH_KERNELS") == "0"
needs_kernel = pytest.mark.skipif(KERNELS_OFF, reason="LNBENCH_KERNELS=0")


def _grads(fn, x, W, b, gy):
    y = fn(x, W, b)
    wanted = [t for t in (x, W, b) if t is not None and t.requires_grad]
    return y.detach(), torch.autograd.grad(y, wanted, gy)


@needs_kernel
@pytest.mark.parametrize("rows", list(range(1, 9)))
def test_output_and_gradients_are_f_linears_in_float64_at_every_row_count(rows):
    """Oracle: F.linear and its autograd gradients. K 37 is two vectors of 16 and a tail of 5; N 70
    rows of W cover whole blocks of 4 and a partial one."""
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 37, generator=g, dtype=torch.float64, requires_grad=True)
    W = torch.randn(70, 37, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(70, generator=g, dtype=torch.float64, requires_grad=True)
    gy = torch.randn(rows, 70, generator=g, dtype=torch.float64)
    y, grads = _grads(linear_kernel().few_row_linear, x, W, b, gy)
    y_ref, grads_ref = _grads(F.linear, x, W, b, gy)
    torch.testing.assert_close(y, y_ref, rtol=1e-12, atol=1e-12)
    for name, got, want in zip(("dx", "dW", "db"), grads, grads_ref, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12, msg=f"{name} at {rows} rows")


@needs_kernel
def test_without_a_bias_and_an_input_that_needs_no_gradient_it_gives_dw_alone():
    """A first layer: x is data (no gradient), W's gradient alone is asked for; a Linear with no
    bias. Oracle: F.linear. A leading batch axis is kept: (2, 3, K) -> (2, 3, N)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 784, generator=g)
    W = torch.randn(100, 784, generator=g, requires_grad=True)
    gy = torch.randn(2, 3, 100, generator=g)
    y, (dW,) = _grads(lambda x, W, b: linear_kernel().few_row_linear(x, W), x, W, None, gy)
    y_ref, (dW_ref,) = _grads(F.linear, x, W, None, gy)
    assert y.shape == (2, 3, 100)
    torch.testing.assert_close(y, y_ref, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(dW, dW_ref, rtol=1e-5, atol=1e-5)


@needs_kernel
def test_gradcheck_and_second_derivatives():
    """Oracle: finite differences (torch.autograd.gradcheck and gradgradcheck, float64): a second
    derivative goes through differentiable ops, as create_graph needs."""
    g = torch.Generator().manual_seed(2)
    args = [
        torch.randn(3, 19, generator=g, dtype=torch.float64, requires_grad=True),
        torch.randn(5, 19, generator=g, dtype=torch.float64, requires_grad=True),
        torch.randn(5, generator=g, dtype=torch.float64, requires_grad=True),
    ]
    fn = linear_kernel().few_row_linear
    assert torch.autograd.gradcheck(fn, args)
    assert torch.autograd.gradgradcheck(fn, args)


@needs_kernel
def test_more_rows_than_it_takes_is_an_error():
    x, W = torch.zeros(9, 20), torch.zeros(30, 20)
    with pytest.raises(RuntimeError, match="1 to 8 rows, got 9"):
        linear_kernel().few_row_linear(x, W)


@needs_kernel
def test_float32_at_figure_6s_sizes_is_f_linear_to_float32_rounding():
    """Ba et al.'s Figure 6 layer (1000 x 1000) at batch size 4, float32: within float32 rounding of
    the float64 product (both the kernel's and F.linear's error are of that order)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 1000, generator=g, dtype=torch.float64)
    W = torch.randn(1000, 1000, generator=g, dtype=torch.float64) / 30
    b = torch.randn(1000, generator=g, dtype=torch.float64)
    gy = torch.randn(4, 1000, generator=g, dtype=torch.float64)
    exact_y, exact = _grads(F.linear, x.requires_grad_(), W.requires_grad_(), b.requires_grad_(), gy)
    args32 = [t.detach().float().requires_grad_() for t in (x, W, b)]
    y32, grads32 = _grads(linear_kernel().few_row_linear, *args32, gy.float())
    torch.testing.assert_close(y32.double(), exact_y, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads32, exact, strict=True):
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


@needs_kernel
@pytest.mark.parametrize(
    ("rows", "out", "dtype", "uses"),
    [
        (4, 1000, torch.float32, True),  # Figure 6's hidden layers at batch size 4
        (8, 10, torch.float64, True),  # its 10-class head at batch size 8
        (9, 1000, torch.float32, False),  # above MAX_ROWS: MKL's blocked product is faster
        (0, 1000, torch.float32, False),  # an empty batch: F.linear's empty result
        (4, 1000, torch.float16, False),
    ],
)
def test_which_products_run_the_kernel(rows, out, dtype, uses):
    x, W = torch.zeros(rows, 1000, dtype=dtype), torch.zeros(out, 1000, dtype=dtype)
    assert few_row_linear.uses_kernel(x, W) is uses


@needs_kernel
def test_the_mlp_runs_its_linears_through_the_kernel_and_matches_torch(monkeypatch):
    """The MLP at batch size 4 (784-1000-1000-10, LayerNorm): its three Linears call the kernel;
    its logits and every parameter's gradient are those of the same MLP on F.linear (the kernel
    off), to float32 rounding."""
    calls = []
    kernel = linear_kernel()

    class Counting:
        def few_row_linear(self, *args):
            calls.append(args[1].shape)
            return kernel.few_row_linear(*args)

    torch.manual_seed(0)
    model = MLP(ModelConfig(family="mlp", hidden_size=1000, num_layers=2, norm="layer"), 784, 1, 10)
    x, y = torch.randn(4, 784), torch.randint(0, 10, (4,))
    results = []
    for use in (True, False):
        monkeypatch.setattr(few_row_linear, "MAX_ROWS", 8 if use else 0)
        monkeypatch.setattr(few_row_linear, "linear_kernel", lambda: Counting())
        model.zero_grad()
        logits = model(x)
        F.cross_entropy(logits, y).backward()
        results.append([logits.detach()] + [p.grad.clone() for p in model.parameters()])
    assert calls == [(1000, 784), (1000, 1000), (10, 1000)]
    for got, want in zip(*results, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_a_linear_subclass_is_called_as_it_is():
    """A Linear with its own forward (weight norm's) is never bypassed by the kernel."""

    class Doubled(nn.Linear):
        def forward(self, x):
            return 2 * super().forward(x)

    layer = Doubled(1000, 1000)
    x = torch.randn(4, 1000)
    torch.testing.assert_close(few_row_linear.linear(layer, x), 2 * F.linear(x, layer.weight, layer.bias))


@pytest.mark.parametrize("shape", [(), (1,)])
def test_a_bias_that_f_linear_broadcasts_gives_f_linears_output_and_gradient(shape):
    """A Linear whose bias was replaced by one of shape () or (1,) (F.linear broadcasts it over the
    outputs): the product is F.linear's, value and gradient of the bias (the kernel reads a bias
    of shape (out,) only)."""
    torch.manual_seed(0)
    layer = nn.Linear(6, 5).double()
    layer.bias = nn.Parameter(torch.full(shape, 0.75, dtype=torch.float64))
    x = torch.randn(3, 6, dtype=torch.float64)
    y = few_row_linear.linear(layer, x)
    torch.testing.assert_close(y, F.linear(x, layer.weight, layer.bias), rtol=0, atol=1e-12)
    (grad,) = torch.autograd.grad(y.sum(), [layer.bias])
    assert grad.shape == shape and grad.sum().item() == pytest.approx(15.0)  # 3 rows x 5 outputs


@pytest.mark.skipif(not KERNELS_OFF, reason="runs under LNBENCH_KERNELS=0 (make test-no-kernels)")
def test_with_the_kernels_off_every_product_is_torchs():
    """LNBENCH_KERNELS=0: the MLP on a few rows runs F.linear (the Python path), its logits those of
    F.linear applied layer by layer, bit for bit."""
    assert not few_row_linear.uses_kernel(torch.zeros(4, 1000), torch.zeros(1000, 1000))
    torch.manual_seed(0)
    model = MLP(ModelConfig(family="mlp", hidden_size=50, num_layers=1, norm="none"), 784, 1, 10)
    x = torch.randn(4, 784)
    h = torch.relu(F.linear(x, model.linears[0].weight, model.linears[0].bias))
    assert torch.equal(model(x), F.linear(h, model.head.weight, model.head.bias))
