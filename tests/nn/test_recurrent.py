"""Stacked recurrent layers (``model.num_layers``, lnbench.nn.recurrent.RecurrentClassifier) against
their oracles: a 2-layer model is a hand-stacked pair of 1-layer models with the same weights (layer
1's h_1 .. h_T fed to layer 2 by hand), in float64 to 1e-10, outputs and every gradient, on the
kernel and on the Python path; with norm none torch.nn.LSTM / torch.nn.RNN(num_layers=2); every
layer its own norms and gains (the BN-LSTM's 0.1 in both); seed ensembles of stacked models member
by member; the per-layer probes; the config, memory and cost keys."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig, RunConfig
from lnbench.config.checks import check_keys_apply, memory_needed
from lnbench.nn import fused
from lnbench.nn.lstm import LSTM
from lnbench.nn.models import build_model
from lnbench.nn.rnn import SimpleRNN
from lnbench.training.probes import PROBES, probe_members

H, D, T, B = 5, 3, 6, 8
KERNEL = os.environ.get("LNBENCH_KERNELS") != "0"
PATHS = ["kernel", "python"] if KERNEL else ["python"]
CASES = [
    pytest.param("lstm", "layer", "joint", id="ln-lstm"),
    pytest.param("lstm", "batch", "joint", id="bn-lstm"),
    pytest.param("lstm", "none", "joint", id="lstm"),
    pytest.param("rnn", "layer", "joint", id="ln-rnn-joint"),
    pytest.param("rnn", "layer", "separate", id="ln-rnn-separate"),
    pytest.param("rnn", "batch", "separate", id="bn-rnn-separate"),
    pytest.param("rnn", "rms", "joint", id="rms-rnn-joint"),
    pytest.param("rnn", "weight", "separate", id="wn-rnn-separate"),
]


def _cfg(family, norm, placement="joint", num_layers=2, **kw):
    return ModelConfig(
        family=family,
        norm=norm,
        norm_placement=placement,
        batch_norm_stats="per_timestep",
        hidden_size=H,
        num_layers=num_layers,
        **kw,
    )


def _model(family, norm, placement="joint", num_layers=2, seed=0, members=None, **kw):
    torch.manual_seed(seed)
    cfg = _cfg(family, norm, placement, num_layers, **kw)
    if members is None:
        return build_model(cfg, D, T).double()
    cls = LSTM if family == "lstm" else SimpleRNN
    return cls.stack([build_model(cfg, D, T) for _ in range(members)]).double()


def _hand_stacked(model):
    """Two 1-layer models holding the 2-layer ``model``'s weights: ``bottom`` its layer 1 (input D),
    ``top`` its layer 2 (input H) and its head."""
    cfg = model.cfg.model_copy(update={"num_layers": 1})
    cls = type(model)
    bottom = cls(cfg, D, seq_len=T).double()
    top = cls(cfg, H, seq_len=T).double()
    with torch.no_grad():
        for one, names in ((bottom, {"cell": "cell"}), (top, {"cell": "cell_2", "head": "head"})):
            stacked = dict(model.named_parameters()) | dict(model.named_buffers())
            for name, t in list(one.named_parameters()) + list(one.named_buffers()):
                owner, _, rest = name.partition(".")
                if owner in names:
                    t.copy_(stacked[f"{names[owner]}.{rest}"])
    return bottom, top


def _use(path, *models):
    for m in models:
        m.use_kernel = path == "kernel"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("family", "norm", "placement"), CASES)
def test_a_two_layer_model_is_a_hand_stacked_pair_of_one_layer_models(family, norm, placement, path):
    """The oracle of stacking: layer 1's h_1 .. h_T, computed by a 1-layer model alone, are the
    input sequence of a second 1-layer model, whose head gives the logits; outputs, the input's
    gradient, every parameter's gradient and BatchNorm's running statistics agree to 1e-10 (float64),
    in training and in eval."""
    model = _model(family, norm, placement)
    bottom, top = _hand_stacked(model)
    _use(path, model, bottom, top)
    g = torch.Generator().manual_seed(1)
    x = (2 * torch.randn(B, T, D, generator=g, dtype=torch.float64) + 1).requires_grad_()
    y = torch.randint(0, 2, (B,), generator=g)
    for training in (True, False):
        for m in (model, bottom, top):
            m.train(training)
            m.zero_grad()
        x.grad = None
        logits, hidden = model(x, return_hidden=True)
        F.cross_entropy(logits, y).backward()
        x_grad = x.grad.clone()
        x.grad = None
        _, states = bottom(x, return_hidden=True)  # layer 1 alone: its h_1 .. h_T
        want_logits, want_hidden = top(states, return_hidden=True)
        F.cross_entropy(want_logits, y).backward()
        tol = {"rtol": 1e-10, "atol": 1e-10}
        torch.testing.assert_close(logits, want_logits, **tol)
        torch.testing.assert_close(hidden, want_hidden, **tol)  # return_hidden: the top layer's
        torch.testing.assert_close(x_grad, x.grad, **tol)
        got = dict(model.named_parameters())
        pairs = [(bottom, "cell", "cell"), (top, "cell", "cell_2"), (top, "head", "head")]
        for one, mine, theirs in pairs:
            for name, p in one.named_parameters():
                if name.startswith(mine + ".") and p.requires_grad:
                    other = got[theirs + name[len(mine) :]]
                    assert other.grad is not None, theirs + name[len(mine) :]
                    torch.testing.assert_close(other.grad, p.grad, **tol, msg=name)
            buffers = dict(model.named_buffers())
            for name, b in one.named_buffers():
                if name.startswith(mine + "."):
                    torch.testing.assert_close(buffers[theirs + name[len(mine) :]], b, **tol, msg=name)


@pytest.mark.parametrize("family", ["lstm", "rnn"])
def test_with_norm_none_a_two_layer_model_is_torchs_own_two_layer_recurrence(family):
    """torch.nn.LSTM / torch.nn.RNN(num_layers=2) with the same weights (its bias b_ih + b_hh is
    ours; the LSTM's gate rows permuted i, f, g, o -> i, f, o, g), float64: h of the top layer
    and the input's gradient."""
    model = _model(family, "none")
    ref = (torch.nn.LSTM if family == "lstm" else torch.nn.RNN)(D, H, num_layers=2, batch_first=True).double()

    def rows(w):
        if family == "rnn":
            return w
        i, f, g, o = w.split(H)
        return torch.cat([i, f, o, g])

    with torch.no_grad():
        for k, cell in enumerate(model.cells):
            W_x, W_h = ("W_x", "W_h") if family == "lstm" else ("W_xh", "W_hh")
            getattr(cell, W_x).copy_(rows(getattr(ref, f"weight_ih_l{k}")))
            getattr(cell, W_h).copy_(rows(getattr(ref, f"weight_hh_l{k}")))
            cell.bias.copy_(rows(getattr(ref, f"bias_ih_l{k}") + getattr(ref, f"bias_hh_l{k}")))
    x = (3 * torch.randn(B, T, D, dtype=torch.float64) + 1).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    for path in PATHS:
        _use(path, model)
        x.grad, x_ref.grad = None, None
        _, h = model(x, return_hidden=True)
        h_ref = ref(x_ref)[0]
        torch.testing.assert_close(h, h_ref, atol=1e-12, rtol=1e-12)
        upstream = torch.randn(B, T, H, dtype=torch.float64)
        (h * upstream).sum().backward()
        (h_ref * upstream).sum().backward()
        torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-12, rtol=1e-12)


