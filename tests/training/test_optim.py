"""Optimizers and learning-rate schedules from the config.

Oracles: torch's own optimizers and schedulers built by hand on the same tiny model, a hand
computation of one SGD step with Nesterov momentum and weight decay, the schedules' formulas by
hand, and a seed's run alone (each member of an ensemble takes the same steps, bit for bit).
"""

from __future__ import annotations

import math

import pytest
import torch

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.models import SimpleRNN, build_model
from lnbench.training.loop import train_members, train_model
from lnbench.training.optim import build_optimizer, build_scheduler
from lnbench.training.tasks.trend import make_trend_data

OPTIMIZERS = {
    "adam-decay": (
        dict(optimizer="adam", weight_decay=1e-2),
        lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=1e-2),
    ),
    "adamw": (dict(optimizer="adamw", weight_decay=0.1), lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
    "sgd-nesterov": (
        dict(optimizer="sgd", momentum=0.9, nesterov=True, weight_decay=1e-3),
        lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-3),
    ),
    "sgd-plain": (dict(optimizer="sgd"), lambda p: torch.optim.SGD(p, lr=0.01)),
    "rmsprop": (
        dict(optimizer="rmsprop", momentum=0.5, weight_decay=1e-3),
        lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, weight_decay=1e-3),
    ),
}
SCHEDULES = {
    "constant": (dict(), lambda o: None),
    "cosine": (dict(lr_schedule="cosine"), lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=6)),
    "step": (
        dict(lr_schedule="step", lr_step_epochs=2, lr_gamma=0.5),
        lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    ),
    "warmup_cosine": (
        dict(lr_schedule="warmup_cosine", warmup_epochs=2),
        lambda o: torch.optim.lr_scheduler.SequentialLR(
            o,
            [
                torch.optim.lr_scheduler.LinearLR(o, start_factor=1 / 3, total_iters=2),
                torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4),
            ],
            milestones=[2],
        ),
    ),
}


def _linear(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3)).double()


def _steps(model, opt, scheduler, epochs=6, batches=3):
    gen = torch.Generator().manual_seed(1)
    X, y = torch.randn(12, 5, generator=gen, dtype=torch.float64), torch.randint(0, 3, (12,), generator=gen)
    for _ in range(epochs):
        for b in range(batches):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(X[4 * b : 4 * b + 4]), y[4 * b : 4 * b + 4]).backward()
            opt.step()
        if scheduler is not None:
            scheduler.step()
    return model


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_the_configured_optimizer_and_schedule_step_as_torchs_own(name, schedule):
    keys, by_hand = OPTIMIZERS[name]
    sched_keys, sched_by_hand = SCHEDULES[schedule]
    cfg = TrainConfig(epochs=6, lr=0.01, **keys, **sched_keys)
    ours = _linear()
    opt = build_optimizer(ours.parameters(), cfg)
    _steps(ours, opt, build_scheduler(opt, cfg))
    theirs = _linear()
    opt = by_hand(theirs.parameters())
    _steps(theirs, opt, sched_by_hand(opt))
    for (k, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12, msg=k)
    assert not torch.equal(ours[0].weight, _linear()[0].weight)  # it did train


def test_one_sgd_step_with_nesterov_momentum_and_weight_decay_by_hand():
    """torch.optim.SGD's documented update, written out for two steps of one parameter:
    g = grad + wd w; b = mu b + g (b = g at the first step); w -= lr (g + mu b)."""
    cfg = TrainConfig(optimizer="sgd", momentum=0.9, nesterov=True, weight_decay=0.1, lr=0.5)
    w = torch.nn.Parameter(torch.tensor([2.0], dtype=torch.float64))
    opt = build_optimizer([w], cfg)
    expected, b = 2.0, None
    for grad in (3.0, -1.0):
        w.grad = torch.tensor([grad], dtype=torch.float64)
        g = grad + 0.1 * expected
        b = g if b is None else 0.9 * b + g
        expected -= 0.5 * (g + 0.9 * b)
        opt.step()
        assert w.item() == pytest.approx(expected, rel=1e-15)


def _tiny_data(seed=0, n_train=48):
    return make_trend_data(n_train=n_train, n_test=16, seq_len=4, features=4, seed=seed)


def _tiny_rnn(seed=0, norm="layer"):
    torch.manual_seed(seed)
    return build_model(ModelConfig(norm=norm, hidden_size=4), 4, 4)


@pytest.mark.parametrize(
    "keys,by_hand",
    [
        (dict(), lambda e, E: 0.1),
        (dict(lr_schedule="cosine"), lambda e, E: 0.1 * (1 + math.cos(math.pi * (e - 1) / E)) / 2),
        (dict(lr_schedule="step", lr_step_epochs=3, lr_gamma=0.5), lambda e, E: 0.1 * 0.5 ** ((e - 1) // 3)),
        (
            dict(lr_schedule="warmup_cosine", warmup_epochs=3),
            lambda e, E: 0.1 * e / 4 if e <= 3 else 0.1 * (1 + math.cos(math.pi * (e - 4) / (E - 3))) / 2,
        ),
    ],
    ids=["constant", "cosine", "step", "warmup_cosine"],
)
def test_each_epoch_trains_at_the_schedules_rate_by_hand(keys, by_hand):
    """Three mini-batches per epoch: a schedule stepped per batch (not per epoch) shows here."""
    E = 8
    cfg = TrainConfig(epochs=E, batch_size=16, lr=0.1, optimizer="sgd", **keys)
    m = train_model(_tiny_rnn(), _tiny_data(), cfg)
    assert m.lr == pytest.approx([by_hand(e, E) for e in range(1, E + 1)], rel=1e-12, abs=1e-15)
    assert m.lr[0] > 0 and all(lr > 0 for lr in m.lr)  # the last epoch still trains


def test_an_ensemble_member_takes_its_solo_runs_steps_bit_for_bit():
    """Three seeds stacked (parameters (S, ...)) with SGD, Nesterov momentum, weight decay and a
    cosine schedule: each member's weights and curves equal its seed trained alone, bit for bit."""
    seeds = [0, 1, 2]
    cfg = TrainConfig(
        epochs=3,
        batch_size=16,
        lr=0.05,
        optimizer="sgd",
        momentum=0.9,
        nesterov=True,
        weight_decay=1e-2,
        lr_schedule="cosine",
        grad_clip=0.5,
    )
    ensemble = SimpleRNN.stack([_tiny_rnn(s) for s in seeds])
    members = train_members(ensemble, [_tiny_data(s) for s in seeds], cfg, seeds)
    stacked = dict(ensemble.named_parameters())
    for k, s in enumerate(seeds):
        alone = SimpleRNN.stack([_tiny_rnn(s)])  # a native cell of one seed: how a run trains alone
        solo = train_members(alone, [_tiny_data(s)], cfg, [s])[0]
        for name, p in alone.named_parameters():
            assert torch.equal(stacked[name][k], p[0]), name
        assert members[k].train_loss == solo.train_loss and members[k].test_acc == solo.test_acc
        assert members[k].lr == solo.lr
