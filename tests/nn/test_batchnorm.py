"""lnbench.nn.batchnorm against torch.nn.BatchNorm1d and hand-computed values."""

import warnings

import pytest
import torch
from torch import nn

from lnbench.nn.batchnorm import BatchNorm1d, SingleValueBatchWarning, batch_statistics


def _random_affine(ref: nn.Module, ours: nn.Module) -> None:
    """Give the torch module and ours the same random gamma (weight) and beta (bias)."""
    g = torch.Generator().manual_seed(1)
    gamma, beta = torch.randn(2, *ref.weight.shape, generator=g)
    with torch.no_grad():
        ref.weight.copy_(gamma), ref.bias.copy_(beta)
        ours.gamma.copy_(gamma), ours.beta.copy_(beta)


@pytest.mark.parametrize("shape", [(16, 6), (8, 5, 6)])
def test_batchnorm_matches_torch_over_several_training_steps_then_eval(shape):
    g = torch.Generator().manual_seed(0)
    ours, ref = BatchNorm1d(6, momentum=0.1).double(), nn.BatchNorm1d(6, momentum=0.1).double()
    _random_affine(ref, ours)
    to_ref = (lambda t: t) if len(shape) == 2 else (lambda t: t.transpose(1, 2))  # torch wants (B, C, L)
    for _ in range(3):
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 2 + 3
        x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        y1, y2 = ours(x1), to_ref(ref(to_ref(x2)))
        torch.testing.assert_close(y1, y2, atol=1e-10, rtol=1e-10)
        grad_y = torch.randn(shape, generator=g, dtype=torch.float64)
        y1.backward(grad_y)
        y2.backward(grad_y)
        torch.testing.assert_close(x1.grad, x2.grad, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(ours.gamma.grad, ref.weight.grad, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(ours.beta.grad, ref.bias.grad, atol=1e-10, rtol=1e-10)
        ours.zero_grad(), ref.zero_grad()
    torch.testing.assert_close(ours.running_mean, ref.running_mean, atol=1e-12, rtol=0)
    torch.testing.assert_close(ours.running_var, ref.running_var, atol=1e-12, rtol=0)
    ours.eval(), ref.eval()
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    torch.testing.assert_close(ours(x), to_ref(ref(to_ref(x))), atol=1e-10, rtol=1e-10)


def test_batchnorm_hand_computed_running_stats_and_eval_output():
    bn = BatchNorm1d(1, momentum=0.1)
    bn(torch.tensor([[1.0], [2.0], [3.0], [4.0]]))
    torch.testing.assert_close(bn.running_mean, torch.tensor([0.25]))
    torch.testing.assert_close(bn.running_var, torch.tensor([1.0666667]))  # 0.9 + 0.1 * 5/3
    bn.eval()
    before = (bn.running_mean.clone(), bn.running_var.clone())
    y = bn(torch.tensor([[1.0], [2.0], [3.0], [4.0]]))
    torch.testing.assert_close(y, torch.tensor([[0.7261810], [1.6944225], [2.6626639], [3.6309052]]))
    assert torch.equal(bn.running_mean, before[0]) and torch.equal(bn.running_var, before[1])


def test_batchnorm_single_value_per_feature_gives_beta_and_warns_once():
    bn = BatchNorm1d(3)
    with torch.no_grad():
        bn.beta.copy_(torch.tensor([0.1, 0.2, 0.3]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y1 = bn(torch.tensor([[5.0, -2.0, 9.0]]))
        y2 = bn(torch.tensor([[1.0, 1.0, 1.0]]))
    assert torch.equal(y1, bn.beta.detach().expand(1, 3)) and torch.equal(y2, y1)
    assert [w.category for w in caught] == [SingleValueBatchWarning]
    torch.testing.assert_close(bn.running_var, torch.ones(3))  # not updated from one value
    # running_mean is updated: 0.9 * (0.1 * [5, -2, 9]) + 0.1 * [1, 1, 1]
    torch.testing.assert_close(bn.running_mean, torch.tensor([0.55, -0.08, 0.91]))


def test_batch_statistics_context_uses_batch_stats_without_updating():
    bn = BatchNorm1d(2).eval()
    x = torch.tensor([[0.0, 10.0], [2.0, 30.0]])
    with batch_statistics(bn):
        y = bn(x)
    torch.testing.assert_close(y, torch.tensor([[-1.0, -1.0], [1.0, 1.0]]), atol=1e-4, rtol=0)
    assert torch.equal(bn.running_mean, torch.zeros(2)) and torch.equal(bn.running_var, torch.ones(2))
    torch.testing.assert_close(bn(x), x / torch.sqrt(torch.tensor(1 + 1e-5)))  # back to running stats


# ---- empty batches: as PyTorch's own norms take them --------------------------------------------


def test_batch_norm_on_an_empty_batch_leaves_the_running_statistics_as_pytorch_does():
    import warnings as _w

    from lnbench.nn.batchnorm import BatchNorm1d as _BN

    ours, ref = _BN(3), torch.nn.BatchNorm1d(3)
    with _w.catch_warnings():
        _w.simplefilter("error")  # no "one value per feature" warning either
        y = ours(torch.zeros(0, 3))
    ref(torch.zeros(0, 3))
    assert y.shape == (0, 3)
    torch.testing.assert_close(ours.running_mean, ref.running_mean)
    torch.testing.assert_close(ours.running_var, ref.running_var)


def test_recurrent_batch_norm_on_an_empty_batch_updates_nothing():
    from lnbench.nn.batchnorm import RecurrentBatchNorm1d

    bn = RecurrentBatchNorm1d(3, "per_timestep", seq_len=2)
    bn(torch.zeros(0, 3), 0)
    bn.update_running_stats()
    assert torch.equal(bn.running_mean, torch.zeros(2, 3)) and torch.equal(bn.running_var, torch.ones(2, 3))


# ---- batch statistics in groups: k mini-batches in one pass (the probes at small batch sizes) ----


def _chunked_oracle(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, g: int) -> torch.Tensor:
    """torch.nn.functional.batch_norm in training mode on each run of g examples, one at a
    time: (B, H) or (B, T, H) (the latter as PyTorch's (B, H, T)). One value per feature (which
    PyTorch refuses): x_hat = 0, so y = beta."""
    out = []
    for chunk in x.split(g):
        if chunk.dim() == 2 and chunk.shape[0] == 1:
            out.append((beta + 0 * chunk).to(chunk.dtype))  # beta, still a function of x (gradient 0)
            continue
        layout = chunk if chunk.dim() == 2 else chunk.transpose(1, 2)
        y = torch.nn.functional.batch_norm(layout, None, None, gamma, beta, training=True, eps=1e-5)
        out.append(y if chunk.dim() == 2 else y.transpose(1, 2))
    return torch.cat(out)


@pytest.mark.parametrize("shape", [(12, 5), (12, 3, 5)])
@pytest.mark.parametrize("g", [1, 3, 4, 12])
def test_grouped_batch_statistics_match_torch_one_group_at_a_time(shape, g):
    """Forward and the gradient wrt x: each run of g consecutive examples is its own batch."""
    gen = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=gen, dtype=torch.float64) * 3 + 2).requires_grad_()
    bn = BatchNorm1d(5).double().eval()
    gamma, beta = torch.randn(2, 5, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        bn.gamma.copy_(gamma), bn.beta.copy_(beta)
    with batch_statistics(bn, group_size=g):
        y = bn(x)
    x_ref = x.detach().clone().requires_grad_()
    y_ref = _chunked_oracle(x_ref, gamma, beta, g)
    torch.testing.assert_close(y, y_ref)
    w = torch.randn(shape, generator=gen, dtype=torch.float64)
    (gx,) = torch.autograd.grad((y * w).sum(), x)
    (gx_ref,) = torch.autograd.grad((y_ref * w).sum(), x_ref)
    torch.testing.assert_close(gx, gx_ref)
    assert bn.batch_group is None and not bn.use_batch_stats_in_eval  # reset on exit
    assert torch.equal(bn.running_mean, torch.zeros(5, dtype=torch.float64))


@pytest.mark.parametrize("shape", [(2, 8, 5), (2, 8, 3, 5)])
def test_grouped_batch_statistics_per_member_of_an_ensemble(shape):
    """(S, B, [T,] H): member s, group k normalized with its own statistics and its own gamma, beta."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * 2 + 1
    bn = BatchNorm1d(5, members=2).double().eval()
    with torch.no_grad():
        bn.gamma.copy_(torch.randn(2, 1, 5, generator=gen)), bn.beta.copy_(torch.randn(2, 1, 5, generator=gen))
    with batch_statistics(bn, group_size=2):
        y = bn(x)
    for s in range(2):
        torch.testing.assert_close(y[s], _chunked_oracle(x[s], bn.gamma[s, 0].detach(), bn.beta[s, 0].detach(), 2))


def test_grouped_batch_statistics_refuse_a_partial_group():
    bn = BatchNorm1d(3).eval()
    with (
        batch_statistics(bn, group_size=4),
        pytest.raises(ValueError, match="batch of 6 is not a whole number of groups of 4"),
    ):
        bn(torch.randn(6, 3))
    assert bn.batch_group is None
    with pytest.raises(ValueError, match="group_size must be >= 1, got 0"), batch_statistics(bn, group_size=0):
        pass


def test_unbiased_batchnorm_divides_by_the_unbiased_batch_variance():
    """``unbiased=True``: ``gamma (x - mean) / sqrt(var * n / (n - 1) + eps) + beta`` (a hand computation
    with ``Tensor.var(unbiased=True)``), gradients by ``torch.autograd.gradcheck``; the running statistics
    and eval mode are those of the biased layer; one value per feature still gives beta."""
    torch.manual_seed(0)
    x = (torch.randn(4, 7, dtype=torch.float64) * 3 + 1).requires_grad_()
    biased, unbiased = BatchNorm1d(7).double(), BatchNorm1d(7, unbiased=True).double()
    for layer in (biased, unbiased):
        with torch.no_grad():
            layer.gamma.copy_(torch.linspace(0.5, 1.5, 7))
            layer.beta.copy_(torch.linspace(-1, 1, 7))
    want = unbiased.gamma * (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=True) + 1e-5) + unbiased.beta
    torch.testing.assert_close(unbiased(x), want, atol=1e-12, rtol=1e-12)
    assert not torch.allclose(biased(x), want)
    assert torch.autograd.gradcheck(
        lambda a, g: BatchNorm1d(7, unbiased=True).double()(a) * g, (x, torch.rand(7, dtype=torch.float64))
    )
    torch.testing.assert_close(unbiased.running_var, biased.running_var)
    unbiased.eval(), biased.eval()
    torch.testing.assert_close(unbiased(x), biased(x))
    one = BatchNorm1d(7, unbiased=True).double().train()
    with pytest.warns(UserWarning):
        torch.testing.assert_close(one(x[:1]), one.beta.expand(1, 7))


@pytest.mark.parametrize("group_size", [None, 3])
@pytest.mark.parametrize("unbiased", [False, True])
def test_eval_with_batch_statistics_normalizes_with_the_variance_training_uses(unbiased, group_size):
    """In eval mode inside batch_statistics (the test accuracy "with batch statistics"), the layer
    normalizes each batch (or each run of g examples) with the variance training normalizes with:
    the unbiased one with model.batch_norm_unbiased, else the biased one (torch's var by hand); the
    running statistics are not touched."""
    torch.manual_seed(0)
    layer = BatchNorm1d(4, unbiased=unbiased).double()
    with torch.no_grad():
        layer.gamma.copy_(torch.tensor([0.5, 1.0, 2.0, 3.0]))
        layer.beta.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
    x = torch.randn(6, 4, dtype=torch.float64) * 3 + 1
    before = layer.running_var.clone()
    layer.eval()
    with batch_statistics(layer, group_size):
        got = layer(x)
    g = group_size or 6
    groups = x.view(6 // g, g, 4)
    var = groups.var(1, unbiased=unbiased, keepdim=True)
    want = layer.gamma * (groups - groups.mean(1, keepdim=True)) / torch.sqrt(var + layer.eps) + layer.beta
    torch.testing.assert_close(got, want.view(6, 4), rtol=1e-12, atol=1e-12)
    assert torch.equal(layer.running_var, before)
