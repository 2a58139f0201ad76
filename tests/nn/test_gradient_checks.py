"""lnbench.nn.gradient_checks.run_checks: passes on the real code, fails on deliberately broken code."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lnbench.nn import gradient_checks as suite
from lnbench.nn import layernorm, numpy_layernorm
from lnbench.nn.gradient_checks import Check, run_checks

GROUPS = {"finite-diff", "vs-torch", "autograd", "edge-cases"}


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {f"{c.group}/{c.name}": c for c in checks}


def test_default_run_passes():
    checks = run_checks()
    failed = [c for c in checks if not c.passed]
    assert not failed, failed
    assert {c.group for c in checks} == GROUPS
    named = by_name(checks)
    for grad in ("dx", "dgamma", "dbeta"):
        for shape in ((4, 5, 8), (3, 7), (2, 3, 4, 5)):
            check = named[f"finite-diff/{grad} {shape}"]
            assert check.tolerance == 1e-5
            assert check.rel_error < 1e-5
    for name in ("y", "dx", "dgamma", "dbeta"):
        assert named[f"vs-torch/{name}"].rel_error < 1e-10
    for module in ("LayerNorm", "BatchNorm1d", "GroupNorm"):
        assert named[f"autograd/{module} gradcheck"].passed
    assert named["autograd/LayerNorm vs F.layer_norm"].rel_error < 1e-10
    assert named["autograd/GroupNorm vs F.group_norm(2 groups)"].rel_error < 1e-10  # D = 8: two groups of 4
    assert len([c for c in checks if c.group == "edge-cases"]) == 6


def test_check_to_dict_round_trips():
    check = run_checks()[0]
    d = check.to_dict()
    assert set(d) == {"name", "group", "max_abs_error", "rel_error", "tolerance", "passed", "detail"}
    assert Check(**d) == check


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_lower_precision_dtypes_pass(dtype):
    checks = run_checks(dtype=dtype)
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    named = by_name(checks)
    tolerance = {"float32": 1e-5, "float16": 1e-3}[dtype]
    for name in ("y", "dx", "dgamma", "dbeta"):  # against torch float64 on the same rounded inputs
        assert named[f"vs-torch/{name} vs float64"].rel_error <= tolerance


def test_large_shape_checks_a_subsample_with_finite_differences():
    checks = run_checks(shape=(64, 128))
    assert all(c.passed for c in checks)
    dx = by_name(checks)["finite-diff/dx (64, 128)"]
    assert "first 32 of 64 rows" in dx.detail


def test_broken_backward_fails(monkeypatch):
    def broken_backward(grad_y, cache):
        dx, dgamma, dbeta = real_backward(grad_y, cache)
        return dx * 1.01, dgamma, dbeta  # a 1% error in dx only

    real_backward = numpy_layernorm.layernorm_backward
    monkeypatch.setattr(numpy_layernorm, "layernorm_backward", broken_backward)
    monkeypatch.setattr(suite, "layernorm_backward", broken_backward)
    named = by_name(run_checks())
    for shape in ((4, 5, 8), (3, 7), (2, 3, 4, 5)):
        assert not named[f"finite-diff/dx {shape}"].passed
        assert named[f"finite-diff/dx {shape}"].rel_error == pytest.approx(0.01 / 2.01, rel=1e-3)
        assert named[f"finite-diff/dgamma {shape}"].passed
    assert not named["vs-torch/dx"].passed
    assert named["vs-torch/dgamma"].passed


def test_broken_torch_layernorm_fails(monkeypatch):
    def unbiased_forward(self, x):
        var = x.var(dim=-1, keepdim=True, unbiased=True)  # wrong: the paper's variance is biased
        return (x - x.mean(dim=-1, keepdim=True)) * torch.rsqrt(var + self.eps) * self.gamma + self.beta

    monkeypatch.setattr(layernorm.LayerNorm, "forward", unbiased_forward)
    named = by_name(run_checks())
    assert named["autograd/LayerNorm gradcheck"].passed  # its gradients are right for what it computes
    assert not named["autograd/LayerNorm vs F.layer_norm"].passed  # but it computes the wrong thing
    assert named["autograd/BatchNorm1d vs F.batch_norm(training=True)"].passed


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dtype": "float128"}, "dtype: 'float128' is not supported; choose one of float16, float32"),
        ({"dtype": "bfloat16"}, "dtype"),
        ({"shape": ()}, "shape: expected a sequence"),
        ({"shape": "4,5"}, "shape: expected a sequence"),
        ({"shape": (4, 0)}, "shape: every axis must be an int >= 1"),
        ({"shape": (4, 2.5)}, "shape: every axis must be an int >= 1"),
        ({"shape": (2, 8192)}, "D = 8192"),
        ({"shape": (1 << 13, 1 << 12)}, "at most 16777216"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_checks(**kwargs)


def test_numpy_dtype_objects_are_accepted():
    checks = run_checks(dtype=np.dtype("float32"), shape=[3, 4])
    assert all(c.passed for c in checks)
