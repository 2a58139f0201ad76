"""The published recipes' training keys in the one loop: the initial-state noise
(``model.state_noise_std``: each member's own draw in training, one fixed draw per test example in
evaluation) and BatchNorm's recomputed population statistics (``model.batch_norm_population``),
each against a hand computation or the run it must equal."""

from __future__ import annotations

import pytest
import torch

from lnbench.config import ModelConfig, TrainConfig
from lnbench.nn.batchnorm import RecurrentBatchNorm1d
from lnbench.nn.lstm import LSTM
from lnbench.nn.models import build_model
from lnbench.nn.recurrent import eval_state_noise
from lnbench.training import loop
from lnbench.training.loop import recompute_population_statistics, train_members, train_model
from lnbench.training.tasks.trend import make_trend_data

DATA = make_trend_data(n_train=48, n_test=24, seq_len=5, features=6, seed=0)
CFG = TrainConfig(epochs=2, batch_size=16, lr=3e-3, grad_clip=1.0)


def _model(norm="layer", seed=0, family="lstm", **keys):
    torch.manual_seed(seed)
    cfg = ModelConfig(family=family, norm=norm, hidden_size=8, **keys)
    return build_model(cfg, DATA.input_size, DATA.seq_len)


def _numbers(m):
    d = m.to_dict()
    d.pop("epoch_seconds")
    return d


def test_state_noise_zero_trains_the_default_run_bit_for_bit():
    """state_noise_std 0 is the run without the key: every metric equal (the default unchanged)."""
    a = train_model(_model(), DATA, CFG, seed=1)
    b = train_model(_model(state_noise_std=0.0), DATA, CFG, seed=1)
    assert _numbers(a) == _numbers(b)


def test_state_noise_changes_training_and_is_reproducible():
    """With std 0.1 the run differs from the noiseless one and is the same run again from its seed."""
    a = train_model(_model(state_noise_std=0.1), DATA, CFG, seed=1)
    b = train_model(_model(state_noise_std=0.1), DATA, CFG, seed=1)
    assert _numbers(a) == _numbers(b)
    assert a.train_loss != train_model(_model(), DATA, CFG, seed=1).train_loss


@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_with_state_noise_each_member_matches_its_solo_run(norm):
    """An ensemble of two seeds draws each member's h_0 from that member's own generator: each
    member's metrics equal its solo run's (float32 rounding of the batched products)."""
    seeds = [0, 1]
    datas = [make_trend_data(n_train=48, n_test=24, seq_len=5, features=6, seed=s) for s in seeds]
    solos = [_model(norm, s, state_noise_std=0.2) for s in seeds]
    ensemble = LSTM.stack([_model(norm, s, state_noise_std=0.2) for s in seeds])
    members = train_members(ensemble, datas, CFG, seeds)
    for k, s in enumerate(seeds):
        solo = train_model(solos[k], datas[k], CFG, seed=s)
        for key in ("train_loss", "test_loss", "test_acc", "hidden_norm_init"):
            torch.testing.assert_close(
                torch.tensor(getattr(members[k], key)), torch.tensor(getattr(solo, key)), rtol=1e-5, atol=1e-5
            )
        assert members[k].test_correct == solo.test_correct


def test_the_evaluation_gives_each_test_example_its_row_of_the_fixed_noise(monkeypatch):
    """Every evaluation pass (the probes, before training and after each epoch) gets h_0 = row i of
    eval_state_noise for test example i, whatever the norm: the paired tests compare like with like."""
    seen = []
    probe = loop.probe_members

    def spy(model, X, y, scale, batch_size=None, h0=None):
        seen.append(h0)
        return probe(model, X, y, scale, batch_size, h0)

    monkeypatch.setattr(loop, "probe_members", spy)
    expected = eval_state_noise(DATA.X_test.shape[0], 1, 8, 0.1)
    for norm in ("none", "layer"):
        train_model(_model(norm, state_noise_std=0.1), DATA, CFG, seed=3)
    assert len(seen) == 2 * (1 + CFG.epochs)
    for h0 in seen:
        assert torch.equal(h0[0], expected)


