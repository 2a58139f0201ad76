"""lnbench.launchers._forkserver_quiet: the forkserver ignores Ctrl-C while it imports, and only a
forkserver does (the test sets the SIGINT disposition it needs itself, so it passes
however pytest was started, e.g. as a background job that inherited SIGINT ignored)."""

import signal
import subprocess
import sys

import pytest

# the child's `-c` code begins as {setup} (a forkserver's begins with its import of main), starts
# from Python's default Ctrl-C handling whatever it inherited, then imports the module
CHILD = (
    "{setup}import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "import lnbench.launchers._forkserver_quiet; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"
)


@pytest.mark.parametrize(
    "setup,ignored",
    [
        ("", "False"),  # a plain `python -c` keeps Ctrl-C
        ("import multiprocessing.forkserver; ", "False"),  # one that imported the module (an xdist worker)
        ("from multiprocessing.forkserver import main; ", "True"),  # as multiprocessing starts its forkserver
    ],
)
def test_only_a_forkserver_ignores_sigint(setup, ignored):
    code = CHILD.format(setup=setup)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ignored


@pytest.mark.parametrize("inherited", [signal.SIG_IGN, signal.default_int_handler])
def test_importing_it_here_leaves_sigint_alone(inherited):
    """In this process (not a forkserver) the import changes nothing, whatever pytest was started with."""
    import importlib

    import lnbench.launchers._forkserver_quiet as quiet

    before = signal.signal(signal.SIGINT, inherited)
    try:
        importlib.reload(quiet)
        assert signal.getsignal(signal.SIGINT) is inherited
    finally:
        signal.signal(signal.SIGINT, before)
