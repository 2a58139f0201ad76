"""The synthetic trend data: shapes, dtypes, determinism and the formula itself."""

import numpy as np
import pytest
import torch

from lnbench.training.tasks.trend import make_trend_data


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


# ---------------------------------------------------------------- the documented distribution
# Each property of the module docstring, at fixed seeds, against its distribution: a Kolmogorov-Smirnov
# test (p > 0.01; deterministic at a fixed seed) or a moment within 4 standard errors.


def _only(seed=0, n=4000, **kw):
    """A training split of n sequences with everything off (no trend, noise, offset, scaling) unless given."""
    args = dict(n_train=n, n_test=2, seq_len=4, features=8, trend_strength=0.0, noise_std=0.0, offset_std=0.0)
    args.update(scale_min=1.0, scale_max=1.0, seed=seed)
    args.update(kw)
    return make_trend_data(**args)


def test_the_scale_is_log_uniform_per_sample_and_recorded():
    from scipy import stats

    d = _only(noise_std=1.0, scale_min=0.25, scale_max=4.0)
    s = d.s_train.double().numpy()
    assert s.shape == (4000,) and d.s_train.dtype == torch.float32
    assert 0.25 <= s.min() and s.max() <= 4.0
    log_s = (np.log(s) - np.log(0.25)) / (np.log(4.0) - np.log(0.25))  # uniform on [0, 1] if log-uniform
    assert stats.kstest(log_s, "uniform").pvalue > 0.01
    assert stats.kstest((s - 0.25) / 3.75, "uniform").pvalue < 1e-6  # and not uniform in s itself
    # the recorded s is the factor the whole sequence was multiplied by: X / s is the unscaled noise, N(0, 1)
    z = (d.X_train.double() / d.s_train.double()[:, None, None]).numpy().ravel()
    assert stats.kstest(z, "norm").pvalue > 0.01
    assert _only(scale_min=2.0, scale_max=2.0).s_train.unique().tolist() == [2.0]  # equal bounds: no spread


def test_the_offset_is_constant_over_time_normal_per_sample_and_scaled():
    from scipy import stats

    d = _only(offset_std=4.0, scale_min=0.5, scale_max=8.0, seed=1)
    u = d.X_train.double() / d.s_train.double()[:, None, None]  # (N, T, H): s * offset / s
    torch.testing.assert_close(u, u[:, :1].expand_as(u), rtol=1e-6, atol=0)  # one offset per sample, all t
    assert stats.kstest(u[:, 0].numpy().ravel() / 4.0, "norm").pvalue > 0.01  # N(0, 4^2) per feature
    # independent across samples and features: the offsets of two features are uncorrelated
    r = np.corrcoef(u[:, 0, 0].numpy(), u[:, 0, 1].numpy())[0, 1]
    assert abs(r) < 4 / np.sqrt(4000)


def test_the_noise_is_white_with_its_standard_deviation():
    from scipy import stats

    d = _only(noise_std=0.3, seed=2)
    e = d.X_train.double().numpy() / 0.3  # (N, T, H) eps
    assert stats.kstest(e.ravel(), "norm").pvalue > 0.01
    r = np.corrcoef(e[:, 0].ravel(), e[:, 1].ravel())[0, 1]  # independent over time
    assert abs(r) < 4 / np.sqrt(e[:, 0].size)


def test_the_trend_is_linear_in_time_opposite_per_class_and_along_one_direction_per_seed():
    d = _only(trend_strength=2.0, seq_len=5, n=50, scale_min=0.5, scale_max=2.0, seed=3)
    u = d.X_train.double() / d.s_train.double()[:, None, None]  # c * 2 * tau_t * dir
    tau = torch.linspace(-0.5, 0.5, 5, dtype=torch.float64)
    sign = (2 * d.y_train - 1).double()
    direction = u[0, -1] / (sign[0] * 2.0 * 0.5)  # from x_T of sample 0
    torch.testing.assert_close(direction.square().mean(), torch.tensor(1.0, dtype=torch.float64))  # RMS 1
    expected = sign[:, None, None] * 2.0 * tau[None, :, None] * direction
    torch.testing.assert_close(u, expected, atol=1e-5, rtol=1e-5)
    # class 1 goes along the direction, class 0 against it: (x_T - x_1) . dir = +-2 * H per unit scale
    drift = (u[:, -1] - u[:, 0]) @ direction
    torch.testing.assert_close(drift, sign * 2.0 * 8, atol=1e-4, rtol=1e-5)
    # the test split shares the direction; another seed draws another
    test = make_trend_data(
        n_train=2, n_test=50, seq_len=5, features=8, trend_strength=2.0, noise_std=0.0, offset_std=0.0, seed=3
    )
    v = test.X_test.double() / test.s_test.double()[:, None, None]
    assert torch.allclose(v[:, -1] - v[:, 0], (2 * test.y_test - 1).double()[:, None] * 2.0 * direction, atol=1e-5)
    other = _only(trend_strength=2.0, seq_len=5, n=2, seed=4)
    w = other.X_train.double()[0, -1] / (other.y_train[0] * 2 - 1) / other.s_train[0]
    assert not torch.allclose(w.abs(), direction.abs(), atol=1e-3)


