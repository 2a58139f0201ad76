"""Ctrl-C (SIGINT) and SIGTERM delivered where they do no harm.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be. Two places turn that
into a traceback instead of one line:

- inside an ``import``: the module is left half-initialised, and the next import of it fails
  (NumPy: "cannot load module more than once per process"; torch recurses until RecursionError);
- while worker processes start (:class:`lnbench.launchers.executors.PoolExecutor`): a worker the
  parent no longer knows of outlives it and prints a ``FileNotFoundError`` traceback when it
  unpickles the queues' semaphores, which the parent's exit removed.

:func:`handler` (installed by the command line) defers the signal until the main thread is out
of both (a :func:`deferred` block, or an import), then raises ``KeyboardInterrupt`` as usual.
Once it has raised, further signals are ignored, so that the cleanup (marking runs interrupted,
stopping the workers) ends with one line, not a second traceback. While nothing can have been
written yet (:func:`exit_at_once`), it ends the process at once with one line and exit code 130.
Stdlib only: the console script installs it before importing anything heavy.
"""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
RETRY_SECONDS = 0.02  # how often a deferred signal is tried again

_critical = 0  # depth of deferred() blocks
_pending: int | None = None  # a deferred signal, raised once the main thread is out of imports and deferred()
_raised = False  # a KeyboardInterrupt was raised: later signals are ignored
_exit_line: bytes | None = None  # exit_at_once(): the line to print before exiting at once


def in_import(frame: FrameType | None) -> bool:
    """Whether ``frame`` (the main thread's current frame) runs inside an import."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def handler(signum: int, frame: FrameType | None) -> None:
    """The SIGINT / SIGTERM handler (see the module docstring).

    Raises:
        KeyboardInterrupt: with what was sent (``Ctrl-C`` for SIGINT, else the signal's name), once, outside imports and
            :func:`deferred` blocks.
    """
    global _pending, _raised
    if _raised:
        return
    if _exit_line is not None:
        os.write(2, _exit_line)
        os._exit(EXIT_CODE)
    if _critical or in_import(frame):
        if _pending is None:
            _pending = signum
            threading.Thread(target=_retry, name="lnbench-interrupt", daemon=True).start()
        return
    _pending, _raised = None, True
    raise KeyboardInterrupt("Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name)


def _retry() -> None:
    """Deliver the deferred signal to the main thread again until :func:`handler` raises it."""
    while True:
        time.sleep(RETRY_SECONDS)
        signum = _pending
        if signum is None:
            return
        _thread.interrupt_main(signal.Signals(signum))


def raise_pending() -> None:
    """Raise a signal that arrived during an import now, at a point the caller knows is safe,
    rather than at the retry thread's next try (up to :data:`RETRY_SECONDS` later, by when a short
    step after the import may be over: a Ctrl-C while report.html's renderer was imported then
    landed after the page was written).

    Raises:
        KeyboardInterrupt: as :func:`handler`, when a signal is pending outside :func:`deferred` blocks.
    """
    global _pending, _raised
    signum = _pending
    if signum is None or _critical or _raised:
        return
    _pending, _raised = None, True
    raise KeyboardInterrupt("Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name)


@contextmanager
def deferred() -> Iterator[None]:
    """A block that a signal handled by :func:`handler` does not interrupt: it is raised when
    the block ends (in this process only; child processes are unaffected)."""
    global _critical
    _critical += 1
    try:
        yield
    finally:
        _critical -= 1


def exit_at_once(line: str) -> None:
    """From now on, except within :func:`handling`: SIGINT prints ``line`` and ends the process
    at once with exit code 130, even in the middle of an import. For the moments when there is
    nothing to clean up (nothing written yet, or everything written)."""
    global _exit_line, _raised
    _exit_line, _raised = line.rstrip("\n").encode() + b"\n", False
    for signum in SIGNALS[:1]:  # SIGTERM keeps its default: the process ends quietly
        signal.signal(signum, handler)


def exiting_at_once() -> bool:
    """Whether :func:`exit_at_once` is in force (the console script, outside :func:`handling`)."""
    return _exit_line is not None


@contextmanager
def handling() -> Iterator[None]:
    """Within this block, SIGINT and SIGTERM go through :func:`handler` and raise
    ``KeyboardInterrupt`` (deferred out of imports and :func:`deferred` blocks). After the block
    the previous handlers are back; once an interrupt was raised, further ones stay ignored."""
    global _exit_line, _pending, _raised
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    exit_line, _exit_line, _pending, _raised = _exit_line, None, None, False
    for signum in SIGNALS:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        _pending = None
        if not _raised:
            _exit_line = exit_line
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked (held pending, not lost) in this thread for the block. A process started
    inside the block inherits the blocked signal, so a Ctrl-C sent to the whole process group
    never reaches it (CPython's resource tracker is started the same way)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
