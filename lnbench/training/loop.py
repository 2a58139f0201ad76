"""The one training loop (the config's optimizer and schedule on cross-entropy) and its probes.

Per epoch it records, into a :class:`lnbench.records.schema.Metrics`:

- ``train_loss``: mean cross-entropy over the epoch's mini-batches (nats); ``lr``: the learning
  rate the epoch trained at (:mod:`lnbench.training.optim`: the schedule steps once per epoch).
- ``val_loss``, ``val_acc``: with a validation split (``data.n_val`` > 0), on the whole of it in
  eval mode, as the test set; empty without one.
- ``test_loss``, ``test_acc``: on the whole test set in eval mode (BatchNorm: running statistics);
  ``test_correct``: one 0/1 per test sequence, for the last epoch.
- ``test_acc_batch_stats`` (and ``test_correct_batch_stats``): models with BatchNorm only; test
  accuracy with BatchNorm using the statistics of test mini-batches of the training batch size
  (what training-mode BN sees).
- ``test_acc_running_stats``: BatchNorm with ``model.batch_norm_population: recomputed`` only: the
  test accuracy with the running averages of training; ``test_acc`` and the probes then use the
  population statistics of one pass over the training data (:func:`recompute_population_statistics`),
  recomputed after every epoch (training goes on with its running averages).
- ``hidden_norm``: the mean L2 norm of the hidden state h_t over the test set, one value per
  timestep t (T values); for the Transformer, of the residual stream after the last block.
  ``hidden_norm_init`` is the same before training, measured as the network behaves in
  training: BatchNorm uses batch statistics (mini-batches of the training batch size) and its
  running statistics are left untouched (with fresh running statistics, eval-mode BatchNorm is
  the identity and its curve would be NoNorm's).
- the dynamics probes of :mod:`lnbench.training.probes` on the test set (eval mode), and before
  training (``*_init``, as ``hidden_norm_init``): ``hidden_norm_by_scale``, ``scale_spearman``,
  ``saturation``, ``saturation_by_scale``, ``grad_ratio``.
- ``grad_norm``: the L2 norm of each parameter tensor's gradient, mean over the epoch's steps
  (before clipping); ``grad_norm_layer``: the same per layer (all tensors of a Linear or a norm).

A recurrent model with ``model.state_noise_std`` > 0 starts every sequence from h_0 ~ N(0, std^2)
(:func:`lnbench.nn.recurrent.state_noise`): in training a fresh draw per step from each member's
own generator (the one of its batch order, so a resumed run draws the same), in evaluation each
example's row of one fixed draw per split (:func:`lnbench.nn.recurrent.eval_state_noise`: the same
h_0 for the same test example in every norm and seed, so paired comparisons stay exact).

Seed ensembles: :func:`train_members` trains S members at once, each with its own data, initial
weights, batch order and metrics, either as one model with a leading member axis (an ensemble
built by :meth:`lnbench.nn.models.SimpleRNN.stack`: parameters ``(S, ...)``, inputs ``(S, B, T, I)``)
or, for S = 1, as a plain model. Per member the arithmetic is that of a solo run: the loss is the
sum of the members' losses (so each member's gradient is its own), every optimizer of
:mod:`lnbench.training.optim` is elementwise (each member its own state), the schedule is one
learning rate for all, and gradient clipping uses each member's own global norm.

Divergence, one rule: a run is ``diverged`` when a mini-batch loss is NaN or inf, when a
parameter tensor's gradient has a NaN or inf entry or an L2 norm beyond float32 (checked every step,
before clipping; the reason names the tensor and, for a model with a norm, the Jacobian
gamma/sqrt(eps) of a norm at an all-zero input: :mod:`lnbench.training.gradients`), when the
weights or the optimizer's state are not all finite at the end of an epoch, or when the epoch's
train loss or test loss exceeds :data:`EXPLODED_LOSS_FACTOR` x ln C (C classes; ln C is the loss
of a uniform guess): a finite loss of 69 nats for C = 2 means the model puts e^-69 on the right
class on average. Training stops there and that epoch is not recorded, so no metric comes from
broken weights. A finite gradient norm above :data:`lnbench.training.gradients.LARGE_GRAD_NORM`
is not divergence: training goes on and the run's ``warnings`` note it (the first time).
Gradient clipping cannot overflow: a global norm beyond float32's sum of squares is taken in
float64 (:func:`lnbench.training.gradients.clip_grad_norms`), so the step is clipped, not zeroed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.optim.lr_scheduler import LRScheduler

from lnbench.config import TrainConfig
from lnbench.nn.batchnorm import BatchNorm1d, batch_statistics
from lnbench.nn.recurrent import RecurrentClassifier, eval_state_noise, state_noise
from lnbench.records.schema import Metrics
from lnbench.training import gradients
from lnbench.training.allocator import keep_freed_memory
from lnbench.training.checkpoints import restore
from lnbench.training.data import TaskData
from lnbench.training.ensemble import cross_entropy, forward, has_batch_norm, layer_names, per_member
from lnbench.training.optim import build_optimizer, build_scheduler
from lnbench.training.probes import probe_members, probe_passes, record_probes

EXPLODED_LOSS_FACTOR = 100.0


def _rows(h0: torch.Tensor | None, i: int, j: int) -> torch.Tensor | None:
    """Rows i .. j-1 of a split's initial states ``(S, N, L, H)`` (None: none)."""
    return None if h0 is None else h0[:, i:j]


