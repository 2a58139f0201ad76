"""Inputs that are zero for whole timesteps: a norm of the all-zero state has a Jacobian of
gamma/sqrt(eps) (316 at eps = 1e-5), once per blank step of the backward through time. Training
stays finite (clipped, not zeroed) or diverges naming the gradient, on the kernel and the Python path."""

import math
import os

import pytest
import torch

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.fused import kernel_covers
from lnbench.nn.models import build_model
from lnbench.training.data import TaskData
from lnbench.training.gradients import LARGE_GRAD_NORM, clip_grad_norms, grad_norms
from lnbench.training.loop import train_model

T, D, H, N = 40, 4, 16, 16
PATHS = ["kernel", "python"] if os.environ.get("LNBENCH_KERNELS") != "0" else ["python"]
MODELS = [
    pytest.param("lstm", "layer", "joint", id="ln-lstm"),
    pytest.param("lstm", "batch", "joint", id="bn-lstm"),
    pytest.param("rnn", "layer", "joint", id="ln-rnn-joint"),
    pytest.param("rnn", "layer", "separate", id="ln-rnn-separate"),
]


def _blank_then_signal(blank: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``blank`` all-zero timesteps, then T - blank steps carrying the class (one prototype per class)."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (N,), generator=g)
    X = torch.zeros(N, T, D)
    X[:, blank:] = torch.randn(2, D, generator=g)[y][:, None, :] + 0.3 * torch.randn(N, T - blank, D, generator=g)
    return X, y


def _data(blank: int) -> TaskData:
    (X, y), (X_test, y_test) = _blank_then_signal(blank, 0), _blank_then_signal(blank, 1)
    return TaskData(X, y, X_test, y_test, torch.ones(N), torch.ones(N), 2)


def _model(family: str, norm: str, placement: str, path: str) -> torch.nn.Module:
    torch.manual_seed(0)
    model = build_model(ModelConfig(family=family, norm=norm, norm_placement=placement, hidden_size=H), D, T)
    model.use_kernel = path == "kernel"
    if path == "kernel" and not kernel_covers(model, torch.zeros(1, T, D)):
        pytest.skip("the recurrence kernel is not built")
    return model


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("clip", [None, 1.0])
@pytest.mark.parametrize("family, norm, placement", MODELS)
def test_thirty_blank_steps_diverge_naming_the_gradient_and_the_weights_stay_finite(
    family, norm, placement, clip, path
):
    """30 blank steps: the float32 backward through 30 Jacobians of ~316 (BN-LSTM: 31.6) is inf and
    NaN (oracle: plain autograd on the Python path). The run is ``diverged`` in epoch 1, step 1,
    with a reason naming a gradient, the norm's Jacobian and the recipe's way out (state noise), and no step was taken: every weight is
    still its initial value (with or without clipping, which cannot give a NaN gradient a direction)."""
    reference = _model(family, norm, placement, "python")
    X, y = _data(30).X_train, _data(30).y_train
    torch.nn.functional.cross_entropy(reference(X), y).backward()
    assert not all(bool(p.grad.isfinite().all()) for p in reference.parameters())

    model = _model(family, norm, placement, path)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    hist = train_model(model, _data(30), TrainConfig(epochs=2, batch_size=N, lr=1e-3, grad_clip=clip), seed=0)
    assert hist.status == "diverged" and hist.diverged_at_epoch == 1 and hist.epochs == []
    assert (
        hist.divergence_reason.startswith("the gradient of cell.")
        and "in step 1 of the epoch" in hist.divergence_reason
    )
    assert "a norm of an all-zero input has a Jacobian of gamma/sqrt(eps) (316 at gamma 1, eps 1e-05)" in (
        hist.divergence_reason
    )
    assert "model.state_noise_std 0.1 (h_0 not all zero) with train.grad_clip 1" in hist.divergence_reason
    for name, p in model.named_parameters():
        assert torch.equal(p, initial[name]), name


def _overflowing_gradient(path: str) -> torch.nn.Module:
    """The LN-LSTM after one backward on 5 blank steps: every gradient entry finite, the biases'
    norms ~3e19 (their float32 sums of squares overflow: 9e38 > 3.4e38)."""
    model = _model("lstm", "layer", "joint", path)
    data = _data(5)
    torch.nn.functional.cross_entropy(model(data.X_train), data.y_train).backward()
    assert all(bool(p.grad.isfinite().all()) for p in model.parameters())
    return model


@pytest.mark.parametrize("path", PATHS)
def test_gradient_norms_and_clipping_of_a_finite_gradient_beyond_float32_sums_match_float64(path):
    """Oracle: the norms and ``torch.nn.utils.clip_grad_norm_``'s arithmetic by hand in float64.
    Each tensor's L2 norm (above 1.8e19, where a float32 sum of squares is inf) is the float64 one
    to float32 rounding; clipping scales the gradient by grad_clip / total (total ~5e19), so the
    clipped gradient has global norm grad_clip and the float64 direction (not zeros, not NaN)."""
    model = _overflowing_gradient(path)
    params = list(model.named_parameters())
    expected = torch.stack([p.grad.double().norm() for _, p in params])
    norms = grad_norms(model, params, 1)  # (P, 1)
    assert float(expected.max()) > 1.8e19 and bool(norms.isfinite().all())
    torch.testing.assert_close(norms[:, 0].double(), expected, rtol=1e-6, atol=0)
    total = float(expected.norm())
    clipped = [(p.grad.double() * (0.5 / (total + 1e-6))).float() for _, p in params]
    clip_grad_norms(model, params, norms, 0.5, [True])
    for (name, p), want in zip(params, clipped):
        torch.testing.assert_close(p.grad, want, rtol=1e-6, atol=0, msg=name)
    global_norm = math.sqrt(sum(float(p.grad.double().square().sum()) for _, p in params))
    assert math.isclose(global_norm, 0.5, rel_tol=1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_a_clipped_step_on_an_overflowing_gradient_is_taken_not_zeroed_and_the_run_notes_it(path):
    """5 blank steps, one full-batch SGD step (no momentum) with grad_clip 1: the weights move by
    -lr x the gradient clipped in float64 (hand computation on the same model), the step is not
    zero; the run completes and its warnings name the gradient and its norm (~3e19 > 1e6)."""
    reference = _overflowing_gradient(path)
    grads = {n: p.grad.double() for n, p in reference.named_parameters()}
    total = math.sqrt(sum(float(g.square().sum()) for g in grads.values()))
    expected = {
        n: (p.detach().double() - 0.1 * grads[n] / (total + 1e-6)).float() for n, p in reference.named_parameters()
    }
    model = _model("lstm", "layer", "joint", path)
    cfg = TrainConfig(epochs=1, batch_size=N, optimizer="sgd", lr=0.1, momentum=0.0, grad_clip=1.0)
    hist = train_model(model, _data(5), cfg, seed=0)
    assert hist.status == "completed"
    moved = False
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), expected[name], rtol=1e-5, atol=1e-7, msg=name)
        moved |= not torch.equal(p.detach(), reference.get_parameter(name).detach())
    assert moved
    assert len(hist.warnings) == 1 and hist.warnings[0].startswith("the gradient of cell.")
    peak = max(float(g.norm()) for g in grads.values())
    assert f"reached an L2 norm of {peak:.3g} in epoch 1, step 1 (above {LARGE_GRAD_NORM:g})" in hist.warnings[0]
    assert hist.grad_norm["cell.bias"][0] == pytest.approx(float(grads["cell.bias"].norm()), rel=1e-6)


