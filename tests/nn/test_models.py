"""Model shapes and the equations each model implements, against hand-written references."""

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.names import NORM_KINDS
from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.models import RNNCellWithNorm, SimpleRNN, TransformerBlock, TransformerClassifier, build_model


def test_rnn_cell_is_tanh_of_layer_normalized_summed_inputs():
    torch.manual_seed(0)
    cell = RNNCellWithNorm(ModelConfig(norm="layer", hidden_size=8))
    x, h = torch.randn(3, 8), torch.randn(3, 8)
    a = h @ cell.W_hh.T + x @ cell.W_xh.T
    expected = torch.tanh(F.layer_norm(a, (8,), cell.norm.gamma, cell.norm.beta, eps=1e-5))
    torch.testing.assert_close(cell(x, h), expected)
    assert cell.W_hh.shape == (8, 8) and cell.W_xh.shape == (8, 8) and cell.bias is None


def test_rnn_cell_without_norm_has_a_bias():
    torch.manual_seed(0)
    cell = RNNCellWithNorm(ModelConfig(norm="none", hidden_size=4))
    with torch.no_grad():
        cell.bias.fill_(0.3)
    x, h = torch.randn(2, 4), torch.randn(2, 4)
    torch.testing.assert_close(cell(x, h), torch.tanh(h @ cell.W_hh.T + x @ cell.W_xh.T + 0.3))


@pytest.mark.parametrize("norm", ["none", "batch", "layer"])
def test_simple_rnn_shapes_and_hidden_states(norm):
    torch.manual_seed(0)
    model = SimpleRNN(ModelConfig(norm=norm, hidden_size=7), input_size=5, num_classes=2)
    x = torch.randn(4, 6, 5)
    logits, hidden = model(x, return_hidden=True)
    assert logits.shape == (4, 2) and hidden.shape == (4, 6, 7)
    torch.testing.assert_close(logits, model.head(hidden[:, -1]))  # logits come from h_T
    assert hidden.abs().max() < 1  # tanh


def test_same_seed_gives_same_initial_weights_for_every_norm():
    weights = []
    for norm in ["none", "batch", "layer"]:
        torch.manual_seed(3)
        m = SimpleRNN(ModelConfig(norm=norm, hidden_size=8), 8)
        weights.append((m.cell.W_hh.detach(), m.cell.W_xh.detach(), m.head.weight.detach()))
    for w in weights[1:]:
        assert all(torch.equal(a, b) for a, b in zip(weights[0], w))


def test_transformer_block_is_pre_norm_with_residuals():
    torch.manual_seed(0)
    block = TransformerBlock(ModelConfig(family="transformer", norm="layer", hidden_size=8, d_ff=16))
    x = torch.randn(2, 5, 8)
    ln = lambda m, t: F.layer_norm(t, (8,), m.gamma, m.beta, 1e-5)  # noqa: E731
    q, k, v = block.attn.qkv(ln(block.norm_1, x)).chunk(3, -1)
    att = torch.softmax(q @ k.transpose(1, 2) / 8**0.5, dim=-1)
    x1 = x + block.attn.proj(att @ v)
    expected = x1 + block.mlp(ln(block.norm_2, x1))
    torch.testing.assert_close(block(x), expected)


def test_transformer_batchnorm_takes_statistics_over_batch_and_time():
    torch.manual_seed(0)
    block = TransformerBlock(ModelConfig(family="transformer", norm="batch", hidden_size=4)).train()
    x = torch.randn(3, 5, 4) * 2 + 1
    block(x)
    bn = block.norm_1
    assert isinstance(bn, BatchNorm1d)
    torch.testing.assert_close(bn.running_mean, 0.1 * x.mean(dim=(0, 1)))


@pytest.mark.parametrize("norm", ["none", "batch", "layer"])
def test_transformer_classifier_shapes(norm):
    torch.manual_seed(0)
    cfg = ModelConfig(family="transformer", norm=norm, hidden_size=8, num_layers=2)
    model = TransformerClassifier(cfg, input_size=5, seq_len=6, num_classes=2)
    logits, stream = model(torch.randn(4, 6, 5), return_hidden=True)
    assert logits.shape == (4, 2) and stream.shape == (4, 6, 8)


