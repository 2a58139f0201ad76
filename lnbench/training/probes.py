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
from collections.abc import Sequence
from contextlib import nullcontext

import torch
from scipy.stats import spearmanr
from torch import nn
from torch.nn import functional as F

from lnbench.nn.batchnorm import batch_statistics
from lnbench.nn.models import RecurrentClassifier
from lnbench.nn.rnn import SATURATION  # noqa: F401  |u| above this: a saturated unit (derivative of tanh < 0.02)
from lnbench.training.ensemble import cross_entropy, forward, has_batch_norm, is_ensemble

QUARTILES = 4


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
    model: nn.Module, X: torch.Tensor, y: torch.Tensor, scale: torch.Tensor, batch_size: int | None = None
) -> list[dict]:
    """Measure the probes of every member (see the module docstring) and the eval metrics.

    The model is put in eval mode. With ``batch_size``, every BatchNorm normalizes with the
    statistics of consecutive probe mini-batches of that size (the network as in training;
    running statistics untouched; the whole mini-batches in one pass, :func:`probe_passes`);
    without it BatchNorm uses its running statistics.

    Args:
        model: a plain model (S = 1) or an ensemble (``model.members == S``).
        X: ``(S, N, T, I)`` float32; y: ``(S, N)`` int64; scale: ``(S, N)``, each sample's s.
        batch_size: see above.

    Returns:
        Per member a dict: ``loss`` (mean cross-entropy, nats), ``acc`` (fraction), ``correct``
        (N values 0/1), ``hidden_norm`` (T), ``hidden_norm_by_scale`` (4 x T),
        ``scale_spearman``, ``saturation``, ``saturation_by_scale`` (4), ``grad_ratio``
        (the last three None for the Transformer; the LSTM's saturation is of its gates).
    """
    S, N, T = X.shape[0], X.shape[1], X.shape[2]
    model.eval()
    passes: Sequence[tuple[int, int, int | None]] = [(0, N, None)]  # one pass; BatchNorm: running statistics
    if batch_size and has_batch_norm(model):  # batch statistics: the whole mini-batches in one pass, each its own
        passes = probe_passes(N, batch_size)
    ensemble = is_ensemble(model)
    norms, saturated, logits_all = [], [], []
    grad_sq = torch.zeros(S, 2)  # per member: sum of squares of dL/dh_1 and dL/dh_T
    for i, j, group in passes:
        context = nullcontext() if group is None else batch_statistics(model, group)
        with context, torch.enable_grad():
            Xc, yc = X[:, i:j], y[:, i:j]
            if isinstance(model, RecurrentClassifier):
                # the C++ kernel where it covers the model (lnbench.nn.fused), else the Python recurrence
                unrolled = model.unroll(Xc if ensemble else Xc[0], probe=True)
                lead = (lambda t: t) if ensemble else (lambda t: t.unsqueeze(0))  # noqa: E731  a member axis
                total = F.cross_entropy(lead(unrolled.logits).transpose(1, 2), yc, reduction="sum")
                g_first, g_last = (lead(g) for g in unrolled.first_last_grads(total))  # (S, b, H)
                logits = lead(unrolled.logits)
                grad_sq += torch.stack([g_first.square().sum(dim=(1, 2)), g_last.square().sum(dim=(1, 2))], dim=1)
                hidden = lead(unrolled.hidden.detach())  # (S, b, T, H)
                assert unrolled.saturated is not None
                saturated.append(lead(unrolled.saturated.detach()).float())  # (S, b)
            else:
                with torch.no_grad():
                    logits, hidden = forward(model, Xc, return_hidden=True)
            norms.append(hidden.norm(dim=-1))  # (S, b, T)
            logits_all.append(logits.detach())
    logits = torch.cat(logits_all, dim=1)  # (S, N, C)
    norm = torch.cat(norms, dim=1)  # (S, N, T)
    loss = cross_entropy(logits, y).tolist()
    correct = (logits.argmax(dim=-1) == y).to(torch.int64)  # (S, N)
    quart = scale_quartiles(scale)  # (S, N)
    sat = torch.cat(saturated, dim=1) if saturated else None  # (S, N)
    out = []
    for s in range(S):
        by_q = [
            norm[s][quart[s] == q].mean(dim=0).tolist() if (quart[s] == q).any() else [None] * T
            for q in range(QUARTILES)
        ]
        entry = {
            "loss": loss[s],
            "acc": int(correct[s].sum()) / N,  # exact: 187 / 200, not float32
            "correct": correct[s].tolist(),
            "hidden_norm": norm[s].mean(dim=0).tolist(),
            "hidden_norm_by_scale": by_q,
            "scale_spearman": _spearman(norm[s, :, -1].tolist(), scale[s].tolist()),
            "saturation": None,
            "saturation_by_scale": None,
            "grad_ratio": None,
        }
        if sat is not None:  # RNN and LSTM
            entry["saturation"] = float(sat[s].mean())
            entry["saturation_by_scale"] = [
                float(sat[s][quart[s] == q].mean()) if (quart[s] == q).any() else None for q in range(QUARTILES)
            ]
            first, last = grad_sq[s].sqrt().tolist()
            entry["grad_ratio"] = first / last if last > 0 and math.isfinite(first) else None
        out.append(entry)
    return out
