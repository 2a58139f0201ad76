"""Probes and the fair-model options, on hand-made models whose values are known."""

import math

import pytest
import torch

from lnbench.config import ModelConfig
from lnbench.nn.models import SimpleRNN, TransformerClassifier, sinusoidal_positions
from lnbench.training.probes import probe_members, scale_quartiles


def _scaled_inputs(n=40, T=5, H=6, seed=0):
    """Sequences x_i = s_i * v_i with s spread over 16x: (1, N, T, H), scales (1, N)."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, T, H, generator=g)
    s = torch.exp(torch.linspace(math.log(0.25), math.log(4.0), n))
    y = torch.arange(n) % 2
    return (s[:, None, None] * v).unsqueeze(0), y.unsqueeze(0), s.unsqueeze(0)


def _rnn(norm, placement, H=6, seed=0):
    torch.manual_seed(seed)
    return SimpleRNN(ModelConfig(norm=norm, hidden_size=H, norm_placement=placement), H, seq_len=5).eval()


def test_separate_layer_norm_cell_is_invariant_to_the_input_scale():
    """LN(W_hh h) + LN(W_xh x) + b: scaling x by c changes nothing (Ba et al.'s LN-LSTM form),
    up to eps = 1e-5 against the variance (so the smallest inputs here have scale 4)."""
    X, _, _ = _scaled_inputs()
    model = _rnn("layer", "separate")
    with torch.no_grad():
        _, h = model(16 * X[0], return_hidden=True)
        _, h_scaled = model(7.5 * 16 * X[0], return_hidden=True)
    torch.testing.assert_close(h_scaled, h, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("norm,placement", [("layer", "joint"), ("none", "joint"), ("none", "separate")])
def test_other_cells_are_not_scale_invariant(norm, placement):
    X, _, _ = _scaled_inputs()
    model = _rnn(norm, placement)
    with torch.no_grad():
        _, h = model(X[0], return_hidden=True)
        _, h_scaled = model(7.5 * X[0], return_hidden=True)
    assert (h_scaled - h).abs().max() > 1e-2


def test_probes_tell_a_scale_following_state_from_a_normalized_one():
    X, y, s = _scaled_inputs(n=80)
    (nonorm,) = probe_members(_rnn("none", "joint"), X, y, s)
    (layer,) = probe_members(_rnn("layer", "separate"), X, y, s)
    assert nonorm.scale_spearman > 0.8  # ||h_T|| grows with s
    quart = torch.tensor(nonorm.hidden_norm_by_scale)  # (4, T): the largest quartile on top
    assert (quart[3] > quart[0]).all()
    q = torch.tensor(layer.hidden_norm_by_scale)
    assert ((q[3] - q[0]).abs() < 1e-4).all() or layer.scale_spearman is None or abs(layer.scale_spearman) < 0.5
    assert nonorm.saturation_by_scale[3] > nonorm.saturation_by_scale[0]


def test_saturation_is_the_fraction_of_units_past_0_99():
    X, y, s = _scaled_inputs()
    model = _rnn("none", "joint")
    with torch.no_grad():
        model.cell.W_xh.fill_(0.0)
        model.cell.W_hh.fill_(0.0)
        model.cell.bias.copy_(torch.tensor([10.0, 10.0, 0.0, 0.0, -10.0, 0.0]))  # tanh(+-10) saturates: 3 of 6 units
    (p,) = probe_members(model, X, y, s)
    assert p.saturation == pytest.approx(0.5)
    assert p.saturation_by_scale == pytest.approx([0.5] * 4)


def test_grad_ratio_is_the_product_of_the_recurrent_jacobians():
    """W_xh = 0, bias 0: every h_t = 0, tanh'(0) = 1, so dL/dh_1 = (a I)^(T-1) dL/dh_T: ratio a^(T-1)."""
    X, y, s = _scaled_inputs(T=5)
    model = _rnn("none", "joint")
    with torch.no_grad():
        model.cell.W_xh.zero_()
        model.cell.W_hh.copy_(0.5 * torch.eye(6))
    (p,) = probe_members(model, X, y, s)
    assert p.grad_ratio == pytest.approx(0.5**4, rel=1e-5)


def test_probe_eval_metrics_match_a_plain_forward():
    X, y, s = _scaled_inputs()
    model = _rnn("layer", "joint")
    (p,) = probe_members(model, X, y, s)
    with torch.no_grad():
        logits, h = model(X[0], return_hidden=True)
    assert p.acc == (logits.argmax(-1) == y[0]).sum().item() / y.shape[1]
    assert p.loss == pytest.approx(torch.nn.functional.cross_entropy(logits, y[0]).item(), rel=1e-5)
    torch.testing.assert_close(torch.tensor(p.hidden_norm), h.norm(dim=-1).mean(0))
    assert p.correct == (logits.argmax(-1) == y[0]).long().tolist()


def test_scale_quartiles_by_rank():
    q = scale_quartiles(torch.tensor([[5.0, 1.0, 7.0, 3.0, 2.0, 8.0, 6.0, 4.0]]))
    assert q.tolist() == [[2, 0, 3, 1, 0, 3, 2, 1]]


def test_transformer_with_input_layer_norm_is_scale_invariant_and_without_is_not():
    X, _, _ = _scaled_inputs(T=5, H=6)
    torch.manual_seed(0)
    fair = TransformerClassifier(ModelConfig(family="transformer", norm="layer", hidden_size=8), 6, seq_len=5).eval()
    torch.manual_seed(0)
    seed_cfg = ModelConfig(
        family="transformer", norm="layer", hidden_size=8, pos_emb="learned", pos_emb_std=0.02, input_norm=False
    )
    seed_like = TransformerClassifier(seed_cfg, 6, seq_len=5).eval()
    with torch.no_grad():
        torch.testing.assert_close(fair(9.0 * 16 * X[0]), fair(16 * X[0]), atol=1e-4, rtol=1e-4)  # up to eps
        assert (seed_like(9.0 * X[0]) - seed_like(X[0])).abs().max() > 1e-2
    assert fair.input_proj.bias is None and seed_like.input_proj.bias is not None


def test_sinusoidal_positions_follow_vaswani_section_3_5():
    pe = sinusoidal_positions(7, 6)
    for t in (0, 3, 6):
        for i in range(3):
            angle = t / 10000 ** (2 * i / 6)
            assert pe[t, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[t, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert sinusoidal_positions(3, 5).shape == (3, 5)  # odd D: the last column is a sine


def test_learned_positions_start_at_the_configured_std():
    torch.manual_seed(0)
    cfg = ModelConfig(family="transformer", norm="none", hidden_size=64, pos_emb="learned", pos_emb_std=1.0)
    m = TransformerClassifier(cfg, 4, seq_len=50)
    assert m.pos_emb.std().item() == pytest.approx(1.0, rel=0.05) and m.pos_emb.requires_grad


@pytest.mark.parametrize("gain", [1.0, 3.0])
def test_orthogonal_recurrent_init_has_every_singular_value_equal_to_the_gain(gain):
    torch.manual_seed(0)
    m = SimpleRNN(ModelConfig(norm="none", hidden_size=16, recurrent_init="orthogonal", recurrent_gain=gain), 4)
    torch.testing.assert_close(
        torch.linalg.svdvals(m.cell.W_hh.detach()), torch.full((16,), gain), atol=1e-4, rtol=1e-4
    )
    torch.manual_seed(0)
    u = SimpleRNN(ModelConfig(norm="none", hidden_size=16, recurrent_gain=gain), 4)
    assert u.cell.W_hh.abs().max() <= gain / 4 and u.cell.W_hh.abs().max() > 0.9 * gain / 4  # U(-g/sqrt(H), g/sqrt(H))


def test_separate_placement_normalizes_each_term_with_its_own_norm():
    """Against torch.nn.functional.layer_norm on each term (the oracle)."""
    torch.manual_seed(0)
    m = SimpleRNN(ModelConfig(norm="layer", hidden_size=6, norm_placement="separate"), 5)
    with torch.no_grad():
        m.cell.norm.gamma.uniform_(0.5, 1.5)
        m.cell.norm_x.beta.uniform_(-0.5, 0.5)
        m.cell.bias.uniform_(-0.5, 0.5)
    x, h = torch.randn(3, 5), torch.randn(3, 6)
    c = m.cell
    ln = torch.nn.functional.layer_norm
    expected = torch.tanh(
        ln(h @ c.W_hh.T, (6,), c.norm.gamma, c.norm.beta, 1e-5)
        + ln(x @ c.W_xh.T, (6,), c.norm_x.gamma, c.norm_x.beta, 1e-5)
        + c.bias
    )
    torch.testing.assert_close(c(x, h), expected)


def test_scale_spearman_is_of_the_last_hidden_state():
    """A memoryless cell (W_hh = 0) fed scale 1 until the last step, which carries s: only
    ||h_T|| follows s, so the correlation is ~1 (and would be ~0 at any other timestep)."""
    _, y, s = _scaled_inputs(n=60)
    g = torch.Generator().manual_seed(1)
    X = torch.randn(1, 60, 5, 6, generator=g) * 0.1
    X[0, :, -1] = s[0, :, None] * torch.ones(6) * 0.1  # (N, H): the last step grows with s
    model = _rnn("none", "joint")
    with torch.no_grad():
        model.cell.W_hh.zero_()
    (p,) = probe_members(model, X, y, s)
    assert p.scale_spearman > 0.95


# ---- batch statistics: the whole mini-batches in one pass, the remainder in another ----------


def test_probe_passes_cover_every_example_once():
    from lnbench.training.probes import probe_passes

    assert probe_passes(1000, 64) == [(0, 960, 64), (960, 1000, 40)]
    assert probe_passes(1000, 1) == [(0, 1000, 1)]
    assert probe_passes(10, 5) == [(0, 10, 5)]
    assert probe_passes(3, 8) == [(0, 3, 3)]  # fewer examples than a batch: one smaller batch
    assert probe_passes(0, 4) == []
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        probe_passes(10, 0)


@pytest.mark.parametrize("batch_size", [1, 3, 7])
def test_batch_statistics_probes_match_one_mini_batch_at_a_time(batch_size):
    """The accuracy with batch statistics and the initial probes (batch mode) of a BatchNorm RNN
    ensemble equal a loop over consecutive mini-batches of batch_size (N = 40: a remainder at 3, 7)."""
    from lnbench.nn.batchnorm import batch_statistics
    from lnbench.training.loop import correct_with_batch_stats

    X, y, s = _scaled_inputs()
    models = [_rnn("batch", "joint", seed=k) for k in range(2)]
    model = SimpleRNN.stack(models).eval()
    Xs, ys, ss = torch.cat([X, 0.5 * X]), torch.cat([y, 1 - y]), torch.cat([s, s])  # (2, 40, ...): a member each
    correct = correct_with_batch_stats(model, Xs, ys, batch_size)
    probes = probe_members(model, Xs, ys, ss, batch_size=batch_size)
    for k, solo in enumerate(models):
        logits, hidden = [], []
        for i in range(0, 40, batch_size):
            with torch.no_grad(), batch_statistics(solo):
                out, h = solo(Xs[k, i : i + batch_size], return_hidden=True)
            logits.append(out), hidden.append(h)
        expected = (torch.cat(logits).argmax(-1) == ys[k]).long().tolist()
        assert correct[k] == expected
        torch.testing.assert_close(torch.tensor(probes[k].hidden_norm), torch.cat(hidden).norm(dim=-1).mean(0))
    assert all(m.batch_group is None for m in model.modules() if hasattr(m, "batch_group"))


def test_every_probe_is_recorded_in_a_per_epoch_metrics_field_of_its_name():
    """record_probes puts each LayerProbes field into the Metrics field of its name: each must be
    declared per epoch (records.schema.epoch_fields), or the loop would drop it."""
    from lnbench.records.schema import PER_EPOCH_SHAPES, epoch_fields
    from lnbench.training.probes import PROBES

    declared = {name for shape in PER_EPOCH_SHAPES for name in epoch_fields(shape)}
    assert set(PROBES) <= declared
    assert set(PROBES) == {
        "hidden_norm",
        "hidden_norm_by_scale",
        "scale_spearman",
        "saturation",
        "saturation_by_scale",
        "grad_ratio",
    }