@pytest.mark.parametrize("norm", ["none", "layer"])
def test_transformer_readout_is_the_head_of_the_time_mean_of_the_final_norm(norm):
    """The documented readout ``logits = head(mean_t norm_f(z))``, z the residual
    stream after the last block; PyTorch's layer_norm is the oracle for norm_f. A readout of the
    last (or first) position, a sum or max over time, or one that skips norm_f gives other logits."""
    torch.manual_seed(0)
    cfg = ModelConfig(family="transformer", norm=norm, hidden_size=8, num_layers=1)
    model = TransformerClassifier(cfg, input_size=3, seq_len=5).eval()
    if norm == "layer":
        with torch.no_grad():  # a final norm that is not the identity at its initial gain and bias
            model.norm_f.gamma.copy_(torch.linspace(0.5, 2.0, 8))
            model.norm_f.beta.copy_(torch.linspace(-1.0, 1.0, 8))
    x = torch.randn(4, 5, 3) * 3 + 1
    logits, z = model(x, return_hidden=True)  # z: (B, T, D)
    normed = F.layer_norm(z, (8,), model.norm_f.gamma, model.norm_f.beta, 1e-5) if norm == "layer" else z
    torch.testing.assert_close(logits, normed.mean(dim=1) @ model.head.weight.T + model.head.bias)
    others = [normed[:, -1], normed[:, 0], normed.sum(dim=1), normed.amax(dim=1)]
    others += [z.mean(dim=1)] if norm == "layer" else []  # norm_f skipped
    for other in others:
        assert not torch.allclose(logits, model.head(other), atol=1e-4)


def test_transformer_sees_order():
    """Reversing time must change the output: the position embedding breaks permutation symmetry."""
    torch.manual_seed(0)
    model = TransformerClassifier(ModelConfig(family="transformer", norm="layer", hidden_size=8), 5, 6).eval()
    x = torch.randn(1, 6, 5)
    assert not torch.allclose(model(x), model(x.flip(1)))


def test_build_model_from_config():
    rnn = build_model(ModelConfig(family="rnn", norm="batch", hidden_size=16), input_size=4, seq_len=10)
    tr = build_model(ModelConfig(family="transformer", norm="layer", hidden_size=16, d_ff=32), 4, 10)
    assert isinstance(rnn, SimpleRNN) and isinstance(rnn.cell.norm, BatchNorm1d)
    assert isinstance(tr, TransformerClassifier) and tr.blocks[0].mlp[0].out_features == 32


# ---- dtype and device conversion (Module._apply must not be shadowed) -----------------------------

FAMILY_SETTINGS = [
    ("rnn", {"norm_placement": "joint"}),
    ("rnn", {"norm_placement": "separate"}),
    ("rnn", {"norm_placement": "joint", "batch_norm_stats": "per_timestep"}),
    ("lstm", {}),
    ("lstm", {"batch_norm_stats": "per_timestep"}),
    ("transformer", {}),
    ("mlp", {}),
]


def test_the_conversion_tests_cover_every_family():
    from lnbench.names import FAMILIES

    assert {family for family, _ in FAMILY_SETTINGS} == set(FAMILIES)


