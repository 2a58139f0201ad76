"""Checks for a user's own norm, the idea of scikit-learn's ``check_estimator``.

A norm of your own (a subclass of :class:`lnbench.nn.Norm`, named in a config as
``model.norm: "package.module:ClassName"``) goes wherever lnbench's built-in norms go, so it must
pass what they pass. :data:`CHECKS` is the one list of those checks; :func:`check_norm` runs it
(and measures the norm's row of Ba et al.'s Table 1), ``lnbench gradcheck --norm`` prints it
(:func:`norm_checks`), and ``lnbench train``, ``compare`` and ``sweep`` run it on a user's norm
before they train it (:func:`first_failure`; ``--no-check`` skips it)::

    from lnbench.testing import check_norm
    from mypackage.norms import ScaleNorm

    report = check_norm(ScaleNorm)       # AssertionError naming the first check that fails
    report["invariance"]                 # its row of Ba et al.'s Table 1, measured

Which checks run follows the capabilities the class declares, as scikit-learn picks an
estimator's checks by its tags: ``members=3`` only with ``has_member_axis``, the per-example and
no-state checks only without ``uses_batch_statistics``; a ``takes_timestep`` norm is called as a
recurrence calls it (``norm(x_t, t)`` for each timestep of a ``(B, T, D)`` sequence, then
``end_sequence()``). A check that raises fails with the error named; the others still run.

Every built-in layer of :data:`lnbench.nn.registry.NORMS` passes it (``tests/nn/test_plugin_norms.py``).
"""

from __future__ import annotations

import copy
import math
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from torch.func import functional_call

from lnbench.nn.base import Norm
from lnbench.nn.invariance import EPS, TRANSFORMATIONS, measure

CAPABILITIES = ("has_beta", "uses_batch_statistics", "takes_timestep", "grouped_as_layer", "has_member_axis")
GROUP = "user norm"  # the group of the checks' rows in ``lnbench gradcheck``
TOLERANCE = 1e-10  # float64: two computations of the same value
BATCH, STEPS, MEMBERS = 5, 3, 3


class NormFailure(ValueError):
    """A user's norm raised, or returned an output that is not a norm's, while being measured
    (``lnbench invariance --norm``); the message is one line naming the class and the error."""


class CheckFailed(AssertionError):
    """A check of :data:`CHECKS` found the norm wrong; its message says how, in one line. An
    ``AssertionError`` the norm's own code raises (a bare ``assert`` in its ``forward``) is not
    one: it fails the check as any error the norm raises does, named with where it was raised."""


def _require(condition: object, message: str) -> None:
    """Raise :class:`CheckFailed` with ``message`` unless ``condition`` (a check's own test: not
    an ``assert``, which ``python -O`` removes and which cannot be told from a user's)."""
    if not condition:
        raise CheckFailed(message)


