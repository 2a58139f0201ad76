"""The compiled LayerNorm kernel (``lnbench/nn/csrc/layernorm.cpp``), built once and cached.

:class:`lnbench.nn.layernorm.LayerNorm` uses it for float32/float64 CPU tensors when it is available:
the same formula and hand-written x-hat backward as :class:`lnbench.nn.layernorm.NormalizeAffine`, but
as one C++ autograd node, so no Python runs per call (at the RNN's (64, 64) per timestep, the
Python Function's per-call overhead made training 1.9x slower than ``torch.nn.LayerNorm``; the
kernel brings it to ~1.1x, ``benchmarks/bench_training.py``).

It is built with ``torch.utils.cpp_extension.load`` (g++ and ninja) into torch's extension cache
(``TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``), one build per checkout and source: ``make setup`` builds it, and
otherwise the first use does (~30 s). Where it cannot be built, or with ``LNBENCH_KERNELS=0``,
LayerNorm falls back to the Python autograd Function and says so once (a ``RuntimeWarning``).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

_SOURCE = Path(__file__).parent / "csrc" / "layernorm.cpp"
_state: dict[str, Any] = {"tried": False, "module": None}


def _extension_name() -> str:
    """One build per checkout and source: torch's cache is keyed by the extension's name, and its
    ninja file names the source path, so two checkouts sharing one name rebuilt each other's
    kernel (~30 s) whenever either ran, even while the other was loading it."""
    key = hashlib.sha1(str(_SOURCE.resolve()).encode() + _SOURCE.read_bytes()).hexdigest()[:12]
    return f"lnbench_layernorm_{key}"


def layernorm_kernel() -> Any | None:
    """The built extension (with ``layer_norm(x, gamma, beta, eps)``), or None if unavailable."""
    module = _state["module"]
    if module is not None or _state["tried"]:
        return module
    _state["tried"] = True
    if os.environ.get("LNBENCH_KERNELS", "1") == "0":
        return None
    try:
        from torch.utils.cpp_extension import load

        _state["module"] = load(name=_extension_name(), sources=[str(_SOURCE)], extra_cflags=["-O3"], verbose=False)
    except Exception as exc:  # noqa: BLE001  no compiler, no ninja, ...: the Python Function still works
        warnings.warn(
            f"lnbench: the C++ LayerNorm kernel is not available ({type(exc).__name__}: {exc}); "
            "using the Python autograd Function (slower)",
            RuntimeWarning,
            stacklevel=2,
        )
    return _state["module"]


if __name__ == "__main__":  # python -m lnbench.nn.kernels: build it now (make setup does)
    print("lnbench C++ LayerNorm kernel:", "ready" if layernorm_kernel() is not None else "NOT available")
