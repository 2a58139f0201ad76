"""Shared test settings: the repository root, the command-line runner, the one tiny config every
end-to-end test trains, a tiny compare folder, and the Agg backend.

``TINY_OVERRIDES`` (``key=value`` strings for :func:`lnbench.config.load_config`) make a run take
well under a second per epoch; :func:`set_args` turns overrides into CLI ``--set`` arguments and
:func:`tiny_args` gives the tiny config's command-line arguments with a test's own overrides on top.
A test that trains something else than the tiny config says where it differs, next to its use.
End-to-end tests (they train and write run folders) are marked ``e2e``: ``pytest -m "not e2e"``
runs the unit tests alone (``make test-unit``). Tests import these as ``from conftest import ...``.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
from typer.testing import CliRunner

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parents[1]  # the repository's root: configs/, docs/, lnbench/, README.md
runner = CliRunner()  # runs a command of lnbench's app in this process, its output and exit code caught

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


def package_copy(root: Path, *folders: str) -> Path:
    """A copy of the package (and of the repository's ``folders``, e.g. ``docs``) under ``root``,
    without built kernels or caches: a test edits it, then runs it with ``PYTHONPATH=root``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "build")
    for folder in ("lnbench", *folders):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    return root


def insert_at(path: Path, anchor: str, text: str, after: bool = False) -> None:
    """Put ``text`` before (or ``after``) the one occurrence of ``anchor`` in the file ``path``;
    an anchor that is not there once fails the test, naming it."""
    source = path.read_text()
    assert source.count(anchor) == 1, f"{path.name}: the anchor {anchor!r} moved"
    path.write_text(source.replace(anchor, anchor + text if after else text + anchor))


def run_in_copy(root: Path, *args: str) -> str:
    """Run ``python ARGS`` in the package copy ``root`` (:func:`package_copy`; the Python path, C++
    kernels off), in a fresh interpreter; its stdout. A failure fails the test with its stderr."""
    env = {**os.environ, "PYTHONPATH": str(root), "LNBENCH_KERNELS": "0"}
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


#: a probe script's helper (prepended by :func:`probe_copy`): each call's ConfigError message, or None
REFUSALS = """
from lnbench.config import ConfigError


def refusals(*calls):
    out = []
    for call in calls:
        try:
            call()
            out.append(None)
        except ConfigError as exc:
            out.append(str(exc))
    return out
"""


def probe_copy(root: Path, script: str, page: str) -> dict:
    """In the package copy ``root``: the JSON that ``script`` (which may call :data:`REFUSALS`'
    ``refusals``) prints last, and the reference ``page``
    (``config-reference.md``) as the copy's ``docs/generate.py`` writes it, under ``"reference"``."""
    out = json.loads(run_in_copy(root, "-c", REFUSALS + script).strip().splitlines()[-1])
    run_in_copy(root, "docs/generate.py")
    return {**out, "reference": (root / "docs" / page).read_text()}


def set_args(overrides) -> list[str]:
    """``["a=1", "b=2"]`` -> ``["--set", "a=1", "--set", "b=2"]``; a key layered twice (``TINY_OVERRIDES``
    and a test's own value) is passed once, with its last value, as load_config would apply them (the
    command line refuses a key set twice)."""
    last = {o.partition("=")[0].strip(): o for o in overrides}
    return [arg for o in last.values() for arg in ("--set", o)]


def tiny_args(*extra: str) -> list[str]:
    """The tiny config plus ``extra`` overrides as command-line arguments, on one worker process:
    ``--set`` for each of ``TINY_OVERRIDES`` and ``extra`` (a key in both takes ``extra``'s value),
    then ``--jobs 1``."""
    return [*set_args([*TINY_OVERRIDES, *extra]), "--jobs", "1"]


@pytest.fixture
def tiny() -> list[str]:
    """The tiny config's overrides (a fresh list: a test may append to it)."""
    return list(TINY_OVERRIDES)


@pytest.fixture(scope="module")
def compare_run(tmp_path_factory) -> Path:
    """A compare folder of the tiny config, 2 seeds (paired statistics need 2), norms none and
    layer, run through ``lnbench compare`` (exit code 0, and its output names its report.html);
    one per test module, which may change it."""
    from lnbench.cli.app import app

    runs = tmp_path_factory.mktemp("runs")
    result = runner.invoke(
        app, ["compare", "--runs-dir", str(runs), *tiny_args("seeds=[0,1]", "compare.norms=[none,layer]")]
    )
    assert result.exit_code == 0, result.output
    (run,) = list(runs.iterdir())
    assert f"Report: {run / 'report.html'}" in result.output
    return run
