"""Probes of the hidden-state dynamics, measured on a fixed probe set (the test split).

The mean ‖h_t‖ over all samples hides what a norm does to the dynamics: a model can have the
same average hidden-state size whether or not that size follows the input's scale. These
probes show it (Ba et al. 2016 motivate LayerNorm by exactly this invariance, section 5):

- ``hidden_norm_by_scale``: the mean L2 norm of h_t per timestep, separately for each quartile
  of the samples' input scale s (:attr:`lnbench.training.data.TaskData.s_test`), ``(4, T)``.
- ``scale_spearman``: the Spearman rank correlation between ‖h_T‖ and s over the probe set
  (``scipy.stats.spearmanr``). Near 1: the last hidden state's size follows the input's
  scale; near 0: it does not. None when it is undefined (‖h_T‖ or s constant).
- ``saturation`` and ``saturation_by_scale``: the fraction of tanh units with |h| > 0.99
  (:data:`SATURATION`) over all samples, timesteps and units, and per scale quartile
  ``(4,)``. LSTM: the fraction of its gate units saturated, the sigmoids of i, f, o (on tanh's
  scale, ``|2 sigmoid(a) - 1| = |tanh(a / 2)| > 0.99``: sigmoid < 0.005 or > 0.995, its derivative
  below 2% of its maximum, as tanh's) and the tanhs of g and of norm_c(c_t), 5H units per step.
  RNN and LSTM only (the Transformer has no tanh state): None.
- ``grad_ratio``: ‖∂L/∂h_1‖ / ‖∂L/∂h_T‖, the total derivatives of the summed probe-set
  cross-entropy through the recurrence (Frobenius norms over samples and units). Far below
  1: the gradient vanishes on its way back through time; far above 1: it explodes. RNN and LSTM
  only (the LSTM's dL/dh_1 takes every path, through c_t too).

Hidden states are the RNN's and the LSTM's h_t, or the Transformer's residual stream after the last block.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, fields

import torch
from scipy.stats import spearmanr
from torch import nn
from torch.nn import functional as F

from lnbench.nn.batchnorm import batch_statistics
from lnbench.nn.models import RecurrentClassifier
from lnbench.nn.recurrent import SATURATION  # noqa: F401  |u| above this: a saturated unit (derivative of tanh < 0.02)
from lnbench.records.schema import Metrics
from lnbench.training.ensemble import cross_entropy, forward, has_batch_norm, is_ensemble

QUARTILES = 4


@dataclass(kw_only=True)
class LayerProbes:
    """One layer's probes of one member (see the module docstring). Each field is named as the
    :class:`lnbench.records.schema.Metrics` field it is recorded in (:func:`record_probes`): after
    an epoch appended to ``<name>``, before training as ``<name>_init``, and for a stacked model
    each layer's in ``<name>_by_layer`` (``_init``), where Metrics declares those fields. A new
    probe is its field here, its computation in :func:`_layer_probes` and its Metrics field.

    Shapes: T timesteps, 4 input-scale quartiles; None where the model has no such quantity (the
    Transformer has no tanh state or recurrence) or it is undefined."""

    hidden_norm: list[float]  # (T,): mean ||h_t|| per timestep
    hidden_norm_by_scale: list[list[float | None]]  # (4, T): per input-scale quartile
    scale_spearman: float | None  # Spearman's rho of ||h_T|| with the input scale s
    saturation: float | None = None  # fraction of saturated tanh (LSTM: gate) units
    saturation_by_scale: list[float | None] | None = None  # (4,): per input-scale quartile
    grad_ratio: float | None = None  # ||dL/dh_1|| / ||dL/dh_T||


@dataclass(kw_only=True)
class MemberProbes(LayerProbes):
    """One member's probes: layer 1's (a one-layer model's) as its own fields, the evaluation's
    loss (mean cross-entropy, nats), accuracy (a fraction) and per-example correctness (N values
    0/1), and for a stacked model every layer's, layer 1 first (None for one layer)."""

    loss: float
    acc: float
    correct: list[int]
    by_layer: list[LayerProbes] | None = None


#: the names of the probes (:class:`LayerProbes`' fields), each a per-epoch field of Metrics
PROBES = tuple(f.name for f in fields(LayerProbes))
_METRICS = frozenset(f.name for f in fields(Metrics))


def record_probes(hist: Metrics, probes: MemberProbes, init: bool = False) -> None:
    """Put one member's probes into its metrics, each into the Metrics field of its name: after an
    epoch appended to ``<name>`` (and for a stacked model ``<name>_by_layer``), before training
    (``init``) set as ``<name>_init`` (``<name>_by_layer_init``), where Metrics declares those."""
    suffix = "_init" if init else ""
    for name in PROBES:
        values = {name + suffix: getattr(probes, name)}
        if probes.by_layer is not None:
            values[f"{name}_by_layer{suffix}"] = [getattr(layer, name) for layer in probes.by_layer]
        for key, value in values.items():
            if key not in _METRICS:
                continue
            if init:
                setattr(hist, key, value)
            elif (series := getattr(hist, key)) is not None:
                series.append(value)
            else:  # a *_by_layer field starts as None
                setattr(hist, key, [value])


def scale_quartiles(scale: torch.Tensor) -> torch.Tensor:
    """Quartile index 0..3 of each sample's scale within its row, by rank: ``(S, N)`` float ->
    ``(S, N)`` int64 (quartile 0: the smallest quarter of scales; ties broken by position)."""
    n = scale.shape[-1]
    ranks = scale.argsort(dim=-1).argsort(dim=-1)  # (S, N), 0 .. N-1
    return (ranks * QUARTILES) // n


def _spearman(a: list[float], b: list[float]) -> float | None:
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    rho = spearmanr(a, b).statistic
    return None if not math.isfinite(rho) else float(rho)


def probe_passes(n: int, batch_size: int) -> list[tuple[int, int, int]]:
    """The passes that give each of ``n`` examples the batch statistics of its mini-batch of
    ``batch_size`` consecutive examples: ``(start, stop, group_size)`` for
    :func:`lnbench.nn.batchnorm.batch_statistics`, the whole mini-batches in one pass and the
    remainder (``n % batch_size`` examples, its own smaller batch) in a second.

    >>> probe_passes(1000, 64)
    [(0, 960, 64), (960, 1000, 40)]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    full = n - n % batch_size
    return [(i, j, j - i if j - i < batch_size else batch_size) for i, j in ((0, full), (full, n)) if j > i]


def probe_members(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    scale: torch.Tensor,
    batch_size: int | None = None,
    h0: torch.Tensor | None = None,
) -> list[MemberProbes]:
    """Measure the probes of every member (see the module docstring) and the eval metrics.

    The model is put in eval mode. With ``batch_size``, every BatchNorm normalizes with the
    statistics of consecutive probe mini-batches of that size (the network as in training;
    running statistics untouched; the whole mini-batches in one pass, :func:`probe_passes`);
    without it BatchNorm uses its running statistics.

    Args:
        model: a plain model (S = 1) or an ensemble (``model.members == S``).
        X: ``(S, N, T, I)`` float32; y: ``(S, N)`` int64; scale: ``(S, N)``, each sample's s.
        batch_size: see above.
        h0: a recurrent model's initial states ``(S, N, L, H)``, example i's in row i (the
            evaluation's state noise); None: the model's own (zeros at ``state_noise_std`` 0).

    Returns:
        Per member a :class:`MemberProbes`: the evaluation's loss, accuracy and per-example
        correctness, layer 1's probes, and a stacked model's every layer's.
    """
    S, N = X.shape[0], X.shape[1]
    model.eval()
    passes: Sequence[tuple[int, int, int | None]] = [(0, N, None)]  # one pass; BatchNorm: running statistics
    if batch_size and has_batch_norm(model):  # batch statistics: the whole mini-batches in one pass, each its own
        passes = probe_passes(N, batch_size)
    ensemble = is_ensemble(model)
    L = getattr(model, "num_layers", 1) if isinstance(model, RecurrentClassifier) else 1
    # per layer (layer 1 first): the hidden-state norms and the saturated fractions of each pass
    norms: list[list[torch.Tensor]] = [[] for _ in range(L)]
    saturated: list[list[torch.Tensor]] = [[] for _ in range(L)]
    logits_all = []
    grad_sq = torch.zeros(L, S, 2)  # per layer and member: sum of squares of dL/dh_1 and dL/dh_T
    for i, j, group in passes:
        context = nullcontext() if group is None else batch_statistics(model, group)
        with context, torch.enable_grad():
            Xc, yc = X[:, i:j], y[:, i:j]
            if isinstance(model, RecurrentClassifier):
                hc = None if h0 is None else h0[:, i:j] if ensemble else h0[0, i:j]
                # the C++ kernel where it covers the model (lnbench.nn.fused), else the Python recurrence
                unrolled = model.unroll(Xc if ensemble else Xc[0], probe=True, h0=hc)
                lead = (lambda t: t) if ensemble else (lambda t: t.unsqueeze(0))  # noqa: E731  a member axis
                total = F.cross_entropy(lead(unrolled.logits).transpose(1, 2), yc, reduction="sum")
                logits = lead(unrolled.logits)
                for layer, states, (g_first, g_last) in zip(
                    range(L), unrolled.layers, unrolled.first_last_grads(total), strict=True
                ):
                    g_first, g_last = lead(g_first), lead(g_last)  # (S, b, H)
                    grad_sq[layer] += torch.stack(
                        [g_first.square().sum(dim=(1, 2)), g_last.square().sum(dim=(1, 2))], dim=1
                    )
                    norms[layer].append(lead(states.hidden.detach()).norm(dim=-1))  # (S, b, T)
                    assert states.saturated is not None
                    saturated[layer].append(lead(states.saturated.detach()).float())  # (S, b)
            else:
                with torch.no_grad():
                    logits, hidden = forward(model, Xc, return_hidden=True)
                norms[0].append(hidden.norm(dim=-1))  # (S, b, T)
            logits_all.append(logits.detach())
    logits = torch.cat(logits_all, dim=1)  # (S, N, C)
    loss = cross_entropy(logits, y).tolist()
    correct = (logits.argmax(dim=-1) == y).to(torch.int64)  # (S, N)
    quart = scale_quartiles(scale)  # (S, N)
    layers = [
        _layer_probes(torch.cat(norms[k], dim=1), torch.cat(saturated[k], dim=1) if saturated[k] else None, grad_sq[k])
        for k in range(L)
    ]  # per layer, per member
    out = []
    for s in range(S):
        by_layer = [layer(s, quart[s], scale[s]) for layer in layers]
        out.append(
            MemberProbes(
                **{f.name: getattr(by_layer[0], f.name) for f in fields(LayerProbes)},  # layer 1's
                loss=loss[s],
                acc=int(correct[s].sum()) / N,  # exact: 187 / 200, not float32
                correct=correct[s].tolist(),
                by_layer=by_layer if L > 1 else None,
            )
        )
    return out


def _layer_probes(
    norm: torch.Tensor, sat: torch.Tensor | None, grad_sq: torch.Tensor
) -> Callable[[int, torch.Tensor, torch.Tensor], LayerProbes]:
    """One layer's probes of member s, from its hidden-state norms ``(S, N, T)``, its saturated
    fractions ``(S, N)`` (None: the Transformer) and its gradients' sums of squares ``(S, 2)``."""
    T = norm.shape[-1]

    def of(s: int, quart: torch.Tensor, scale: torch.Tensor) -> LayerProbes:
        by_q: list[list[float | None]] = [
            norm[s][quart == q].mean(dim=0).tolist() if (quart == q).any() else [None] * T for q in range(QUARTILES)
        ]
        probes = LayerProbes(
            hidden_norm=norm[s].mean(dim=0).tolist(),
            hidden_norm_by_scale=by_q,
            scale_spearman=_spearman(norm[s, :, -1].tolist(), scale.tolist()),
        )
        if sat is not None:  # RNN and LSTM
            probes.saturation = float(sat[s].mean())
            probes.saturation_by_scale = [
                float(sat[s][quart == q].mean()) if (quart == q).any() else None for q in range(QUARTILES)
            ]
            first, last = grad_sq[s].sqrt().tolist()
            probes.grad_ratio = first / last if last > 0 and math.isfinite(first) else None
        return probes

    return of