def test_every_layer_has_its_own_norms_and_the_papers_gains():
    """Cooijmans et al.'s 0.1 in every norm of every layer of a BN-LSTM, Ba et al.'s 1 in the
    LN-LSTM's, model.norm_gain_init in all of them; each layer's norms are modules of their own."""
    for norm, gain in (("batch", 0.1), ("layer", 1.0)):
        model = _model("lstm", norm, num_layers=3).float()  # built in float32: 0.1 as float32 rounds it
        assert len(model.cells) == 3
        norms = [n for cell in model.cells for n in cell.norms]
        assert len({id(n) for n in norms}) == 9 and len({id(n.gamma) for n in norms}) == 9
        for n in norms:
            assert torch.equal(n.gamma, torch.full_like(n.gamma, gain))
    set_gain = _model("lstm", "batch", norm_gain_init=0.5).float()
    assert all(torch.equal(n.gamma, torch.full_like(n.gamma, 0.5)) for c in set_gain.cells for n in c.norms)
    rnn = _model("rnn", "layer", "separate")
    assert [len(c.norms) for c in rnn.cells] == [2, 2] and rnn.cells[1].input_size == H
    assert rnn.cells[0].input_size == D


def test_a_one_layer_model_draws_the_same_weights_as_before_stacking():
    """Layer 1 stays ``cell`` and the head is built after every layer: a 1-layer model's parameter
    names and initial weights are those of before stacking (and a 2-layer model's layer 1 and
    the 1-layer model's draw the same W_hh and W_xh from the same seed)."""
    one, two = _model("rnn", "layer", num_layers=1), _model("rnn", "layer", num_layers=2)
    assert [n for n, _ in one.named_parameters()] == ["cell.W_hh", "cell.W_xh", "cell.norm.gamma", "cell.norm.beta"] + [
        "head.weight",
        "head.bias",
    ]
    assert torch.equal(one.cell.W_hh, two.cell.W_hh) and torch.equal(one.cell.W_xh, two.cell.W_xh)
    assert not torch.equal(two.cell.W_hh, two.cell_2.W_hh)  # layer 2 draws its own


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("family", "norm", "placement"), [("lstm", "batch", "joint"), ("rnn", "layer", "separate")])
def test_a_stacked_ensemble_is_its_members(family, norm, placement, path):
    """``stack()`` of 2-layer solo models: member s computes model s (logits, hidden states and
    the gradients of every layer to 1e-10). (Bit for bit independence of the members:
    tests/nn/test_fused.py, test_members_stay_independent_bit_for_bit at 2 layers.)"""
    solos = [_model(family, norm, placement, seed=s).float() for s in (0, 1, 2)]
    ensemble = type(solos[0]).stack(solos).double()
    solos = [solo.double() for solo in solos]
    _use(path, ensemble, *solos)
    x = 2 * torch.randn(3, B, T, D, dtype=torch.float64) + 1
    logits, hidden = ensemble(x, return_hidden=True)
    logits.sum().backward()
    grads = {n: p.grad for n, p in ensemble.named_parameters() if p.grad is not None}
    for s, solo in enumerate(solos):
        want_logits, want_hidden = solo(x[s], return_hidden=True)
        want_logits.sum().backward()
        torch.testing.assert_close(logits[s], want_logits, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(hidden[s], want_hidden, rtol=1e-10, atol=1e-10)
        for name, p in solo.named_parameters():
            if p.grad is not None:
                torch.testing.assert_close(grads[name][s].reshape(p.shape), p.grad, rtol=1e-10, atol=1e-10, msg=name)


@pytest.mark.skipif(not KERNEL, reason="LNBENCH_KERNELS=0")
@pytest.mark.parametrize("members", [None, 3])
@pytest.mark.parametrize(("family", "norm", "placement"), CASES)
def test_the_kernel_runs_every_layer_and_matches_the_python_path(family, norm, placement, members, monkeypatch):
    """Each layer's recurrence is one kernel node (layer 1's differentiable h_1 .. h_T are layer 2's
    input terms' input), float64 to 1e-10 against the step-by-step Python path: logits, every
    layer's states and probes (saturation, dL/dh_1, dL/dh_T), every gradient, the buffers."""
    calls = []
    apply = fused.FusedRecurrence.apply
    monkeypatch.setattr(fused.FusedRecurrence, "apply", lambda *a: calls.append(1) or apply(*a))
    model = _model(family, norm, placement, members=members)
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    lead = () if members is None else (members,)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*lead, B, T, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (*lead, B), generator=g)

    def run(m):
        out = m.unroll(x)
        m.zero_grad()
        F.cross_entropy(out.logits.reshape(-1, 2), y.reshape(-1), reduction="sum").backward()
        grads = {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
        again = m.unroll(x, probe=True)
        pairs = again.first_last_grads(F.cross_entropy(again.logits.reshape(-1, 2), y.reshape(-1), reduction="sum"))
        values = [out.logits.detach()]
        for layer, probe_layer, (first, last) in zip(out.layers, again.layers, pairs, strict=True):
            values += [layer.hidden.detach(), probe_layer.saturated, first, last]
        return values, grads, {n: b.clone() for n, b in m.named_buffers()}

    for training in (True, False):
        model.train(training), reference.train(training)
        calls.clear()
        (va, ga, ba), (vb, gb, bb) = run(model), run(reference)
        assert len(calls) == 4, "two layers, two forwards: four kernel nodes"
        assert len(va) == 1 + 4 * 2
        for p, q in zip(va, vb, strict=True):
            torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-10)
        assert ga.keys() == gb.keys() and any(k.startswith("cell_2.") for k in ga)
        for k in ga:
            torch.testing.assert_close(ga[k], gb[k], rtol=1e-10, atol=1e-10, msg=k)
        for k in ba:
            torch.testing.assert_close(ba[k], bb[k], rtol=1e-10, atol=1e-10, msg=k)


