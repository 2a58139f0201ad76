"""The LSTM family against its oracles: torch.nn.LSTM (norm none, float64, forward and gradients),
the LN-LSTM (Ba et al. 2016) and BN-LSTM (Cooijmans et al. 2016, eq. 6-8) equations on hand-made
inputs, gradcheck of every cell, the invariances that apply, the config key and the memory estimate."""

import math

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ConfigError, ModelConfig, RunConfig
from lnbench.config.checks import check_keys_apply, memory_needed
from lnbench.names import NORM_KINDS
from lnbench.nn.batchnorm import RecurrentBatchNorm1d
from lnbench.nn.lstm import BATCH_NORM_GAIN, LSTM, LSTMCellWithNorm
from lnbench.nn.models import build_model

H, D, T, B = 4, 3, 5, 6


def _lstm(norm, H=H, D=D, T=T, seed=0, **options):
    torch.manual_seed(seed)
    return LSTM(ModelConfig(family="lstm", norm=norm, hidden_size=H, **options), D, seq_len=T)


def _torch_rows(w, H):
    """torch.nn.LSTM's gate order i, f, g, o -> ours, i, f, o, g (rows of a (4H, *) weight or a (4H,) bias)."""
    i, f, g, o = w.split(H)
    return torch.cat([i, f, o, g])


def _sigmoid(a):
    return 1 / (1 + math.exp(-a))


# ---- norm none: torch.nn.LSTM with the same weights -------------------------------------------


def test_no_norm_lstm_is_torch_lstm_forward_and_gradients_float64():
    torch.manual_seed(0)
    ref = torch.nn.LSTM(D, H, batch_first=True).double()
    model = _lstm("none").double()
    with torch.no_grad():
        model.cell.W_x.copy_(_torch_rows(ref.weight_ih_l0, H))
        model.cell.W_h.copy_(_torch_rows(ref.weight_hh_l0, H))
        model.cell.bias.copy_(_torch_rows(ref.bias_ih_l0 + ref.bias_hh_l0, H))
    x = (3 * torch.randn(B, T, D, dtype=torch.float64) + 1).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    _, h = model(x, return_hidden=True)
    h_ref, (h_T, c_T) = ref(x_ref)
    torch.testing.assert_close(h, h_ref, atol=1e-12, rtol=1e-12)
    upstream = torch.randn(B, T, H, dtype=torch.float64)  # a loss on every h_t
    (h * upstream).sum().backward()
    (h_ref * upstream).sum().backward()
    c = model.cell
    for got, want in [
        (x.grad, x_ref.grad),
        (c.W_x.grad, _torch_rows(ref.weight_ih_l0.grad, H)),
        (c.W_h.grad, _torch_rows(ref.weight_hh_l0.grad, H)),
        (c.bias.grad, _torch_rows(ref.bias_ih_l0.grad, H)),
        (c.bias.grad, _torch_rows(ref.bias_hh_l0.grad, H)),
    ]:
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    # the cell state too: one step of the cell is torch.nn.LSTMCell
    ref_cell = torch.nn.LSTMCell(D, H).double()
    with torch.no_grad():
        ref_cell.weight_ih.copy_(ref.weight_ih_l0), ref_cell.weight_hh.copy_(ref.weight_hh_l0)
        ref_cell.bias_ih.copy_(ref.bias_ih_l0), ref_cell.bias_hh.copy_(ref.bias_hh_l0)
    state = (torch.randn(B, H, dtype=torch.float64), torch.randn(B, H, dtype=torch.float64))
    for got, want in zip(c(x[:, 0].detach(), state), ref_cell(x[:, 0].detach(), state)):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


def test_initial_weights_follow_torch_lstm_and_the_forget_bias():
    model = _lstm("none", H=16, D=8)
    c = model.cell
    bound = 1 / math.sqrt(16)
    for w in (c.W_h, c.W_x):
        assert w.abs().max() <= bound and w.abs().max() > 0.9 * bound  # U(-1/sqrt(H), 1/sqrt(H))
    assert c.W_h.shape == (64, 16) and c.W_x.shape == (64, 8)
    assert c.bias.tolist() == [0.0] * 16 + [1.0] * 16 + [0.0] * 32  # i, f, o, g: the default forget bias 1
    zero = _lstm("layer", forget_bias=0.0).cell.bias
    assert zero.abs().max() == 0
    assert _lstm("batch", forget_bias=-2.5).cell.bias[H : 2 * H].tolist() == [-2.5] * H


