"""The training loop: determinism, probes against hand computation, divergence."""

import math

import pytest
import torch
from torch.nn import functional as F
from torch.optim.optimizer import register_optimizer_step_post_hook

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.models import build_model
from lnbench.training.loop import layer_names, train_model
from lnbench.training.tasks.trend import make_trend_data

DATA = make_trend_data(n_train=64, n_test=32, seq_len=6, features=8, seed=0)


def _model(norm="layer", family="rnn", seed=0):
    torch.manual_seed(seed)
    return build_model(ModelConfig(family=family, norm=norm, hidden_size=8, d_ff=16), DATA.input_size, DATA.seq_len)


def test_same_seed_same_metrics():
    cfg = TrainConfig(epochs=2, batch_size=16)
    a = train_model(_model("batch"), DATA, cfg, seed=1).to_dict()
    b = train_model(_model("batch"), DATA, cfg, seed=1).to_dict()
    a.pop("epoch_seconds"), b.pop("epoch_seconds")
    assert a == b and a["status"] == "completed" and len(a["test_acc_batch_stats"]) == 2


def test_full_batch_probes_match_a_hand_computation():
    """One epoch, one full-batch step: grad_norm is the gradient norm of the initial model,
    hidden_norm_init the mean ||h_t|| of the initial model over the test set."""
    reference = _model("layer")
    logits, hidden = reference(DATA.X_test, return_hidden=True)
    expected_hidden = hidden.norm(dim=-1).mean(0)
    loss = F.cross_entropy(reference(DATA.X_train), DATA.y_train)
    loss.backward()
    hist = train_model(_model("layer"), DATA, TrainConfig(epochs=1, batch_size=64), seed=0)
    for name, p in reference.named_parameters():
        assert math.isclose(hist.grad_norm[name][0], p.grad.norm().item(), rel_tol=1e-4), name
    assert math.isclose(hist.train_loss[0], loss.item(), rel_tol=1e-6)
    torch.testing.assert_close(torch.tensor(hist.hidden_norm_init), expected_hidden)
    W = hist.grad_norm_layer
    assert set(W) == {"cell.W_hh", "cell.W_xh", "cell.norm", "head"}
    expected_head = math.hypot(reference.head.weight.grad.norm().item(), reference.head.bias.grad.norm().item())
    assert math.isclose(W["head"][0], expected_head, rel_tol=1e-4)
    assert hist.test_acc_batch_stats is None and len(hist.hidden_norm[0]) == DATA.seq_len


def test_transformer_layers():
    names = set(layer_names(_model("layer", "transformer")).values())
    assert names == {
        "input_proj",
        "input_norm",
        "blocks.0.norm_1",
        "blocks.0.attn.qkv",
        "blocks.0.attn.proj",
        "blocks.0.norm_2",
        "blocks.0.mlp.0",
        "blocks.0.mlp.2",
        "norm_f",
        "head",
    }


def test_nan_loss_stops_and_is_marked_diverged():
    bad = make_trend_data(n_train=64, n_test=32, seq_len=6, features=8, seed=0)
    bad.X_train[5, 2, 3] = float("nan")
    hist = train_model(_model("none"), bad, TrainConfig(epochs=3, batch_size=64), seed=0)
    assert hist.status == "diverged" and hist.diverged_at_epoch == 1 and hist.epochs == []


def test_learns_the_task():
    """Oracle: the task is learnable; a LayerNorm RNN beats chance clearly in a few epochs."""
    data = make_trend_data(n_train=400, n_test=200, seq_len=10, features=16, trend_strength=2.0, seed=0)
    torch.manual_seed(0)
    model = build_model(ModelConfig(norm="layer", hidden_size=16), data.input_size, data.seq_len)
    hist = train_model(model, data, TrainConfig(epochs=5, batch_size=32, lr=3e-3), seed=0)
    assert hist.test_acc[-1] > 0.8 and hist.train_loss[-1] < hist.train_loss[0]


