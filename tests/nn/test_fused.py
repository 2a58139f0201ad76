"""The fused recurrence (one C++ autograd node per sequence, lnbench/nn/fused.py) against the
step-by-step Python path, its oracle: in float64 to 1e-10, over every family x norm x placement,
one model and an ensemble of 3, in training and in eval; outputs, every parameter's gradient, the
running statistics and the probes. Then gradcheck and gradgradcheck of the node itself, member
independence, determinism, and the cases that take the Python path."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn import fused
from lnbench.nn.batchnorm import batch_statistics
from lnbench.nn.kernels import recurrence_kernel
from lnbench.nn.lstm import LSTM
from lnbench.nn.models import build_model
from lnbench.nn.rnn import SimpleRNN
from lnbench.training.probes import probe_members

pytestmark = pytest.mark.skipif(os.environ.get("LNBENCH_KERNELS") == "0", reason="LNBENCH_KERNELS=0")

NORMS = ("none", "batch", "layer", "rms", "weight")
CASES = [
    *[pytest.param("lstm", n, "separate", "per_timestep", id=f"lstm-{n}") for n in NORMS],
    *[
        pytest.param("rnn", n, p, s, id=f"rnn-{n}-{p}-{s}")
        for n in NORMS
        for p in ("joint", "separate")
        for s in (("pooled", "per_timestep") if n == "batch" else ("pooled",))
    ],
]


def make(family, norm, placement, stats, members, H=6, n_in=4, T=5, seed=1, dtype=torch.float64, num_layers=1):
    cfg = ModelConfig(family=family, norm=norm, norm_placement=placement, batch_norm_stats=stats, hidden_size=H)
    cfg = cfg.model_copy(update={"num_layers": num_layers})
    torch.manual_seed(seed)
    if members is None:
        return build_model(cfg, n_in, T).to(dtype)
    cls = LSTM if family == "lstm" else SimpleRNN
    return cls.stack([build_model(cfg, n_in, T) for _ in range(members)]).to(dtype)


def run(model, x, y):
    """Logits, hidden states, units, dL/dh_1, dL/dh_T, every parameter's gradient, the buffers."""
    out = model.unroll(x)
    loss = F.cross_entropy(out.logits.reshape(-1, 2), y.reshape(-1), reduction="sum")
    model.zero_grad()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    again = model.unroll(x, probe=True)  # a second forward: BatchNorm tracks it too, on both paths
    first_last = again.first_last_grads(F.cross_entropy(again.logits.reshape(-1, 2), y.reshape(-1), reduction="sum"))
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    per_layer = [
        t for layer, pair in zip(out.layers, first_last, strict=True) for t in (layer.hidden.detach(), *pair)
    ] + [layer.saturated for layer in again.layers]  # every layer's states, dL/dh_1, dL/dh_T, saturation
    return [out.logits.detach(), *per_layer], grads, buffers


def assert_same(a, b, tol=1e-10):
    (va, ga, ba), (vb, gb, bb) = a, b
    for p, q in zip(va, vb, strict=True):
        assert (p is None) == (q is None)
        if p is not None:
            torch.testing.assert_close(p, q, rtol=tol, atol=tol)
    assert ga.keys() == gb.keys() and ba.keys() == bb.keys()
    for k in ga:
        torch.testing.assert_close(ga[k], gb[k], rtol=tol, atol=tol, msg=k)
    for k in ba:
        torch.testing.assert_close(ba[k], bb[k], rtol=tol, atol=tol, msg=k)


def test_the_kernel_is_built():
    assert recurrence_kernel() is not None, "make setup builds it (python -m lnbench.nn.kernels)"


@pytest.mark.parametrize("members", [None, 3])
@pytest.mark.parametrize(("family", "norm", "placement", "stats"), CASES)
def test_kernel_matches_the_python_path_in_float64(family, norm, placement, stats, members, monkeypatch):
    calls = []
    apply = fused.FusedRecurrence.apply
    monkeypatch.setattr(fused.FusedRecurrence, "apply", lambda *a: calls.append(1) or apply(*a))
    model = make(family, norm, placement, stats, members)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    lead = () if members is None else (members,)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*lead, 8, 5, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (*lead, 8), generator=g)
    for training in (True, False):
        model.train(training), reference.train(training)
        assert_same(run(model, x, y), run(reference, x, y))
    assert calls, "the kernel path was taken"


@pytest.mark.parametrize(
    ("family", "norm", "placement", "stats"),
    [
        *[("lstm", n, "separate", "per_timestep") for n in ("none", "batch", "layer", "rms")],
        ("rnn", "layer", "joint", "pooled"),
        ("rnn", "batch", "separate", "per_timestep"),
    ],
)
def test_kernel_matches_the_python_path_in_float32(family, norm, placement, stats):
    """float32, where the kernel sums a row's statistics in 16 float lanes (H = 20: the LSTM's rows
    of 80 are 5 whole vectors, the RNN's of 20 one vector and a tail) and a timestep's parameter
    gradients in float: within float32's rounding of the Python path's (torch's own reductions)."""
    model = make(family, norm, placement, stats, 3, H=20, n_in=16, T=6, dtype=torch.float32)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 16, 6, 16, generator=g)
    y = torch.randint(0, 2, (3, 16), generator=g)
    for training in (True, False):
        model.train(training), reference.train(training)
        assert_same(run(model, x, y), run(reference, x, y), tol=2e-5)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-10), (torch.float32, 2e-5)])