def test_ordinary_gradients_leave_no_warning():
    """No blank steps (the signal from t = 0): gradient norms stay far below 1e6, so no warning."""
    hist = train_model(
        _model("lstm", "layer", "joint", "python"), _data(0), TrainConfig(epochs=1, batch_size=8), seed=0
    )
    assert hist.status == "completed" and hist.warnings == []
    assert max(v[0] for v in hist.grad_norm.values()) < 10.0


@pytest.mark.parametrize(
    "optimizer, clip, says",
    [
        ("adam", None, "without train.grad_clip (which bounds it), Adam keeps the step near lr, but the gradient's "
         "square enters its second moment"),
        ("rmsprop", None, "without train.grad_clip (which bounds it), RMSprop keeps the step near lr"),
        ("sgd", None, "without train.grad_clip (which bounds it), SGD takes such a step in full"),
        ("adam", 1.0, "train.grad_clip rescaled the step's gradients to an L2 norm of at most 1 before "
         "train.optimizer adam took the step"),
    ],
)  # fmt: skip
def test_the_large_gradient_note_names_the_runs_optimizer_and_its_clipping(optimizer, clip, says):
    """5 blank steps (gradient norms ~3e19): one epoch of one full batch with ``train.optimizer`` and
    ``train.grad_clip`` as given notes the gradient with what that optimizer does with it (the texts of
    :data:`lnbench.training.gradients.LARGE_STEP`); an Adam or RMSprop run's note never speaks of SGD."""
    model = _model("lstm", "layer", "joint", "python")
    cfg = TrainConfig(epochs=1, batch_size=N, optimizer=optimizer, lr=1e-3, grad_clip=clip)
    hist = train_model(model, _data(5), cfg, seed=0)
    assert len(hist.warnings) == 1 and says in hist.warnings[0], hist.warnings
    assert optimizer == "sgd" or "SGD" not in hist.warnings[0]
