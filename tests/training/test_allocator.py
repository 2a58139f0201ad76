"""lnbench.training.allocator: glibc's mallopt once per process (freed buffers kept for reuse), off with LNBENCH_MALLOPT=0."""

import ctypes.util
import sys

import pytest

from lnbench.training import allocator


@pytest.mark.skipif(not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None, reason="glibc")
def test_keep_freed_memory_takes_effect_once_and_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(allocator, "_done", [])
    monkeypatch.delenv("LNBENCH_MALLOPT", raising=False)
    assert allocator.keep_freed_memory() is True  # glibc accepts both settings
    assert allocator._done == [True]
    monkeypatch.setenv("LNBENCH_MALLOPT", "0")
    assert allocator.keep_freed_memory() is True  # once per process: the first answer stands
    monkeypatch.setattr(allocator, "_done", [])
    assert allocator.keep_freed_memory() is False  # off


_FAULTS = """
import resource, torch
from lnbench.training.allocator import keep_freed_memory
keep_freed_memory()
def step():
    torch.empty(16 * 1024 * 1024).fill_(1.0)  # 64 MB written, then freed: above any mmap threshold glibc allows
for _ in range(10):  # the heap grows (1-6 steps measured) until an aligned block fits in what was freed
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None, reason="glibc")
def test_a_buffer_larger_than_the_mmap_threshold_is_reused_not_faulted_in_again():
    """A 64 MB buffer, written and freed in a fresh process, ten times and then five more: with
    the settings the heap keeps it, and the last five steps take (almost) no page faults (the
    oracle: getrusage's minor faults); with LNBENCH_MALLOPT=0 glibc maps it afresh every time,
    and each step faults its 16384 pages in again."""
    import os
    import subprocess

    def faults(mallopt: str) -> int:
        env = {**os.environ, "LNBENCH_MALLOPT": mallopt}
        out = subprocess.run([sys.executable, "-c", _FAULTS], env=env, capture_output=True, text=True, check=True)
        return int(out.stdout.split()[-1])

    kept, fresh = faults("1"), faults("0")
    assert kept < 1000 and kept * 10 < fresh, (kept, fresh)