def _batch_statistics_by_hand(model, X, batch_size):
    """Per BatchNorm and timestep, the batch means and unbiased variances of its inputs over
    consecutive mini-batches (captured in the Python path's calls of norm(a, t))."""
    seen: dict[tuple[int, int], list[tuple[torch.Tensor, torch.Tensor]]] = {}
    norms = [m for m in model.modules() if isinstance(m, RecurrentBatchNorm1d)]

    def hook(index):
        def capture(module, args):
            a, t = args
            seen.setdefault((index, t), []).append((a.mean(dim=0), a.var(dim=0, unbiased=True)))

        return capture

    handles = [norm.register_forward_pre_hook(hook(k)) for k, norm in enumerate(norms)]
    model.train()
    model.use_kernel = False
    with torch.no_grad():
        for i in range(0, X.shape[0], batch_size):
            model(X[i : i + batch_size])
    for h in handles:
        h.remove()
    return norms, seen


@pytest.mark.parametrize("use_kernel", [True, False], ids=["kernel", "python"])
def test_recomputed_population_statistics_are_the_mean_of_the_batch_statistics(use_kernel):
    """Cooijmans et al.'s population statistics: after recompute_population_statistics every
    timestep's running mean and variance of every BatchNorm of the BN-LSTM is the mean over the
    consecutive mini-batches (20, 20 and 8 examples) of that timestep's batch mean and unbiased
    variance, computed by hand from the norms' inputs; the weights are untouched."""
    model = _model("batch").double()
    X = DATA.X_train.double()  # 48 examples
    reference = _model("batch").double()
    _, seen = _batch_statistics_by_hand(reference, X, 20)
    model.use_kernel = use_kernel
    weights = {n: p.clone() for n, p in model.named_parameters()}
    recompute_population_statistics(model, X.unsqueeze(0), 20)
    norms = [m for m in model.modules() if isinstance(m, RecurrentBatchNorm1d)]
    assert len(norms) == 3 and not model.training
    for k, norm in enumerate(norms):
        for t in range(DATA.seq_len):
            means, variances = zip(*seen[(k, t)], strict=True)
            assert len(means) == 3
            torch.testing.assert_close(norm.running_mean[t], torch.stack(means).mean(0), rtol=1e-10, atol=1e-10)
            torch.testing.assert_close(norm.running_var[t], torch.stack(variances).mean(0), rtol=1e-10, atol=1e-10)
        assert norm.momentum == 0.1
    assert all(torch.equal(p, weights[n]) for n, p in model.named_parameters())


def test_recomputed_population_keeps_training_and_records_the_running_accuracy_beside():
    """A BN-LSTM run with batch_norm_population recomputed trains exactly as with running (the same
    train losses and gradients), records test_acc_running_stats equal to the running run's
    test_acc, and its test_acc is measured with the recomputed statistics (those of the final model
    equal a recomputation by hand); a running run records no test_acc_running_stats."""
    running = train_model(_model("batch"), DATA, CFG, seed=2)
    model = _model("batch", batch_norm_population="recomputed")
    recomputed = train_model(model, DATA, CFG, seed=2)
    assert recomputed.train_loss == running.train_loss and recomputed.grad_norm == running.grad_norm
    assert recomputed.test_acc_running_stats == running.test_acc
    assert running.test_acc_running_stats is None
    copy_ = _model("batch")
    copy_.load_state_dict(model.state_dict())
    recompute_population_statistics(copy_, DATA.X_train.unsqueeze(0), CFG.batch_size)
    for a, b in zip(copy_.buffers(), model.buffers(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    correct = (copy_(DATA.X_test).argmax(-1) == DATA.y_test).tolist()
    assert recomputed.test_correct == [int(c) for c in correct]
