"""The training loop's gradient arithmetic: per-tensor L2 norms, clipping by the global norm, and
what a gradient that float32 cannot hold means for the run.

Why it needs care: a norm's output does not depend on its input's scale, so its Jacobian is
``gamma * rstd`` times a projection, with ``rstd = 1/sqrt(var + eps)``. At an all-zero (or, for
BatchNorm, a batch-constant) input, var = 0 and the Jacobian is ``gamma/sqrt(eps)``: 316 at
gamma = 1, eps = 1e-5. A recurrence reading inputs that are zero for whole timesteps (MNIST or
digits pixel by pixel, padding) from ``h_0 = 0`` keeps its state at exactly zero there, so the
backward through time multiplies the gradient by ~316 at every such step: 4 blank steps give an
LN-LSTM's biases a gradient of ~1e15, 5 of ~1e19, 30 of inf and NaN. The forward stays finite, so
nothing else notices:

- a float32 norm (``torch.linalg.vector_norm``, bit for bit ``torch._foreach_norm``'s) sums squares
  in float32: a norm above ~1.8e19 comes out inf although float32 holds it. :func:`grad_norms`
  recomputes such a norm in float64 (inf only beyond 3.4e38).
- the global norm of clipping (a float32 sum of squared norms) overflows likewise; ``grad_clip /
  inf = 0`` would zero the step without a word, and ``inf * 0`` makes NaN. :func:`clip_grad_norms`
  takes that member's global norm and coefficient in float64 instead.
- a gradient with an inf or NaN entry (or a norm beyond float32) cannot be clipped into a
  direction: :func:`nonfinite_reason` words the divergence, naming the tensor and the Jacobian.
- a finite but enormous gradient (above :data:`LARGE_GRAD_NORM`) is a step SGD takes in full, and
  a second moment that shrinks Adam's later steps: the run goes on, and :func:`large_gradient_warning`
  words the note it keeps (``Metrics.warnings``), for the optimizer the run uses.

On ordinary gradients (float32 norms finite) every number is the float32 arithmetic of before, bit
for bit: the float64 paths run only where float32 overflowed.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lnbench.nn.base import Norm
from lnbench.records.schema import NOTE_WHY
from lnbench.training.ensemble import per_member

#: A parameter tensor's gradient L2 norm (one step, one member) above this is noted in the run's
#: warnings. Not tuned to any norm: 5e4 x the largest step norm measured without blank timesteps
#: (2 epochs of configs/compare.yaml, compare_adding.yaml and compare_digits.yaml by rows, every
#: family, norm and placement, Adam, seed 0: at most 19); by pixels the BN-RNN reached 2e3, the joint
#: LN-RNN 3e6 and the LN-LSTM 7e11 (docs/task-and-models.md, "Blank timesteps").
LARGE_GRAD_NORM = 1e6


def grad_norms(model: nn.Module, params: list[tuple[str, nn.Parameter]], S: int) -> torch.Tensor:
    """L2 norm of each parameter's gradient per member, ``(P, S)`` float32 (0 for no gradient).

    ``torch.linalg.vector_norm`` over each member's contiguous row (float32 squares); a norm that
    overflowed to inf while its tensor is finite is recomputed with ``dtype=float64`` (still inf
    only above float32's 3.4e38). NaN or inf where the gradient has a NaN or inf entry."""
    grads = [per_member(model, p.grad).reshape(S, -1) if p.grad is not None else torch.zeros(S, 1) for _, p in params]
    # one reduction per tensor over its members' rows, each row summed as the run alone sums its
    # tensor: a member's clipping (and metrics) are bit for bit those of its run alone (tested);
    # a third of the time of a norm per member and tensor (torch._foreach_norm) at S = 5
    norms = torch.stack([torch.linalg.vector_norm(g, dim=1) for g in grads])
    if not bool(norms.isfinite().all()):
        for k, s in (~norms.isfinite()).nonzero().tolist():
            if bool(grads[k][s].isfinite().all()):
                norms[k, s] = torch.linalg.vector_norm(grads[k][s], dtype=torch.float64)
    return norms


def layer_grad_norms(norms: torch.Tensor, layer_index: torch.Tensor, n_layers: int) -> torch.Tensor:
    """Each layer's gradient L2 norm per member, ``(L, S)`` float32, from the tensors' ``norms``
    ``(P, S)`` (finite) and ``layer_index`` ``(P,)`` (tensor k is in layer ``layer_index[k]``):
    the square root of the sum of its tensors' squared norms. Float32 squares overflow above ~1.8e19;
    then the sums are taken in float64, so a finite gradient is not recorded as inf (inf only
    beyond float32's 3.4e38)."""
    S = norms.shape[1]
    step = torch.zeros(n_layers, S).index_add_(0, layer_index, norms.square()).sqrt()
    if not bool(step.isfinite().all()):  # float32 squares of norms above ~1.8e19: in float64
        wide = torch.zeros(n_layers, S, dtype=torch.float64)
        step = wide.index_add_(0, layer_index, norms.double().square()).sqrt().float()
    return step


def clip_grad_norms(
    model: nn.Module, params: list[tuple[str, nn.Parameter]], norms: torch.Tensor, clip: float, alive: list[bool]
) -> None:
    """Scale each live member's gradient in place by ``min(1, clip / (total + 1e-6))``, total its
    global L2 norm over ``norms`` ``(P, S)``: ``torch.nn.utils.clip_grad_norm_`` per member.

    The total is a float32 sum of squares, as before; a member whose sum overflows (finite norms
    above ~1.8e19 in all) gets its total in float64 and its gradient scaled in float64, so it is
    clipped to ``clip``, not zeroed. A dead member's gradient is left alone (it is not stepped)."""
    S = norms.shape[1]
    # each member's total from its own contiguous row (a sum over dim 0 of (P, S) rounds differently
    # for S = 1 and S > 1 once P >= 8 tensors)
    total_norm = torch.stack([row.square().sum() for row in norms.T.contiguous()]).sqrt()  # (S,)
    coef = (clip / (total_norm + 1e-6)).clamp(max=1.0)
    wide: dict[int, float] = {}  # member -> its float64 coefficient
    for s in range(S):
        if not alive[s]:
            coef[s] = 1.0
        elif not math.isfinite(total_norm[s].item()):
            total64 = torch.linalg.vector_norm(norms[:, s], dtype=torch.float64).item()
            wide[s], coef[s] = min(1.0, clip / (total64 + 1e-6)), 1.0
    for _, p in params:
        if p.grad is not None:
            g = per_member(model, p.grad)
            g.mul_(coef.view(S, *[1] * (g.dim() - 1)))
            for s, c in wide.items():
                g[s].copy_(g[s].double().mul_(c))


def zero_member_grads(model: nn.Module, params: list[tuple[str, nn.Parameter]], s: int) -> None:
    """Set member ``s``'s gradient to zero (a member that diverged in this step: its NaN or inf
    gradient goes no further)."""
    for _, p in params:
        if p.grad is not None:
            per_member(model, p.grad)[s].zero_()


def _jacobian_note(model: nn.Module) -> str:
    """The cause to name when a model with a norm gets an overflowing gradient ('' without a norm)."""
    eps = next((float(m.eps) for m in model.modules() if isinstance(m, Norm)), None)
    if eps is None:
        return ""
    return (
        f"; a norm of an all-zero input has a Jacobian of gamma/sqrt(eps) ({1 / math.sqrt(eps):.0f} at gamma 1, "
        f"eps {eps:g}), and a recurrence over inputs that are zero for whole timesteps multiplies the gradient "
        "by it at each such step (docs/task-and-models.md, 'Blank timesteps'); Cooijmans et al.'s recipe trains "
        "through it: model.state_noise_std 0.1 (h_0 not all zero) with train.grad_clip 1 "
        "(configs/cooijmans_smnist.yaml)"
    )


def nonfinite_reason(model: nn.Module, names: list[str], norms: torch.Tensor, step: int) -> str:
    """The divergence reason for one member whose gradient norms ``norms`` ``(P,)`` are not all finite:
    the first such tensor by name, how many there were, and the likely cause."""
    bad = [k for k in range(len(names)) if not math.isfinite(norms[k].item())]
    k = bad[0]
    what = "NaN" if math.isnan(norms[k].item()) else "inf (a norm beyond float32's 3.4e38)"
    more = f" (and {len(bad) - 1} more of {len(names)} tensors)" if len(bad) > 1 else ""
    return f"the gradient of {names[k]} became {what} in step {step} of the epoch{more}{_jacobian_note(model)}"


#: What each optimizer (``train.optimizer``) does with a gradient far above the others, without
#: ``train.grad_clip``: SGD steps by lr times it; Adam's and RMSprop's steps stay near lr, but its
#: square enters their running mean of squared gradients, which then shrinks those elements' later steps.
LARGE_STEP = {
    "sgd": "SGD takes such a step in full (lr times the gradient)",
    "adam": "Adam keeps the step near lr, but the gradient's square enters its second moment and shrinks these "
    "elements' later steps until it decays (beta2 0.999: a factor e per 1000 steps)",
    "adamw": "AdamW keeps the step near lr, but the gradient's square enters its second moment and shrinks these "
    "elements' later steps until it decays (beta2 0.999: a factor e per 1000 steps)",
    "rmsprop": "RMSprop keeps the step near lr, but the gradient's square enters its running mean of squares and "
    "shrinks these elements' later steps until it decays (alpha 0.99: a factor e per 100 steps)",
}


def large_gradient_warning(
    model: nn.Module,
    names: list[str],
    norms: torch.Tensor,
    epoch: int,
    step: int,
    *,
    optimizer: str,
    grad_clip: float | None,
) -> str:
    """The note for one member whose largest gradient norm in ``norms`` ``(P,)`` exceeds
    :data:`LARGE_GRAD_NORM` (the training went on): what ``optimizer`` (``train.optimizer``) does with
    such a gradient (:data:`LARGE_STEP`) and, without ``grad_clip``, that ``train.grad_clip`` bounds it."""
    k = int(norms.argmax())
    if grad_clip is not None:
        what = (
            f"train.grad_clip rescaled the step's gradients to an L2 norm of at most {grad_clip:g} "
            f"before train.optimizer {optimizer} took the step"
        )
    else:
        what = f"without train.grad_clip (which bounds it), {LARGE_STEP[optimizer]}"
    return (
        f"the gradient of {names[k]} reached an L2 norm of {norms[k].item():.3g} in epoch {epoch}, step {step} "
        f"(above {LARGE_GRAD_NORM:g}){NOTE_WHY}{what}{_jacobian_note(model)}"
    )
