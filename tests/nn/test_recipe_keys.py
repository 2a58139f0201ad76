"""Two model keys of the published recipes: ``model.norm_eps``, every norm layer's eps in every
family (oracle: torch's own layer_norm and batch_norm at that eps; the C++ kernel and the Python
path alike), and ``model.recurrent_init`` (identity: Le et al. 2015's IRNN, Cooijmans et al.'s
``--init id``; orthogonal), checked against their definitions."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from torch.nn import functional as F

from lnbench.config import ModelConfig
from lnbench.nn.base import Norm
from lnbench.nn.models import build_model

needs_kernel = pytest.mark.skipif(os.environ.get("LNBENCH_KERNELS") == "0", reason="LNBENCH_KERNELS=0")


@pytest.mark.parametrize("family", ["rnn", "lstm", "transformer", "mlp"])
@pytest.mark.parametrize("norm", ["layer", "batch", "rms", "group"])
def test_norm_eps_reaches_every_norm_layer(family, norm):
    cfg = ModelConfig(family=family, norm=norm, hidden_size=8, norm_eps=1e-3)
    T = 1 if family == "mlp" else 4
    norms = [m for m in build_model(cfg, 4, T).modules() if isinstance(m, Norm)]
    assert norms and {m.eps for m in norms} == {1e-3}
    assert {
        m.eps for m in build_model(cfg.model_copy(update={"norm_eps": 1e-5}), 4, T).modules() if isinstance(m, Norm)
    } == {1e-5}


def test_a_layernorm_at_norm_eps_is_torchs_layer_norm_at_that_eps():
    """A row of nearly equal values (var 1e-6, between the two eps): lnbench's LayerNorm of an RNN
    built at norm_eps 1e-3 gives F.layer_norm(eps=1e-3), not eps=1e-5."""
    model = build_model(ModelConfig(family="rnn", norm="layer", hidden_size=8, norm_eps=1e-3), 4, 3).double()
    x = 1e-3 * torch.randn(5, 8, dtype=torch.float64) + 2.0
    want = F.layer_norm(x, (8,), eps=1e-3)
    torch.testing.assert_close(model.cell.norm(x), want, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(want, F.layer_norm(x, (8,), eps=1e-5), atol=1e-2)


@needs_kernel
@pytest.mark.parametrize("norm", ["layer", "batch", "rms"])
def test_norm_eps_reaches_the_kernel_as_the_python_path(norm):
    """The LSTM at norm_eps 1e-1 on inputs whose terms have a variance near eps: the C++ kernel's
    logits and gradients equal the Python path's (which reads each layer's eps) to 1e-10, and
    differ from the model at the default eps (so eps is not ignored by either)."""
    cfg = ModelConfig(family="lstm", norm=norm, hidden_size=6, norm_eps=1e-1)
    torch.manual_seed(0)
    model = build_model(cfg, 4, 5).double()
    reference = copy.deepcopy(model)
    reference.use_kernel = False
    x = 0.1 * torch.randn(8, 5, 4, dtype=torch.float64)
    outs = []
    for m in (model, reference):
        logits = m(x)
        logits.sum().backward()
        outs.append((logits.detach(), m.cell.W_h.grad.clone()))
    torch.testing.assert_close(outs[0][0], outs[1][0], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(outs[0][1], outs[1][1], rtol=1e-10, atol=1e-10)
    default = copy.deepcopy(model)
    for m in default.modules():
        if isinstance(m, Norm):
            m.eps = 1e-5
    assert not torch.allclose(default(x), outs[0][0], atol=1e-4)


@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_the_rnns_identity_init_is_gain_times_the_identity(gain):
    cfg = ModelConfig(family="rnn", norm="none", hidden_size=6, recurrent_init="identity", recurrent_gain=gain)
    assert torch.equal(build_model(cfg, 4, 3).cell.W_hh.detach(), gain * torch.eye(6))


def test_the_lstms_identity_init_is_cooijmans_et_al_s():
    """``--init id``: the cell-input block g of W_h (rows 3H..4H in the order i, f, o, g) is I, the
    three gate blocks together one orthogonal (3H, H) matrix (orthonormal columns: W^T W = I), and
    W_x keeps torch.nn.LSTM's uniform init, the same draw as with the default init."""
    H = 5
    cfg = ModelConfig(family="lstm", norm="layer", hidden_size=H, recurrent_init="identity")
    torch.manual_seed(3)
    cell = build_model(cfg, 4, 3).cell
    W = cell.W_h.detach().double()
    assert torch.equal(W[3 * H :], torch.eye(H, dtype=torch.float64))
    torch.testing.assert_close(W[: 3 * H].T @ W[: 3 * H], torch.eye(H, dtype=torch.float64), atol=1e-6, rtol=0)
    torch.manual_seed(3)
    uniform = build_model(cfg.model_copy(update={"recurrent_init": "uniform"}), 4, 3).cell
    assert torch.equal(cell.W_x, uniform.W_x)
    assert float(uniform.W_h.detach().abs().max()) <= 1 / H**0.5  # the default stays torch.nn.LSTM's


def test_the_lstms_orthogonal_init_has_orthonormal_columns():
    H = 4
    cell = build_model(ModelConfig(family="lstm", norm="none", hidden_size=H, recurrent_init="orthogonal"), 3, 2).cell
    W = cell.W_h.detach().double()
    torch.testing.assert_close(W.T @ W, torch.eye(H, dtype=torch.float64), atol=1e-6, rtol=0)
