"""lnbench.nn.numpy_layernorm against hand computations and PyTorch (F.layer_norm + autograd)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lnbench.nn.numpy_layernorm import (
    GradientError,
    gradcheck,
    layer_norm_numpy,
    layernorm_backward,
    layernorm_forward,
    max_abs_error,
    numerical_gradient,
    relative_error,
)

EPS = 1e-5
ROW = np.array([-1.5, -0.5, 0.5, 1.5])  # x - mean for any 4 evenly spaced values 1 apart


def forward_backward(x, gamma, beta, grad_y, eps=EPS):
    y, cache = layernorm_forward(x, gamma, beta, eps)
    return (y, *layernorm_backward(grad_y, cache))


def torch_forward_backward(x, gamma, beta, grad_y, eps=EPS, dtype=torch.float64):
    """The oracle: F.layer_norm and autograd, in ``dtype``, returned as NumPy arrays."""
    x_t, gamma_t, beta_t = (torch.tensor(np.asarray(a), dtype=dtype, requires_grad=True) for a in (x, gamma, beta))
    y = F.layer_norm(x_t, (x_t.shape[-1],), gamma_t, beta_t, eps)
    grads = torch.autograd.grad(y, (x_t, gamma_t, beta_t), torch.tensor(np.asarray(grad_y), dtype=dtype))
    return tuple(t.detach().numpy() for t in (y, *grads))


def random_inputs(shape, seed=0, offset=100.0, scale=10.0):
    rng = np.random.default_rng(seed)
    D = shape[-1]
    x = offset + scale * rng.standard_normal(shape)
    return x, 1.0 + 0.5 * rng.standard_normal(D), rng.standard_normal(D), rng.standard_normal(shape)


# --- values computed by hand --------------------------------------------------------------------


def test_worked_example_forward():
    gamma, beta = np.full(4, 2.0), np.ones(4)
    y, _ = layernorm_forward(np.array([1.0, 2.0, 3.0, 4.0]), gamma, beta)
    # mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25
    np.testing.assert_allclose(y, 2.0 * ROW / np.sqrt(1.25 + EPS) + 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(y, [-1.68, 0.11, 1.89, 3.68], atol=0.01)


def test_worked_example_backward_two_tokens():
    x = np.array([[1.0, 2.0, 3.0, 4.0]] * 2)
    grad_y = np.array([[1.0, 0.0, 0.0, 0.0]] * 2)
    y, dx, dgamma, dbeta = forward_backward(x, np.full(4, 2.0), np.ones(4), grad_y)
    x_hat = ROW / np.sqrt(1.25 + EPS)
    np.testing.assert_array_equal(dbeta, [2.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(dgamma, [2 * x_hat[0], 0.0, 0.0, 0.0], rtol=1e-14, atol=0)
    assert dgamma[0] == pytest.approx(-2.68, abs=0.01)
    # g = gamma * dy = [2, 0, 0, 0]: mean(g) = 0.5, mean(g * x_hat) = x_hat[0] / 2
    rstd = 1 / np.sqrt(1.25 + EPS)
    expected_dx = rstd * (np.array([2.0, 0, 0, 0]) - 0.5 - x_hat * x_hat[0] / 2)
    np.testing.assert_allclose(dx, [expected_dx] * 2, rtol=1e-14, atol=1e-15)


def test_float32_cancellation():
    x = np.array([40000, 40001, 40002, 40003], dtype=np.float32)
    y, _ = layernorm_forward(x, np.ones(4, np.float32), np.zeros(4, np.float32))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, [-1.3416355, -0.4472118, 0.4472118, 1.3416355], rtol=0, atol=2e-7)


def test_constant_row_is_exactly_zero_and_dx_is_finite():
    grad_y = np.array([1.0, 2.0, 3.0, 4.0])
    y, dx, dgamma, dbeta = forward_backward(np.full(4, 1234.0), np.ones(4), np.zeros(4), grad_y)
    np.testing.assert_array_equal(y, np.zeros(4))
    assert np.all(np.isfinite(dx))
    np.testing.assert_allclose(dx, (grad_y - 2.5) / np.sqrt(EPS), rtol=1e-13)  # var = 0: rstd = 1/sqrt(eps)
    np.testing.assert_allclose(dx, [-474.34165, -158.11388, 158.11388, 474.34165], rtol=1e-7)
    np.testing.assert_array_equal(dgamma, np.zeros(4))
    np.testing.assert_array_equal(dbeta, grad_y)


def test_single_feature():
    x = np.array([[3.0], [-7.0]])
    y, dx, dgamma, dbeta = forward_backward(x, np.array([2.0]), np.array([0.5]), np.array([[1.0], [2.0]]))
    np.testing.assert_array_equal(y, [[0.5], [0.5]])  # x_hat = 0, so y = beta
    np.testing.assert_array_equal(dx, np.zeros((2, 1)))
    np.testing.assert_array_equal(dgamma, [0.0])
    np.testing.assert_array_equal(dbeta, [3.0])


def test_arange_three_axes():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    y, dx, dgamma, dbeta = forward_backward(x, np.ones(4), np.zeros(4), np.ones((2, 3, 4)))
    x_hat = ROW / np.sqrt(1.25 + EPS)
    np.testing.assert_allclose(y, np.broadcast_to(x_hat, (2, 3, 4)), rtol=0, atol=1e-15)
    np.testing.assert_allclose(x_hat, [-1.3416354, -0.4472118, 0.4472118, 1.3416354], atol=1e-7)
    np.testing.assert_allclose(dx, np.zeros((2, 3, 4)), rtol=0, atol=1e-15)
    assert dgamma.shape == (4,)
    np.testing.assert_allclose(dgamma, 6 * x_hat, rtol=1e-15)
    np.testing.assert_allclose(dgamma, [-8.0498125, -2.6832708, 2.6832708, 8.0498125], atol=1e-7)
    np.testing.assert_array_equal(dbeta, np.full(4, 6.0))


def test_empty_leading_axis_has_no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, dx, dgamma, dbeta = forward_backward(np.zeros((0, 4)), np.ones(4), np.zeros(4), np.zeros((0, 4)))
    assert y.shape == dx.shape == (0, 4)
    np.testing.assert_array_equal(dgamma, np.zeros(4))
    np.testing.assert_array_equal(dbeta, np.zeros(4))


def test_layer_norm_numpy_matches_paper_equations():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    gain, bias = np.array([1.0, 2.0, 0.5, -1.0]), np.array([0.0, 1.0, -1.0, 2.0])
    h = layer_norm_numpy(a, gain, bias)
    np.testing.assert_allclose(h, gain * ROW / np.sqrt(1.25 + EPS) + bias, rtol=1e-15)
    np.testing.assert_allclose(h, layernorm_forward(a, gain, bias)[0], rtol=1e-15)


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "gamma", "beta", "match"),
    [
        (np.zeros((3, 0)), np.ones(0), np.zeros(0), "D = 0"),
        (np.zeros((3, 4)), np.ones(5), np.zeros(4), r"gamma \(5,\)"),
        (np.zeros((3, 4)), np.ones(4), np.zeros((1, 4)), r"beta \(1, 4\)"),
        (np.float64(1.0), np.ones(1), np.zeros(1), "scalar"),
    ],
)
def test_forward_rejects_bad_shapes(x, gamma, beta, match):
    with pytest.raises(ValueError, match=match):
        layernorm_forward(x, gamma, beta)


def test_backward_rejects_grad_of_wrong_shape():
    _, cache = layernorm_forward(np.zeros((3, 4)), np.ones(4), np.zeros(4))
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(4, 3\)"):
        layernorm_backward(np.zeros((4, 3)), cache)


@pytest.mark.parametrize("a", [np.zeros((2, 4)), np.zeros(0)])
def test_layer_norm_numpy_rejects_non_vectors(a):
    with pytest.raises(ValueError, match="layer_norm_numpy"):
        layer_norm_numpy(a, np.ones(4), np.zeros(4))


# --- against PyTorch ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(16, 32), (4, 6, 8), (2, 3, 4, 5)])
def test_matches_torch_float64(shape):
    x, gamma, beta, grad_y = random_inputs(shape)
    expected = torch_forward_backward(x, gamma, beta, grad_y)
    for ours, theirs in zip(forward_backward(x, gamma, beta, grad_y), expected):
        assert ours.shape == theirs.shape and ours.dtype == np.float64
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "layout",
    [
        lambda a: a.T.copy().T,  # Fortran order
        lambda a: np.asfortranarray(a),
        lambda a: np.repeat(a, 2, axis=-1)[..., ::2],  # strided view
        lambda a: np.swapaxes(np.swapaxes(a, 0, 1).copy(), 0, 1),  # non-contiguous leading axes
    ],
    ids=["transposed-copy", "fortran", "strided", "swapped"],
)
def test_any_memory_layout(layout):
    x, gamma, beta, grad_y = random_inputs((3, 5, 8), seed=1)
    expected = torch_forward_backward(x, gamma, beta, grad_y)
    x_l, grad_y_l = layout(x), layout(grad_y)
    assert not x_l.flags.c_contiguous
    for ours, theirs in zip(forward_backward(x_l, gamma, beta, grad_y_l), expected):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_read_only_inputs_and_broadcast_grad_are_not_written():
    x, gamma, beta, _ = random_inputs((4, 6), seed=2)
    copies = [a.copy() for a in (x, gamma, beta)]
    for a in (x, gamma, beta):
        a.setflags(write=False)
    grad_y = np.broadcast_to(1.0, x.shape)  # zero strides, read-only
    ours = forward_backward(x, gamma, beta, grad_y)
    for a, b in zip(ours, torch_forward_backward(x, gamma, beta, np.ones(x.shape))):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    for a, c in zip((x, gamma, beta), copies):
        np.testing.assert_array_equal(a, c)


def test_inputs_are_not_mutated_and_backward_can_repeat():
    x, gamma, beta, grad_y = random_inputs((5, 7), seed=3)
    copies = [a.copy() for a in (x, gamma, beta, grad_y)]
    y, cache = layernorm_forward(x, gamma, beta)
    first = layernorm_backward(grad_y, cache)
    second = layernorm_backward(grad_y, cache)
    for a, c in zip((x, gamma, beta, grad_y), copies):
        np.testing.assert_array_equal(a, c)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    expected_dx = torch_forward_backward(x, gamma, beta, grad_y)[1]
    np.testing.assert_allclose(first[0], expected_dx, rtol=1e-10, atol=1e-10)


def test_float16_is_computed_in_float32_and_returned_as_float16():
    x, gamma, beta, grad_y = (a.astype(np.float16) for a in random_inputs((8, 16), seed=4))
    ours = forward_backward(x, gamma, beta, grad_y)
    reference = forward_backward(*(a.astype(np.float32) for a in (x, gamma, beta, grad_y)))
    for a, r in zip(ours, reference):
        assert a.dtype == np.float16
        # float16 has 11 significant bits: each value within half an ulp of the float32 result
        np.testing.assert_allclose(a, r, rtol=2**-11, atol=1e-6)


def test_float32_stays_float32():
    x, gamma, beta, grad_y = (a.astype(np.float32) for a in random_inputs((8, 16), seed=5))
    ours = forward_backward(x, gamma, beta, grad_y)
    assert all(a.dtype == np.float32 for a in ours)
    for a, b in zip(ours, torch_forward_backward(x, gamma, beta, grad_y)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_large_mean_small_variance_float64():
    x, gamma, beta, grad_y = random_inputs((32, 64), seed=6, offset=1e4, scale=1.0)
    for a, b in zip(forward_backward(x, gamma, beta, grad_y), torch_forward_backward(x, gamma, beta, grad_y)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("D", "offset"), [(256, 1e4), (2048, 1e3), (2048, 1e4), (8192, 1e3)])
def test_large_mean_float32_no_worse_than_torch(D, offset):
    inputs = random_inputs((32, D), seed=0, offset=offset, scale=1.0)
    x, gamma, beta, grad_y = (a.astype(np.float32) for a in inputs)
    exact = torch_forward_backward(x, gamma, beta, grad_y)  # float64 on the same float32 inputs
    theirs = torch_forward_backward(x, gamma, beta, grad_y, dtype=torch.float32)
    for ours, t, e in zip(forward_backward(x, gamma, beta, grad_y), theirs, exact):
        assert max_abs_error(ours, e) <= 1.5 * max_abs_error(t, e) + 1e-6


# --- finite differences -------------------------------------------------------------------------


def test_numerical_gradient_of_a_known_function():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    grad_out = np.array([[1.0, 2.0], [-1.0, 0.5]])
    grad = numerical_gradient(lambda v: v**3, x, grad_out, h=1e-5)
    np.testing.assert_allclose(grad, 3 * x**2 * grad_out, rtol=1e-9)


@pytest.mark.parametrize(
    ("shape", "offset", "scale"),
    [((3, 7), 3.0, 2.0), ((2, 3, 4), 0.0, 1.0), ((2, 5), 1e4, 0.5), ((4, 1), 1.0, 1.0)],
)
def test_gradcheck_passes(shape, offset, scale):
    x, gamma, beta, _ = random_inputs(shape, seed=7, offset=offset, scale=scale)
    errors = gradcheck(x, gamma, beta)
    assert set(errors) == {"dx", "dgamma", "dbeta"}
    for err in errors.values():
        assert isinstance(err, GradientError)
        assert err.rel_error < 1e-5 or err.max_abs_error < 1e-8


def test_relative_error_definition():
    a, n = np.array([1.0, -2.0, 0.0]), np.array([1.0, -2.5, 0.1])
    assert relative_error(a, n) == pytest.approx(0.5 / 4.5)  # max|a - n| / max(|a| + |n|)
    assert max_abs_error(a, n) == pytest.approx(0.5)
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0
    assert relative_error(np.zeros(0), np.zeros(0)) == 0.0
