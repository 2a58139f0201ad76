"""lnbench's compiled kernels (``lnbench/nn/csrc/``), each built once and cached.

- ``layernorm.cpp``: LayerNorm over the last axis as one C++ autograd node.
  :class:`lnbench.nn.layernorm.LayerNorm` uses it for float32/float64 CPU tensors: the same formula
  and hand-written x-hat backward as :class:`lnbench.nn.layernorm.NormalizeAffine`, but no Python
  runs per call (at the RNN's (64, 64) per timestep, the Python Function's per-call overhead made
  training 1.9x slower than ``torch.nn.LayerNorm``; the kernel brings it to ~1.1x,
  ``benchmarks/bench_training.py``).
- ``recurrence.cpp``: a whole recurrence (the tanh RNN in either placement, or the LSTM, with any
  built-in norm) over T timesteps, forward and backward through time, for one autograd node per
  sequence (:mod:`lnbench.nn.fused`).

Each is built with ``torch.utils.cpp_extension.load`` (g++ and ninja) into torch's extension cache
(``TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``), one build per checkout and
source: ``make setup`` builds them, and otherwise the first use does (~30-60 s). With
``LNBENCH_KERNELS=0`` lnbench runs its Python code instead (the same arithmetic, slower; run.json's
``kernels`` says so); where one cannot be built, it falls back the same way and says so once (a
``RuntimeWarning``).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

_CSRC = Path(__file__).parent / "csrc"
_SOURCES = {"layernorm": _CSRC / "layernorm.cpp", "recurrence": _CSRC / "recurrence.cpp"}
_WHAT = {"layernorm": "C++ LayerNorm kernel", "recurrence": "C++ recurrence kernel (fused RNN and LSTM)"}
_FALLBACK = {"layernorm": "the Python autograd Function", "recurrence": "the step-by-step Python recurrence"}
_state: dict[str, dict[str, Any]] = {name: {"tried": False, "module": None} for name in _SOURCES}


def kernels_enabled() -> bool:
    """False when ``LNBENCH_KERNELS=0`` asks for the Python code everywhere."""
    return os.environ.get("LNBENCH_KERNELS", "1") != "0"


#: compiler flags per CPU capability (``torch.backends.cpu.get_cpu_capability()``): the vector
#: instructions torch's own kernels use on this CPU; no FMA contraction, so the elementwise
#: arithmetic is the same IEEE operations on every capability
_ISA_FLAGS = {
    "AVX512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma"],
    "AVX2": ["-mavx2", "-mfma"],
}


def _isa() -> str:
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    return capability if capability in _ISA_FLAGS else "DEFAULT"


def _extension_name(name: str, isa: str | None = None) -> str:
    """One build per checkout, source and CPU capability: torch's cache is keyed by the
    extension's name, and its ninja file names the source path, so two checkouts sharing one name
    rebuilt each other's kernel (~30 s) whenever either ran, even while the other was loading it;
    and a kernel built for AVX-512 would not run on an AVX2 node sharing the home directory."""
    source = _SOURCES[name]
    key = hashlib.sha1(str(source.resolve()).encode() + source.read_bytes()).hexdigest()[:12]
    suffix = "" if name == "layernorm" else f"_{(isa or _isa()).lower()}"
    return f"lnbench_{name}_{key}{suffix}"


def _builds(name: str) -> list[tuple[str, list[str]]]:
    """(extension name, compiler flags) to try in order: the recurrence with this CPU's vector
    instructions, then (a compiler that refuses those flags) without them."""
    if name == "layernorm":
        return [(_extension_name(name), ["-O3"])]
    builds = [(_extension_name(name, "DEFAULT"), ["-O3", "-ffp-contract=off"])]
    if _isa() in _ISA_FLAGS:
        builds.insert(0, (_extension_name(name), ["-O3", "-ffp-contract=off", *_ISA_FLAGS[_isa()]]))
    return builds


def _load(name: str) -> Any | None:
    state = _state[name]
    if state["module"] is not None or state["tried"]:
        return state["module"]
    if not kernels_enabled():
        state["tried"] = True
        return None
    error: Exception | None = None
    try:
        from torch.utils.cpp_extension import load  # setuptools and more: a signal may land in it

        for ext_name, cflags in _builds(name):
            try:
                state["module"] = load(name=ext_name, sources=[str(_SOURCES[name])], extra_cflags=cflags, verbose=False)
                break
            except Exception as exc:  # noqa: BLE001  no compiler, no ninja, ...: the Python code still works
                if _interrupt_in(exc) is not None:
                    raise
                error = exc
    except Exception as exc:  # noqa: BLE001
        interrupt = _interrupt_in(exc)
        if interrupt is None:
            raise
        # a Ctrl-C or SIGTERM during the import or the build: Python 3.11 wraps one raised inside a
        # class body's __set_name__ (setuptools' Extension) in a RuntimeError; it is still the
        # user's interrupt, so the run is "interrupted", not "failed" (and a later call tries again)
        raise interrupt from None
    state["tried"] = True
    if state["module"] is not None:
        return state["module"]
    warnings.warn(
        f"lnbench: the {_WHAT[name]} is not available ({type(error).__name__}: {error}); "
        f"using {_FALLBACK[name]} (slower)",
        RuntimeWarning,
        stacklevel=3,
    )
    return None


def _interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt an exception wraps (its chain of causes and contexts), or None."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def layernorm_kernel() -> Any | None:
    """The built LayerNorm extension (with ``layer_norm(x, gamma, beta, eps)``), or None if unavailable."""
    return _load("layernorm")


def recurrence_kernel() -> Any | None:
    """The built recurrence extension (``recurrence_forward``, ``recurrence_backward``), or None."""
    return _load("recurrence")


if __name__ == "__main__":  # python -m lnbench.nn.kernels: build them now (make setup does)
    for _name, _get in (("layernorm", layernorm_kernel), ("recurrence", recurrence_kernel)):
        print(f"lnbench {_WHAT[_name]}:", "ready" if _get() is not None else "NOT available")
