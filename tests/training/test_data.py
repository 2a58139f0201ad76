"""The synthetic trend data: shapes, dtypes, determinism and the formula itself."""

import pytest
import torch

from lnbench.training.data import make_trend_data


def test_default_shapes_and_dtypes():
    d = make_trend_data()
    assert d.X_train.shape == (1000, 20, 64) and d.X_train.dtype == torch.float32
    assert d.y_train.shape == (1000,) and d.y_train.dtype == torch.int64
    assert d.X_test.shape == (200, 20, 64) and d.y_test.shape == (200,)
    assert d.y_train.sum().item() == 500 and set(d.y_train.tolist()) == {0, 1}


def test_deterministic_per_seed():
    a, b, c = (
        make_trend_data(n_train=50, n_test=10, seed=3),
        make_trend_data(n_train=50, n_test=10, seed=3),
        make_trend_data(n_train=50, n_test=10, seed=4),
    )
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.y_test, b.y_test)
    assert not torch.equal(a.X_train, c.X_train)


def test_noiseless_data_is_exactly_the_trend():
    """No noise, no offset, no scaling: x_t = c * s * tau_t * d with |d|^2 = H."""
    d = make_trend_data(
        n_train=6,
        n_test=2,
        seq_len=5,
        features=8,
        trend_strength=2.0,
        noise_std=0.0,
        offset_std=0.0,
        scale_min=1.0,
        scale_max=1.0,
    )
    X, y = d.X_train.double(), d.y_train
    tau = torch.linspace(-0.5, 0.5, 5, dtype=torch.float64)
    direction = X[0] / (tau[:, None] * 2.0 * (2 * y[0] - 1))  # recover d from sample 0
    direction = direction[0]
    torch.testing.assert_close(direction.square().sum(), torch.tensor(8.0, dtype=torch.float64), atol=1e-5, rtol=0)
    sign = (2 * y - 1).double()
    expected = sign[:, None, None] * 2.0 * tau[None, :, None] * direction
    torch.testing.assert_close(X, expected, atol=1e-5, rtol=0)


def test_class_means_drift_in_opposite_directions_by_the_trend_strength():
    """Mean of x_T - x_1 over class 1 is +trend * d, over class 0 it is -trend * d (|d| = sqrt(H))."""
    d = make_trend_data(
        n_train=2000, n_test=2, trend_strength=0.5, offset_std=0.0, scale_min=1.0, scale_max=1.0, seed=1
    )
    delta = d.X_train[:, -1] - d.X_train[:, 0]  # (N, H)
    up, down = delta[d.y_train == 1].mean(0), delta[d.y_train == 0].mean(0)
    assert abs(up.norm().item() - 0.5 * 8) < 0.4  # noise on the mean: ~sqrt(2 * 64 / 1000) = 0.36
    assert torch.nn.functional.cosine_similarity(up, -down, dim=0) > 0.95


def test_per_sample_scale_spreads_magnitudes():
    d = make_trend_data(n_train=500, n_test=2, scale_min=0.25, scale_max=4.0)
    rms = d.X_train.square().mean(dim=(1, 2)).sqrt()
    assert rms.max() / rms.min() > 8  # a 16x range of scales


@pytest.mark.parametrize(
    "kwargs", [{"seq_len": 1}, {"n_train": 0}, {"noise_std": -1.0}, {"scale_min": 2.0, "scale_max": 1.0}]
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        make_trend_data(**kwargs)
