"""GroupNorm: the worked example of a norm with its own option, ``model.norm_groups``.

Oracle: ``torch.nn.GroupNorm(G, C)``, which normalizes the channels C of ``(N, C, *)`` together
with every spatial position of ``*``. Ours normalizes the last axis D of each sample and each
timestep alone, so the comparison flattens ``(B, T, D)`` to ``(B * T, D)``: each row is one of
torch's samples, our D its channel axis C and no spatial axis. (``(B, D, T)``, D as C with T as
the spatial axis, would pool the timesteps: another normalization.)
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import REPO, TINY_OVERRIDES, runner, set_args
from torch import nn
from torch.nn import functional as F

from lnbench.cli.app import app
from lnbench.config import ConfigError, ModelConfig, load_config
from lnbench.config.checks import check_norm_options
from lnbench.nn import fused
from lnbench.nn.base import SingleValueWarning
from lnbench.nn.groupnorm import GroupNorm
from lnbench.nn.invariance import EXPECTED, measure
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.models import build_model
from lnbench.nn.registry import norm_kind
from lnbench.testing import check_norm

D = 12


def _inputs(shape=(3, 4, D), seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 5.0 + 3.0 * torch.randn(*shape, dtype=torch.float64, generator=g)  # a large mean, as the Triton tutorial's test
    gamma = 1.0 + 0.5 * torch.randn(shape[-1], dtype=torch.float64, generator=g)
    beta = torch.randn(shape[-1], dtype=torch.float64, generator=g)
    return x, gamma, beta, torch.randn(*shape, dtype=torch.float64, generator=g)


def _ours(groups, gamma, beta):
    layer = GroupNorm(gamma.shape[-1], groups=groups).double()
    with torch.no_grad():
        layer.gamma.copy_(gamma), layer.beta.copy_(beta)
    return layer


@pytest.mark.parametrize("groups", [1, 2, 3, 4, 6])
def test_forward_and_gradients_equal_torch_group_norm_in_float64(groups):
    x, gamma, beta, grad_y = _inputs()
    ours = _ours(groups, gamma, beta)
    theirs = nn.GroupNorm(groups, D, eps=ours.eps).double()
    with torch.no_grad():
        theirs.weight.copy_(gamma), theirs.bias.copy_(beta)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    y = ours(xa)
    y_ref = theirs(xb.reshape(-1, D)).reshape(x.shape)  # (B * T, D): D is torch's channel axis C
    torch.testing.assert_close(y, y_ref, rtol=1e-10, atol=1e-10)
    got = torch.autograd.grad(y, (xa, ours.gamma, ours.beta), grad_y)
    want = torch.autograd.grad(y_ref, (xb, theirs.weight, theirs.bias), grad_y)
    for a, b, name in zip(got, want, ("dx", "dgamma", "dbeta"), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10, msg=name)


def test_each_group_is_standardized_alone():
    """By hand: x = (1, 3, 10, 30) in two groups: each pair is mean +- half its gap -> (-1, 1) per group."""
    y = GroupNorm(4, eps=0.0, groups=2)(torch.tensor([[1.0, 3.0, 10.0, 30.0]]))
    torch.testing.assert_close(y, torch.tensor([[-1.0, 1.0, -1.0, 1.0]]))


@pytest.mark.parametrize("groups", [1, 3, 4])
def test_gradcheck_and_gradgradcheck(groups):
    x, gamma, beta, _ = _inputs((2, 3, D))
    layer = GroupNorm(D, groups=groups).double()

    def f(x, gamma, beta):
        return torch.func.functional_call(layer, {"gamma": gamma, "beta": beta}, (x,))

    args = tuple(t.clone().requires_grad_() for t in (x, gamma, beta))
    assert torch.autograd.gradcheck(f, args)
    assert torch.autograd.gradgradcheck(f, args)


def test_one_group_is_layer_norm():
    x, gamma, beta, grad_y = _inputs()
    layer = LayerNorm(D).double()
    layer.use_kernel = False  # the same Function, so the comparison is of the grouping alone; F.layer_norm too
    with torch.no_grad():
        layer.gamma.copy_(gamma), layer.beta.copy_(beta)
    torch.testing.assert_close(_ours(1, gamma, beta)(x), layer(x), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(
        _ours(1, gamma, beta)(x), F.layer_norm(x, (D,), gamma, beta, 1e-5), rtol=1e-10, atol=1e-10
    )


def test_one_feature_per_group_is_degenerate_the_output_is_beta():
    """groups = D: each feature alone has x_hat = 0 (its own mean), so y = beta whatever x."""
    x, gamma, beta, _ = _inputs()
    with pytest.warns(SingleValueWarning, match="one feature per group"):
        y = _ours(D, gamma, beta)(x)
    torch.testing.assert_close(y, beta.expand_as(x), rtol=0, atol=1e-12)


def test_members_are_independent_layers_and_check_norm_passes():
    class GroupNorm4(GroupNorm):  # check_norm builds cls(features) (12; its Table 1 row: 32): four groups
        def __init__(self, features, eps=1e-5, members=None):
            super().__init__(features, eps, members, groups=4)

    report = check_norm(GroupNorm4, features=D)  # gradcheck, gradgradcheck, members=3, dtypes, Table 1
    assert tuple(report["invariance"].values()) == EXPECTED["group"]


def test_groups_must_divide_the_features():
    with pytest.raises(ValueError, match="norm_groups 5 does not divide the features 12; allowed: 1, 2, 3, 4, 6, 12"):
        GroupNorm(D, groups=5)
    with pytest.raises(ValueError, match="norm_groups 0 does not divide"):
        GroupNorm(D, groups=0)
    assert repr(GroupNorm(D, groups=3)) == "GroupNorm(12, eps=1e-05, groups=3)"


def test_the_config_key_is_read_by_the_layer_and_checked_once():
    cfg = ModelConfig(norm="group", hidden_size=D, norm_groups=6)
    layer = norm_kind("group").build(D, cfg)
    assert isinstance(layer, GroupNorm) and layer.groups == 6
    with pytest.raises(
        ConfigError, match=r"^model.norm_groups: 5 does not divide model.hidden_size 12; allowed: 1, 2, 3, 4, 6, 12$"
    ):
        check_norm_options([load_config(None, ["model.norm=group", "model.hidden_size=12", "model.norm_groups=5"])])
    with pytest.raises(  # set, but no run trains GroupNorm: refused as another family's key is
        ConfigError, match=r"^model.norm_groups: applies to GroupNorm only, and this run trains LayerNorm; remove it$"
    ):
        check_norm_options([load_config(None, ["model.norm=layer", "model.hidden_size=12", "model.norm_groups=5"])])
    check_norm_options([load_config(None, ["model.norm=layer", "model.hidden_size=12"])])  # at its default: fine
    with pytest.raises(ConfigError, match="norm_groups"):
        load_config(None, ["model.norm_groups=0"])


def test_the_key_is_in_a_group_runs_config_yaml_only():
    """A run's config.yaml keeps the keys it used: another norm's run leaves norm_groups out, so its
    config hash (``--resume``) is what it was before GroupNorm existed."""
    assert "norm_groups: 2" in load_config(None, ["model.norm=group"]).to_yaml(model_family_only=True)
    assert "norm_groups" not in load_config(None, ["model.norm=layer"]).to_yaml(model_family_only=True)


@pytest.mark.parametrize(
    "command",
    [
        ["train", str(REPO / "configs/train.yaml"), "--set", "model.norm=group"],
        ["compare", str(REPO / "configs/compare.yaml"), "--set", "compare.norms=[none, group]"],
    ],
)
def test_a_group_count_that_does_not_divide_is_one_line_exit_2(command, tmp_path):
    args = [*command, "--runs-dir", str(tmp_path / "runs"), *set_args(TINY_OVERRIDES), "--set", "model.norm_groups=3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    line = "model.norm_groups: 3 does not divide model.hidden_size 8; allowed: 1, 2, 4, 8"
    assert result.output.startswith("lnbench: error: ") and result.output.strip().endswith(line), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


def _same_weights(model, reference):
    """Load ``reference``'s parameters into ``model`` (the same names: GroupNorm and LayerNorm both
    have gamma and beta)."""
    model.load_state_dict(reference.state_dict())
    return model


@pytest.mark.parametrize(
    "family,options",
    [("rnn", {}), ("rnn", {"norm_placement": "separate"}), ("lstm", {}), ("transformer", {"num_layers": 2})],
)
def test_one_group_in_every_family_is_the_layer_norm_model(family, options):
    """The whole model with GroupNorm at norm_groups 1 computes the LayerNorm model (the RNN and
    the LSTM: GroupNorm on the Python path, LayerNorm in the fused kernel when it is built)."""
    base = dict(family=family, hidden_size=8, **options)
    torch.manual_seed(0)
    layer = build_model(ModelConfig(norm="layer", **base), 3, 5).double()
    group = _same_weights(build_model(ModelConfig(norm="group", norm_groups=1, **base), 3, 5).double(), layer)
    assert any(isinstance(m, GroupNorm) for m in group.modules())
    x = torch.randn(4, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(group(x), layer(x), rtol=1e-10, atol=1e-10)
    two = build_model(ModelConfig(norm="group", norm_groups=2, **base), 3, 5).double()
    assert not torch.allclose(_same_weights(two, layer)(x), layer(x))  # two groups: another model


def test_the_fused_kernel_leaves_group_norm_to_the_python_path():
    model = build_model(ModelConfig(norm="group", norm_groups=2, hidden_size=8), 3, 5)
    assert fused._norm_slot(model.cell.norm, 5, 1, 4) is None  # no kernel mode for it
    assert fused._norm_slot(build_model(ModelConfig(hidden_size=8), 3, 5).cell.norm, 5, 1, 4).mode == "over_features"


def test_its_table_1_row_is_measured_as_derived():
    """Ba et al.'s Table 1 for GroupNorm, derived by hand (lnbench.nn.invariance's docstring): I I N I N I,
    LayerNorm's, group by group: per-case statistics over each group of units."""
    assert EXPECTED["group"] == ("I", "I", "N", "I", "N", "I")
    cells = [c for c in measure(seed=1) if c.method == "group"]
    assert [c.measured for c in cells] == list(EXPECTED["group"]) and all(c.agrees for c in cells)
    assert {c.paper for c in cells} == {None}  # not in the paper


@pytest.mark.e2e
def test_a_group_norm_compare_runs_end_to_end(tmp_path):
    args = [
        "compare",
        str(REPO / "configs/compare.yaml"),
        "--runs-dir",
        str(tmp_path / "runs"),
        *set_args(TINY_OVERRIDES),
        "--set",
        "compare.norms=[none, layer, group]",
        "--set",
        "compare.families=[rnn, lstm, transformer]",
        "--set",
        "seeds=[0, 1]",
        "--set",
        "model.norm_groups=4",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    rows = json.loads((run / "summary.json").read_text())["rows"]
    group_rows = [r for r in rows if r["norm"] == "group"]
    assert (
        len(group_rows) == 4 * 2 and all
    )  # RNN joint and separate (configs/compare.yaml), LSTM, Transformer(r["status"] == "completed" for r in group_rows)
    child = run / group_rows[0]["run_dir"]
    assert "norm_groups: 4" in (child / "config.yaml").read_text()
    assert load_config(child / "config.yaml").model.norm_groups == 4
