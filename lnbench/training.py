"""The one training loop (Adam on cross-entropy) and its probes.

Per epoch it records, into a :class:`History`:

- ``train_loss``: mean cross-entropy over the epoch's mini-batches (nats).
- ``test_loss``, ``test_acc``: on the whole test set in eval mode (BatchNorm: running statistics).
- ``test_acc_batch_stats``: models with BatchNorm only; test accuracy with BatchNorm using the
  statistics of test mini-batches of the training batch size (what training-mode BN sees).
- ``hidden_norm``: the mean L2 norm of the hidden state h_t over the test set, one value per
  timestep t (T values); for the Transformer, of the residual stream after the last block.
- ``grad_norm``: the L2 norm of each parameter tensor's gradient, mean over the epoch's steps
  (before clipping); ``grad_norm_layer``: the same per layer (all tensors of a Linear or a norm).

A loss that becomes NaN or inf stops training; the history is marked ``diverged``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from lnbench.config import TrainConfig
from lnbench.data import TrendData
from lnbench.norms import BatchNorm1d, LayerNorm, batch_statistics


@dataclass
class History:
    """Per-epoch metrics of one run; ``to_dict()`` is the body of metrics.json."""

    status: str = "running"
    epochs: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    test_loss: list[float] = field(default_factory=list)
    test_acc: list[float] = field(default_factory=list)
    test_acc_batch_stats: list[float] | None = None
    hidden_norm_init: list[float] = field(default_factory=list)
    hidden_norm: list[list[float]] = field(default_factory=list)
    grad_norm: dict[str, list[float]] = field(default_factory=dict)
    grad_norm_layer: dict[str, list[float]] = field(default_factory=dict)
    epoch_seconds: list[float] = field(default_factory=list)
    diverged_at_epoch: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


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
def evaluate(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> tuple[float, float, list[float]]:
    """Eval-mode loss (nats), accuracy (fraction) and per-timestep mean hidden-state L2 norm (T,)."""
    model.eval()
    logits, hidden = model(X, return_hidden=True)  # (N, C), (N, T, H)
    loss = F.cross_entropy(logits, y).item()
    acc = (logits.argmax(dim=-1) == y).sum().item() / len(y)  # exact: 187 / 200, not float32
    return loss, acc, hidden.norm(dim=-1).mean(dim=0).tolist()


@torch.no_grad()
def accuracy_with_batch_stats(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int) -> float:
    """Test accuracy with every BatchNorm normalizing by the statistics of its mini-batch."""
    model.eval()
    correct = 0
    with batch_statistics(model):
        for i in range(0, len(X), batch_size):
            correct += (model(X[i : i + batch_size]).argmax(dim=-1) == y[i : i + batch_size]).sum().item()
    return correct / len(X)


def train_model(
    model: nn.Module,
    data: TrendData,
    cfg: TrainConfig,
    seed: int = 0,
    on_epoch: Callable[[int, History], None] | None = None,
) -> History:
    """Train ``model`` on ``data`` with Adam and cross-entropy, probing every epoch.

    Args:
        model: returns logits ``(B, C)``, and with ``return_hidden=True`` also ``(B, T, H)``.
        data: the train and test splits.
        cfg: epochs, batch_size, lr, grad_clip.
        seed: seeds the mini-batch order (a ``torch.Generator``; the global RNG is untouched).
        on_epoch: called after every epoch with the epoch number and the history so far.

    Returns:
        The :class:`History`, status ``completed`` or ``diverged``.
    """
    hist = History()
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
    hist.hidden_norm_init = evaluate(model, data.X_test, data.y_test)[2]

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
                hist.status, hist.diverged_at_epoch = "diverged", epoch
                return hist
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
        test_loss, test_acc, hidden_norm = evaluate(model, data.X_test, data.y_test)
        hist.epochs.append(epoch)
        hist.train_loss.append(train_loss)
        hist.test_loss.append(test_loss)
        hist.test_acc.append(test_acc)
        hist.hidden_norm.append(hidden_norm)
        for (name, _), v in zip(params, (norm_sum / steps).tolist()):
            hist.grad_norm[name].append(v)
        for name, v in zip(layers, (layer_sum / steps).tolist()):
            hist.grad_norm_layer[name].append(v)
        if hist.test_acc_batch_stats is not None:
            hist.test_acc_batch_stats.append(
                accuracy_with_batch_stats(model, data.X_test, data.y_test, cfg.batch_size)
            )
        hist.epoch_seconds.append(time.perf_counter() - t0)
        if not (math.isfinite(train_loss) and math.isfinite(test_loss)):
            hist.status, hist.diverged_at_epoch = "diverged", epoch
            return hist
        if on_epoch is not None:
            on_epoch(epoch, hist)
    hist.status = "completed"
    return hist