def one_line(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"`` on one line (whitespace collapsed, at most 300 characters)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 300 else text[:297] + "..."


class _Unrolled(nn.Module):
    """A norm called as a model calls it: directly, or, for a ``takes_timestep`` norm, once per
    timestep of a ``(..., B, T, D)`` sequence (``norm(x_t, t)``, then ``end_sequence()``)."""

    def __init__(self, norm: Norm) -> None:
        super().__init__()
        self.norm = norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not type(self.norm).takes_timestep:
            return self.norm(x)
        out = torch.stack([self.norm(x[..., t, :], t) for t in range(x.shape[-2])], dim=-2)  # (..., B, T, D)
        self.norm.end_sequence()
        return out


def _apply(layer: Norm, x: torch.Tensor) -> torch.Tensor:
    """``layer`` on a copy of ``x`` (a norm that writes into its input fails the forward check, not the others)."""
    return _Unrolled(layer)(x.clone())


def _finite(cls: type[Norm], y: torch.Tensor, what: str) -> None:
    _require(torch.isfinite(y).all(), f"{cls.__name__}: its output is NaN or inf, so {what} cannot be checked")


def _ranks(cls: type[Norm]) -> tuple[int, ...]:
    """The input ranks the checks use: ``(B, D)`` and ``(B, T, D)`` where the norm takes them; a
    timestep norm takes a sequence ``(B, T, D)``, one ``(B, D)`` step per call."""
    if cls.takes_timestep:
        return (3,)
    if cls.input_ranks is None:
        return (2, 3)
    return tuple(r for r in (2, 3) if r in cls.input_ranks) or tuple(cls.input_ranks)


def _shape(cls: type[Norm], features: int, rank: int | None = None, batch: int = BATCH) -> tuple[int, ...]:
    """``(B, D)`` or ``(B, T, D)`` (the largest rank the checks use unless ``rank`` is given)."""
    rank = max(_ranks(cls)) if rank is None else rank
    return (batch, *[STEPS] * (rank - 2), features)


def _build(cls: type[Norm], features: int, seed: int, members: int | None = None) -> Norm:
    """``cls(features)`` (or with ``members``) in float64, training mode, gains and biases moved
    off 1 and 0 so that their gradients and each member's parameters are tested too."""
    layer = (cls(features) if members is None else cls(features, members=members)).double().train()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.3 * torch.randn(p.shape, dtype=p.dtype, generator=g))
    return layer


def _randn(*shape: int, seed: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(*shape, dtype=torch.float64, generator=g) + shift


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE)


def _difference(a: torch.Tensor, b: torch.Tensor) -> str:
    return (
        f"max difference {float((a - b).abs().max().detach()):.2g}" if a.shape == b.shape else f"{a.shape} vs {b.shape}"
    )


def _capabilities(cls: type[Norm], features: int) -> None:
    for key in CAPABILITIES:
        value = getattr(cls, key)
        _require(isinstance(value, bool), f"{cls.__name__}.{key} must be a bool, got {value!r}")


