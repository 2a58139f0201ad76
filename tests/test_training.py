"""The training loop: determinism, probes against hand computation, divergence."""

import math

import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig, TrainConfig
from lnbench.data import make_trend_data
from lnbench.models import build_model
from lnbench.training import layer_names, train_model

DATA = make_trend_data(n_train=64, n_test=32, seq_len=6, features=8, seed=0)


def _model(norm="layer", family="rnn", seed=0):
    torch.manual_seed(seed)
    return build_model(ModelConfig(family=family, norm=norm, hidden_size=8, d_ff=16), DATA.input_size, DATA.seq_len)


def test_same_seed_same_metrics():
    cfg = TrainConfig(epochs=2, batch_size=16)
    a = train_model(_model("batch"), DATA, cfg, seed=1).to_dict()
    b = train_model(_model("batch"), DATA, cfg, seed=1).to_dict()
    a.pop("epoch_seconds"), b.pop("epoch_seconds")
    assert a == b and a["status"] == "completed" and len(a["test_acc_batch_stats"]) == 2


def test_full_batch_probes_match_a_hand_computation():
    """One epoch, one full-batch step: grad_norm is the gradient norm of the initial model,
    hidden_norm_init the mean ||h_t|| of the initial model over the test set."""
    reference = _model("layer")
    logits, hidden = reference(DATA.X_test, return_hidden=True)
    expected_hidden = hidden.norm(dim=-1).mean(0)
    loss = F.cross_entropy(reference(DATA.X_train), DATA.y_train)
    loss.backward()
    hist = train_model(_model("layer"), DATA, TrainConfig(epochs=1, batch_size=64), seed=0)
    for name, p in reference.named_parameters():
        assert math.isclose(hist.grad_norm[name][0], p.grad.norm().item(), rel_tol=1e-4), name
    assert math.isclose(hist.train_loss[0], loss.item(), rel_tol=1e-6)
    torch.testing.assert_close(torch.tensor(hist.hidden_norm_init), expected_hidden)
    W = hist.grad_norm_layer
    assert set(W) == {"cell.W_hh", "cell.W_xh", "cell.norm", "head"}
    expected_head = math.hypot(reference.head.weight.grad.norm().item(), reference.head.bias.grad.norm().item())
    assert math.isclose(W["head"][0], expected_head, rel_tol=1e-4)
    assert hist.test_acc_batch_stats is None and len(hist.hidden_norm[0]) == DATA.seq_len


def test_transformer_layers():
    names = set(layer_names(_model("layer", "transformer")).values())
    assert names == {"input_proj", "pos_emb", "blocks.0.norm_1", "blocks.0.attn.qkv", "blocks.0.attn.proj", "blocks.0.norm_2", "blocks.0.mlp.0", "blocks.0.mlp.2", "norm_f", "head"}


def test_nan_loss_stops_and_is_marked_diverged():
    bad = make_trend_data(n_train=64, n_test=32, seq_len=6, features=8, seed=0)
    bad.X_train[5, 2, 3] = float("nan")
    hist = train_model(_model("none"), bad, TrainConfig(epochs=3, batch_size=64), seed=0)
    assert hist.status == "diverged" and hist.diverged_at_epoch == 1 and hist.epochs == []


def test_learns_the_task():
    """Oracle: the task is learnable; a LayerNorm RNN beats chance clearly in a few epochs."""
    data = make_trend_data(n_train=400, n_test=200, seq_len=10, features=16, trend_strength=2.0, seed=0)
    torch.manual_seed(0)
    model = build_model(ModelConfig(norm="layer", hidden_size=16), data.input_size, data.seq_len)
    hist = train_model(model, data, TrainConfig(epochs=5, batch_size=32, lr=3e-3), seed=0)
    assert hist.test_acc[-1] > 0.8 and hist.train_loss[-1] < hist.train_loss[0]
