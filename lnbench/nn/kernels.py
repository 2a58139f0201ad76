"""lnbench's compiled kernels (``lnbench/nn/csrc/``), each built once and cached.

- ``layernorm.cpp``: LayerNorm over the last axis as one C++ autograd node.
  :class:`lnbench.nn.layernorm.LayerNorm` uses it for float32/float64 CPU tensors: the same formula
  and hand-written x-hat backward as :class:`lnbench.nn.layernorm.NormalizeAffine`, but no Python
  runs per call (at the RNN's (64, 64) per timestep, the Python Function's per-call overhead made
  training 1.9x slower than ``torch.nn.LayerNorm``; the kernel brings it to ~1.1x,
  ``benchmarks/bench_training.py``).
- ``recurrence.cpp``: a whole recurrence (the tanh RNN in either placement, or the LSTM, with any
  built-in norm) over T timesteps, forward and backward through time, for one autograd node per
  sequence (:mod:`lnbench.nn.fused`); its parts, one concern each, are the headers it includes
  (``fast_math.h``, ``panels.h``, ``recurrence_interface.h``, ``recurrence_norms.h``,
  ``recurrence_forward.h``, ``recurrence_backward.h``).
- ``linear.cpp``: a Linear layer on at most 8 rows as one C++ autograd node whose products read
  the weight matrix once (:mod:`lnbench.nn.few_row_linear`: the MLP's layers at a small batch).
- ``norm.h``: the one C++ LayerNorm (and RMSNorm) over a row, and the vector lanes, which every
  kernel includes.

Each is built with ``torch.utils.cpp_extension.load`` (g++ and ninja) into torch's extension cache
(``TORCH_EXTENSIONS_DIR``, default ``~/.cache/torch_extensions``), one build per checkout and
source (with the headers): ``make setup`` builds them, and otherwise the first use does (~30-60 s), saying so in one
line. The build always runs the ``ninja`` that lnbench installs (the ``ninja`` package), whatever
``ninja`` is first on ``PATH``: ninja 1.11 and 1.13 hash a build command differently in
``.ninja_log``, so a build with one and a load with the other rebuilt the kernel from scratch
(~100-200 s) every time ``PATH`` changed (``make`` versus an activated venv). An experiment builds
them before its first run starts (:func:`ensure_built`), so the time is never a run's. With
``LNBENCH_KERNELS=0`` lnbench runs its Python code instead (the same arithmetic, slower; run.json's
``kernels`` says so); where one cannot be built, it falls back the same way and says so once (a
``RuntimeWarning``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_CSRC = Path(__file__).parent / "csrc"
_SOURCES = {
    "layernorm": _CSRC / "layernorm.cpp",
    "recurrence": _CSRC / "recurrence.cpp",
    "linear": _CSRC / "linear.cpp",
}
#: the headers the kernels include (``norm.h``: the one C++ LayerNorm; the recurrence's parts): part of
#: each build's name, so that a changed header is a new build, as a changed source is
_HEADERS = tuple(sorted(_CSRC.glob("*.h")))
_WHAT = {
    "layernorm": "C++ LayerNorm kernel",
    "recurrence": "C++ recurrence kernel (fused RNN and LSTM)",
    "linear": "C++ few-row Linear kernel",
}
_FALLBACK = {
    "layernorm": "the Python autograd Function",
    "recurrence": "the step-by-step Python recurrence",
    "linear": "torch.nn.functional.linear",
}
_state: dict[str, dict[str, Any]] = {name: {"tried": False, "module": None} for name in _SOURCES}


def kernels_enabled() -> bool:
    """False when ``LNBENCH_KERNELS=0`` asks for the Python code everywhere."""
    return os.environ.get("LNBENCH_KERNELS", "1") != "0"


#: every build's compiler flags (part of its name): no FMA contraction; no errno from sqrt, so that
#: a loop of square roots (BatchNorm's rstd per feature) runs in vector instructions, which round
#: as the scalar ones (IEEE sqrt and division are exact to the last bit either way)
_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno"]

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
    digest = hashlib.sha1(str(source.resolve()).encode())
    for path in (source, *_HEADERS):
        digest.update(path.read_bytes())
    digest.update(" ".join(_FLAGS).encode())
    key = digest.hexdigest()[:12]
    suffix = "" if name == "layernorm" else f"_{(isa or _isa()).lower()}"
    return f"lnbench_{name}_{key}{suffix}"


def _builds(name: str) -> list[tuple[str, list[str]]]:
    """(extension name, compiler flags) to try in order: the recurrence with this CPU's vector
    instructions, then (a compiler that refuses those flags) without them."""
    if name == "layernorm":
        return [(_extension_name(name), _FLAGS)]
    builds = [(_extension_name(name, "DEFAULT"), _FLAGS)]
    if _isa() in _ISA_FLAGS:
        builds.insert(0, (_extension_name(name), [*_FLAGS, *_ISA_FLAGS[_isa()]]))
    return builds


def _pinned_ninja_dir() -> str | None:
    """The folder of the ``ninja`` lnbench depends on (the ``ninja`` package's), or None."""
    try:
        import ninja
    except ImportError:
        return None
    return str(ninja.BIN_DIR) if (Path(ninja.BIN_DIR) / "ninja").exists() else None


@contextlib.contextmanager
def _build_environment(build_dir: Path | None) -> Iterator[None]:
    """While a kernel is built or loaded: the pinned ninja first on ``PATH`` (one ninja for every
    build, so that ``.ninja_log`` is read by the ninja that wrote it), and the build folder locked
    with ``flock`` (released by the system when a process dies, unlike torch's own ``lock`` file,
    which a killed build leaves behind and every later build then waits on forever: while the
    flock is held no other lnbench process is building, so a ``lock`` file found then is stale
    and removed)."""
    path = os.environ.get("PATH", "")
    pinned = _pinned_ninja_dir()
    lock_file = None
    try:
        if pinned is not None:
            os.environ["PATH"] = os.pathsep.join([pinned, path])
        if build_dir is not None:
            with contextlib.suppress(OSError):  # no flock on this filesystem: torch's lock alone
                build_dir.mkdir(parents=True, exist_ok=True)
                lock_file = open(build_dir / ".lnbench_build.lock", "a")  # noqa: SIM115  held until the end
                fcntl.flock(lock_file, fcntl.LOCK_EX)
                (build_dir / "lock").unlink(missing_ok=True)
        yield
    finally:
        os.environ["PATH"] = path
        if lock_file is not None:
            lock_file.close()


def _build_dir(ext_name: str) -> Path | None:
    """torch's build folder of an extension (``TORCH_EXTENSIONS_DIR``/py311_cpu/<name>), or None."""
    try:
        from torch.utils.cpp_extension import _get_build_directory

        return Path(_get_build_directory(ext_name, verbose=False))
    except Exception:  # noqa: BLE001  a torch that moved it: no announcement, no flock
        return None


def _stop_children() -> None:
    """Terminate this process's child processes and theirs (ninja and the compilers of a build
    that is being interrupted), so that none is left compiling after lnbench stopped."""
    pids: list[int] = []
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            with contextlib.suppress(OSError, ValueError):
                found = [int(c) for c in children.read_text().split()]
                pids += found
                todo += found
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def _needs_build(build_dir: Path, ext_name: str) -> bool:
    """Whether loading ``ext_name`` will compile: no library yet, or the pinned ninja has work to
    do (``ninja -n``, a dry run: a changed compiler, flags or header)."""
    import subprocess

    if not (build_dir / f"{ext_name}.so").exists() or not (build_dir / "build.ninja").exists():
        return True
    pinned = _pinned_ninja_dir()
    ninja = str(Path(pinned) / "ninja") if pinned else "ninja"
    try:
        out = subprocess.run([ninja, "-n", "-C", str(build_dir)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False  # no word then; torch's load decides
    return "no work to do" not in out.stdout


#: where a kernel build is announced (one line on stderr); tests replace it
announce: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731


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
            build_dir = _build_dir(ext_name)
            if build_dir is not None and _needs_build(build_dir, ext_name):
                announce(f"lnbench: building the {_WHAT[name]} for this install and CPU (once, ~30-60 s)")
            try:
                with _build_environment(build_dir):
                    state["module"] = load(
                        name=ext_name, sources=[str(_SOURCES[name])], extra_cflags=cflags, verbose=False
                    )
                break
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt) or _interrupt_in(exc) is not None:
                    _stop_children()
                    raise
                if not isinstance(exc, Exception):
                    raise
                error = exc  # no compiler, no ninja, ...: the Python code still works
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


def linear_kernel() -> Any | None:
    """The built few-row Linear extension (``few_row_linear(x, weight, bias)``), or None."""
    return _load("linear")


def ensure_built() -> None:
    """Build (or load) every kernel now, unless ``LNBENCH_KERNELS=0``: an experiment calls this
    before its first run starts, and each worker before its cell's runs, so that a build's time is
    never counted in a run's ``wall_seconds``. A kernel that cannot be built warns once (the runs
    then use the Python code)."""
    if kernels_enabled():
        layernorm_kernel()
        recurrence_kernel()
        linear_kernel()


def main() -> int:
    """``python -m lnbench.nn.kernels`` (``make setup``): build every kernel now. Returns the exit
    code: 0, or 130 after a Ctrl-C / SIGTERM / hang-up (one line, the compilers stopped)."""

    def interrupted(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    before = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        for name, get in (
            ("layernorm", layernorm_kernel),
            ("recurrence", recurrence_kernel),
            ("linear", linear_kernel),
        ):
            print(f"lnbench {_WHAT[name]}:", "ready" if get() is not None else "NOT available", flush=True)
    except KeyboardInterrupt:
        print("lnbench: the kernel build was interrupted; the next run builds it again", file=sys.stderr)
        return 130
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
