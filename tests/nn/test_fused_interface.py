"""The fused recurrence's named interface and its LayerNorm (lnbench/nn/fused.py,
lnbench/nn/csrc/recurrence.cpp, lnbench/nn/csrc/norm.h).

Each norm position's parameters reach that position, by name: with gains and biases that differ
between norm_h, norm_x and norm_c, the kernel's outputs and every named parameter's gradient match
torch autograd of the step-by-step Python path (the oracle). A misnamed or miscounted field
raises. The recurrence's LayerNorm is the module kernel's (one header): the same bits for the same
rows, and rows whose entries lie ~1e19 from their mean (where float squares overflow) normalize as
float64 does."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn import fused
from lnbench.nn.kernels import layernorm_kernel, recurrence_kernel
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.lstm import LSTM
from lnbench.nn.models import build_model
from lnbench.nn.rnn import SimpleRNN

pytestmark = pytest.mark.skipif(os.environ.get("LNBENCH_KERNELS") == "0", reason="LNBENCH_KERNELS=0")


def make(family, members, dtype=torch.float64, H=6, n_in=4, T=5, seed=1):
    cfg = ModelConfig(family=family, norm="layer", norm_placement="separate", hidden_size=H)
    torch.manual_seed(seed)
    if members is None:
        return build_model(cfg, n_in, T).to(dtype)
    cls = LSTM if family == "lstm" else SimpleRNN
    return cls.stack([build_model(cfg, n_in, T) for _ in range(members)]).to(dtype)


def distinct_gains(model, seed=7):
    """Every norm's gamma and beta drawn afresh, so that no two positions share a value."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".norm" in name:
                p.copy_((1.0 if name.endswith("gamma") else 0.0) + torch.randn(p.shape, generator=g, dtype=p.dtype))


def logits_and_grads(model, x, y):
    logits = model(x)
    model.zero_grad()
    F.cross_entropy(logits.reshape(-1, 2), y.reshape(-1), reduction="sum").backward()
    return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("members", [None, 3])
@pytest.mark.parametrize("family", ["lstm", "rnn"])
def test_each_norm_position_gets_its_own_gains_and_their_gradients(family, members, monkeypatch):
    """LayerNorm on h, x (and the LSTM's c) with distinct gains: the kernel's logits and the
    gradient of every named parameter (norm_h.gamma, norm_x.gamma, ...) equal the Python path's
    (torch autograd, float64) to 1e-10; a swap of two positions' gains would not."""
    calls = []
    apply = fused.FusedRecurrence.apply
    monkeypatch.setattr(fused.FusedRecurrence, "apply", lambda *a: calls.append(1) or apply(*a))
    model = make(family, members)
    distinct_gains(model)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    lead = () if members is None else (members,)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*lead, 8, 5, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (*lead, 8), generator=g)
    (got, got_grads), (want, want_grads) = logits_and_grads(model, x, y), logits_and_grads(reference, x, y)
    assert calls, "the kernel path was taken"
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    assert got_grads.keys() == want_grads.keys()
    for name in want_grads:
        torch.testing.assert_close(got_grads[name], want_grads[name], rtol=1e-10, atol=1e-10, msg=name)


def kernel_inputs(S=2, T=3, B=4, H=5, lstm=True, seed=3, dtype=torch.float32):
    """The kernel's Inputs with LayerNorm (over_features) on x and c, U of N(0, 1) rows; Saved keeps
    every x_hat."""
    kernel = recurrence_kernel()
    g = torch.Generator().manual_seed(seed)
    G = 4 * H if lstm else H
    U = torch.randn(S, T, B, G, generator=g, dtype=dtype)
    W_h = torch.randn(S, G, H, generator=g, dtype=dtype) * 0.3

    def slot(D, mode="over_features"):
        ones, zeros = torch.ones(S, D, dtype=dtype), torch.zeros(S, D, dtype=dtype)
        return kernel.NormSlot(mode=fused.MODES[mode], eps=1e-5, gamma=ones, beta=zeros)

    return kernel, kernel.Inputs(
        lstm=lstm,
        inner=False,
        group=B,
        keep_x_hat=True,  # Saved keeps norm_x's and norm_c's x_hat, to look at
        U=U,
        W_h=W_h,
        norm_h=kernel.NormSlot(),
        norm_x=slot(G),
        norm_c=slot(H),
    )


