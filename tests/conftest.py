"""Shared test settings: the one tiny config every end-to-end test trains, and the Agg backend.

``TINY_OVERRIDES`` (``key=value`` strings for :func:`lnbench.config.load_config`) make a run take
well under a second per epoch; :func:`set_args` turns overrides into CLI ``--set`` arguments.
End-to-end tests (they train and write run folders) are marked ``e2e``: ``pytest -m "not e2e"``
runs the unit tests alone (``make test-unit``).
"""

import hashlib
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

TINY_OVERRIDES = [
    "train.batch_size=16",
    "data.n_train=32",
    "data.n_test=16",
    "data.seq_len=5",
    "data.features=8",
    "model.hidden_size=8",
    "train.epochs=2",
]


def fingerprint(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder`` (hidden ones too): its path relative to ``folder`` -> (SHA-256
    of its bytes, mtime in ns). Equal before and after: nothing under ``folder`` was written."""
    return {
        str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def set_args(overrides) -> list[str]:
    """``["a=1", "b=2"]`` -> ``["--set", "a=1", "--set", "b=2"]``; a key layered twice (``TINY_OVERRIDES``
    and a test's own value) is passed once, with its last value, as load_config would apply them (the
    command line refuses a key set twice)."""
    last = {o.partition("=")[0].strip(): o for o in overrides}
    return [arg for o in last.values() for arg in ("--set", o)]


@pytest.fixture
def tiny() -> list[str]:
    """The tiny config's overrides (a fresh list: a test may append to it)."""
    return list(TINY_OVERRIDES)