def test_evaluate_runs_in_eval_mode_and_leaves_batchnorm_alone():
    """The recorded test accuracy is the eval-mode one (running statistics), and probing the
    test set (lnbench.training.probes.probe_members, what training calls) does not move the running statistics."""
    from lnbench.training.probes import probe_members

    model = _model("batch")
    hist = train_model(model, DATA, TrainConfig(epochs=2, batch_size=16), seed=0)
    buffers = [b.clone() for b in model.buffers()]
    model.train()  # the probes must switch to eval themselves
    (p,) = probe_members(model, DATA.X_test.unsqueeze(0), DATA.y_test.unsqueeze(0), DATA.s_test.unsqueeze(0))
    acc, correct = p.acc, p.correct
    assert all(torch.equal(a, b) for a, b in zip(buffers, model.buffers()))
    model.eval()
    expected = (model(DATA.X_test).argmax(-1) == DATA.y_test).tolist()
    assert correct == [int(c) for c in expected] and acc == sum(expected) / len(expected)
    assert hist.test_acc[-1] == acc and hist.test_correct == correct and len(correct) == len(DATA.y_test)


def test_training_matches_a_hand_written_adam_loop_with_clipping():
    """Oracle: the same batch order, Adam, cross-entropy and clip_grad_norm_ written out by hand."""
    cfg = TrainConfig(epochs=2, batch_size=16, lr=1e-2, grad_clip=0.05)
    ours = _model("layer")
    train_model(ours, DATA, cfg, seed=3)
    ref = _model("layer")
    opt = torch.optim.Adam(ref.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(3)
    for _ in range(cfg.epochs):
        ref.train()
        perm = torch.randperm(len(DATA.X_train), generator=gen)
        for i in range(0, len(perm), cfg.batch_size):
            idx = perm[i : i + cfg.batch_size]
            opt.zero_grad()
            F.cross_entropy(ref(DATA.X_train[idx]), DATA.y_train[idx]).backward()
            torch.nn.utils.clip_grad_norm_(ref.parameters(), cfg.grad_clip)
            opt.step()
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, msg=name)


def test_weights_turning_nan_at_the_end_of_an_epoch_is_divergence_and_that_epoch_is_not_evaluated():
    model = _model("none")

    def poison(opt, args, kwargs):  # finite loss and gradient, NaN weights after the step
        with torch.no_grad():
            model.head.weight.fill_(float("nan"))

    handle = register_optimizer_step_post_hook(poison)
    try:
        hist = train_model(model, DATA, TrainConfig(epochs=3, batch_size=64), seed=0)
    finally:
        handle.remove()
    assert hist.status == "diverged" and hist.diverged_at_epoch == 1 and "weights" in hist.divergence_reason
    assert hist.epochs == [] and hist.test_acc == [] and hist.test_correct is None


def test_a_nan_gradient_is_divergence_named_by_its_tensor_before_any_step():
    """A NaN gradient of one tensor (finite loss): diverged in epoch 1, step 1, the reason names
    that tensor, and no step was taken (the weights are their initial values, all finite)."""
    model = _model("none")
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    model.head.weight.register_hook(lambda g: g * float("nan"))
    hist = train_model(model, DATA, TrainConfig(epochs=3, batch_size=64), seed=0)
    assert hist.status == "diverged" and hist.diverged_at_epoch == 1 and hist.epochs == []
    assert hist.divergence_reason == "the gradient of head.weight became NaN in step 1 of the epoch"
    assert all(torch.equal(p, initial[n]) for n, p in model.named_parameters())


class _Steep(torch.nn.Module):
    """Logits ``(w z, -w z)`` with ``z = scale x mean_t(x_t[0])``, w = 0: the loss is ln 2 and dL/dw is
    ``scale`` times its value at scale 1."""

    def __init__(self, scale: float):
        super().__init__()
        self.w, self.scale = torch.nn.Parameter(torch.tensor(0.0)), scale

    def forward(self, x, return_hidden=False):
        z = self.w * self.scale * x[:, :, 0].mean(1, keepdim=True)  # (B, 1)
        logits = torch.cat([z, -z], dim=1)
        return (logits, x) if return_hidden else logits