@pytest.mark.parametrize("family,options", FAMILY_SETTINGS)
@pytest.mark.parametrize("norm", NORM_KINDS)
def test_every_model_converts_dtype_and_computes_the_same_function(family, norm, options):
    """``.double()`` / ``.to(torch.float64)`` convert every parameter and buffer, and the float64
    model computes what the float32 one does (to float32's precision; train mode, so BatchNorm
    uses batch statistics and updates its running statistics); ``.half()`` works too."""
    cfg = ModelConfig(family=family, norm=norm, hidden_size=6, d_ff=12, **options)
    torch.manual_seed(0)
    model = build_model(cfg, input_size=3, seq_len=5).train()
    x = 3 * torch.randn(4, 5, 3) + 1
    expected = [t.detach().double() for t in model(x, return_hidden=True)]
    tensors32 = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    for convert in (lambda m: m.double(), lambda m: m.to(torch.float64)):
        torch.manual_seed(0)
        wide = convert(build_model(cfg, input_size=3, seq_len=5)).train()
        tensors = {**dict(wide.named_parameters()), **dict(wide.named_buffers())}
        assert tensors.keys() == tensors32.keys() and all(t.dtype == torch.float64 for t in tensors.values())
        for got, want in zip(wide(x.double(), return_hidden=True), expected):
            assert got.dtype == torch.float64
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        for name, t in wide.named_buffers():  # running statistics updated alike
            torch.testing.assert_close(t, dict(model.named_buffers())[name].double(), atol=1e-6, rtol=1e-5)
    torch.manual_seed(0)
    half = build_model(cfg, input_size=3, seq_len=5).half().train()
    logits = half(x.half())
    assert logits.dtype == torch.float16
    torch.testing.assert_close(logits.double(), expected[0], atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("family", ["rnn", "lstm"])
@pytest.mark.parametrize("norm", NORM_KINDS)
def test_a_seed_ensemble_converts_dtype_and_device_and_back(norm, family):
    """A stacked ensemble (member axis on every tensor) moves like a solo model: ``.to(device,
    dtype)`` gives the float32 outputs in float64, and ``.float()`` brings back the same tensors."""
    cfg = ModelConfig(family=family, norm=norm, hidden_size=6, batch_norm_stats="per_timestep")
    solo = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        solo.append(build_model(cfg, input_size=3, seq_len=5))
    ensemble = type(solo[0]).stack(solo).eval()
    x = 3 * torch.randn(2, 4, 5, 3) + 1  # (S, B, T, input_size)
    expected = ensemble(x).detach()
    before = {k: t.clone() for k, t in ensemble.state_dict().items()}
    assert ensemble.to(torch.device("cpu")) is ensemble  # a move to where it is: the same module
    wide = ensemble.to("cpu", torch.float64)
    assert all(t.dtype == torch.float64 for t in wide.state_dict().values())
    torch.testing.assert_close(wide(x.double()), expected.double(), atol=1e-5, rtol=1e-5)
    back = wide.float()
    for name, t in back.state_dict().items():
        torch.testing.assert_close(t, before[name], atol=0, rtol=0)  # float32 -> float64 -> float32 is exact


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("family,options", FAMILY_SETTINGS)
@pytest.mark.parametrize("norm", NORM_KINDS)
def test_every_model_on_cuda_computes_the_cpu_function(family, norm, options):
    cfg = ModelConfig(family=family, norm=norm, hidden_size=6, d_ff=12, **options)
    torch.manual_seed(0)
    model = build_model(cfg, input_size=3, seq_len=5).eval()
    x = 3 * torch.randn(4, 5, 3) + 1
    expected = model(x).detach()
    torch.testing.assert_close(model.cuda()(x.cuda()).cpu(), expected, atol=1e-5, rtol=1e-5)


#: the nn.Module methods a subclass is meant to define; any other name of nn.Module's replaces
#: machinery (an ``_apply`` of a model's own makes ``.double()``, ``.to()``, ``.half()``, ``.cuda()`` raise TypeError)
MODULE_HOOKS = {"forward", "extra_repr", "__init__", "__setstate__"}


def test_no_module_of_lnbench_shadows_a_method_of_nn_module():
    import importlib
    import pkgutil

    import lnbench.nn

    classes = set()
    for info in pkgutil.iter_modules(lnbench.nn.__path__, "lnbench.nn."):
        module = importlib.import_module(info.name)
        classes |= {
            c
            for c in vars(module).values()
            if isinstance(c, type) and issubclass(c, torch.nn.Module) and c.__module__.startswith("lnbench.")
        }
    names = {c.__name__ for c in classes}
    assert {"RNNCellWithNorm", "SimpleRNN", "TransformerBlock", "LayerNorm", "BatchNorm1d"} <= names
    shadowing = {
        f"{c.__qualname__}.{name}"
        for c in classes
        for name in vars(c)
        if hasattr(torch.nn.Module, name) and name not in MODULE_HOOKS and not name.startswith("__")
    }
    assert not shadowing, f"these override nn.Module methods: {sorted(shadowing)}"
