"""BatchNorm inside the RNN: running statistics once per training step (pooled) or per timestep
(Cooijmans et al. 2016), against hand computations and torch.nn.BatchNorm1d."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn.batchnorm import RecurrentBatchNorm1d, batch_statistics
from lnbench.nn.models import SimpleRNN

T, B, H = 3, 4, 5


def _inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, generator=g) * (t + 1) + 3 * t for t in range(T)]  # a different mean per t


def test_pooled_updates_once_per_step_with_the_mean_over_timesteps():
    """running = 0.9 * running + 0.1 * mean_t(stat_t), stat_t = mean / unbiased var of timestep t."""
    bn = RecurrentBatchNorm1d(H, "pooled")
    xs = _inputs()
    for t, x in enumerate(xs):
        y = bn(x, t)
        torch.testing.assert_close(y, F.batch_norm(x, None, None, training=True, eps=1e-5))  # batch stats of t
    torch.testing.assert_close(bn.running_mean, torch.zeros(H))  # nothing until the step ends
    bn.update_running_stats()
    mean_t = torch.stack([x.mean(0) for x in xs]).mean(0)
    var_t = torch.stack([x.var(0, unbiased=True) for x in xs]).mean(0)
    torch.testing.assert_close(bn.running_mean, 0.1 * mean_t)
    torch.testing.assert_close(bn.running_var, 0.9 * torch.ones(H) + 0.1 * var_t)
    bn.update_running_stats()  # nothing pending: no second update
    torch.testing.assert_close(bn.running_mean, 0.1 * mean_t)


def test_pooled_rnn_updates_its_statistics_once_per_forward():
    torch.manual_seed(0)
    model = SimpleRNN(ModelConfig(norm="batch", hidden_size=H), H)
    model.use_kernel = False  # the hook sees each timestep's call on the Python path (tests/nn/test_fused.py: the kernel's statistics are the same)
    seen = []
    model.cell.norm.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach().clone()))
    model.train()
    model(torch.randn(B, T, H))
    assert len(seen) == T
    torch.testing.assert_close(model.cell.norm.running_mean, 0.1 * torch.stack([a.mean(0) for a in seen]).mean(0))
    torch.testing.assert_close(
        model.cell.norm.running_var, 0.9 + 0.1 * torch.stack([a.var(0, unbiased=True) for a in seen]).mean(0)
    )


def test_per_timestep_rows_match_torch_batchnorm_per_timestep():
    bn = RecurrentBatchNorm1d(H, "per_timestep", seq_len=T)
    refs = [nn.BatchNorm1d(H) for _ in range(T)]
    for _ in range(2):  # two training steps
        for t, x in enumerate(_inputs()):
            torch.testing.assert_close(bn(x, t), refs[t](x))
        bn.update_running_stats()  # a no-op for per_timestep
    for t in range(T):
        torch.testing.assert_close(bn.running_mean[t], refs[t].running_mean)
        torch.testing.assert_close(bn.running_var[t], refs[t].running_var)
    bn.eval()
    x = torch.randn(B, H)
    for ref in refs:
        ref.eval()
    torch.testing.assert_close(bn(x, 1), refs[1](x))
    torch.testing.assert_close(bn(x, T + 5), refs[T - 1](x))  # beyond the trained length: the last row


def test_batch_statistics_in_eval_leave_the_buffers_alone():
    bn = RecurrentBatchNorm1d(H)
    bn.eval()
    x = _inputs()[1]
    with batch_statistics(bn):
        torch.testing.assert_close(bn(x, 0), F.batch_norm(x, None, None, training=True, eps=1e-5))
    assert (
        torch.equal(bn.running_mean, torch.zeros(H)) and torch.equal(bn.running_var, torch.ones(H)) and not bn._pending
    )


def test_bad_arguments():
    with pytest.raises(ValueError, match="allowed: pooled, per_timestep"):
        RecurrentBatchNorm1d(H, "per_step")
    with pytest.raises(ValueError, match="needs seq_len"):
        RecurrentBatchNorm1d(H, "per_timestep")


def test_rnn_per_timestep_gets_seq_len_from_build_model():
    from lnbench.nn.models import build_model

    model = build_model(ModelConfig(norm="batch", hidden_size=H, batch_norm_stats="per_timestep"), H, 7)
    assert model.cell.norm.running_mean.shape == (7, H) and model.cell.norm.stats == "per_timestep"


def test_grouped_batch_statistics_per_timestep_ensemble():
    """The recurrent form in an ensemble (S, B, H) at timestep t: groups of 1 give beta exactly
    (x_hat = 0), groups of 3 match torch's batch_norm per group; running statistics untouched."""
    gen = torch.Generator().manual_seed(2)
    bn = RecurrentBatchNorm1d(4, stats="per_timestep", seq_len=3, members=2).eval()
    with torch.no_grad():
        bn.beta.copy_(torch.randn(2, 1, 4, generator=gen)), bn.gamma.copy_(torch.randn(2, 1, 4, generator=gen))
    x = torch.randn(2, 6, 4, generator=gen)
    with batch_statistics(bn, group_size=1):
        assert torch.equal(bn(x, 1), bn.beta.detach().expand(2, 6, 4))
    with batch_statistics(bn, group_size=3):
        y = bn(x, 2)
    for s in range(2):
        for k in range(2):
            ref = torch.nn.functional.batch_norm(
                x[s, 3 * k : 3 * k + 3], None, None, bn.gamma[s, 0].detach(), bn.beta[s, 0].detach(), training=True
            )
            torch.testing.assert_close(y[s, 3 * k : 3 * k + 3], ref)
    assert torch.equal(bn.running_mean, torch.zeros(3, 2, 1, 4)) and torch.equal(bn.running_var, torch.ones(3, 2, 1, 4))