def test_the_probes_of_a_stacked_model_per_layer():
    """probe_members on a 2-layer LN-LSTM: the member's own probes are layer 1's and equal
    ``by_layer[0]``'s; each layer's hidden_norm is the mean ||h_t|| of that layer's states (by hand,
    from the hand-stacked pair), and its grad_ratio ||dL/dh_1|| / ||dL/dh_T|| of its own states
    (autograd through the hand-stacked pair)."""
    model = _model("lstm", "layer")
    bottom, top = _hand_stacked(model)
    for m in (model, bottom, top):
        m.float().eval()
    g = torch.Generator().manual_seed(3)
    X = torch.randn(1, 12, T, D, generator=g)
    y, scale = torch.randint(0, 2, (1, 12), generator=g), torch.rand(1, 12, generator=g) + 0.5
    (entry,) = probe_members(model, X, y, scale)
    with torch.enable_grad():  # by hand: layer 1's states, stacked, are layer 2's input sequence
        states_1 = bottom.layer_states(bottom.cell, X[0], None)
        states_2 = top.layer_states(top.cell, torch.stack(states_1, dim=1), None)
        loss = F.cross_entropy(top.head(states_2[-1]), y[0], reduction="sum")
        grads = torch.autograd.grad(loss, [states_1[0], states_1[-1], states_2[0], states_2[-1]])
    for k, states in enumerate((states_1, states_2)):
        want = torch.stack(states, dim=1).norm(dim=-1).mean(dim=0)
        torch.testing.assert_close(torch.tensor(entry.by_layer[k].hidden_norm), want, rtol=1e-5, atol=1e-6)
        first, last = grads[2 * k : 2 * k + 2]
        assert entry.by_layer[k].grad_ratio == pytest.approx(float(first.norm() / last.norm()), rel=1e-4)
    for key in PROBES:
        assert getattr(entry, key) == getattr(entry.by_layer[0], key), key
    assert len(entry.by_layer) == 2 and entry.by_layer[0].saturation != entry.by_layer[1].saturation
    one = _model("lstm", "layer", num_layers=1).float()
    (single,) = probe_members(one, X, y, scale)
    assert single.by_layer is None


def test_num_layers_applies_to_every_family_and_scales_memory_and_cost():
    for family in ("rnn", "lstm", "transformer"):
        cfg = RunConfig.model_validate({"model": {"family": family, "num_layers": 2}})
        check_keys_apply(cfg, [family])  # no "applies to the transformer only"
    base = RunConfig.model_validate({"model": {"family": "lstm", "hidden_size": 64}})
    deep = base.with_changes(model__num_layers=3)
    # layers 2 and 3: W_h and W_x (4H x H each), b and the norms (20H), with gradients and Adam's
    # moments (16 bytes a value); per timestep 40H activations more each (4 bytes)
    batch = max(base.train.batch_size, base.data.n_test)
    assert memory_needed(deep) - memory_needed(base) == 16 * 2 * (8 * 64 * 64 + 20 * 64) + 4 * batch * (
        base.data.seq_len * 2 * 40 * 64
    )
    from lnbench.experiments.base import Cell
    from lnbench.experiments.cells import step_cost

    cells = [Cell([c.with_changes(seed=0)], "", 0.9, {}, "") for c in (base, deep)]
    assert step_cost(cells[1]) == 3 * step_cost(cells[0])
