"""Worker processes start from the caller's program: a script without the ``__main__`` guard, or
one read from stdin, stops with one line before any run folder exists; the workers import the
lnbench the caller runs, not another one in the current directory."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY_OVERRIDES

pytestmark = pytest.mark.e2e  # starts worker processes; the guarded script trains

OVERRIDES = [*TINY_OVERRIDES, "train.epochs=1", "seeds=[0]", "compare.families=[lstm]", "compare.norms=[none,layer]"]
CALLS = f"""from lnbench import experiments
from lnbench.config import load_config

cfg = load_config(None, {OVERRIDES!r})
print(experiments.compare(cfg, runs_dir="runs", jobs=2).status)
"""


def _run(tmp_path: Path, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=tmp_path, input=stdin, capture_output=True, text=True, timeout=600
    )


def _folders(tmp_path: Path) -> list[str]:
    runs = tmp_path / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_a_script_without_the_main_guard_stops_with_one_line_and_writes_no_folder(tmp_path):
    """Each worker re-imports the script, which would start the experiment again: the oracle is the
    runs folder, empty afterwards, and the error's last line, which names the script and the guard."""
    (tmp_path / "unguarded.py").write_text(CALLS)
    r = _run(tmp_path, ["unguarded.py"])
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "ConfigError: jobs=2: each worker process re-runs the script" in last, r.stderr
    assert str(tmp_path / "unguarded.py") in last and 'if __name__ == "__main__":' in last
    assert _folders(tmp_path) == []


def test_a_script_read_from_stdin_stops_with_one_line_and_writes_no_folder(tmp_path):
    """A worker cannot import ``<stdin>``: one line says so and how to run it; no folder is made."""
    r = _run(tmp_path, ["-"], stdin=CALLS)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "<stdin> is not a file" in last and "jobs=1" in last, r.stderr
    assert _folders(tmp_path) == []


def test_a_guarded_script_runs_on_two_workers(tmp_path):
    """The same calls under ``if __name__ == "__main__":`` complete: one folder, status completed."""
    guarded = 'if __name__ == "__main__":\n' + "".join(f"    {line}\n" for line in CALLS.splitlines())
    (tmp_path / "guarded.py").write_text(guarded)
    r = _run(tmp_path, ["guarded.py"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "completed"
    assert len(_folders(tmp_path)) == 1


PROBE = """import lnbench

def where(job, progress):
    return lnbench.__file__
"""
MAIN = """import lnbench
from lnbench.launchers.executors import PoolExecutor
from probe import where

if __name__ == "__main__":
    print(lnbench.__file__)
    print(*PoolExecutor(2).run(where, [0, 1]), sep="\\n")
"""


def test_workers_import_the_callers_lnbench_not_one_in_the_current_directory(tmp_path):
    """Run from a folder holding another ``lnbench`` package (another checkout), every worker's
    ``lnbench.__file__`` equals the caller's: the oracle is the caller's own ``lnbench.__file__``."""
    (tmp_path / "lnbench").mkdir()
    (tmp_path / "lnbench" / "__init__.py").write_text("")  # another checkout's package, first in the cwd
    code = tmp_path / "code"
    code.mkdir()
    (code / "probe.py").write_text(PROBE)
    (code / "main.py").write_text(MAIN)
    r = _run(tmp_path, [str(code / "main.py")])
    assert r.returncode == 0, r.stderr
    parent, *workers = r.stdout.split()
    assert parent != str(tmp_path / "lnbench" / "__init__.py")
    assert workers == [parent, parent]
