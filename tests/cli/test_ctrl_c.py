"""Ctrl-C at any moment of a command is one line and exit code 130, and nothing is printed
afterwards. Each test sends SIGINT to the whole process group (as a terminal does) at a moment
where an interrupt lands inside library code: inside NumPy's import while starting, inside an
import during the run, while the worker processes start."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, TINY_OVERRIDES, set_args

pytestmark = pytest.mark.e2e  # starts the command line (and workers) in subprocesses


# SIGINT to the process group the first time a module whose name starts with PREFIX is looked up
# (inside the import machinery, as a Ctrl-C during a slow import is), then the console script.
AT_IMPORT = """
import importlib.abc, os, signal, sys
class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith(PREFIX) and not getattr(Hook, "sent", False):
            Hook.sent = True
            os.killpg(0, signal.SIGINT)
        return None
sys.meta_path.insert(0, Hook())
"""

# SIGINT to the process group right after the pool's first submit (the workers are starting).
AT_POOL_START = """
import os, signal
import concurrent.futures.process as p
real = p.ProcessPoolExecutor.submit
def submit(self, *args, **kwargs):
    future = real(self, *args, **kwargs)
    if not getattr(submit, "sent", False):
        submit.sent = True
        os.killpg(0, signal.SIGINT)
    return future
p.ProcessPoolExecutor.submit = submit
"""


def _lnbench(prelude: str, args: list[str]) -> subprocess.CompletedProcess:
    code = prelude + "\nimport sys\nsys.argv = ['lnbench', *sys.argv[1:]]\nfrom lnbench._entry import main\nmain()\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    try:
        out, err = proc.communicate(timeout=600)  # returns once every process holding stderr is gone
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _one_line(r: subprocess.CompletedProcess) -> str:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 130 and len(lines) == 1, r.stderr
    return lines[0]


def test_ctrl_c_while_numpy_imports_is_one_line(tmp_path):
    prelude = f"PREFIX = 'numpy._core.multiarray'\n{AT_IMPORT}"
    r = _lnbench(prelude, ["compare", "--dry-run", "--runs-dir", str(tmp_path / "runs")])
    assert _one_line(r) == "lnbench: interrupted: stopped by Ctrl-C while starting; nothing was written"
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_inside_an_import_during_the_run_is_one_line_naming_the_folder(tmp_path):
    prelude = f"PREFIX = 'sklearn'\n{AT_IMPORT}"  # the baselines, fit once the run folder exists
    args = ["compare", "--jobs", "1", "--runs-dir", str(tmp_path), *set_args(TINY_OVERRIDES)]
    line = _one_line(_lnbench(prelude, args))
    (run,) = list(tmp_path.iterdir())
    assert (
        line
        == f"lnbench: interrupted: stopped by Ctrl-C; run folder: {run} (status: interrupted); no epoch had finished"
    )


def test_ctrl_c_while_the_workers_start_is_one_line_and_nothing_after(tmp_path):
    args = ["compare", "--jobs", "2", "--runs-dir", str(tmp_path), *set_args(TINY_OVERRIDES), "--set", "seeds=[0,1]"]
    r = _lnbench(AT_POOL_START, args)
    (run,) = list(tmp_path.iterdir())
    assert _one_line(r).startswith(f"lnbench: interrupted: stopped by Ctrl-C; run folder: {run} (status: interrupted)")
    assert "Traceback" not in r.stderr


def test_ctrl_c_while_python_shuts_down_after_the_command_is_ignored():
    """The command is over and has printed everything: Python's shutdown reset SIGINT to the
    default, under which a Ctrl-C then (torch's teardown takes a moment) killed the process
    silently (-2). It is ignored: the command's exit code stands."""
    prelude = """
import os, signal
class Late:
    def __del__(self):  # runs while Python tears the modules down, after the signal handlers are gone
        os.kill(os.getpid(), signal.SIGINT)
late = Late()
"""
    r = _lnbench(prelude, ["--version"])
    assert r.returncode == 0 and r.stdout.startswith("lnbench ") and r.stderr == ""


def test_ctrl_c_while_report_html_is_written_names_the_finished_folder(tmp_path):
    """A Ctrl-C after the run folder's manifest is closed, while report.html is written: the line
    names the folder (not "while starting; nothing was written"), whose run.json says the run was
    interrupted and which has no report.html (lnbench report writes the page again)."""
    prelude = f"PREFIX = 'jinja2'\n{AT_IMPORT}"  # report.html is the first to import jinja2
    args = ["train", "configs/train.yaml", "--runs-dir", str(tmp_path), *set_args(TINY_OVERRIDES)]
    line = _one_line(_lnbench(prelude, args))
    (run,) = list(tmp_path.iterdir())
    assert (
        line
        == f"lnbench: interrupted: stopped by Ctrl-C; run folder: {run} (status: interrupted); finished epochs were kept"
    )
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted" and not (run / "report.html").exists()
