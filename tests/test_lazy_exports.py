"""``import lnbench`` and the command line stay light; lnbench.load and
lnbench.load_model import pandas and torch only when asked for."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "scipy", "matplotlib", "sklearn", "pandas", "pyarrow", "tensorboard")


def _imported(code: str) -> list[str]:
    probe = f"import sys; {code}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout)  # a printed list of names


def test_import_lnbench_and_the_cli_import_nothing_heavy():
    assert _imported("import lnbench, lnbench.cli.app") == []


def test_load_brings_pandas_only_when_called():
    loaded = _imported("import lnbench; lnbench.load")
    assert "pandas" in loaded and "torch" not in loaded  # pandas may bring pyarrow along
    assert "torch" in _imported("import lnbench; lnbench.load_model")
