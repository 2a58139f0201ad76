"""Preloaded first by lnbench's forkserver (:class:`lnbench.launchers.executors.PoolExecutor`): the
forkserver process ignores SIGINT while it imports lnbench and torch, so a Ctrl-C sent to the
whole process group (a terminal, or ``timeout -s INT``) does not print a traceback from it; the
parent decides what a Ctrl-C does. It acts only inside a forkserver process, told by its command
line (``python -c 'from multiprocessing.forkserver import main; main(...)'``, CPython's
``multiprocessing.forkserver.ForkServer.ensure_running``): another ``python -c`` process that has
imported ``multiprocessing.forkserver`` (a pytest-xdist worker, a notebook kernel) keeps its Ctrl-C.

There it also gives back the environment the server was started with (``PYTHONSAFEPATH`` and
``PYTHONPATH``, set only so that it imports its parent's lnbench: ``LNBENCH_SERVER_ENV``), so
that the workers and what they start see the parent's."""

import json
import os
import signal
import sys

FORKSERVER_CMD = "from multiprocessing.forkserver import main"

if any(arg.startswith(FORKSERVER_CMD) for arg in sys.orig_argv):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for _name, _value in json.loads(os.environ.pop("LNBENCH_SERVER_ENV", "{}")).items():
        if _value is None:
            os.environ.pop(_name, None)
        else:
            os.environ[_name] = _value
