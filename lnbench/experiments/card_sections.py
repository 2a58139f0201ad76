"""The measured sections of a norm's report card (``lnbench card NORM``): conformance, gradients,
invariances and cost, each a pure measurement of the norm class in this process.

Each function returns one section as a JSON-ready dict with a ``verdict`` (one line) and
``passed`` (True, False, or None where the section measures without a pass mark: the cost, a
Table 1 row). :mod:`lnbench.experiments.card` composes them into ``card.json``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from lnbench.names import family_label
from lnbench.nn.base import Norm
from lnbench.nn.layernorm import LayerNorm

#: the model sizes of the gradient checks inside a model: tiny, float64 (gradcheck perturbs every input)
GRAD_FAMILIES = ("lstm", "transformer")
GRAD_SHAPE = (2, 3, 4)  # (B, T, D) of the input; hidden size 4
#: the sizes of the cost of one call, forward and backward: (B, D) rows of a recurrence's step,
#: (B, T, D) a Transformer's activations
COST_SHAPES = ((16, 128), (64, 256), (16, 20, 128))
COST_STEP_SIZES = {"batch_size": 16, "seq_len": 20, "features": 8, "hidden_size": 64}


def conformance(cls: type[Norm]) -> dict[str, Any]:
    """:func:`lnbench.testing.check_norm` of ``cls``: every check its declared capabilities
    select, passed, failed (with why) or skipped (with why), and its row of Table 1."""
    from lnbench.testing import check_norm

    report = check_norm(cls, on_fail="return")
    checks = [{"name": n, "result": "passed", "detail": ""} for n in report["passed"]]
    checks += [{"name": n, "result": "failed", "detail": why} for n, why in report["failed"].items()]
    checks += [{"name": n, "result": "skipped", "detail": why} for n, why in report["skipped"].items()]
    failed = list(report["failed"])
    ran = len(report["passed"]) + len(failed)
    verdict = (
        f"conforms: {ran} of {ran} checks passed"
        if not failed
        else f"does not conform: {len(failed)} of {ran} checks failed ({', '.join(failed)})"
    )
    return {
        "passed": not failed,
        "verdict": verdict,
        "capabilities": report["capabilities"],
        "checks": checks,
        "invariance": report["invariance"],
    }


def _model_gradcheck(spec: str, cls: type[Norm], family: str) -> dict[str, Any]:
    """gradcheck and gradgradcheck (float64) of a tiny ``family`` model with the norm ``spec``:
    the sum of its logits, in its input and in every parameter of its ``cls`` layers."""
    from torch.func import functional_call

    from lnbench.config import load_config
    from lnbench.nn.models import build_model

    B, T, D = GRAD_SHAPE
    overrides = [f"model.norm={spec}", f"model.family={family}", f"model.hidden_size={D}"]
    overrides += [f"data.seq_len={T}", f"data.features={D}"]
    cfg = load_config(None, overrides)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = build_model(cfg.model, D, T, 2).double().train()
        x = torch.randn(B, T, D, dtype=torch.float64, requires_grad=True)
    names = [f"{m}.{n}" for m, mod in model.named_modules() if isinstance(mod, cls) for n, _ in mod.named_parameters()]
    params = dict(model.named_parameters())
    theirs = [params[n].detach().clone().requires_grad_(True) for n in names]

    def f(x: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return functional_call(model, dict(zip(names, ps, strict=True)), (x,)).sum()

    out: dict[str, Any] = {"family": family, "shape": list(GRAD_SHAPE), "parameters": len(names)}
    for name, check in (("gradcheck", torch.autograd.gradcheck), ("gradgradcheck", torch.autograd.gradgradcheck)):
        try:
            out[name] = bool(check(f, (x, *theirs), raise_exception=False))
        except Exception as exc:  # noqa: BLE001  the norm's code raised inside the model: the check fails, named
            from lnbench.testing import one_line

            out[name], out[f"{name}_error"] = False, one_line(exc)
    return out


def gradients(spec: str, cls: type[Norm], conformance_section: dict[str, Any]) -> dict[str, Any]:
    """The float64 gradcheck and gradgradcheck of the norm alone (conformance's check) and inside
    a tiny LSTM and Transformer (:data:`GRAD_FAMILIES`, input :data:`GRAD_SHAPE`), in the input
    and the norm's own parameters."""
    from lnbench.testing import GRADIENT_CHECK

    alone = next(c for c in conformance_section["checks"] if c["name"] == GRADIENT_CHECK)
    models = [_model_gradcheck(spec, cls, family) for family in GRAD_FAMILIES]
    failed = ([] if alone["result"] == "passed" else ["the norm alone"]) + [
        f"in the {family_label(m['family'])}" for m in models if not (m["gradcheck"] and m["gradgradcheck"])
    ]
    places = ", ".join(["alone", *(f"in the {family_label(f)}" for f in GRAD_FAMILIES)])
    verdict = (
        f"right: gradcheck and gradgradcheck pass {places}"
        if not failed
        else f"wrong: gradcheck or gradgradcheck fails {', '.join(failed)}"
    )
    return {"passed": not failed, "verdict": verdict, "alone": alone, "models": models}


def invariance(spec: str, cls: type[Norm], draws: int = 3) -> dict[str, Any]:
    """Its row of Ba et al.'s Table 1 beside LayerNorm's and BatchNorm's, measured in the same
    draws (:func:`lnbench.nn.invariance.measure`); rows ``{method: {transformation: I | N | ?}}``."""
    from lnbench.nn.invariance import METHODS, TRANSFORMATIONS, measure
    from lnbench.testing import invariance_method, invariance_problem

    problem = invariance_problem(cls)
    own = {"norm": invariance_method(cls)} if problem is None else {}
    cells = measure(draws=draws, methods={**own, "layer": METHODS["layer"], "batch": METHODS["batch"]})
    rows: dict[str, dict[str, str]] = {}
    for cell in cells:
        rows.setdefault(cell.method, {})[cell.transformation] = cell.measured
    if problem is not None:
        return {"passed": False, "verdict": f"not measured: {problem}", "rows": rows, "draws": draws}
    mine = rows["norm"]
    same = [m for m in ("layer", "batch") if rows[m] == mine]
    invariant = [name for name, _ in TRANSFORMATIONS if mine[name] == "I"]
    like = f"; the same row as {' and '.join({'layer': 'LayerNorm', 'batch': 'BatchNorm'}[m] for m in same)}"
    verdict = f"invariant to {len(invariant)} of {len(TRANSFORMATIONS)} transformations" + (like if same else "")
    return {"passed": None, "verdict": verdict, "rows": rows, "draws": draws, "invariant_to": invariant}


def _median_seconds(fns: dict[str, Callable[[], Any]], repeats: int, warmup: int = 2) -> dict[str, float]:
    """The median wall time of each of ``fns``, run interleaved (one of each per round, so that a
    change of the machine's load hits every one alike) after ``warmup`` rounds."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(warmup + repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            if r >= warmup:
                times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _call(layer: torch.nn.Module, shape: tuple[int, ...]) -> Callable[[], None]:
    x = torch.randn(*shape, requires_grad=True)
    g = torch.randn(*shape)

    def step() -> None:
        layer(x).backward(g)

    return step


def _training_step(spec: str, family: str) -> Callable[[], None]:
    """One Adam step of a ``family`` model with the norm ``spec`` at :data:`COST_STEP_SIZES`."""
    from lnbench.config import load_config
    from lnbench.nn.models import build_model

    s = COST_STEP_SIZES
    cfg = load_config(
        None,
        [
            f"model.norm={spec}",
            f"model.family={family}",
            f"model.hidden_size={s['hidden_size']}",
            f"data.seq_len={s['seq_len']}",
            f"data.features={s['features']}",
        ],
    )
    torch.manual_seed(0)
    model = build_model(cfg.model, s["features"], s["seq_len"], 2).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(s["batch_size"], s["seq_len"], s["features"])
    y = torch.randint(0, 2, (s["batch_size"],))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def cost(spec: str, cls: type[Norm], repeats: int = 15) -> dict[str, Any]:
    """Forward plus backward of one call at :data:`COST_SHAPES`, as ratios to lnbench's LayerNorm
    (its C++ kernel, and its Python path), and one Adam step of an LSTM and a Transformer
    (:data:`COST_STEP_SIZES`) with the norm as a ratio to the same step with LayerNorm; every pair
    timed interleaved in this process (median of ``repeats`` calls, of at most 5 steps). A ratio
    above 1 is slower."""
    calls: list[dict[str, Any]] = []
    for shape in COST_SHAPES:
        torch.manual_seed(0)
        python_ln = LayerNorm(shape[-1])
        python_ln.use_kernel = False
        fns = {"norm": _call(cls(shape[-1]).train(), shape), "layer_kernel": _call(LayerNorm(shape[-1]), shape)}
        fns["layer_python"] = _call(python_ln, shape)
        t = _median_seconds(fns, repeats)
        calls.append(
            {
                "shape": list(shape),
                "microseconds": round(t["norm"] * 1e6, 1),
                "vs_layer_kernel": round(t["norm"] / t["layer_kernel"], 3),
                "vs_layer_python": round(t["norm"] / t["layer_python"], 3),
            }
        )
    steps: list[dict[str, Any]] = []
    for family in GRAD_FAMILIES:
        pair = {"norm": _training_step(spec, family), "layer": _training_step("layer", family)}
        t = _median_seconds(pair, min(5, repeats), 1)
        steps.append(
            {"family": family, "milliseconds": round(t["norm"] * 1e3, 2), "vs_layer": round(t["norm"] / t["layer"], 3)}
        )
    worst = max(c["vs_layer_python"] for c in calls)
    step_words = ", ".join(f"{family_label(s['family'])} step {s['vs_layer']:.2f}x" for s in steps)
    verdict = (
        f"a call costs up to {worst:.2f}x LayerNorm's Python path; {step_words} LayerNorm's (LayerNorm's LSTM on "
        "lnbench's fused C++ recurrence, which takes the built-in norms only)"
    )
    return {"passed": None, "verdict": verdict, "calls": calls, "steps": steps, "sizes": COST_STEP_SIZES}
