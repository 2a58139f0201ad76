"""Keep freed memory for reuse in a process that trains (glibc's ``mallopt``).

A training step of the fused recurrence (:mod:`lnbench.nn.fused`) allocates and frees buffers of
several MB (the activations it saves, a seed ensemble's (S, T, B, 4H) gradients). glibc serves
each from a fresh ``mmap`` and returns it with ``munmap`` on free (sizes above its mmap
threshold), so every step page-faults them in again: on this project's 2-core virtual machine
that doubled the kernel's time at 5 seeds (``benchmarks/bench_lstm.py``; docs/speed.md). Setting
``M_MMAP_MAX`` to 0 (no block from ``mmap``: glibc caps the mmap threshold at 32 MB, and pixel
MNIST's buffers at batch size 64 are larger; its LSTM step took 382 ms with blocks above 32 MB
mapped afresh, 229 ms with none, ``torch.nn.LSTM``'s 382 and 210 ms) and ``M_TRIM_THRESHOLD`` to
1 GB keeps such buffers on the heap, reused from one step to the next, as a caching allocator
(jemalloc, tcmalloc, PyTorch's CUDA allocator) would; glibc still maps memory when the heap
cannot grow. The cost: the process keeps its peak heap until it exits, and the heap grows for 1-6
steps before a freed block fits the next aligned request (the LN-LSTM's peak RSS at pixel MNIST
+16%, docs/speed.md). :func:`lnbench.training.loop.train_members` calls :func:`keep_freed_memory`
once per process; elsewhere (musl, macOS, Windows) it does nothing. ``LNBENCH_MALLOPT=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_MAX = -4
TRIM_THRESHOLD = 1024 * 1024 * 1024

_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks for reuse, of any size (see the module docstring), once
    per process. Returns whether the settings took effect (False off glibc or with
    ``LNBENCH_MALLOPT=0``)."""
    if _done:
        return _done[0]
    ok = False
    if os.environ.get("LNBENCH_MALLOPT", "1") != "0":
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            mallopt = libc.mallopt
        except (OSError, AttributeError):  # not glibc
            mallopt = None
        if mallopt is not None:
            ok = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _done.append(ok)
    return ok