@pytest.mark.parametrize(("family", "norm", "placement"), [("lstm", "layer", "separate"), ("rnn", "none", "joint")])
def test_the_per_timestep_products_cover_every_row_block_and_a_partial_panel(family, norm, placement, dtype, tol):
    """The kernel's per-timestep products (h_{t-1} W_h^T and dR_t W_h, per member) go over a
    member's rows in blocks of 16, 8, 4 and 1 and over W_h's columns in panels of one vector (8
    doubles, 16 floats): at B = 29 (16 + 8 + 4 + 1 rows) and H = 20 (the last panel of 20 or 80
    columns partial in float64, of 20 in float32) an ensemble of 2 matches the Python path (torch's
    matrix products) to float64's or float32's rounding, forward and backward."""
    model = make(family, norm, placement, "pooled", 2, H=20, n_in=16, T=6, dtype=dtype)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 29, 6, 16, generator=g, dtype=dtype)
    y = torch.randint(0, 2, (2, 29), generator=g)
    assert_same(run(model, x, y), run(reference, x, y), tol=tol)


@pytest.mark.parametrize("family", ["rnn", "lstm"])
def test_batch_statistics_in_groups_and_the_probes_match(family):
    """BatchNorm's eval with batch statistics of groups of 4 (the probes at batch size 4), and
    every probe of lnbench.training.probes, kernel against Python path."""
    model = make(family, "batch", "separate", "per_timestep", 3)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 8, 5, 4, generator=g, dtype=torch.float64)
    with batch_statistics(model, 4), batch_statistics(reference, 4):
        model.eval(), reference.eval()
        torch.testing.assert_close(model(x), reference(x), rtol=1e-10, atol=1e-10)
    y, scale = torch.randint(0, 2, (3, 8), generator=g), torch.rand(3, 8, generator=g)
    for batch_size in (None, 4):
        got = probe_members(model, x, y, scale, batch_size)
        want = probe_members(reference, x, y, scale, batch_size)
        for a, b in zip(got, want, strict=True):
            assert a.correct == b.correct
            for key in ("loss", "saturation", "grad_ratio"):
                assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-9), key
            assert a.hidden_norm == pytest.approx(b.hidden_norm, rel=1e-9)


@pytest.mark.parametrize("family", ["rnn", "lstm"])
def test_a_batch_that_is_not_whole_groups_raises_value_error_on_both_paths(family):
    """batch_statistics(model, 4) on a batch of 7: the kernel raises the ValueError that
    batch_statistics documents, with the same message as the Python path (its oracle)."""
    model = make(family, "batch", "separate", "per_timestep", None)
    model.eval()
    x = torch.randn(7, 5, 4, dtype=torch.float64)
    messages = []
    for use_kernel in (True, False):
        model.use_kernel = use_kernel
        with batch_statistics(model, 4), pytest.raises(ValueError, match="batch of 7 is not a whole number") as e:
            model(x)
        messages.append(str(e.value))
    assert messages[0] == messages[1]


SPECS = [
    pytest.param(
        fused.Recurrence(
            lstm=True, inner=False, mode_h="over_features", mode_c="over_features", mode_x="over_features"
        ),
        id="ln-lstm",
    ),
    pytest.param(
        fused.Recurrence(
            lstm=True, inner=False, mode_h="over_batch", mode_c="over_batch", mode_x="over_batch", group=2
        ),
        id="bn-lstm",
    ),
    pytest.param(
        fused.Recurrence(lstm=True, inner=False, mode_h="affine", mode_c="affine", mode_x="affine"), id="bn-lstm-eval"
    ),
    pytest.param(fused.Recurrence(lstm=False, inner=True, mode_h="rms_over_features"), id="rms-rnn-joint"),
    pytest.param(
        fused.Recurrence(lstm=False, inner=False, mode_h="over_features", mode_x="over_batch", group=4),
        id="rnn-separate",
    ),
]


def node_inputs(spec, S=2, T=3, B=4, H=3, seed=4, h0=False):
    g = torch.Generator().manual_seed(seed)
    G = 4 * H if spec.lstm else H

    def r(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).requires_grad_()

    def params(mode, D):
        if mode == "none":
            return [None] * 4
        if mode == "affine":
            return [None, None, r(T, S, D, scale=0.5), r(T, S, D)]
        return [r(S, D), None if mode == "rms_over_features" else r(S, D), None, None]

    c = params(spec.mode_c, H) if spec.lstm else [None] * 4
    tap = torch.zeros(T, S, B, H, dtype=torch.float64, requires_grad=True)
    start = r(S, B, H, scale=0.3) if h0 else None  # the initial state h_0 (None: zeros)
    return (
        r(S, T, B, G),
        r(S, G, H, scale=0.5),
        r(S, G),
        *params(spec.mode_h, G),
        *c,
        tap,
        *params(spec.mode_x, G),
        start,
    )


