"""The feed-forward family (Ba et al. 2016, section 6.7): ``relu(norm(W h) + b)`` per hidden layer
and no norm on the logits, against the same network written in plain torch functions (float64,
1e-10) for every built-in norm; its seed ensemble against each member alone, bit for bit; and
model.batch_norm_unbiased reaching every BatchNorm (the unbiased batch variance against a hand
computation: test_batchnorm.py)."""

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig, TrainConfig
from lnbench.names import NORM_KINDS, norm_has_member_axis
from lnbench.nn.batchnorm import RecurrentBatchNorm1d
from lnbench.nn.fused import _norm_slot
from lnbench.nn.mlp import MLP
from lnbench.nn.models import build_model
from lnbench.training.data import TaskData
from lnbench.training.loop import train_members

IN, H, C = 12, 8, 3


def _scramble(model: torch.nn.Module, seed: int = 0) -> None:
    """Every parameter off its initial value (gains off 1, biases off 0), so that no term hides."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.3)


def _reference(model: MLP, x: torch.Tensor, norm: str, unbiased: bool = False) -> torch.Tensor:
    """The network of the module docstring in torch functions, reading the model's parameters:
    the oracle (training mode: BatchNorm with batch statistics)."""
    h = x.flatten(-2)
    for k in range(model.num_layers):
        linear, layer = model.linears[k], model.norms[k]
        weight = (
            linear.weight if norm != "weight" else linear.g[:, None] * linear.v / linear.v.norm(dim=1, keepdim=True)
        )
        a = F.linear(h, weight, linear.bias)
        if norm == "layer":
            a = F.layer_norm(a, (H,), layer.gamma, layer.beta, layer.eps)
        elif norm == "batch":
            var = a.var(0, unbiased=unbiased)
            a = layer.gamma * (a - a.mean(0)) / torch.sqrt(var + layer.eps) + layer.beta
        elif norm == "rms":
            a = layer.gamma * a / torch.sqrt(a.square().mean(-1, keepdim=True) + layer.eps) + model.biases[k]
        elif norm == "group":
            a = F.group_norm(a, layer.groups, layer.gamma, layer.beta, layer.eps)
        h = torch.relu(a)
        if norm == "batch":
            assert not hasattr(model, "biases") or len(model.biases) == 0
    head = model.head
    weight = head.weight if norm != "weight" else head.g[:, None] * head.v / head.v.norm(dim=1, keepdim=True)
    return F.linear(h, weight, head.bias)


@pytest.mark.parametrize("norm", NORM_KINDS)
@pytest.mark.parametrize("num_layers", [1, 2])
def test_the_mlp_is_the_papers_network_in_torch_functions(norm, num_layers):
    """For every built-in norm, logits equal the plain-torch network to 1e-10 in float64 (BatchNorm in
    training mode, with the biased and with the unbiased batch variance); the logits have no norm."""
    for unbiased in [False, True] if norm == "batch" else [False]:
        options = {"batch_norm_unbiased": True} if unbiased else {}
        cfg = ModelConfig(family="mlp", norm=norm, hidden_size=H, num_layers=num_layers, **options)
        torch.manual_seed(0)
        model = build_model(cfg, IN, 1, C).double().train()
        assert isinstance(model, MLP)
        _scramble(model)
        x = torch.randn(5, 1, IN, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 2 + 0.5
        got = model(x)
        assert got.shape == (5, C)
        torch.testing.assert_close(got, _reference(model, x, norm, unbiased), atol=1e-10, rtol=1e-10)


def test_the_mlp_reads_a_sequence_as_one_vector_and_returns_its_last_hidden_layer():
    """``(B, T, I)`` is read as ``T * I`` features; ``return_hidden`` gives the last hidden layer as one
    timestep ``(B, 1, H)``, the relu of the last layer's normalized summed inputs."""
    cfg = ModelConfig(family="mlp", norm="layer", hidden_size=H, num_layers=2)
    torch.manual_seed(0)
    model = build_model(cfg, 4, 3, C)
    x = torch.randn(6, 3, 4)
    logits, hidden = model(x, return_hidden=True)
    assert hidden.shape == (6, 1, H)
    torch.testing.assert_close(logits, model.head(hidden[:, 0]))
    torch.testing.assert_close(model(x.reshape(6, 1, 12)), logits)
    assert (hidden >= 0).all()


def test_the_mlp_takes_one_vector_per_example_as_well_as_a_sequence():
    """The MLP reads vectors: ``(B, T * I)`` gives the logits of ``(B, T, I)`` reshaped, bit for bit
    (oracle: the same model on the 3-D input), a seed ensemble's ``(S, B, T * I)`` those of
    ``(S, B, T, I)``; an input whose features are not T * I is a ValueError naming both shapes."""
    torch.manual_seed(0)
    cfg = ModelConfig(family="mlp", norm="layer", hidden_size=H, num_layers=2)
    model = build_model(cfg, 4, 3, C)
    x = torch.randn(6, 3, 4)
    assert torch.equal(model(x.reshape(6, 12)), model(x))
    ensemble = MLP.stack(_members("layer", n=2)).eval()
    xs = torch.randn(2, 5, 1, IN)
    assert torch.equal(ensemble(xs.reshape(2, 5, IN)), ensemble(xs))
    with pytest.raises(
        ValueError,
        match=r"expected 12 features per example \(\(B, 3, 4\) or \(B, 12\)\), got an input of shape \(6, 11\)",
    ):
        model(torch.randn(6, 11))


