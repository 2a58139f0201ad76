"""The norms together: lnbench.nn.registry's build_norm, their reprs and half-precision inputs
(each norm against torch: test_layernorm.py, test_batchnorm.py)."""

import pytest
import torch
from torch import nn

from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.registry import build_norm


def test_build_norm_kinds_and_error():
    assert isinstance(build_norm("none", 4), nn.Identity)
    assert isinstance(build_norm("batch", 4), BatchNorm1d)
    assert isinstance(build_norm("layer", 4), LayerNorm)
    with pytest.raises(ValueError, match="allowed: none, batch, layer"):
        build_norm("instance", 4)


def test_repr_shows_hyperparameters():
    assert repr(LayerNorm(8)) == "LayerNorm(8, eps=1e-05)"
    assert repr(BatchNorm1d(8, momentum=0.2)) == "BatchNorm1d(8, eps=1e-05, momentum=0.2)"


# ---- empty batches, half precision, one feature: as PyTorch's own norms take them ---------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_are_normalized_in_float32_and_keep_their_dtype(dtype):
    from lnbench.nn.batchnorm import BatchNorm1d as _BN
    from lnbench.nn.layernorm import LayerNorm as _LN

    x = torch.tensor([[0.0, 600.0]], dtype=dtype)  # 300^2 overflows float16
    assert _LN(2)(x).tolist() == [[-1.0, 1.0]]
    x = torch.tensor([[0.0, 600.0, 150.0]], dtype=dtype, requires_grad=True)
    w = torch.tensor([1.0, 3.0, -2.0], dtype=dtype)
    for ours in (_LN(3), _LN(3).to(dtype)):
        ref = torch.nn.LayerNorm(3).to(ours.gamma.dtype)
        y = ours(x)
        assert y.dtype == dtype
        torch.testing.assert_close(y, ref(x))
        (g_ours,) = torch.autograd.grad((y * w).sum(), x)
        (g_ref,) = torch.autograd.grad((ref(x) * w).sum(), x)
        assert g_ours.dtype == dtype
        torch.testing.assert_close(g_ours, g_ref)
    xb = torch.tensor([[0.0], [600.0]], dtype=dtype)
    bn, ref_bn = _BN(1), torch.nn.BatchNorm1d(1)
    y = bn(xb)
    assert y.dtype == dtype
    torch.testing.assert_close(y, ref_bn(xb))
    torch.testing.assert_close(bn.running_var, ref_bn.running_var)
    bn.eval(), ref_bn.eval()
    assert bn(xb).dtype == dtype
    torch.testing.assert_close(bn(xb), ref_bn(xb))