def test_an_optimizer_state_that_overflows_is_divergence():
    """Adam on one finite gradient of 1e21 (the whole training set in one step, scaled by hand from
    the gradient at scale 1): torch's float32 (1 - beta2) g^2 is inf above ~5.8e20, so the second
    moment is inf and w's step is 0 now and ever after (m / sqrt(inf)), while w, the loss and the
    gradient stay finite. The run is diverged naming the optimizer's state, not completed with a
    frozen weight."""
    probe = _Steep(1.0)
    F.cross_entropy(probe(DATA.X_train), DATA.y_train).backward()
    model = _Steep(1e21 / abs(probe.w.grad.item()))
    hist = train_model(model, DATA, TrainConfig(epochs=2, batch_size=64), seed=0)
    assert model.w.item() == 0.0 and hist.status == "diverged" and hist.diverged_at_epoch == 1
    assert hist.divergence_reason.startswith("the state of the optimizer (adam) became NaN or inf")


class _Exploding(torch.nn.Module):
    """Finite but enormous logits: confidently wrong on half the examples."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(1e4))

    def forward(self, x, return_hidden=False):
        z = self.w * x[:, :, 0].mean(1, keepdim=True)  # (B, 1)
        logits = torch.cat([z, -z], dim=1)
        return (logits, x) if return_hidden else logits


def test_a_finite_loss_far_above_chance_is_divergence():
    hist = train_model(_Exploding(), DATA, TrainConfig(epochs=2, batch_size=64, lr=1e-9), seed=0)
    assert hist.train_loss == [] and hist.status == "diverged" and hist.diverged_at_epoch == 1
    assert hist.divergence_reason.startswith("train loss") and "exceeds 100 x ln 2" in hist.divergence_reason


def test_batchnorm_initial_hidden_norm_uses_batch_statistics():
    """At initialisation eval-mode BatchNorm (running stats 0 and 1) is the identity; the probe
    must instead show the network as it trains, and must not move the running statistics."""
    from lnbench.nn.batchnorm import batch_statistics

    model = _model("batch")
    with torch.no_grad(), batch_statistics(model):
        model.eval()
        h = torch.cat([model(DATA.X_test[i : i + 16], return_hidden=True)[1] for i in range(0, 32, 16)])
    expected = h.norm(dim=-1).mean(0)
    model.eval()
    as_identity = model(DATA.X_test, return_hidden=True)[1].norm(dim=-1).mean(0)
    hist = train_model(_model("batch"), DATA, TrainConfig(epochs=1, batch_size=16), seed=0)
    torch.testing.assert_close(torch.tensor(hist.hidden_norm_init), expected)
    assert not torch.allclose(expected, as_identity)


class _ConstantLogits(torch.nn.Module):
    """Logits (a, -a) for every example: cross-entropy softplus(-2a) on class 0 and softplus(2a)
    on class 1, so about a nats on balanced classes."""

    def __init__(self, a: float):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(a))

    def forward(self, x, return_hidden=False):
        logits = torch.stack([self.a, -self.a]).expand(x.shape[0], 2)
        return (logits, x) if return_hidden else logits


@pytest.mark.parametrize("a", [60.0, 80.0])
def test_the_exploded_loss_limit_is_100_ln_c(a):
    """A finite epoch loss diverges exactly above EXPLODED_LOSS_FACTOR x ln C (69.3 nats for C = 2).
    Oracle: the loss by hand, class 1's share of softplus(2a) plus class 0's of softplus(-2a)."""
    share = float(DATA.y_train.float().mean())
    expected = share * F.softplus(torch.tensor(2 * a)).item() + (1 - share) * F.softplus(torch.tensor(-2 * a)).item()
    hist = train_model(_ConstantLogits(a), DATA, TrainConfig(epochs=1, batch_size=64, lr=1e-12), seed=0)
    if expected > 100 * math.log(2):
        assert hist.status == "diverged" and hist.divergence_reason == (
            f"train loss {expected:.3g} nats exceeds 100 x ln 2"
        )
    else:
        assert hist.status == "completed" and hist.train_loss[0] == pytest.approx(expected, rel=1e-3)
