"""Where a run's numbers came from, for its manifest: the git state of the code, the CPU (model,
vector instruction sets) and the torch build (BLAS, threads, parallel backend)."""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import platform
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _git(directory: Path, *args: str) -> bytes | None:
    """The output of ``git args`` run in ``directory``, or None if git fails or is absent."""
    try:
        out = subprocess.run(["git", *args], cwd=directory, capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _in_run_folder(top: Path, name: str) -> bool:
    """Whether the checkout's file ``name`` (from the root ``top``) lies in a run folder: one of its
    folders holds a run.json (:func:`lnbench.records.index.is_run_folder`)."""
    return any((top / parent / "run.json").is_file() for parent in Path(name).parents if parent != Path("."))


def git_state(directory: str | Path) -> dict[str, Any]:
    """The provenance of the checkout holding ``directory``, as MLflow and Sacred record it.

    Returns:
        ``git_commit`` (the HEAD commit, or None outside a checkout), ``git_dirty`` (whether any
        tracked file differs from HEAD or an untracked, not ignored, file exists outside a run
        folder: lnbench's own output, a folder holding a run.json, is not code; None outside a
        checkout), ``git_diff_sha256`` (SHA-256 of ``git diff HEAD --binary`` and of the untracked
        files' paths and contents; None when clean) and ``git_changed_files`` (paths from the
        checkout's root, sorted).
    """
    directory = Path(directory)
    state: dict[str, Any] = {"git_commit": None, "git_dirty": None, "git_diff_sha256": None, "git_changed_files": []}
    head = _git(directory, "rev-parse", "HEAD")
    if head is None:  # not a checkout, or no git
        return state
    root = _git(directory, "rev-parse", "--show-toplevel")
    diff = _git(directory, "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff")
    tracked = _git(directory, "diff", "HEAD", "--name-only", "-z")  # names only: no diff tool runs
    # ":/": the whole checkout (ls-files lists only the current folder's files; diff the whole tree)
    untracked = _git(directory, "ls-files", "--others", "--exclude-standard", "--full-name", "-z", ":/")
    if root is None or diff is None or tracked is None or untracked is None:
        return state
    state["git_commit"] = head.decode().strip() or None
    top = Path(root.decode().strip())
    new_files = sorted(n for n in untracked.decode(errors="replace").split("\0")[:-1] if not _in_run_folder(top, n))
    changed = sorted(set(tracked.decode(errors="replace").split("\0")[:-1]) | set(new_files))
    state["git_dirty"], state["git_changed_files"] = bool(changed), changed
    if changed:
        digest = hashlib.sha256(diff)
        for name in new_files:  # a new file is part of what ran: its path and content
            digest.update(b"\0" + name.encode() + b"\0")
            try:
                digest.update((top / name).read_bytes())
            except OSError:
                pass
        state["git_diff_sha256"] = digest.hexdigest()
    return state


@functools.cache
def _git_state_of_lnbench() -> dict[str, Any]:
    """:func:`git_state` of the checkout lnbench runs from, once per process (the code a process
    runs is the code it imported; a compare starts many runs)."""
    return git_state(Path(__file__).resolve().parent)


#: The vector instruction sets whose kernels round differently (x86 ``flags``, aarch64 ``Features``
#: in /proc/cpuinfo): :func:`cpu_info` records which of them the CPU has.
VECTOR_ISA_FLAGS = frozenset(
    {
        *("sse4_1", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"),
        *("avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve", "sve2"),
    }
)
_CPUINFO = "/proc/cpuinfo"


def _or_none(get: Callable[[], Any]) -> Any:
    """``get()``, or None when it raises: a machine description never stops a run."""
    try:
        return get()
    except Exception:
        return None


def _cpuinfo() -> dict[str, str]:
    """The first value of each key of /proc/cpuinfo (the first CPU's), {} when it cannot be read."""
    try:
        with open(_CPUINFO, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), value.strip())
    return fields


@functools.lru_cache(maxsize=1)
def cpu_info() -> dict[str, Any]:
    """The CPU a process runs on, once per process: ``model`` (/proc/cpuinfo's ``model name``, else
    ``platform.processor()``), ``isa`` (the sorted :data:`VECTOR_ISA_FLAGS` it has),
    ``torch_capability`` (``torch.backends.cpu.get_cpu_capability()``: the ISA torch's kernels
    dispatch to, e.g. ``AVX2`` or ``AVX512``) and ``count`` (``os.cpu_count()``). Per-seed numbers
    are bit-exact only on the same kind of CPU. A field that cannot be found is None."""
    fields = _cpuinfo()
    flags = fields.get("flags", fields.get("Features"))

    def capability() -> str:
        import torch

        return torch.backends.cpu.get_cpu_capability()

    return {
        "model": fields.get("model name") or _or_none(platform.processor) or None,
        "isa": None if flags is None else sorted(VECTOR_ISA_FLAGS.intersection(flags.split())),
        "torch_capability": _or_none(capability),
        "count": _or_none(os.cpu_count),
    }


def _setting(text: str | None, pattern: str) -> str | None:
    """The first group of ``pattern`` in ``text`` (multiline), None when absent or empty."""
    found = None if text is None else re.search(pattern, text, re.MULTILINE)
    return (found.group(1).strip() or None) if found else None


@functools.lru_cache(maxsize=1)
def torch_build() -> dict[str, Any]:
    """How torch was built, once per process: ``blas`` and ``lapack`` (``BLAS_INFO`` and
    ``LAPACK_INFO`` of ``torch.__config__.show()``, e.g. ``mkl`` or ``open``), ``mkldnn``
    (``torch.backends.mkldnn.is_available()``) and ``parallel`` (the ``ATen parallel backend`` of
    ``torch.__config__.parallel_info()``, e.g. ``OpenMP``). A field that cannot be found is None."""
    torch = _or_none(lambda: importlib.import_module("torch"))
    show = _or_none(lambda: torch.__config__.show())
    parallel = _or_none(lambda: torch.__config__.parallel_info())
    return {
        "blas": _setting(show, r"\bBLAS_INFO=([^,\n]*)"),
        "lapack": _setting(show, r"\bLAPACK_INFO=([^,\n]*)"),
        "mkldnn": _or_none(lambda: bool(torch.backends.mkldnn.is_available())),
        "parallel": _setting(parallel, r"^ATen parallel backend:(.*)$"),
    }
