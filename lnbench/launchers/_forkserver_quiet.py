"""Preloaded first by lnbench's forkserver (:class:`lnbench.launchers.executors.PoolExecutor`): the
forkserver process ignores SIGINT while it imports lnbench and torch, so a Ctrl-C sent to the
whole process group (a terminal, or ``timeout -s INT``) does not print a traceback from it; the
parent decides what a Ctrl-C does. It acts only inside a forkserver process (started as
``python -c 'from multiprocessing.forkserver import main; ...'``)."""

import signal
import sys

if sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