@torch.no_grad()
def correct_with_batch_stats(
    model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch_size: int, h0: torch.Tensor | None = None
) -> list[list[int]]:
    """Per member, per-example correctness (0/1) with every BatchNorm normalizing by the
    statistics of its test mini-batch of ``batch_size`` (consecutive examples; the last one
    smaller when N is not a multiple); running statistics untouched. ``X (S, N, T, I)``, ``y (S, N)``;
    ``h0``: a recurrent model's initial states ``(S, N, L, H)`` or None.

    The whole mini-batches go through in one pass (:func:`lnbench.nn.batchnorm.batch_statistics`
    with ``group_size``), the remainder in a second."""
    model.eval()
    out = []
    for i, j, group in probe_passes(X.shape[1], batch_size):
        with batch_statistics(model, group):
            logits = forward(model, X[:, i:j], h0=_rows(h0, i, j))
        out.append((logits.argmax(dim=-1) == y[:, i:j]).to(torch.int64))
    return torch.cat(out, dim=1).tolist()


@torch.no_grad()
def evaluate(
    model: nn.Module, X: torch.Tensor, y: torch.Tensor, h0: torch.Tensor | None = None
) -> tuple[list[float], list[float]]:
    """Per member, the mean cross-entropy (nats) and the accuracy of ``model`` in eval mode on the
    whole of ``X (S, N, T, I)``, ``y (S, N)`` in one pass (BatchNorm: running statistics); ``h0``:
    a recurrent model's initial states ``(S, N, L, H)`` or None."""
    model.eval()
    logits = forward(model, X, h0=h0)  # (S, N, C)
    loss = cross_entropy(logits, y)  # (S,)
    correct = (logits.argmax(dim=-1) == y).sum(dim=1)  # (S,)
    return loss.tolist(), [int(c) / y.shape[1] for c in correct]  # exact: 187 / 200, as the test set's


@torch.no_grad()
def recompute_population_statistics(
    model: nn.Module, X: torch.Tensor, batch_size: int, h0: torch.Tensor | None = None
) -> None:
    """Replace every BatchNorm's running statistics by population statistics: one pass over ``X``
    ``(S, N, T, I)`` in consecutive mini-batches of ``batch_size``, in training mode, no weight
    updated; each running statistic (each timestep's, per timestep) becomes the mean over the
    mini-batches of their batch statistics (the variance the unbiased one, as every running_var).
    Cooijmans et al. 2016, section 4, and their code's ``nowwithpopulationstatistics.py``. Done as
    PyTorch's ``momentum=None`` (a cumulative average): the k-th batch is taken in at momentum 1/k.
    ``h0``: a recurrent model's initial states ``(S, N, L, H)``, or None. The model is left in eval mode."""
    norms = [m for m in model.modules() if isinstance(m, BatchNorm1d)]
    momenta = [norm.momentum for norm in norms]
    for norm in norms:
        norm.reset_running_stats()
    model.train()
    try:
        for k, i in enumerate(range(0, X.shape[1], batch_size), start=1):
            for norm in norms:
                norm.momentum = 1.0 / k
            forward(model, X[:, i : i + batch_size], h0=_rows(h0, i, i + batch_size))
    finally:
        for norm, momentum in zip(norms, momenta, strict=True):
            norm.momentum = momentum
        model.eval()


