"""lnbench.nn.models: build_model and every model's dtype and device conversion (each model's
shapes and equations: test_rnn.py, test_transformer.py, test_lstm.py)."""

import pytest
import torch

from lnbench.config import ModelConfig
from lnbench.names import NORM_KINDS
from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.models import SimpleRNN, TransformerClassifier, build_model


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