def test_the_classes_are_balanced_to_within_one_and_shuffled():
    for n in (1, 2, 7, 8, 501):
        y = make_trend_data(n_train=n, n_test=n, seq_len=2, features=1, seed=n)
        for labels in (y.y_train, y.y_test):
            ones = int(labels.sum())
            assert ones in (n // 2, n - n // 2) and len(labels) == n and set(labels.tolist()) <= {0, 1}
    y = make_trend_data(n_train=200, n_test=2, seq_len=2, features=1).y_train
    assert int(y.sum()) == 100 and not torch.equal(y, torch.arange(200) % 2)  # not in a fixed order
    runs = int((y[1:] != y[:-1]).sum()) + 1  # runs of equal labels: ~101 +- 7 when shuffled
    assert 70 < runs < 130


def test_the_data_follows_the_formula_draw_by_draw():
    """The data of a seed stays the same across versions (recorded runs stay reproducible): the
    documented formula with NumPy's default_rng(seed) drawn in the generator's order."""
    n_train, n_test, T, H = 5, 3, 4, 3
    kw = dict(trend_strength=1.5, noise_std=0.2, offset_std=2.0, scale_min=0.5, scale_max=4.0)
    got = make_trend_data(n_train=n_train, n_test=n_test, seq_len=T, features=H, seed=11, **kw)
    rng = np.random.default_rng(11)
    direction = rng.standard_normal(H)
    direction *= np.sqrt(H) / np.linalg.norm(direction)
    tau = np.linspace(-0.5, 0.5, T)
    for n, X, y, s in ((n_train, got.X_train, got.y_train, got.s_train), (n_test, got.X_test, got.y_test, got.s_test)):
        labels = rng.permutation(np.arange(n) % 2)
        offset = 2.0 * rng.standard_normal((n, 1, H))
        noise = 0.2 * rng.standard_normal((n, T, H))
        scale = np.exp(rng.uniform(np.log(0.5), np.log(4.0), size=(n, 1, 1)))
        c = (2.0 * labels - 1.0)[:, None, None]
        expected = scale * (offset + c * 1.5 * tau[None, :, None] * direction + noise)
        assert y.tolist() == labels.tolist()
        np.testing.assert_allclose(X.numpy(), expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(s.numpy(), scale.ravel(), rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"n_test": 0}, "n_train, n_test, seq_len and features must all be >= 1"),
        ({"features": 0}, "n_train, n_test, seq_len and features must all be >= 1"),
        ({"seq_len": 0}, "n_train, n_test, seq_len and features must all be >= 1"),  # not the seq_len >= 2 message
        ({"seq_len": 1}, "seq_len must be >= 2: a trend needs two timesteps"),
        ({"offset_std": -0.1}, "noise_std and offset_std must be >= 0"),
        ({"scale_min": 0.0}, "need 0 < scale_min <= scale_max"),
    ],
)
def test_bad_arguments_say_which(kwargs, message):
    with pytest.raises(ValueError) as err:
        make_trend_data(**kwargs)
    assert str(err.value) == message


def test_the_properties_and_the_edge_values_allowed():
    d = make_trend_data(
        n_train=1, n_test=1, seq_len=2, features=1, noise_std=0.0, offset_std=0.0, scale_min=3.0, scale_max=3.0
    )
    assert (d.input_size, d.seq_len) == (1, 2) and d.s_train.tolist() == [3.0]
    # zero noise and zero offset are allowed, and the trend then is all there is
    assert d.X_train[0, 0, 0] == -d.X_train[0, 1, 0]


def test_the_default_seed_is_0():
    a, b = make_trend_data(n_train=4, n_test=2), make_trend_data(n_train=4, n_test=2, seed=0)
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.X_test, b.X_test) and torch.equal(a.s_test, b.s_test)
    assert not torch.equal(a.X_train, make_trend_data(n_train=4, n_test=2, seed=1).X_train)