def test_a_misnamed_or_missing_field_raises():
    """Names are checked: an unknown field raises AttributeError (at construction or later), a
    LayerNorm slot without gamma or with a gamma of the wrong size raises naming the slot, Saved
    takes exactly its own number of tensors, and NodeInputs exactly its seventeen."""
    kernel, inputs = kernel_inputs()
    with pytest.raises(AttributeError):
        kernel.NormSlot(mode=1, gama=torch.ones(2, 20))
    with pytest.raises(AttributeError):
        inputs.norm_y = kernel.NormSlot()
    good = kernel.recurrence_forward(inputs)
    inputs.norm_x.gamma = None
    with pytest.raises(RuntimeError, match="norm_x needs gamma"):
        kernel.recurrence_forward(inputs)
    inputs.norm_x.gamma = torch.ones(2, 19)
    with pytest.raises(RuntimeError, match="norm_x.gamma has 38 values, not 40"):
        kernel.recurrence_forward(inputs)
    saved = good.saved.tensors()
    assert torch.equal(kernel.Saved.from_tensors(saved).norm_x.x_hat, good.saved.norm_x.x_hat)
    with pytest.raises(RuntimeError, match="takes 10 tensors, got 9"):
        kernel.Saved.from_tensors(saved[:-1])
    with pytest.raises(TypeError):
        fused.NodeInputs(*[None] * 16)


def test_the_kernel_structs_keep_each_field_under_its_name():
    """Each keyword of a kernel struct's constructor lands in the field of that name (distinct
    values in, the same values read back by name): the binding cannot swap two fields of a type."""
    kernel = recurrence_kernel()
    tensors = {name: torch.full((1,), float(i)) for i, name in enumerate(fused.NORM_PARAMS)}
    slot = kernel.NormSlot(mode=3, eps=0.25, **tensors)
    assert (slot.mode, slot.eps) == (3, 0.25)
    assert {name: getattr(slot, name).item() for name in tensors} == {n: t.item() for n, t in tensors.items()}
    node = {name: torch.full((1,), 10.0 + i) for i, name in enumerate(("U", "W_h", "bias", "tap", "h0"))}
    slots = {f"norm_{p}": kernel.NormSlot(mode=i) for i, p in enumerate(fused.POSITIONS)}
    inputs = kernel.Inputs(lstm=True, inner=False, count_saturated=True, group=7, **node, **slots)
    assert (inputs.lstm, inputs.inner, inputs.count_saturated, inputs.group) == (True, False, True, 7)
    assert {name: getattr(inputs, name).item() for name in node} == {n: t.item() for n, t in node.items()}
    assert [getattr(inputs, f"norm_{p}").mode for p in fused.POSITIONS] == [0, 1, 2]
    flags = [name == "beta" for name in fused.NORM_PARAMS]
    wants = kernel.Wants(
        U=False,
        W_h=True,
        bias=False,
        tap=True,
        h0=True,
        norm_x=kernel.NormWants(**dict(zip(fused.NORM_PARAMS, flags))),
    )
    assert (wants.U, wants.W_h, wants.bias, wants.tap, wants.h0) == (False, True, False, True, True)
    assert [getattr(wants.norm_x, n) for n in fused.NORM_PARAMS] == flags and not wants.norm_h.beta
    grads = kernel.OutputGrads(hidden=node["U"], last=node["tap"])
    assert (grads.hidden.item(), grads.last.item()) == (10.0, 13.0)