def _running_buffers(model: nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Copies of every BatchNorm's running mean and variance, in module order."""
    return [(m.running_mean.clone(), m.running_var.clone()) for m in model.modules() if isinstance(m, BatchNorm1d)]


@torch.no_grad()
def _restore_running_buffers(model: nn.Module, saved: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    norms = [m for m in model.modules() if isinstance(m, BatchNorm1d)]
    for norm, (mean, var) in zip(norms, saved, strict=True):
        norm.running_mean.copy_(mean)
        norm.running_var.copy_(var)


def _optimizer_state_finite(
    model: nn.Module, opt: torch.optim.Optimizer, params: list[tuple[str, nn.Parameter]], S: int
) -> torch.Tensor:
    """Per member, whether every parameter-shaped tensor of the optimizer's state (Adam's moments,
    SGD's momentum) is finite, ``(S,)`` bool."""
    finite = torch.ones(S, dtype=torch.bool)
    for _, p in params:
        for value in opt.state.get(p, {}).values():
            if isinstance(value, torch.Tensor) and value.shape == p.shape:
                finite &= per_member(model, value).reshape(S, -1).isfinite().all(dim=1)
    return finite


def train_model(
    model: nn.Module,
    data: TaskData,
    cfg: TrainConfig,
    seed: int = 0,
    on_epoch: Callable[[int, Metrics], None] | None = None,
    metrics: Metrics | None = None,
) -> Metrics:
    """Train one plain ``model`` on ``data``: :func:`train_members` with one member.

    Args:
        model: returns logits ``(B, C)``, and with ``return_hidden=True`` also ``(B, T, H)``.
        data: the train and test splits.
        cfg: epochs, batch_size, lr, grad_clip.
        seed: seeds the mini-batch order (a ``torch.Generator``; the global RNG is untouched).
        on_epoch: called after every epoch with the epoch number and the metrics so far.
        metrics: filled in place if given (e.g. with the run's identity already set).

    Returns:
        The :class:`lnbench.records.schema.Metrics`, status ``completed`` or ``diverged``.
    """
    callback = None if on_epoch is None else (lambda epoch, ms: on_epoch(epoch, ms[0]))
    return train_members(model, [data], cfg, [seed], callback, None if metrics is None else [metrics])[0]


@dataclass
class _Splits:
    """The members' splits stacked on a leading member axis (``X (S, N, T, I)``, ``y (S, N)``,
    ``s (S, N)``), and the fixed initial states of the evaluation's splits (``(S, N, L, H)``; None:
    no state noise, or no such split)."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    s_test: torch.Tensor
    X_val: torch.Tensor | None
    y_val: torch.Tensor | None
    h0_test: torch.Tensor | None = None
    h0_val: torch.Tensor | None = None
    h0_train: torch.Tensor | None = None  # the population pass's only (batch_norm_population: recomputed)


def _stack_splits(datas: Sequence[TaskData]) -> _Splits:
    vals = [(d.X_val, d.y_val) for d in datas if d.X_val is not None and d.y_val is not None]
    return _Splits(
        X_train=torch.stack([d.X_train for d in datas]),
        y_train=torch.stack([d.y_train for d in datas]),
        X_test=torch.stack([d.X_test for d in datas]),
        y_test=torch.stack([d.y_test for d in datas]),
        s_test=torch.stack([d.s_test for d in datas]),
        X_val=torch.stack([x for x, _ in vals]) if vals else None,
        y_val=torch.stack([y for _, y in vals]) if vals else None,
    )


class _Members:
    """Which members are still trained, and the one way a member diverges: its metrics say
    ``diverged``, at which epoch and why, and it is recorded no more."""

    def __init__(self, hists: list[Metrics]) -> None:
        self.hists = hists
        self.alive = [hist.status != "diverged" for hist in hists]

    def diverge(self, epoch: int, reasons: Sequence[str | None]) -> bool:
        """Mark every member still alive whose reason is not None as diverged at ``epoch``;
        returns whether any member is left."""
        for s, reason in enumerate(reasons):
            if self.alive[s] and reason is not None:
                self.alive[s] = False
                hist = self.hists[s]
                hist.status, hist.diverged_at_epoch, hist.divergence_reason = "diverged", epoch, reason
        return any(self.alive)


def _exploded(what: str, loss: float, limit: float, num_classes: int) -> str | None:
    """Why an epoch's ``what`` (train, test) loss (nats) means divergence, or None: not finite, or
    above ``limit``."""
    if not math.isfinite(loss):
        return f"the {what} loss became {loss}"
    if loss > limit:
        return f"{what} loss {loss:.3g} nats exceeds {EXPLODED_LOSS_FACTOR:g} x ln {num_classes}"
    return None


def _weights_reasons(
    model: nn.Module, opt: torch.optim.Optimizer, params: list[tuple[str, nn.Parameter]], S: int, optimizer: str
) -> list[str | None]:
    """Per member, why its weights or optimizer state mean divergence at the end of an epoch, or None."""
    finite = torch.stack([per_member(model, p.detach()).reshape(S, -1).isfinite().all(dim=1) for _, p in params])
    state_finite = _optimizer_state_finite(model, opt, params, S)
    state = (
        f"the state of the optimizer ({optimizer}) became NaN or inf (e.g. Adam's second moment "
        "of a gradient entry above ~6e20 overflows float32, and that weight stops for good)"
    )
    return [
        "the weights became NaN or inf" if not finite[:, s].all() else None if state_finite[s] else state
        for s in range(S)
    ]


def train_members(
    model: nn.Module,
    datas: Sequence[TaskData],
    cfg: TrainConfig,
    seeds: Sequence[int],
    on_epoch: Callable[[int, list[Metrics]], None] | None = None,
    metrics: list[Metrics] | None = None,
    resume_from: Sequence[dict] | None = None,
    on_checkpoint: Callable[[int, torch.optim.Optimizer, list[torch.Generator], LRScheduler | None], None]
    | None = None,
) -> list[Metrics]:
    """Train S members with the config's optimizer and schedule on cross-entropy, probing every
    epoch: the one training loop.

    Args:
        model: an ensemble of S members (``model.members == S``; logits ``(S, B, C)`` from
            ``(S, B, T, I)``) or, with S = 1, a plain model (logits ``(B, C)`` from ``(B, T, I)``).
        datas: each member's train and test splits (equal sizes).
        cfg: epochs, batch_size, the optimizer and its schedule (:mod:`lnbench.training.optim`), grad_clip.
        seeds: each member's seed for its mini-batch order (a ``torch.Generator`` each).
        on_epoch: called after every epoch with the epoch number and every member's metrics.
        metrics: filled in place if given.
        resume_from: each member's checkpoint (:mod:`lnbench.training.checkpoints`): go on after
            its epoch, with its weights, optimizer and schedule state, batch order, RNG and metrics,
            as if never stopped.
        on_checkpoint: called after every epoch, before ``on_epoch``, with the epoch, the
            optimizer, the members' batch-order generators and the schedule (None for constant),
            already stepped for the next epoch (to save a checkpoint).

    Returns:
        One :class:`lnbench.records.schema.Metrics` per member, status ``completed`` or ``diverged``
        (a diverged member stops being recorded; the others go on).
    """
    # --- set-up: the stacked splits, the optimizer, the names the gradient norms are recorded under
    keep_freed_memory()  # the recurrence's large buffers reused, not page-faulted in every step
    S = len(datas)
    hists = [Metrics() for _ in range(S)] if metrics is None else metrics
    splits = _stack_splits(datas)
    gens = [torch.Generator().manual_seed(seed) for seed in seeds]
    opt = build_optimizer(model, cfg)
    scheduler = build_scheduler(opt, cfg)
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    layer_of = layer_names(model)
    layers = list(dict.fromkeys(layer_of[n] for n, _ in params))
    has_bn = has_batch_norm(model)
    recompute = has_bn and getattr(getattr(model, "cfg", None), "batch_norm_population", "running") == "recomputed"
    noise = _StateNoise(model, S)
    splits.h0_test, splits.h0_val = noise.of_split(splits.X_test), noise.of_split(splits.X_val)
    splits.h0_train = noise.of_split(splits.X_train) if recompute else None

    # --- before training: the probes as the network behaves in training (a resumed run has them)
    if resume_from is None:
        init = probe_members(
            model, splits.X_test, splits.y_test, splits.s_test, batch_size=cfg.batch_size, h0=splits.h0_test
        )
        edges = torch.quantile(splits.s_test, torch.tensor([0.25, 0.5, 0.75]), dim=1).T.tolist()  # (S, 3)
        for s, hist in enumerate(hists):
            hist.grad_norm = {n: [] for n, _ in params}
            hist.grad_norm_layer = {name: [] for name in layers}
            hist.test_acc_batch_stats = [] if has_bn else None
            hist.test_acc_running_stats = [] if recompute else None
            record_probes(hist, init[s], init=True)
            hist.scale_quartile_edges = edges[s]
    num_classes = datas[0].num_classes
    exploded = EXPLODED_LOSS_FACTOR * math.log(max(num_classes, 2))
    start = 1 if resume_from is None else restore(resume_from, model, opt, gens, hists, scheduler)
    members = _Members(hists)

    for epoch in range(start, cfg.epochs + 1):
        # --- the steps of one epoch
        t0 = time.perf_counter()
        lr = opt.param_groups[0]["lr"]
        step = _train_epoch(model, opt, cfg, splits, gens, noise, params, layer_of, layers, members, epoch)
        if step is None:
            return hists
        train_loss, grad_norms, layer_norms = step
        if scheduler is not None:
            scheduler.step()  # once per epoch: the next epoch's rate
        weights = _weights_reasons(model, opt, params, S, cfg.optimizer)
        losses = [_exploded("train", loss, exploded, num_classes) for loss in train_loss]
        if not members.diverge(epoch, [w or t for w, t in zip(weights, losses, strict=True)]):
            return hists

        # --- evaluation and probes (eval mode; BatchNorm recomputed: on population statistics)
        running, running_acc = None, [0.0] * S
        if recompute:  # the running averages' accuracy, then the population statistics for the evaluation
            running, running_acc = (
                _running_buffers(model),
                evaluate(model, splits.X_test, splits.y_test, splits.h0_test)[1],
            )
            recompute_population_statistics(model, splits.X_train, cfg.batch_size, splits.h0_train)
        probes = probe_members(model, splits.X_test, splits.y_test, splits.s_test, h0=splits.h0_test)  # eval mode
        members.diverge(epoch, [_exploded("test", p.loss, exploded, num_classes) for p in probes])
        val = None
        if splits.X_val is not None and splits.y_val is not None:
            val = evaluate(model, splits.X_val, splits.y_val, splits.h0_val)
        correct_bs = None
        if has_bn:
            correct_bs = correct_with_batch_stats(model, splits.X_test, splits.y_test, cfg.batch_size, splits.h0_test)
        if running is not None and epoch < cfg.epochs:  # training goes on with its own running averages
            _restore_running_buffers(model, running)

        # --- recording: every member still alive gets the epoch's values
        scalars: dict[str, list] = {
            "train_loss": train_loss,
            "test_loss": [p.loss for p in probes],
            "test_acc": [p.acc for p in probes],
            "lr": [lr] * S,
            "epoch_seconds": [time.perf_counter() - t0] * S,
        }
        if val is not None:
            scalars |= {"val_loss": val[0], "val_acc": val[1]}
        if correct_bs is not None:
            scalars["test_acc_batch_stats"] = [sum(c) / len(c) for c in correct_bs]
        if running is not None:
            scalars["test_acc_running_stats"] = running_acc
        for s, hist in enumerate(hists):
            if not members.alive[s]:
                continue
            hist.epochs.append(epoch)
            for key, values in scalars.items():
                getattr(hist, key).append(values[s])
            hist.test_correct = probes[s].correct
            if correct_bs is not None:
                hist.test_correct_batch_stats = correct_bs[s]
            record_probes(hist, probes[s])
            for k, (name, _) in enumerate(params):
                hist.grad_norm[name].append(grad_norms[k][s])
            for k, name in enumerate(layers):
                hist.grad_norm_layer[name].append(layer_norms[k][s])
        if on_checkpoint is not None:
            on_checkpoint(epoch, opt, gens, scheduler)
        if on_epoch is not None:
            on_epoch(epoch, hists)
        if not any(members.alive):
            return hists
    for s, hist in enumerate(hists):
        if members.alive[s]:
            hist.status = "completed"
    return hists


class _StateNoise:
    """A recurrent model's initial states (``model.state_noise_std`` > 0): in training a draw per
    step from each member's generator, in evaluation each example's row of one fixed draw (the same
    for every member, norm and seed). Nothing (None) for std 0 or another model."""

    def __init__(self, model: nn.Module, S: int) -> None:
        self.std, self.L, self.H, self.S = 0.0, 1, 1, S
        if isinstance(model, RecurrentClassifier):
            self.std, self.L, self.H = model.state_noise_std, model.num_layers, model.cfg.hidden_size

    def of_split(self, X: torch.Tensor | None) -> torch.Tensor | None:
        """A split's fixed initial states ``(S, N, L, H)``."""
        if X is None or self.std == 0:
            return None
        return eval_state_noise(X.shape[1], self.L, self.H, self.std, dtype=X.dtype).expand(self.S, -1, -1, -1)

    def of_step(self, batch: int, gens: Sequence[torch.Generator], dtype: torch.dtype) -> torch.Tensor | None:
        """A step's initial states ``(S, B, L, H)``: each member's from its own generator, as when trained alone."""
        if self.std == 0:
            return None
        return torch.stack([state_noise(batch, self.L, self.H, self.std, g, dtype) for g in gens])


def _train_epoch(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    cfg: TrainConfig,
    splits: _Splits,
    gens: list[torch.Generator],
    noise: _StateNoise,
    params: list[tuple[str, nn.Parameter]],
    layer_of: dict[str, str],
    layers: list[str],
    members: _Members,
    epoch: int,
) -> tuple[list[float], list[list[float]], list[list[float]]] | None:
    """One epoch's steps over each member's own batch order: per member the mean train loss
    (nats), and per parameter tensor and per layer the gradient L2 norm averaged over the steps
    (before clipping), ``(P, S)`` and ``(layers, S)``; None once every member has diverged."""
    S, n_train = len(gens), splits.X_train.shape[1]
    names = [n for n, _ in params]
    layer_index = torch.tensor([layers.index(layer_of[n]) for n, _ in params])
    model.train()
    perms = torch.stack([torch.randperm(n_train, generator=g) for g in gens])  # (S, N)
    rows = torch.arange(S)[:, None]
    loss_sum = torch.zeros(S)
    norm_sum = torch.zeros(len(params), S)  # per tensor and member: sum over steps of the gradient's L2 norm
    layer_sum = torch.zeros(len(layers), S)
    steps = 0
    for i in range(0, n_train, cfg.batch_size):
        idx = perms[:, i : i + cfg.batch_size]  # (S, B)
        h0 = noise.of_step(idx.shape[1], gens, splits.X_train.dtype)
        loss = cross_entropy(forward(model, splits.X_train[rows, idx], h0=h0), splits.y_train[rows, idx])  # (S,)
        if not bool(torch.isfinite(loss).all()):
            reasons = [None if math.isfinite(x) else f"the loss of a mini-batch became {x}" for x in loss.tolist()]
            if not members.diverge(epoch, reasons):
                return None
        opt.zero_grad(set_to_none=True)
        alive = members.alive
        total = loss.sum() if all(alive) else loss[torch.tensor(alive)].sum()
        total.backward()  # each member's gradient is its own
        norms = gradients.grad_norms(model, params, S)  # (P, S)
        if not bool((norms <= gradients.LARGE_GRAD_NORM).all()):  # also true for NaN: the slow path, rarely
            reasons = [
                gradients.nonfinite_reason(model, names, norms[:, s], steps + 1)
                if alive[s] and not bool(norms[:, s].isfinite().all())
                else None
                for s in range(S)
            ]
            for s in range(S):
                if reasons[s] is not None:
                    gradients.zero_member_grads(model, params, s)
                elif alive[s] and float(norms[:, s].max()) > gradients.LARGE_GRAD_NORM:
                    _warn_large_gradient(members.hists[s], model, names, norms[:, s], epoch, steps + 1, cfg)
            if not members.diverge(epoch, reasons):
                return None
            norms = norms.nan_to_num(0.0, posinf=0.0)  # a diverged member's: it is not recorded
        norm_sum += norms
        layer_sum += gradients.layer_grad_norms(norms, layer_index, len(layers))
        if cfg.grad_clip is not None:  # torch.nn.utils.clip_grad_norm_, per member (lnbench.training.gradients)
            gradients.clip_grad_norms(model, params, norms, cfg.grad_clip, members.alive)
        opt.step()
        loss_sum += loss.detach()
        steps += 1
    return (loss_sum / steps).tolist(), (norm_sum / steps).tolist(), (layer_sum / steps).tolist()


def _warn_large_gradient(
    hist: Metrics, model: nn.Module, names: list[str], norms: torch.Tensor, epoch: int, step: int, cfg: TrainConfig
) -> None:
    """Note a finite gradient norm above LARGE_GRAD_NORM in the run's warnings, once per run (the first)."""
    if any(w.startswith("the gradient of") for w in hist.warnings):
        return
    hist.warnings.append(
        gradients.large_gradient_warning(
            model, names, norms, epoch, step, optimizer=cfg.optimizer, grad_clip=cfg.grad_clip
        )
    )