def test_every_norm_starts_from_the_same_weights():
    weights = []
    for norm in NORM_KINDS:
        c = _lstm(norm, seed=3).cell
        weights.append((c.W_h.detach(), c.W_x.detach(), c.bias.detach()))
    assert all(torch.equal(a, b) for w in weights[1:] for a, b in zip(weights[0], w))


# ---- LN-LSTM: Ba et al. 2016 -------------------------------------------------------------------


def test_ln_lstm_step_by_hand():
    """H = 2, W_h = 0, W_x x_t = 1 .. 8: LN(W_h h) is beta_1 = 0 (a constant row), LN(W_x x)
    is (k - 4.5) / sqrt(5.25 + eps) (the variance of 1..8 is 5.25), b adds the forget bias 1;
    then c_t and h_t = sigmoid(o) tanh(LN(c_t)) with LN over the two units of c_t."""
    cell = LSTMCellWithNorm(ModelConfig(family="lstm", norm="layer", hidden_size=2), input_size=1)
    with torch.no_grad():
        cell.W_h.zero_()
        cell.W_x.copy_(torch.arange(1.0, 9.0)[:, None])  # W_x x_t = 1 .. 8 for x_t = 1
    c0 = [0.5, -0.25]
    h, c = cell(torch.ones(1, 1), (torch.randn(1, 2), torch.tensor([c0])))
    a = [(k - 4.5) / math.sqrt(5.25 + 1e-5) for k in range(1, 9)]
    i, f, o, g = a[0:2], [v + 1 for v in a[2:4]], a[4:6], a[6:8]
    c_want = [_sigmoid(f[j]) * c0[j] + _sigmoid(i[j]) * math.tanh(g[j]) for j in range(2)]
    half = (c_want[0] - c_want[1]) / 2  # LN over two values: x_hat = +-half / sqrt(half^2 + eps)
    c_hat = [half / math.sqrt(half**2 + 1e-5), -half / math.sqrt(half**2 + 1e-5)]
    h_want = [_sigmoid(o[j]) * math.tanh(c_hat[j]) for j in range(2)]
    torch.testing.assert_close(c, torch.tensor([c_want]), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(h, torch.tensor([h_want]), atol=1e-6, rtol=1e-6)


def test_ln_lstm_each_term_and_the_cell_state_have_their_own_layer_norm():
    """Against torch.nn.functional.layer_norm on each term (the oracle), gains and biases all different."""
    cell = _lstm("layer").cell
    with torch.no_grad():
        for p in (cell.norm_h.gamma, cell.norm_x.gamma, cell.norm_c.gamma):
            p.uniform_(0.5, 1.5)
        for p in (cell.norm_h.beta, cell.norm_x.beta, cell.norm_c.beta, cell.bias):
            p.uniform_(-0.5, 0.5)
    x, h, c0 = 5 * torch.randn(B, D) + 3, torch.randn(B, H), torch.randn(B, H)
    ln = F.layer_norm
    n = cell
    gates = (
        ln(h @ n.W_h.T, (4 * H,), n.norm_h.gamma, n.norm_h.beta, 1e-5)
        + ln(x @ n.W_x.T, (4 * H,), n.norm_x.gamma, n.norm_x.beta, 1e-5)
        + n.bias
    )
    i, f, o, g = gates.split(H, dim=-1)
    c_want = torch.sigmoid(f) * c0 + torch.sigmoid(i) * torch.tanh(g)
    h_want = torch.sigmoid(o) * torch.tanh(ln(c_want, (H,), n.norm_c.gamma, n.norm_c.beta, 1e-5))
    h_got, c_got = cell(x, (h, c0))
    torch.testing.assert_close(c_got, c_want)
    torch.testing.assert_close(h_got, h_want)


def test_rms_lstm_puts_rmsnorm_in_layernorms_places_without_biases():
    cell = _lstm("rms").cell
    with torch.no_grad():
        for p in (cell.norm_h.gamma, cell.norm_x.gamma, cell.norm_c.gamma):
            p.uniform_(0.5, 1.5)
        cell.bias.uniform_(-0.5, 0.5)
    assert cell.norm_h.beta is None and cell.norm_c.beta is None
    x, h, c0 = 5 * torch.randn(B, D) + 3, torch.randn(B, H), torch.randn(B, H)
    rms = F.rms_norm
    gates = (
        rms(h @ cell.W_h.T, (4 * H,), cell.norm_h.gamma, 1e-5) + rms(x @ cell.W_x.T, (4 * H,), cell.norm_x.gamma, 1e-5)
    ) + cell.bias
    i, f, o, g = gates.split(H, dim=-1)
    c_want = torch.sigmoid(f) * c0 + torch.sigmoid(i) * torch.tanh(g)
    h_want = torch.sigmoid(o) * torch.tanh(rms(c_want, (H,), cell.norm_c.gamma, 1e-5))
    h_got, c_got = cell(x, (h, c0))
    torch.testing.assert_close(c_got, c_want)
    torch.testing.assert_close(h_got, h_want)


def test_weight_norm_lstm_starts_as_the_plain_lstm_and_normalizes_rows():
    x = torch.randn(B, T, D)
    plain, weighted = _lstm("none", seed=4), _lstm("weight", seed=4)
    torch.testing.assert_close(weighted(x), plain(x))  # g starts at the rows' norms
    c = weighted.cell
    with torch.no_grad():
        c.g_h.uniform_(0.5, 2.0), c.g_x.uniform_(0.5, 2.0)
    W_h, W_x = c.recurrent_weights()
    torch.testing.assert_close(W_h.norm(dim=1), c.g_h)  # each row's length is its g
    torch.testing.assert_close(W_x, torch._weight_norm(c.W_x, c.g_x[:, None], 0))  # PyTorch's weight norm
    assert all(isinstance(n, torch.nn.Identity) for n in c.norms)


# ---- BN-LSTM: Cooijmans et al. 2016, eq. 6-8 ---------------------------------------------------


def _bn(a, gamma, beta=0.0):
    """Batch normalization by hand: statistics over the batch (dim 0), biased variance."""
    mean, var = a.mean(dim=0), a.var(dim=0, unbiased=False)
    return gamma * (a - mean) / torch.sqrt(var + 1e-5) + beta


def test_bn_lstm_follows_cooijmans_eq_6_to_8_with_gain_01_and_no_term_biases():
    model = _lstm("batch").train()
    cell = model.cell
    assert isinstance(cell.norm_h, RecurrentBatchNorm1d) and cell.norm_h.stats == "per_timestep"
    for norm in cell.norms:
        assert torch.all(norm.gamma == BATCH_NORM_GAIN) and BATCH_NORM_GAIN == 0.1
    assert not cell.norm_h.beta.requires_grad and not cell.norm_x.beta.requires_grad  # beta_h = beta_x = 0
    assert cell.norm_c.beta.requires_grad  # beta_c is learned
    with torch.no_grad():
        cell.norm_c.beta.uniform_(-0.5, 0.5)
        cell.bias.uniform_(-0.5, 0.5)
    x = 4 * torch.randn(B, T, D) + 2
    _, hs = model(x, return_hidden=True)
    h, c = torch.zeros(B, H), torch.zeros(B, H)
    for t in range(T):
        gates = _bn(h @ cell.W_h.T, 0.1) + _bn(x[:, t] @ cell.W_x.T, 0.1) + cell.bias  # eq. 6
        i, f, o, g = gates.split(H, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # eq. 7
        h = torch.sigmoid(o) * torch.tanh(_bn(c, 0.1, cell.norm_c.beta))  # eq. 8
        torch.testing.assert_close(hs[:, t], h, atol=1e-5, rtol=1e-5)


def test_bn_lstm_keeps_running_statistics_per_timestep_and_reuses_the_last_beyond_seq_len():
    model = _lstm("batch", T=2).train()
    model.use_kernel = False  # the hook sees each timestep's call on the Python path (tests/nn/test_fused.py: the kernel's statistics are the same)
    cell = model.cell
    seen = []
    cell.norm_h.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach().clone()))
    x = 4 * torch.randn(B, 2, D) + 2
    model(x)
    assert cell.norm_h.running_mean.shape == (2, 4 * H)
    for t in range(2):  # one PyTorch update per timestep's row: 0.9 * init + 0.1 * batch
        torch.testing.assert_close(cell.norm_h.running_mean[t], 0.1 * seen[t].mean(0))
        torch.testing.assert_close(cell.norm_h.running_var[t], 0.9 + 0.1 * seen[t].var(0, unbiased=True))
    with torch.no_grad():  # distinct rows, so that which row eval uses shows
        for norm in cell.norms:
            norm.running_mean.uniform_(-1, 1), norm.running_var.uniform_(0.5, 2)
    model.eval()
    x_long = torch.randn(B, 4, D)
    _, hs = model(x_long, return_hidden=True)
    h, c = torch.zeros(B, H), torch.zeros(B, H)

    def bn_eval(norm, a, t):
        row = min(t, 1)  # timesteps 2, 3 use the last trained one's statistics
        return norm.gamma * (a - norm.running_mean[row]) / torch.sqrt(norm.running_var[row] + 1e-5) + norm.beta

    for t in range(4):
        gates = bn_eval(cell.norm_h, h @ cell.W_h.T, t) + bn_eval(cell.norm_x, x_long[:, t] @ cell.W_x.T, t)
        i, f, o, g = (gates + cell.bias).split(H, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(bn_eval(cell.norm_c, c, t))
        torch.testing.assert_close(hs[:, t], h)


def test_bn_lstm_term_biases_stay_zero_through_training():
    from lnbench.config import TrainConfig
    from lnbench.training.loop import train_model
    from lnbench.training.tasks.trend import make_trend_data

    model = _lstm("batch", H=6, D=8, T=6)
    data = make_trend_data(n_train=32, n_test=16, seq_len=6, features=8, seed=0)
    beta_c = model.cell.norm_c.beta.detach().clone()
    metrics = train_model(model, data, TrainConfig(epochs=1, batch_size=16, lr=1e-2))
    assert model.cell.norm_h.beta.abs().max() == 0 and model.cell.norm_x.beta.abs().max() == 0
    assert not torch.equal(model.cell.norm_c.beta, beta_c)  # beta_c trains
    assert "cell.norm_h.beta" not in metrics.grad_norm and "cell.norm_c.beta" in metrics.grad_norm


# ---- gradcheck of every cell, float64 -----------------------------------------------------------


@pytest.mark.parametrize("norm", NORM_KINDS)
def test_gradcheck_of_every_cell_in_float64(norm):
    """torch.autograd.gradcheck of one step w.r.t. x_t, h_{t-1}, c_{t-1} and every trainable
    parameter (BatchNorm in training mode: batch statistics)."""
    cell = _lstm(norm, H=4, D=2).cell.double().train()  # H = 4: GroupNorm's 2 groups of 2 (4H: of 8)
    params = {n: p.detach().clone().requires_grad_() for n, p in cell.named_parameters() if p.requires_grad}
    with torch.no_grad():  # away from the initial values (gains 1 or 0.1, biases 0)
        for p in params.values():
            p.add_(0.3 * torch.randn_like(p))
    g = torch.Generator().manual_seed(1)
    x, h, c = (torch.randn(4, n, generator=g, dtype=torch.float64, requires_grad=True) for n in (2, 4, 4))
    names = list(params)

    def step(x, h, c, *values):
        return torch.func.functional_call(cell, dict(zip(names, values)), (x, (h, c)))

    assert torch.autograd.gradcheck(step, (x, h, c, *params.values()), eps=1e-6, atol=1e-7, rtol=1e-5)


# ---- the model, dtypes --------------------------------------------------------------------------


@pytest.mark.parametrize("norm", NORM_KINDS)
def test_the_model_unrolls_the_cell(norm):
    """The model's input terms for all timesteps at once give what stepping the cell gives."""
    model = _lstm(norm).train()
    x = 2 * torch.randn(B, T, D) + 1
    logits, hs = model(x, return_hidden=True)
    ref = _lstm(norm).train()  # fresh running statistics
    h = c = torch.zeros(B, H)
    for t in range(T):
        h, c = ref.cell(x[:, t], (h, c), t)
        torch.testing.assert_close(hs[:, t], h, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(logits, model.head(hs[:, -1]))
    assert hs.shape == (B, T, H) and logits.shape == (B, 2) and hs.abs().max() < 1


@pytest.mark.parametrize("norm", NORM_KINDS)
def test_build_model_and_float64_compute_the_same_function(norm):
    cfg = ModelConfig(family="lstm", norm=norm, hidden_size=H)
    torch.manual_seed(0)
    model = build_model(cfg, D, T).train()
    assert isinstance(model, LSTM)
    x = 3 * torch.randn(B, T, D) + 1
    expected = model(x).detach().double()
    torch.manual_seed(0)
    wide = build_model(cfg, D, T).double().train()
    assert all(t.dtype == torch.float64 for t in wide.state_dict().values())
    torch.testing.assert_close(wide(x.double()), expected, atol=1e-5, rtol=1e-5)
    if norm == "batch":
        assert not wide.cell.norm_h.beta.requires_grad  # .double() keeps the fixed beta fixed


@pytest.mark.parametrize("norm", NORM_KINDS)
def test_a_stacked_ensemble_computes_each_members_function(norm):
    solo = [_lstm(norm, seed=s).train() for s in (0, 1, 2)]
    ensemble = LSTM.stack([_lstm(norm, seed=s) for s in (0, 1, 2)]).train()
    x = 2 * torch.randn(3, B, T, D) + 1
    logits, hs = ensemble(x, return_hidden=True)
    for k, model in enumerate(solo):
        want_logits, want_hs = model(x[k], return_hidden=True)
        torch.testing.assert_close(hs[k], want_hs, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(logits[k], want_logits, atol=1e-6, rtol=1e-5)
    for name, b in solo[1].named_buffers():  # per-timestep running statistics: members on axis 1
        torch.testing.assert_close(dict(ensemble.named_buffers())[name][:, 1].reshape(b.shape), b, atol=1e-6, rtol=1e-5)
    if norm == "batch":
        assert not ensemble.cell.norm_x.beta.requires_grad


# ---- invariance where it applies (Ba et al. 2016, section 5.1, Table 1) ---------------------------


def _h(model, x):
    with torch.no_grad():
        return model(x, return_hidden=True)[1]


@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_ln_and_rms_lstm_are_invariant_to_each_sequences_scale_and_to_weight_matrix_rescaling(norm):
    """Both terms are normalized per sample: scaling one sequence (single training case
    re-scaling) or all of W_x or W_h changes no h_t. eps is 1e-12 here, as in the invariance
    table (lnbench.nn.invariance): 1e-5 against the small variance of W_h h moves h_t by ~1e-3."""
    model = _lstm(norm).double().eval()
    for n in model.cell.norms:
        n.eps = 1e-12
    x = torch.randn(B, T, D, dtype=torch.float64)
    h = _h(model, x)
    scales = torch.tensor([0.2, 1, 3, 7, 0.5, 20.0], dtype=torch.float64)[:, None, None]
    torch.testing.assert_close(_h(model, scales * x), h, atol=1e-9, rtol=1e-9)
    with torch.no_grad():
        model.cell.W_x.mul_(5.0), model.cell.W_h.mul_(0.3)
    torch.testing.assert_close(_h(model, x), h, atol=1e-9, rtol=1e-9)


def test_bn_lstm_is_invariant_to_the_whole_batchs_scale_but_not_to_one_sequences():
    model = _lstm("batch").train()
    x = 10 * torch.randn(B, T, D)
    h = _h(model, x)
    torch.testing.assert_close(_h(model, 6.0 * x), h, atol=1e-4, rtol=1e-4)  # dataset re-scaling
    one = x.clone()
    one[0] *= 6.0
    assert (_h(model, one) - h).abs().max() > 1e-2  # single training case re-scaling


@pytest.mark.parametrize("norm", ["none", "weight"])
def test_unnormalized_lstms_are_not_scale_invariant(norm):
    model = _lstm(norm).eval()
    x = torch.randn(B, T, D)
    assert (_h(model, 6.0 * x) - _h(model, x)).abs().max() > 1e-2


# ---- config and memory ----------------------------------------------------------------------------


def test_forget_bias_is_an_lstm_key():
    rnn = RunConfig.model_validate({"model": {"family": "rnn", "forget_bias": 0.0}})
    with pytest.raises(ConfigError, match=r"model.forget_bias: applies to the lstm only"):
        check_keys_apply(rnn, ["rnn", "transformer"])
    check_keys_apply(rnn, ["rnn", "lstm"])  # trains an LSTM: fine
    lstm = RunConfig.model_validate({"model": {"family": "lstm", "norm_placement": "separate"}})
    with pytest.raises(ConfigError, match=r"model.norm_placement: applies to the rnn only"):
        check_keys_apply(lstm, ["lstm"])
    assert "forget_bias: 1.0" in RunConfig.model_validate({"model": {"family": "lstm"}}).to_yaml(True)
    assert "forget_bias" not in rnn.to_yaml(model_family_only=True)
    assert "norm_placement" not in lstm.to_yaml(model_family_only=True)


def test_memory_estimate_bounds_what_a_training_step_keeps():
    """The activation term of :func:`memory_needed` against the bytes autograd saves in one forward
    of the LSTM on a batch (every norm), measured with saved-tensor hooks."""
    cfg = RunConfig.model_validate(
        {
            "data": {"n_train": 64, "n_test": 64, "seq_len": 10, "features": 8},
            "model": {"family": "lstm", "hidden_size": 32},
            "train": {"batch_size": 64},
        }
    )
    no_activations = cfg.with_changes(data__n_test=1, train__batch_size=1)
    activations = memory_needed(cfg) - memory_needed(no_activations)  # ~64 / 63 of the batch's term
    for norm in NORM_KINDS:
        torch.manual_seed(0)
        model = build_model(cfg.model.model_copy(update={"norm": norm}), 8, 10).train()
        saved = {}

        def pack(t):
            saved[(t.data_ptr(), t.shape)] = t.numel() * t.element_size()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(torch.randn(64, 10, 8))
        kept = sum(saved.values())
        assert kept < activations < 6 * kept, (norm, kept, activations)
    rnn = cfg.with_changes(model__family="rnn")
    assert memory_needed(cfg) > 2 * memory_needed(rnn) - memory_needed(no_activations)


def test_a_layernorm_of_a_one_feature_inputs_projection_is_its_sign_times_layernorm_of_the_weights():
    """LN(x w) = sign(x) LN(w) for a scalar x != 0 (LayerNorm's scale invariance, Ba et al. 2016,
    section 5.1; eps 1e-12 so that eps does not blur it): the separately normalized LN-LSTM reads a
    pixel (I = 1) only through its sign, so its logits on an image of intensities in [0, 1] equal
    its logits on the binarized image (x > 0), while the LSTM without a norm tells them apart."""
    from lnbench.nn.layernorm import LayerNorm

    g = torch.Generator().manual_seed(0)
    w = torch.randn(40, generator=g, dtype=torch.float64)
    ln = LayerNorm(40, eps=1e-12).double()
    for x in (-2.5, 0.3, 1.0, 7.0):
        torch.testing.assert_close(ln(x * w), math.copysign(1.0, x) * ln(w), rtol=1e-9, atol=1e-9)
    X = torch.rand(6, 12, 1, generator=g, dtype=torch.float64) * (torch.rand(6, 12, 1, generator=g) > 0.4)
    binary = (X > 0).double()
    for norm, same in (("layer", True), ("none", False)):
        torch.manual_seed(1)
        model = build_model(ModelConfig(family="lstm", norm=norm, hidden_size=5, norm_eps=1e-12), 1, 12).double()
        equal = torch.allclose(model(X), model(binary), rtol=1e-8, atol=1e-8)
        assert equal is same, norm