def awkward_rows(S, T, B, G, seed=5):
    """(S, T, B, G) float32 rows of four kinds: N(0, 1), N(1e4, 1) (a large common offset),
    N(3, 1), and N(0, 1) * 1e20 (entries ~1e20 from the mean: float squares overflow)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(S, T, B, G, generator=g, dtype=torch.float64)
    kind = torch.arange(B) % 4
    offset = torch.tensor([0.0, 1e4, 3.0, 0.0], dtype=torch.float64)[kind].view(1, 1, B, 1)
    scale = torch.tensor([1.0, 1.0, 1.0, 1e20], dtype=torch.float64)[kind].view(1, 1, B, 1)
    return (offset + scale * x).float()


@pytest.mark.parametrize("H", [5, 64])
def test_the_recurrences_layernorm_is_the_module_kernels_bit_for_bit(H):
    """norm_x's x_hat inside the recurrence (rows of 4H = 20: a 16-float vector and a tail; and
    256) equals lnbench's LayerNorm module (its C++ kernel, gamma 1, beta 0) on the same rows bit
    for bit, and both are within 1e-6 of torch's float64 layer_norm (the oracle), rows ~1e20 from
    their mean included."""
    kernel, inputs = kernel_inputs(H=H, B=8)
    S, T, B, G = inputs.U.shape
    inputs.U = awkward_rows(S, T, B, G)
    x_hat = kernel.recurrence_forward(inputs).saved.norm_x.x_hat.view(T, S, B, G)
    assert layernorm_kernel() is not None
    module = LayerNorm(G)
    rows = inputs.U.transpose(0, 1).contiguous()  # (T, S, B, G), the kernel's order
    with torch.no_grad():
        y = module(rows)
    assert torch.equal(x_hat, y)
    oracle = F.layer_norm(rows.double(), (G,), eps=1e-5)
    torch.testing.assert_close(y.double(), oracle, rtol=0, atol=1e-6)


def test_the_ln_lstm_on_rows_1e19_from_their_mean_matches_float64():
    """An LN-LSTM in float32, the kernel on, whose input terms W_x x_t have entries ~1e19-1e20 from
    their row's mean: its logits match the Python path in float64 (the oracle) to 1e-4, and differ
    between examples (where the squares overflowed, every example got the same logits)."""
    model = make("lstm", 3, dtype=torch.float32, H=16, n_in=8)
    distinct_gains(model)
    reference = copy.deepcopy(model).double()
    reference.use_kernel = False
    g = torch.Generator().manual_seed(9)
    x = torch.randn(3, 8, 5, 8, generator=g) * 1e20  # (S, B, T, I)
    with torch.no_grad():
        U = torch.einsum("sbti,sgi->sbtg", x.double(), model.cell.W_x.double())
        assert (U - U.mean(-1, keepdim=True)).abs().amax() > 1e19
        got, want = model(x), reference(x.double())
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-4)
    assert (got - got[:, :1]).abs().amax() > 1e-2


@pytest.mark.parametrize("lstm", [True, False])
@pytest.mark.parametrize("mode", ["over_features", "rms_over_features", "over_batch", "affine"])
def test_the_backward_recomputes_the_x_hat_it_did_not_keep_bit_for_bit(mode, lstm):
    """By default Saved holds no x_hat of norm_x or norm_c (the forward writes them to one
    timestep's scratch), and the backward recomputes them from U_t and c_t: every gradient (U, W_h,
    each slot's parameters) equals, bit for bit, the backward from the x_hat the forward kept
    (``keep_x_hat``, the oracle), for each mode with parameters, on rows of 4H = 20 (a 16-float
    vector and a tail), 2 members, batch statistics over groups of 2 rows."""
    kernel, kept = kernel_inputs(H=5, B=4, lstm=lstm)
    S, T, B, G = kept.U.shape
    H = G // 4 if lstm else G
    g = torch.Generator().manual_seed(11)

    def slot(D):
        if mode == "affine":
            scale, shift = 1 + torch.randn(T, S, D, generator=g), torch.randn(T, S, D, generator=g)
            return kernel.NormSlot(mode=fused.MODES[mode], scale=scale, shift=shift)
        gamma, beta = 1 + torch.randn(S, D, generator=g), torch.randn(S, D, generator=g)
        return kernel.NormSlot(mode=fused.MODES[mode], eps=1e-5, gamma=gamma, beta=None if "rms" in mode else beta)

    kept.group = 2
    kept.U = kept.U * 3 + 1  # rows with a mean to take away
    kept.norm_h, kept.norm_x, kept.norm_c = slot(G), slot(G), slot(H)
    every = {name: True for name in fused.NORM_PARAMS}
    wants = kernel.Wants(
        U=True,
        W_h=True,
        norm_h=kernel.NormWants(**every),
        norm_x=kernel.NormWants(**every),
        norm_c=kernel.NormWants(**every),
    )
    grads = {}
    inputs = kept
    for name in ("kept", "recomputed"):
        inputs.keep_x_hat = name == "kept"
        out = kernel.recurrence_forward(inputs)
        dh = torch.randn(out.hidden.shape, generator=torch.Generator().manual_seed(12))
        assert out.saved.norm_h.x_hat is not None
        assert (out.saved.norm_x.x_hat is None) == (name == "recomputed")
        assert (out.saved.norm_c.x_hat is None) == (name == "recomputed" or not lstm)
        grads[name] = kernel.recurrence_backward(inputs, out.saved, kernel.OutputGrads(hidden=dh), wants)
    for field in ("U", "W_h"):
        assert torch.equal(getattr(grads["kept"], field), getattr(grads["recomputed"], field)), field
    for position in fused.POSITIONS:
        for param in fused.NORM_PARAMS:
            want, got = (getattr(getattr(grads[k], f"norm_{position}"), param) for k in ("kept", "recomputed"))
            assert (want is None) == (got is None), (position, param)
            if want is not None:
                assert torch.equal(want, got), (position, param)
