"""Checks for a user's own norm, the idea of scikit-learn's ``check_estimator``.

A norm of your own (a subclass of :class:`lnbench.nn.Norm`, named in a config as
``model.norm: "package.module:ClassName"``) goes wherever lnbench's built-in norms go, so it must
pass what they pass. :func:`check_norm` runs those checks and raises ``AssertionError`` naming
the first that fails::

    from lnbench.testing import check_norm
    from mypackage.norms import ScaleNorm

    report = check_norm(ScaleNorm)       # raises if a check fails
    report["invariance"]                 # its row of Ba et al.'s Table 1, measured

The built-in LayerNorm, RMSNorm and BatchNorm pass it (``tests/nn/test_plugin_norms.py``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.func import functional_call

from lnbench.nn.base import Norm
from lnbench.nn.invariance import EPS, TRANSFORMATIONS, measure


def _call(layer: Norm, names: list[str]):
    return lambda x, *params: functional_call(layer, dict(zip(names, params, strict=True)), (x,))


def _gradchecks(cls: type[Norm], features: int) -> None:
    layer = cls(features).double().train()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 3, features, dtype=torch.float64, generator=g, requires_grad=True)
    with torch.no_grad():  # gains and biases away from 1 and 0, so their gradients are tested too
        for p in layer.parameters():
            p.add_(0.3 * torch.randn(p.shape, dtype=p.dtype, generator=g))
    names = [n for n, _ in layer.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in layer.parameters()]
    f = _call(layer, names)
    assert torch.autograd.gradcheck(f, (x, *params), raise_exception=False), (
        f"{cls.__name__}: gradcheck failed: its backward disagrees with finite differences (float64)"
    )
    assert torch.autograd.gradgradcheck(f, (x, *params), raise_exception=False), (
        f"{cls.__name__}: gradgradcheck failed: its double backward (create_graph=True) is wrong"
    )


def _members(cls: type[Norm], features: int, members: int = 3) -> None:
    ensemble = cls(features, members=members).double().train()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in ensemble.parameters():
            p.add_(0.3 * torch.randn(p.shape, dtype=p.dtype, generator=g))
    x = torch.randn(members, 4, features, dtype=torch.float64, generator=g)
    out = ensemble(x)
    assert out.shape == x.shape, f"{cls.__name__}: members={members} maps {tuple(x.shape)} to {tuple(out.shape)}"
    for s in range(members):
        single = cls(features).double().train()
        with torch.no_grad():
            for (_, p), (_, q) in zip(single.named_parameters(), ensemble.named_parameters(), strict=True):
                p.copy_(q[s].reshape(p.shape))
        ok = torch.allclose(out[s], single(x[s]), rtol=1e-10, atol=1e-10)
        assert ok, (
            f"{cls.__name__}: member {s} is not its own model (its output differs from one layer's with its parameters)"
        )


def _batch_independence(cls: type[Norm], features: int) -> None:
    """A norm that declares ``uses_batch_statistics = False``: in training mode an example's output
    does not depend on the other examples of the batch (the models and the batch-size checks rely
    on it: such a norm is trusted at batch size 1 and in per-example evaluation)."""
    if cls.uses_batch_statistics:
        return
    layer = cls(features).double().train()
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, features, dtype=torch.float64, generator=g)
    other = x.clone()
    other[1:] = 3.0 * torch.randn(4, features, dtype=torch.float64, generator=g) + 2.0  # the rest of the batch changed
    ok = torch.allclose(layer(x)[0], layer(other)[0], rtol=1e-10, atol=1e-10)
    assert ok, (
        f"{cls.__name__}: declares uses_batch_statistics = False, but an example's output changes with the other "
        "examples of its batch (it normalizes over the batch: declare uses_batch_statistics = True)"
    )


def _dtypes(cls: type[Norm], features: int) -> None:
    x = torch.randn(4, features)
    for dtype in (torch.float32, torch.float64):
        layer = cls(features).to(dtype).to("cpu").train()
        y = layer(x.to(dtype))
        assert y.dtype == dtype, f"{cls.__name__}: a {dtype} input gave a {y.dtype} output after .to({dtype})"
        assert torch.isfinite(y).all(), f"{cls.__name__}: non-finite output in {dtype}"
        layer.eval()
        assert torch.isfinite(layer(x.to(dtype))).all(), f"{cls.__name__}: non-finite output in eval mode"


def invariance_method(cls: type[Norm]):
    """``(label, fn)`` for :func:`lnbench.nn.invariance.measure`'s ``methods``: ``cls`` on the
    summed inputs ``X W^T`` in training mode (``lnbench invariance --norm``)."""

    def normalized(W: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, float]:
        a = X @ W.T
        layer = cls(W.shape[0], eps=EPS).double().train()
        out = layer(a)
        # the tolerance's scale: the smallest variance v the norm divides by. Over a row or a column
        # for LayerNorm- and BatchNorm-like norms; a norm over smaller sets (GroupNorm's groups)
        # divides by smaller ones, so eps's own effect is measured too: y ~ x_hat (1 - eps / (2 v)),
        # so doubling eps moves y by ~ eps |x_hat| / (2 v), which gives v whatever the statistics
        v = min(float(a.var(dim=d, unbiased=False).min()) for d in (0, 1))
        layer.eps = 2 * EPS
        moved = float((layer(a) - out).abs().max())
        if moved > 0:
            v = min(v, EPS * max(1.0, float(out.abs().max())) / (2 * moved))
        return out, v

    return cls.__name__, normalized


def _invariance(cls: type[Norm], units: int = 32) -> dict[str, str]:
    cells = measure(draws=3, units=units, methods={"user": invariance_method(cls)})
    return {name: cell.measured for (name, _), cell in zip(TRANSFORMATIONS, cells, strict=True)}


def norm_checks(cls: type, features: int = 6) -> list:
    """The checks of :func:`check_norm` (but the invariance row) as
    :class:`lnbench.nn.gradient_checks.Check` rows (group ``user norm``), each passed or failed
    with its message: what ``lnbench gradcheck --norm`` prints."""
    from lnbench.nn.gradient_checks import Check

    nan = float("nan")
    if not (isinstance(cls, type) and issubclass(cls, Norm)):
        return [Check("is a lnbench.nn.Norm", "user norm", nan, nan, 0.0, False, f"{cls!r} is not a subclass")]
    out = []
    for name, run in (
        ("gradcheck, gradgradcheck (float64)", _gradchecks),
        ("members=3: each member its own model", _members),
        ("each example its own output, unless it uses batch statistics", _batch_independence),
        (".to(float32 / float64 / cpu), train and eval", _dtypes),
    ):
        try:
            run(cls, features)
            out.append(Check(f"{cls.__name__}: {name}", "user norm", nan, nan, 0.0, True))
        except AssertionError as exc:
            out.append(Check(f"{cls.__name__}: {name}", "user norm", nan, nan, 0.0, False, str(exc)))
    return out


def check_norm(cls: type, features: int = 6) -> dict[str, Any]:
    """Run every check a built-in norm passes on ``cls``.

    1. it subclasses :class:`lnbench.nn.Norm` and declares its capabilities as booleans;
    2. ``torch.autograd.gradcheck`` and ``gradgradcheck`` (float64) of its output in its input,
       gamma and beta (gains and biases moved off 1 and 0);
    3. ``members=3``: each member's output equals a single layer's with that member's
       parameters (to 1e-10), as lnbench's seed ensembles need;
    4. unless it declares ``uses_batch_statistics``: in training mode an example's output does not
       change when the other examples of its batch do;
    5. ``.to(float32 / float64)`` and ``.to("cpu")``: the output follows the dtype and is finite,
       in training and eval mode;
    6. its row of Ba et al.'s Table 1 (:mod:`lnbench.nn.invariance`), measured, not checked
       against an expectation: ``I`` (invariant), ``N`` (not) or ``?`` per transformation.

    Args:
        cls: the norm class (it is built as ``cls(features)``, ``cls(features, members=3)``,
            ``cls(features, eps=...)``).
        features: D for the checks. Default: 6.

    Returns:
        ``{"name", "capabilities": {...}, "invariance": {transformation: "I" | "N" | "?"}}``.

    Raises:
        TypeError: ``cls`` is not a subclass of :class:`lnbench.nn.Norm`.
        AssertionError: a check failed (the message names it).
    """
    if not (isinstance(cls, type) and issubclass(cls, Norm)):
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} is not a subclass of lnbench.nn.Norm")
    capabilities = {
        k: getattr(cls, k) for k in ("has_beta", "uses_batch_statistics", "takes_timestep", "grouped_as_layer")
    }
    for key, value in capabilities.items():
        assert isinstance(value, bool), f"{cls.__name__}.{key} must be a bool, got {value!r}"
    if cls.takes_timestep:
        raise AssertionError(f"{cls.__name__}: takes_timestep norms are not checked here (call signature norm(a, t))")
    _gradchecks(cls, features)
    _members(cls, features)
    _batch_independence(cls, features)
    _dtypes(cls, features)
    return {"name": cls.__name__, "capabilities": capabilities, "invariance": _invariance(cls)}
