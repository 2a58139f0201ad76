"""lnbench.training.allocator: glibc's mallopt once per process, off with LNBENCH_MALLOPT=0."""

import ctypes.util
import sys

import pytest

from lnbench.training import allocator


@pytest.mark.skipif(not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None, reason="glibc")
def test_keep_freed_memory_takes_effect_once_and_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(allocator, "_done", [])
    monkeypatch.delenv("LNBENCH_MALLOPT", raising=False)
    assert allocator.keep_freed_memory() is True  # glibc accepts both settings (32 MB is its maximum)
    assert allocator._done == [True]
    monkeypatch.setenv("LNBENCH_MALLOPT", "0")
    assert allocator.keep_freed_memory() is True  # once per process: the first answer stands
    monkeypatch.setattr(allocator, "_done", [])
    assert allocator.keep_freed_memory() is False  # off


def test_the_mmap_threshold_is_glibcs_maximum():
    """A larger value is refused by glibc (mallopt returns 0), and the setting would not apply."""
    assert allocator.MMAP_THRESHOLD_MAX == 32 * 1024 * 1024