@pytest.mark.parametrize("h0", [False, True], ids=["h0-zero", "h0-given"])
@pytest.mark.parametrize("spec", SPECS)
def test_gradcheck_and_gradgradcheck_of_the_fused_node(spec, h0):
    """Every input's gradient against finite differences (torch.autograd.gradcheck), with h_0 = 0
    or a given initial state h_0 (whose own gradient dL/dh_0 is checked too), and the forward
    against the recurrence in torch ops."""
    inputs = node_inputs(spec, h0=h0)
    present = [i for i, t in enumerate(inputs) if t is not None]

    def f(*xs):
        full = list(inputs)
        for i, t in zip(present, xs, strict=True):
            full[i] = t
        h_T, H = fused.FusedRecurrence.apply(spec, *full)[:2]
        return h_T, H

    args = tuple(inputs[i] for i in present)
    assert torch.autograd.gradcheck(f, args)
    assert torch.autograd.gradgradcheck(f, args)  # double backward: the recomputed torch-ops recurrence
    H_kernel = f(*args)[1]
    H_reference = fused.reference_recurrence(spec, *inputs)[0]
    torch.testing.assert_close(H_kernel, H_reference, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("num_layers", [1, 2])
def test_members_stay_independent_bit_for_bit(num_layers):
    """Member s of an ensemble does not see member r: changing one member's input leaves the
    others' outputs and gradients bit for bit the same (a stacked model's every layer too)."""
    model = make("lstm", "batch", "separate", "per_timestep", 3, num_layers=num_layers).float()
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 8, 5, 4, generator=g)
    x2 = x.clone()
    x2[1] += 3.0
    outs = []
    for inp in (x, x2):
        m = copy.deepcopy(model)
        logits = m(inp)
        logits[[0, 2]].sum().backward()
        top = m.cells[-1]
        per_layer = [(c.W_h.grad.clone(), c.norm_h.running_mean.clone()) for c in m.cells]
        outs.append((logits.detach(), per_layer, top.norm_c.running_var.clone()))
    (logits, layers, top_var), (logits2, layers2, top_var2) = outs
    for s in (0, 2):
        assert torch.equal(logits[s], logits2[s])
        for (grad, running), (grad2, running2) in zip(layers, layers2, strict=True):
            assert torch.equal(grad[s], grad2[s])
            assert torch.equal(running[:, s], running2[:, s])  # per-timestep statistics: (T, S, 1, 4H)
        assert torch.equal(top_var[:, s], top_var2[:, s])
    assert not torch.equal(logits[1], logits2[1])
    assert len(layers) == num_layers and not torch.equal(
        layers[-1][1][:, 1], layers2[-1][1][:, 1]
    )  # the top layer sees member 1's change


def test_seeds_stay_deterministic():
    results = []
    for _ in range(2):
        model = make("lstm", "layer", "separate", "pooled", None).float()
        x = torch.randn(8, 5, 4, generator=torch.Generator().manual_seed(6))
        loss = model(x).square().sum()
        loss.backward()
        results.append((loss.detach(), model.cell.W_h.grad.clone()))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_a_model_with_the_kernel_off_or_float16_takes_the_python_path(monkeypatch):
    monkeypatch.setattr(fused.FusedRecurrence, "apply", lambda *a: pytest.fail("the kernel path was taken"))
    model = make("lstm", "layer", "separate", "pooled", None)
    model.use_kernel = False
    model(torch.randn(2, 5, 4, dtype=torch.float64))
    assert not fused.kernel_covers(make("rnn", "layer", "joint", "pooled", None), torch.randn(2, 5, 4).half())
    assert not fused.kernel_covers(make("rnn", "layer", "joint", "pooled", None), torch.randn(2, 0, 4))


@pytest.mark.parametrize("family", ["lstm", "rnn"])
def test_a_subclass_of_a_built_in_norm_takes_the_python_path_with_its_own_forward(family):
    """A user's subclass of LayerNorm may change the arithmetic (here: twice LayerNorm's output):
    the model runs its forward on the step-by-step Python path, not the kernel's LayerNorm (the
    oracle: the same model with the kernel off; the kernel's LayerNorm would give other logits)."""
    from lnbench.nn.layernorm import LayerNorm

    class Twice(LayerNorm):
        def forward(self, x):
            return 2 * super().forward(x)

    model = make(family, "layer", "separate" if family == "lstm" else "joint", "pooled", None)
    plain = copy.deepcopy(model)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is LayerNorm:
                twice = Twice(child.features, eps=child.eps).to(torch.float64)
                twice.load_state_dict(child.state_dict())
                setattr(parent, name, twice)
    x = torch.randn(3, 5, 4, dtype=torch.float64)
    assert fused.kernel_covers(plain, x)
    got = model(x)
    model.use_kernel = False
    torch.testing.assert_close(got, model(x), rtol=1e-12, atol=1e-12)
    assert not torch.allclose(got, plain(x), atol=1e-3)  # Twice's output, not LayerNorm's
