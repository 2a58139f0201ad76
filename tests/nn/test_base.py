"""The Norm base: what every norm shares (parameters, members, input checks, repr), against torch."""

import pytest
import torch

from lnbench.nn.base import Norm, broadcast_axes
from lnbench.nn.batchnorm import BatchNorm1d, RecurrentBatchNorm1d
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.rmsnorm import RMSNorm


@pytest.mark.parametrize("cls", [LayerNorm, BatchNorm1d, RMSNorm, RecurrentBatchNorm1d])
def test_parameters_members_and_reset_like_torch(cls):
    norm = cls(4)
    torch_norm = torch.nn.LayerNorm(4)  # the initial values every torch norm has: weight 1, bias 0
    assert torch.equal(norm.gamma, torch_norm.weight)
    assert (norm.beta is None) == (not cls.has_beta)
    if norm.beta is not None:
        assert torch.equal(norm.beta, torch_norm.bias)
    ensemble = cls(4, members=3)
    assert ensemble.gamma.shape == (3, 1, 4) and isinstance(ensemble, Norm)
    with torch.no_grad():
        ensemble.gamma.mul_(5.0)
    ensemble.reset_parameters()
    assert torch.equal(ensemble.gamma, torch.ones(3, 1, 4))
    with pytest.raises(ValueError, match=f"{cls.__name__}: features must be >= 1, got 0"):
        cls(0)


def test_input_checks_name_the_expected_shape():
    with pytest.raises(ValueError, match=r"LayerNorm: expected last axis 4, got shape \(2, 3\)"):
        LayerNorm(4)(torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"BatchNorm1d: expected \(B, 4\) or \(B, T, 4\), got \(4,\)"):
        BatchNorm1d(4)(torch.randn(4))
    with pytest.raises(ValueError, match=r"RecurrentBatchNorm1d: expected \(3, B, 4\), got \(5, 4\)"):
        RecurrentBatchNorm1d(4, members=3)(torch.randn(5, 4))


def test_repr_shows_members_only_for_an_ensemble():
    assert repr(RMSNorm(8)) == "RMSNorm(8, eps=1e-05)"
    assert repr(LayerNorm(8, members=3)) == "LayerNorm(8, eps=1e-05, members=3)"
    assert repr(RecurrentBatchNorm1d(8)) == "RecurrentBatchNorm1d(8, eps=1e-05, momentum=0.1, stats='pooled')"


def test_broadcast_axes():
    assert broadcast_axes(torch.Size((3, 5, 4)), torch.Size((3, 1, 4))) == (1,)
    assert broadcast_axes(torch.Size((5, 6, 4)), torch.Size((4,))) == (0, 1)


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 5, 6, 4)])
def test_batch_norm_ensemble_is_one_torch_batch_norm_per_member(shape):
    """BatchNorm1d(members=S) on (S, B, [T,] H): member s is torch.nn.BatchNorm1d on x[s], in
    training (outputs and running statistics) and in eval."""
    torch.manual_seed(0)
    ours = BatchNorm1d(4, members=2, momentum=0.2)
    refs = [torch.nn.BatchNorm1d(4, momentum=0.2) for _ in range(2)]
    with torch.no_grad():
        ours.gamma.uniform_(0.5, 1.5)
        ours.beta.uniform_(-0.5, 0.5)
        for s, ref in enumerate(refs):
            ref.weight.copy_(ours.gamma[s, 0]), ref.bias.copy_(ours.beta[s, 0])

    def torch_out(s, x):  # torch's (B, C, L) layout is our (B, T, H) transposed
        return refs[s](x) if x.dim() == 2 else refs[s](x.transpose(1, 2)).transpose(1, 2)

    for _ in range(2):
        x = 3 * torch.randn(shape) + 1
        y = ours(x)
        for s in range(2):
            torch.testing.assert_close(y[s], torch_out(s, x[s]))
            torch.testing.assert_close(ours.running_mean[s, 0], refs[s].running_mean)
            torch.testing.assert_close(ours.running_var[s, 0], refs[s].running_var)
    ours.eval(), [ref.eval() for ref in refs]
    x = torch.randn(shape)
    for s in range(2):
        torch.testing.assert_close(ours(x)[s], torch_out(s, x[s]))