def _members(norm, n=3, **options):
    cfg = ModelConfig(family="mlp", norm=norm, hidden_size=16, num_layers=2, **options)
    out = []
    for s in range(n):
        torch.manual_seed(s)
        out.append(build_model(cfg, IN, 1, C))
    return out


def _data(seed: int) -> TaskData:
    gen = torch.Generator().manual_seed(seed)
    X, Xt = torch.randn(21, 1, IN, generator=gen), torch.randn(9, 1, IN, generator=gen)
    y, yt = torch.randint(0, C, (21,), generator=gen), torch.randint(0, C, (9,), generator=gen)
    return TaskData(X, y, Xt, yt, torch.ones(21), torch.ones(9), num_classes=C)


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("norm", [k for k in NORM_KINDS if norm_has_member_axis(k)])
def test_each_member_of_an_mlp_ensemble_trains_as_it_would_alone(norm, one_thread):
    """Every metric of member s of a 3-member ensemble equals its ensemble of one, bit for bit (batch
    size 4 leaves a remainder of 1: BatchNorm's one-value batch)."""
    datas = [_data(s) for s in range(3)]
    cfg = TrainConfig(epochs=2, batch_size=4, lr=3e-3, grad_clip=1.0)
    together = train_members(MLP.stack(_members(norm)), datas, cfg, [0, 1, 2])
    for s, model in enumerate(_members(norm)):
        alone = train_members(MLP.stack([model]), [datas[s]], cfg, [s])[0].to_dict()
        member = together[s].to_dict()
        alone.pop("epoch_seconds"), member.pop("epoch_seconds")
        assert member == alone
        assert member["status"] == "completed"


def test_each_member_of_an_mlp_ensemble_computes_its_plain_model():
    models = _members("batch")
    ensemble = MLP.stack(models).train()
    x = torch.randn(3, 5, 1, IN)
    for s, model in enumerate(models):
        torch.testing.assert_close(ensemble(x)[s], model.train()(x[s]), atol=1e-6, rtol=1e-6)


def test_the_model_option_reaches_every_batchnorm_and_the_fused_kernel_steps_aside():
    """``model.batch_norm_unbiased`` builds unbiased BatchNorms in the MLP and the LSTM; the fused
    recurrence, which normalizes with the biased variance, declines an unbiased layer in training
    (the Python path runs it) and keeps it in eval (running statistics: the same affine map)."""
    mlp = build_model(ModelConfig(family="mlp", norm="batch", hidden_size=H, batch_norm_unbiased=True), IN, 1, C)
    assert all(n.unbiased for n in mlp.norms)
    lstm = build_model(ModelConfig(family="lstm", norm="batch", hidden_size=H, batch_norm_unbiased=True), IN, 5, C)
    recurrent = [m for m in lstm.modules() if isinstance(m, RecurrentBatchNorm1d)]
    assert recurrent and all(m.unbiased for m in recurrent)
    assert _norm_slot(recurrent[0].train(), 5, 1, 4) is None
    assert _norm_slot(recurrent[0].eval(), 5, 1, 4).mode == "affine"
    plain = build_model(ModelConfig(family="lstm", norm="batch", hidden_size=H), IN, 5, C)
    assert (
        _norm_slot(next(m for m in plain.modules() if isinstance(m, RecurrentBatchNorm1d)).train(), 5, 1, 4).mode
        == "over_batch"
    )


@pytest.mark.parametrize(
    "norm, params",
    [
        ("none", (12 * 8 + 8) + (8 * 8 + 8) + (8 * 3 + 3)),  # each Linear its own bias
        ("layer", 12 * 8 + 8 * 8 + (8 * 3 + 3) + 2 * (8 + 8)),  # no hidden bias: the norm's beta is b_l
        ("batch", 12 * 8 + 8 * 8 + (8 * 3 + 3) + 2 * (8 + 8)),
        ("group", 12 * 8 + 8 * 8 + (8 * 3 + 3) + 2 * (8 + 8)),
        ("rms", 12 * 8 + 8 * 8 + (8 * 3 + 3) + 2 * 8 + 2 * 8),  # no beta: the MLP's own bias after the norm
        ("weight", (12 * 8 + 8 + 8) + (8 * 8 + 8 + 8) + (8 * 3 + 3 + 3)),  # v, g and the bias
    ],
)
def test_the_mlps_parameters_are_the_papers_one_bias_per_hidden_unit(norm, params):
    """Ba et al. eq. 3-4: each hidden unit has one bias b_l, the norm's beta where the norm has one
    (its Linear then has none), the Linear's own otherwise (the count by hand, 12-8-8-3)."""
    cfg = ModelConfig(family="mlp", norm=norm, hidden_size=H, num_layers=2)
    model = build_model(cfg, IN, 1, C)
    assert sum(p.numel() for p in model.parameters()) == params
    normalized = norm in ("layer", "batch", "group", "rms")  # a norm of the activations: no Linear bias
    assert all((linear.bias is None) == normalized for linear in model.linears)
