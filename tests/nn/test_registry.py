"""The norm registry: each kind's capabilities are what its layers do, and a new norm needs only
its file and a registry line (the models and the training loop ask, they do not test names)."""

import types

import pytest
import torch
from torch import nn

from lnbench.config import ModelConfig, TrainConfig
from lnbench.names import NORM_KINDS
from lnbench.nn.base import Norm
from lnbench.nn.batchnorm import BatchNorm1d, RecurrentBatchNorm1d
from lnbench.nn.groupnorm import GroupNorm
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.models import SimpleRNN, build_model
from lnbench.nn.registry import NORMS, NormKind, build_norm, norm_kind
from lnbench.nn.rmsnorm import RMSNorm
from lnbench.training.ensemble import has_batch_norm, layer_names
from lnbench.training.loop import train_members, train_model
from lnbench.training.tasks.trend import make_trend_data

CAPABILITIES = (
    "normalizes_activations",
    "has_beta",
    "uses_batch_statistics",
    "takes_timestep",
    "grouped_as_layer",
    "reparametrizes_weights",
    "has_member_axis",
)
EXPECTED = {  # the table of lnbench.nn.registry's docstring
    "none": (False, False, False, False, False, False, True),
    "batch": (True, True, True, True, True, False, True),
    "layer": (True, True, False, False, True, False, True),
    "rms": (True, False, False, False, True, False, True),
    "weight": (False, False, False, False, False, True, False),
    "group": (True, True, False, False, True, False, True),
}


def test_one_entry_per_norm_kind_with_the_documented_capabilities():
    assert tuple(NORMS) == NORM_KINDS == tuple(EXPECTED)
    for kind, expected in EXPECTED.items():
        spec = norm_kind(kind)
        assert tuple(getattr(spec, c) for c in CAPABILITIES) == expected, kind
        assert spec.label and spec.color


def test_build_norm_builds_each_kind_and_names_the_allowed_ones():
    assert [type(build_norm(k, 4)) for k in NORM_KINDS] == [
        nn.Identity,
        BatchNorm1d,
        LayerNorm,
        RMSNorm,
        nn.Identity,
        GroupNorm,
    ]
    per_timestep = ModelConfig(norm="batch", batch_norm_stats="per_timestep")
    bn = build_norm("batch", 4, per_timestep, members=3, recurrent=True, seq_len=7)
    assert type(bn) is RecurrentBatchNorm1d and bn.running_mean.shape == (7, 3, 1, 4) and bn.gamma.shape == (3, 1, 4)
    assert build_norm("layer", 4, members=3).gamma.shape == (3, 1, 4)
    assert build_norm("group", 4, ModelConfig(norm="group", norm_groups=2)).groups == 2  # its own key
    with pytest.raises(ValueError, match="unknown norm 'instance'; allowed: none, batch, layer, rms, weight, group"):
        build_norm("instance", 4)


@pytest.mark.parametrize("kind", NORM_KINDS)
def test_capabilities_match_what_the_built_layers_do(kind):
    spec = norm_kind(kind)
    for recurrent in (False, True):
        layer = spec.build(4, ModelConfig(norm_groups=2), recurrent=recurrent, seq_len=3)
        has_beta = any(name == "beta" for name, _ in layer.named_parameters())
        assert has_beta == spec.has_beta
        x = 5 * torch.randn(8, 4) + 2
        if spec.uses_batch_statistics:  # fresh running statistics: eval is ~the identity, training is not
            assert not torch.allclose(layer.train()(x), layer.eval()(x))
        else:
            torch.testing.assert_close(layer.train()(x), layer.eval()(x))
        if recurrent and spec.takes_timestep:
            layer.train()(x, 2)  # the timestep is an argument
        assert isinstance(layer, Norm) == spec.normalizes_activations


class MeanOnlyNorm(Norm):
    """A norm this repository does not have: ``y = gamma * (x - mean) + beta`` over the last axis."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        return self.gamma * (x - x.mean(dim=-1, keepdim=True)) + self.beta


@pytest.fixture
def mean_only(monkeypatch):
    """Register MeanOnlyNorm as the kind "mean" (the config's vocabulary lives in lnbench.names,
    so the configs below are plain namespaces)."""
    monkeypatch.setitem(NORMS, "mean", NormKind("mean", MeanOnlyNorm))
    defaults = ModelConfig().model_dump()
    return lambda **kw: types.SimpleNamespace(**(defaults | {"norm": "mean", "hidden_size": 6, "d_ff": 12} | kw))


def test_a_new_norm_is_one_class_and_one_registry_line(mean_only):
    data = make_trend_data(n_train=16, n_test=8, seq_len=4, features=3, seed=0)
    cfg = TrainConfig(epochs=1, batch_size=8)
    for settings in ({"family": "rnn"}, {"family": "rnn", "norm_placement": "separate"}, {"family": "transformer"}):
        torch.manual_seed(0)
        model = build_model(mean_only(**settings), data.input_size, data.seq_len)
        norms = [m for m in model.modules() if isinstance(m, MeanOnlyNorm)]
        assert norms and not has_batch_norm(model)
        assert {n for n, m in model.named_modules() if m in norms} <= set(layer_names(model).values())  # one layer each
        assert train_model(model, data, cfg).status == "completed"
        if settings["family"] == "rnn":  # the joint cell's bias is the norm's beta
            assert (model.cell.bias is None) == (settings.get("norm_placement", "joint") == "joint")
            stacked = SimpleRNN.stack([model, model])
            assert stacked.cell.norm.gamma.shape == (2, 1, 6)
            assert train_members(stacked, [data, data], cfg, [0, 0])[1].status == "completed"
