"""The one training loop (Adam on cross-entropy) and its probes.

Per epoch it records, into a :class:`lnbench.schema.Metrics`:

- ``train_loss``: mean cross-entropy over the epoch's mini-batches (nats).
- ``test_loss``, ``test_acc``: on the whole test set in eval mode (BatchNorm: running statistics);
  ``test_correct``: one 0/1 per test sequence, for the last epoch.
- ``test_acc_batch_stats`` (and ``test_correct_batch_stats``): models with BatchNorm only; test
  accuracy with BatchNorm using the statistics of test mini-batches of the training batch size
  (what training-mode BN sees).
- ``hidden_norm``: the mean L2 norm of the hidden state h_t over the test set, one value per
  timestep t (T values); for the Transformer, of the residual stream after the last block.
  ``hidden_norm_init`` is the same before training, measured as the network behaves in
  training: BatchNorm uses batch statistics (mini-batches of the training batch size) and its
  running statistics are left untouched (with fresh running statistics, eval-mode BatchNorm is
  the identity and its curve would be NoNorm's).
- ``grad_norm``: the L2 norm of each parameter tensor's gradient, mean over the epoch's steps
  (before clipping); ``grad_norm_layer``: the same per layer (all tensors of a Linear or a norm).

Divergence, one rule: a run is ``diverged`` when a mini-batch loss is NaN or inf, when the
weights are not all finite at the end of an epoch, or when the epoch's train loss or test loss
exceeds :data:`EXPLODED_LOSS_FACTOR` x ln C (C classes; ln C is the loss of a uniform guess):
a finite loss of 69 nats for C = 2 means the model puts e^-69 on the right class on average.
Training stops there and that epoch is not recorded, so no metric comes from broken weights.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

from lnbench.config import TrainConfig
from lnbench.data import TrendData
from lnbench.norms import BatchNorm1d, LayerNorm, batch_statistics
from lnbench.schema import Metrics

EXPLODED_LOSS_FACTOR = 100.0


def layer_names(model: nn.Module) -> dict[str, str]:
    """Map each parameter name to its layer: the owning Linear or norm module, otherwise the
    parameter itself (so an RNN's ``W_hh`` and ``W_xh`` are two layers)."""
    grouped = (nn.Linear, LayerNorm, BatchNorm1d)
    owners = {name for name, m in model.named_modules() if isinstance(m, grouped)}
    out = {}
    for name, _ in model.named_parameters():
        owner = name.rpartition(".")[0]
        out[name] = owner if owner in owners else name
    return out


def _has_batch_norm(model: nn.Module) -> bool:
    return any(isinstance(m, BatchNorm1d) for m in model.modules())


@torch.no_grad()
def evaluate(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> tuple[float, float, list[float], list[int]]:
    """Eval-mode loss (nats), accuracy (fraction), per-timestep mean hidden-state L2 norm (T,)
    and per-example correctness (N values, 0/1). BatchNorm uses its running statistics and
    updates nothing."""
    model.eval()
    logits, hidden = model(X, return_hidden=True)  # (N, C), (N, T, H)
    loss = F.cross_entropy(logits, y).item()
    correct = (logits.argmax(dim=-1) == y).to(torch.int64)  # (N,)
    acc = correct.sum().item() / len(y)  # exact: 187 / 200, not float32
    return loss, acc, hidden.norm(dim=-1).mean(dim=0).tolist(), correct.tolist()


@torch.no_grad()
def correct_with_batch_stats(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int) -> list[int]:
    """Per-example correctness (0/1, N values) with every BatchNorm normalizing by the statistics
    of its test mini-batch of ``batch_size``; running statistics untouched."""
    model.eval()
    out: list[int] = []
    with batch_statistics(model):
        for i in range(0, len(X), batch_size):
            out += (model(X[i : i + batch_size]).argmax(dim=-1) == y[i : i + batch_size]).to(torch.int64).tolist()
    return out


@torch.no_grad()
def hidden_norm_as_in_training(model: nn.Module, X: torch.Tensor, batch_size: int) -> list[float]:
    """Mean hidden-state L2 norm per timestep (T values) as the network behaves in training:
    BatchNorm normalizes with the statistics of mini-batches of ``batch_size`` and its running
    statistics are not touched; other layers are in eval mode (nothing here is stochastic)."""
    model.eval()
    if not _has_batch_norm(model):
        return model(X, return_hidden=True)[1].norm(dim=-1).mean(dim=0).tolist()
    total = None
    with batch_statistics(model):
        for i in range(0, len(X), batch_size):
            h = model(X[i : i + batch_size], return_hidden=True)[1]  # (b, T, H)
            part = h.norm(dim=-1).sum(dim=0)  # (T,)
            total = part if total is None else total + part
    return (total / len(X)).tolist()


def _weights_finite(model: nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def train_model(
    model: nn.Module,
    data: TrendData,
    cfg: TrainConfig,
    seed: int = 0,
    on_epoch: Callable[[int, Metrics], None] | None = None,
    metrics: Metrics | None = None,
) -> Metrics:
    """Train ``model`` on ``data`` with Adam and cross-entropy, probing every epoch.

    Args:
        model: returns logits ``(B, C)``, and with ``return_hidden=True`` also ``(B, T, H)``.
        data: the train and test splits.
        cfg: epochs, batch_size, lr, grad_clip.
        seed: seeds the mini-batch order (a ``torch.Generator``; the global RNG is untouched).
        on_epoch: called after every epoch with the epoch number and the metrics so far.
        metrics: filled in place if given (e.g. with the run's identity already set).

    Returns:
        The :class:`lnbench.schema.Metrics`, status ``completed`` or ``diverged`` (see the
        module docstring for the divergence rule).
    """
    hist = Metrics() if metrics is None else metrics
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    layer_of = layer_names(model)
    layers = list(dict.fromkeys(layer_of[n] for n, _ in params))
    layer_index = torch.tensor([layers.index(layer_of[n]) for n, _ in params])
    hist.grad_norm = {n: [] for n, _ in params}
    hist.grad_norm_layer = {name: [] for name in layers}
    if _has_batch_norm(model):
        hist.test_acc_batch_stats = []
    hist.hidden_norm_init = hidden_norm_as_in_training(model, data.X_test, cfg.batch_size)
    num_classes = int(max(data.y_train.max(), data.y_test.max())) + 1
    exploded = EXPLODED_LOSS_FACTOR * math.log(max(num_classes, 2))

    def diverge(epoch: int, reason: str) -> Metrics:
        hist.status, hist.diverged_at_epoch, hist.divergence_reason = "diverged", epoch, reason
        return hist

    n_train = len(data.X_train)
    for epoch in range(1, cfg.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        perm = torch.randperm(n_train, generator=gen)
        loss_sum = torch.zeros(())
        norm_sum = torch.zeros(len(params))  # per tensor: sum over steps of the gradient's L2 norm
        layer_sum = torch.zeros(len(layers))
        steps = 0
        for i in range(0, n_train, cfg.batch_size):
            idx = perm[i : i + cfg.batch_size]
            loss = F.cross_entropy(model(data.X_train[idx]), data.y_train[idx])
            if not torch.isfinite(loss):
                return diverge(epoch, f"the loss of a mini-batch became {loss.item()}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            norms = torch.stack(
                [p.grad.norm() if p.grad is not None else torch.zeros(()) for _, p in params]
            ).detach()  # (P,)
            norm_sum += norms
            layer_sum += torch.zeros(len(layers)).index_add_(0, layer_index, norms.square()).sqrt()
            if cfg.grad_clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            loss_sum += loss.detach()
            steps += 1

        train_loss = (loss_sum / steps).item()
        if not _weights_finite(model):
            return diverge(epoch, "the weights became NaN or inf")
        if train_loss > exploded:
            return diverge(epoch, f"train loss {train_loss:.3g} nats exceeds {EXPLODED_LOSS_FACTOR:g} x ln {num_classes}")
        test_loss, test_acc, hidden_norm, test_correct = evaluate(model, data.X_test, data.y_test)
        if not math.isfinite(test_loss):
            return diverge(epoch, f"the test loss became {test_loss}")
        if test_loss > exploded:
            return diverge(epoch, f"test loss {test_loss:.3g} nats exceeds {EXPLODED_LOSS_FACTOR:g} x ln {num_classes}")
        hist.epochs.append(epoch)
        hist.train_loss.append(train_loss)
        hist.test_loss.append(test_loss)
        hist.test_acc.append(test_acc)
        hist.test_correct = test_correct
        hist.hidden_norm.append(hidden_norm)
        for (name, _), v in zip(params, (norm_sum / steps).tolist()):
            hist.grad_norm[name].append(v)
        for name, v in zip(layers, (layer_sum / steps).tolist()):
            hist.grad_norm_layer[name].append(v)
        if hist.test_acc_batch_stats is not None:
            hist.test_correct_batch_stats = correct_with_batch_stats(model, data.X_test, data.y_test, cfg.batch_size)
            hist.test_acc_batch_stats.append(sum(hist.test_correct_batch_stats) / len(data.y_test))
        hist.epoch_seconds.append(time.perf_counter() - t0)
        if on_epoch is not None:
            on_epoch(epoch, hist)
    hist.status = "completed"
    return hist