def _forward(cls: type[Norm], features: int) -> None:
    """Its output has its input's shape and dtype and is finite, its input is left as it was,
    and calling it writes nothing on its class (state every layer of the class would share:
    every model, every member of an ensemble, the checks' fresh layers). The first check that
    calls the norm: a cache that the class fills on its first call shows here, unless the norm
    was called before in this process."""
    layers = [_build(cls, features, 0) for _ in _ranks(cls)]
    before = _class_state(cls)
    for rank, layer in zip(_ranks(cls), layers, strict=True):
        x = _randn(*_shape(cls, features, rank), seed=3)
        given = x.clone()
        y = _Unrolled(layer)(x)
        _require(isinstance(y, torch.Tensor), f"{cls.__name__}: returned {type(y).__name__}, not a tensor")
        _require(
            y.shape == x.shape,
            f"{cls.__name__}: maps {tuple(x.shape)} to {tuple(y.shape)}; a norm's output has its input's shape",
        )
        _require(
            torch.equal(x, given),
            f"{cls.__name__}: changes its input in place (the caller's tensor, which autograd may need)",
        )
        bad = int((~torch.isfinite(y)).sum())
        _require(
            not bad, f"{cls.__name__}: {bad} of {y.numel()} outputs are NaN or inf for a finite input {tuple(x.shape)}"
        )
        _require(y.dtype == x.dtype, f"{cls.__name__}: a {x.dtype} input gave a {y.dtype} output")
        with torch.no_grad():
            _Unrolled(layer.eval())(x)
    after = _class_state(cls)
    changed = sorted(".".join(key) for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    _require(
        not changed,
        f"{cls.__name__}: calling it writes {', '.join(changed)} on its class: state that every layer of the class "
        "shares (keep it on the instance, or compute it in __init__)",
    )


def _gradchecks(cls: type[Norm], features: int) -> None:
    layer = _build(cls, features, 0)
    x = _randn(*_shape(cls, features), seed=4).requires_grad_(True)
    names = [n for n, _ in layer.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in layer.parameters()]
    unrolled = _Unrolled(layer)

    def f(x: torch.Tensor, *params: torch.Tensor) -> torch.Tensor:
        return functional_call(unrolled, {f"norm.{n}": p for n, p in zip(names, params, strict=True)}, (x,))

    with torch.no_grad():
        finite = bool(torch.isfinite(f(x, *params)).all())
    _require(finite, f"{cls.__name__}: its output is NaN or inf, so its gradients cannot be checked")
    _require(
        torch.autograd.gradcheck(f, (x, *params), raise_exception=False),
        (f"{cls.__name__}: gradcheck failed: its backward disagrees with finite differences (float64)"),
    )
    _require(
        torch.autograd.gradgradcheck(f, (x, *params), raise_exception=False),
        (f"{cls.__name__}: gradgradcheck failed: its double backward (create_graph=True) is wrong"),
    )


def _members(cls: type[Norm], features: int) -> None:
    ensemble = _build(cls, features, 1, members=MEMBERS)
    x = _randn(MEMBERS, *_shape(cls, features, min(_ranks(cls)), batch=4), seed=5)  # (S, B, D), as models call it
    out = _apply(ensemble, x)
    _finite(cls, out, "its members")
    _require(out.shape == x.shape, f"{cls.__name__}: members={MEMBERS} maps {tuple(x.shape)} to {tuple(out.shape)}")
    for s in range(MEMBERS):
        single = _build(cls, features, 1)
        with torch.no_grad():
            for (_, p), (_, q) in zip(single.named_parameters(), ensemble.named_parameters(), strict=True):
                p.copy_(q[s].reshape(p.shape))
        _require(
            _close(out[s], _apply(single, x[s])),
            (
                f"{cls.__name__}: member {s} is not its own model (its output differs from one layer's with its parameters)"
            ),
        )


def _batch_independence(cls: type[Norm], features: int) -> None:
    """In training mode each example's output is the one it has alone, and the one it has in
    another batch (3 other examples first, the batch reversed): the models and the batch-size
    checks trust such a norm at batch size 1 and in per-example evaluation."""
    pristine = _build(cls, features, 2)
    for rank in _ranks(cls):
        x = _randn(*_shape(cls, features, rank), seed=6)  # (B, [T,] D)
        full = _apply(copy.deepcopy(pristine), x)
        _finite(cls, full, "whether each example is its own")
        others = _randn(3, *x.shape[1:], seed=7, scale=3.0, shift=2.0)
        moved = _apply(copy.deepcopy(pristine), torch.cat([others, x.flip(0)]))[3:].flip(0)
        for i in range(x.shape[0]):
            alone = _apply(copy.deepcopy(pristine), x[i : i + 1])[0]
            for where, y in (("alone", alone), ("in another batch", moved[i])):
                _require(
                    _close(full[i], y),
                    (
                        f"{cls.__name__}: declares uses_batch_statistics = False, but an example's output changes with the "
                        f"other examples of its batch (example {i} of {tuple(x.shape)}: in its batch vs {where}, "
                        f"{_difference(full[i], y)}): its statistics reach across examples (if they should, declare "
                        "uses_batch_statistics = True)"
                    ),
                )


def _stateless(cls: type[Norm], features: int) -> None:
    """Without batch statistics, a norm keeps no state: an output does not depend on the batches
    seen before, in training mode or in eval mode (eval mode is called on two other batches
    first, so a cache of the first eval batch shows), and eval mode gives training's output."""
    pristine = _build(cls, features, 2)
    x = _randn(*_shape(cls, features), seed=8)
    want = _apply(copy.deepcopy(pristine), x)
    _finite(cls, want, "whether it keeps state")
    layer = copy.deepcopy(pristine)
    others = [_randn(*x.shape, seed=seed, scale=3.0, shift=2.0) for seed in (9, 10)]

    def after_others() -> torch.Tensor:  # x's output once the layer has seen the other batches in its mode
        for other in others:
            _apply(layer, other)
        return _apply(layer, x)

    got = after_others()
    _require(
        _close(got, want),
        f"{cls.__name__}: declares uses_batch_statistics = False, but its output depends on the batches it saw "
        f"before ({_difference(got, want)}): it keeps state across calls",
    )
    with torch.no_grad():
        layer.eval()
        evaluated = after_others()
    _require(
        _close(evaluated, want),
        f"{cls.__name__}: declares uses_batch_statistics = False, but in eval mode, after two other batches, it "
        f"gives another output than training ({_difference(evaluated, want)}): it keeps state in eval mode, or "
        "eval mode computes something else (only a norm with batch statistics may differ)",
    )


def _class_state(cls: type) -> dict[tuple[str, str], tuple]:
    """A fingerprint of the attributes of ``cls`` and of its bases outside torch: per attribute,
    its object's identity, and for a tensor its version counter (bumped by an in-place write),
    for a dict, list or set the identities of what it holds."""
    state: dict[tuple[str, str], tuple] = {}
    for klass in cls.__mro__:
        if klass is object or klass.__module__.split(".")[0] in ("torch", "builtins"):
            continue
        for name, value in list(vars(klass).items()):
            mark: tuple = (id(value),)
            if isinstance(value, torch.Tensor):
                mark += (value._version,)
            elif isinstance(value, (dict, list, set)):
                items = value.items() if isinstance(value, dict) else enumerate(value)
                mark += tuple(sorted((repr(k), id(v)) for k, v in items))
            state[(klass.__name__, name)] = mark
    return state


def _parameters_used(cls: type[Norm], features: int) -> None:
    """Every parameter the norm has (its gamma and beta) changes its output: each one, moved by
    a random step, moves the output (a gain that is never applied trains nothing)."""
    pristine = _build(cls, features, 17)
    x = _randn(*_shape(cls, features), seed=18)
    want = _apply(copy.deepcopy(pristine), x)
    _finite(cls, want, "whether its parameters are used")
    unused = []
    for k, (name, p) in enumerate(pristine.named_parameters()):
        layer = copy.deepcopy(pristine)
        with torch.no_grad():
            dict(layer.named_parameters())[name].add_(_randn(*p.shape, seed=19 + k))
        if _close(_apply(layer, x), want):
            unused.append(name)
    _require(
        not unused,
        f"{cls.__name__}: its parameter{'s' if len(unused) > 1 else ''} {', '.join(unused)} never change its output "
        "(moved by a random step, the output stays the same): the norm does not apply "
        f"{'them' if len(unused) > 1 else 'it'} (y = gamma * x_hat + beta)",
    )


def _dtypes(cls: type[Norm], features: int) -> None:
    x = _randn(*_shape(cls, features), seed=11)
    for dtype in (torch.float32, torch.float64):
        layer = cls(features).to(dtype).to("cpu").train()
        y = _apply(layer, x.to(dtype))
        _require(y.dtype == dtype, f"{cls.__name__}: a {dtype} input gave a {y.dtype} output after .to({dtype})")
        _require(torch.isfinite(y).all(), f"{cls.__name__}: non-finite output in {dtype}")
        with torch.no_grad():
            evaluated = _apply(layer.eval(), x.to(dtype))
        _require(torch.isfinite(evaluated).all(), f"{cls.__name__}: non-finite output in eval mode ({dtype})")


@dataclass(frozen=True)
class NormCheck:
    """One check of a norm class.

    Attributes:
        name: what it checks, one line (a row of ``lnbench gradcheck --norm``).
        run: ``run(cls, features)``; raises ``AssertionError`` naming what is wrong.
        requires: the declared capabilities it applies to (``{"has_member_axis": True}``); a class
            that declares otherwise skips it.
    """

    name: str
    run: Callable[[type[Norm], int], None]
    requires: Mapping[str, bool] = field(default_factory=dict)

    def skipped_because(self, cls: type[Norm]) -> str | None:
        """Why ``cls`` skips this check (``"declares has_member_axis = False"``), or None."""
        for key, value in self.requires.items():
            if bool(getattr(cls, key)) != value:
                return f"declares {key} = {not value}"
        return None


GRADIENT_CHECK = "gradcheck, gradgradcheck (float64)"  # the name of the check of the norm's gradients

#: The checks a built-in norm passes, in order: what :func:`check_norm` and ``lnbench gradcheck --norm`` run.
CHECKS: tuple[NormCheck, ...] = (
    NormCheck("capabilities declared as booleans", _capabilities),
    NormCheck("forward: the input's shape and dtype, finite, the input unchanged, no state on its class", _forward),
    NormCheck("every parameter changes the output (gamma and beta applied)", _parameters_used),
    NormCheck(GRADIENT_CHECK, _gradchecks),
    NormCheck(f"members={MEMBERS}: each member its own model", _members, {"has_member_axis": True}),
    NormCheck(
        "each example its own output (alone, in another batch)", _batch_independence, {"uses_batch_statistics": False}
    ),
    NormCheck(
        "no state: the same output after other batches, and in eval mode", _stateless, {"uses_batch_statistics": False}
    ),
    NormCheck(".to(float32 / float64 / cpu), train and eval", _dtypes),
)


def _run(check: NormCheck, cls: type[Norm], features: int) -> str | None:
    """None if ``check`` passes, else its failure in one line (an error the norm raised, named)."""
    try:
        check.run(cls, features)
    except (CheckFailed, NormFailure) as exc:
        return " ".join(str(exc).split())
    except Exception as exc:  # the user's code raised: the check fails, naming the error; the others still run
        return f"{cls.__name__}: raised {_raised(exc)}"
    return None


def _raised(exc: BaseException) -> str:
    """An error the norm's code raised, in one line: :func:`one_line`, and for an
    ``AssertionError`` (whose message is often empty) the file and line of the failed assert."""
    if not isinstance(exc, AssertionError):
        return one_line(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = one_line(exc) if str(exc).strip() else "AssertionError (an assert without a message)"
    return f"{text}{where}"


def norm_checks(cls: type, features: int = 6) -> list:
    """The :data:`CHECKS` that apply to ``cls`` (by the capabilities it declares) as
    :class:`lnbench.nn.gradient_checks.Check` rows (group ``user norm``), each passed or failed with
    its message: what ``lnbench gradcheck --norm`` prints. A check that raises fails; the others run."""
    from lnbench.nn.gradient_checks import Check

    nan = float("nan")
    if not (isinstance(cls, type) and issubclass(cls, Norm)):
        return [Check("is a lnbench.nn.Norm", GROUP, nan, nan, 0.0, False, f"{cls!r} is not a subclass")]
    out = []
    for check in CHECKS:
        if check.skipped_because(cls) is None:
            failure = _run(check, cls, features)
            out.append(Check(f"{cls.__name__}: {check.name}", GROUP, nan, nan, 0.0, failure is None, failure or ""))
    return out


def first_failure(cls: type[Norm], features: int = 6) -> tuple[str, str] | None:
    """The first of :data:`CHECKS` that ``cls`` fails, as ``(check name, message in one line)``,
    or None if it passes them all: the check ``lnbench train``, ``compare`` and ``sweep`` run on
    a user's norm before any folder is made (well under a second for a small norm: the checks
    run at D = ``features``, batch 5, 3 timesteps; Table 1's row is not measured). A check the
    class's declared capabilities skip does not run; after a failure the others do not run."""
    for check in CHECKS:
        if check.skipped_because(cls) is None:
            failure = _run(check, cls, features)
            if failure is not None:
                return check.name, failure
    return None


def _rows(layer: Norm, a: torch.Tensor) -> torch.Tensor:
    """The summed inputs ``a (N, H)`` through ``layer`` as a model calls it: directly, or as one
    timestep ``(N, 1, H)`` for a norm that takes a timestep or no ``(N, H)`` input."""
    if type(layer).takes_timestep or 2 not in _ranks(type(layer)):
        return _apply(layer, a.unsqueeze(1)).squeeze(1)
    return _apply(layer, a)


def invariance_method(cls: type[Norm]):
    """``(label, fn)`` for :func:`lnbench.nn.invariance.measure`'s ``methods``: ``cls`` on the
    summed inputs ``X W^T`` in training mode (``lnbench invariance --norm``).

    ``fn`` raises :class:`NormFailure` (one line) when the norm raises or its output does not
    have the input's shape."""

    @torch.no_grad()  # measured, not differentiated
    def normalized(W: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, float]:
        a = X @ W.T  # (N, H)
        try:
            layer = cls(W.shape[0], eps=EPS).double().train()
            out = _rows(layer, a)
            if not (isinstance(out, torch.Tensor) and out.shape == a.shape):
                shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise NormFailure(
                    f"{cls.__name__}: maps {tuple(a.shape)} to {shape}; a norm's output has its input's shape"
                )
            # the tolerance's scale: the smallest variance v the norm divides by. Over a row or a column
            # for LayerNorm- and BatchNorm-like norms; a norm over smaller sets (GroupNorm's groups)
            # divides by smaller ones, so eps's own effect is measured too: y ~ x_hat (1 - eps / (2 v)),
            # so doubling eps moves y by ~ eps |x_hat| / (2 v), which gives v whatever the statistics
            v = min(float(a.var(dim=d, unbiased=False).min()) for d in (0, 1))
            layer.eps = 2 * EPS
            moved = float((_rows(layer, a) - out).abs().max())
        except NormFailure:
            raise
        except Exception as exc:
            raise NormFailure(f"{cls.__name__}: raised {_raised(exc)}") from exc
        if moved > 0:
            v = min(v, EPS * max(1.0, float(out.abs().max())) / (2 * moved))
        return out, v

    return cls.__name__, normalized


def invariance_problem(cls: type[Norm], units: int = 32, inputs: int = 16, cases: int = 64) -> str | None:
    """Why ``cls`` cannot be measured for Table 1 (it raises, its output has another shape than
    its input or is not finite), in one line; None if it can. Run on one draw of the measurement's
    shapes (``W (units, inputs)``, ``X (cases, inputs)``)."""
    W = _randn(units, inputs, seed=12) / math.sqrt(inputs)
    X = _randn(cases, inputs, seed=13)
    try:
        out, _ = invariance_method(cls)[1](W, X)
    except NormFailure as exc:
        return str(exc)
    bad = int((~torch.isfinite(out)).sum())
    return f"{cls.__name__}: {bad} of {out.numel()} outputs are NaN or inf" if bad else None


def _invariance(cls: type[Norm], units: int = 32) -> dict[str, str]:
    cells = measure(draws=3, units=units, methods={"user": invariance_method(cls)})
    broken = [
        name for (name, _), cell in zip(TRANSFORMATIONS, cells, strict=True) if not math.isfinite(cell.max_change)
    ]
    _require(not broken, f"{cls.__name__}: its output is NaN or inf under {', '.join(broken)}")
    return {name: cell.measured for (name, _), cell in zip(TRANSFORMATIONS, cells, strict=True)}


def check_norm(cls: type, features: int = 6, *, on_fail: Literal["raise", "return"] = "raise") -> dict[str, Any]:
    """Run on ``cls`` the checks every built-in norm passes (:data:`CHECKS`, those that apply to
    the capabilities it declares), and measure its row of Ba et al.'s Table 1.

    1. it subclasses :class:`lnbench.nn.Norm` and declares its capabilities (``has_beta``,
       ``uses_batch_statistics``, ``takes_timestep``, ``grouped_as_layer``, ``has_member_axis``)
       as booleans;
    2. its output has its input's shape and dtype, is finite, and its input is left unchanged,
       for each of ``(B, D)`` and ``(B, T, D)`` it takes; calling it (training and eval mode)
       writes no attribute on its class or its bases (state every layer would share; seen when
       the class was not called before in this process);
    3. every parameter changes the output: each, moved by a random step, moves it (a gamma or a
       beta that is never applied fails);
    4. ``torch.autograd.gradcheck`` and ``gradgradcheck`` (float64) of its output in its input,
       gamma and beta (gains and biases moved off 1 and 0);
    5. with ``has_member_axis``: ``members=3`` gives each member the output of a single layer
       with that member's parameters (to 1e-10), as lnbench's seed ensembles need;
    6. without ``uses_batch_statistics``, in training mode: every example's output is the one it
       has alone and the one it has in another batch (to 1e-10);
    7. without ``uses_batch_statistics``: no state, the output is the same after other batches
       were normalized, in training mode and in eval mode (after two other eval batches: a cache
       of the first eval batch fails), and eval mode gives training's output;
    8. ``.to(float32 / float64)`` and ``.to("cpu")``: the output follows the dtype and is finite,
       in training and eval mode;
    9. its row of Ba et al.'s Table 1 (:mod:`lnbench.nn.invariance`), measured, not checked
       against an expectation: ``I`` (invariant), ``N`` (not) or ``?`` per transformation; an
       output that is NaN or inf there fails.

    A ``takes_timestep`` norm is called as a recurrence calls it: ``norm(x_t, t)`` for each
    timestep of a ``(B, T, D)`` input, then ``end_sequence()``. A check in which the norm raises
    fails, naming the error (an ``AssertionError`` of the norm's own code with the file and line
    of its ``assert``: never shown as the check's message); the other checks still run.

    Args:
        cls: the norm class (it is built as ``cls(features)``, ``cls(features, members=3)``,
            ``cls(features, eps=...)``).
        features: D for the checks. Default: 6.
        on_fail: ``"raise"``: raise ``AssertionError`` if a check failed; ``"return"``: return the
            report with the failures in it. Default: ``"raise"``.

    Returns:
        ``{"name", "capabilities": {...}, "passed": [check names], "failed": {check: message},
        "skipped": {check: why}, "invariance": {transformation: "I" | "N" | "?"} (empty if it
        could not be measured), "ok": bool}``.

    Raises:
        ValueError: ``on_fail`` is neither ``"raise"`` nor ``"return"``.
        TypeError: ``cls`` is not a subclass of :class:`lnbench.nn.Norm`.
        AssertionError: with ``on_fail="raise"``, a check failed: one line with the first failure's
            message, the check's name and the names of the others that failed.
    """
    if on_fail not in ("raise", "return"):
        raise ValueError(f"on_fail: {on_fail!r}; allowed: 'raise', 'return'")
    if not (isinstance(cls, type) and issubclass(cls, Norm)):
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} is not a subclass of lnbench.nn.Norm")
    passed: list[str] = []
    failed: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for check in CHECKS:
        why = check.skipped_because(cls)
        failure = None if why is not None else _run(check, cls, features)
        if why is not None:
            skipped[check.name] = why
        elif failure is None:
            passed.append(check.name)
        else:
            failed[check.name] = failure
    invariance: dict[str, str] = {}

    def measured(norm: type[Norm], features: int) -> None:
        invariance.update(_invariance(norm))

    row = NormCheck("its row of Ba et al.'s Table 1, measured", measured)
    failure = _run(row, cls, features)
    if failure is None:
        passed.append(row.name)
    else:
        failed[row.name] = failure
    if failed and on_fail == "raise":
        (first, message), *others = failed.items()
        also = f"; also failed: {', '.join(repr(name) for name, _ in others)}" if others else ""
        raise AssertionError(f"{message} [check {first!r}{also}]")
    return {
        "name": cls.__name__,
        "capabilities": {key: getattr(cls, key) for key in CAPABILITIES},
        "passed": passed,
        "failed": failed,
        "skipped": skipped,
        "invariance": invariance,
        "ok": not failed,
    }
