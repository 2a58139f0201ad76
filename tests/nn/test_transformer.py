"""lnbench.nn.transformer: the Transformer's shapes and the equations it implements, against hand-written references."""

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.models import TransformerBlock, TransformerClassifier


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
