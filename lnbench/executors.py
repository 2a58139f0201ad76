"""Where the cells of an experiment run: in this process, or on a pool of worker processes.

An executor runs ``fn(job, progress)`` for each job and returns the outcomes in the jobs' order.
A job is a picklable, pure description of work (a cell's configs and its parent folder); its
result depends on nothing else, so where it runs does not change it. ``progress(label, epoch,
epochs)`` reaches the caller's callback from any process. A job that raises an ``Exception``
does not stop the others: its outcome is a :class:`Failed`. Ctrl-C (or SIGTERM) stops every
worker, whose runs then record ``interrupted``, and is raised again in the caller.

A cluster launcher plugs in by implementing :class:`Executor` (one method).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

Progress = Callable[[str, int, int], None]


@dataclass
class Failed:
    """The outcome of a job that raised: the error as one line."""

    error: str


class Executor(Protocol):
    def run(self, fn: Callable[[Any, Progress | None], Any], jobs: Sequence[Any], progress: Progress | None = None) -> list[Any]:
        """``[fn(job, progress) for job in jobs]`` (a raising job gives :class:`Failed`)."""
        ...


def usable_cores() -> int:
    """The CPU cores this process may run on (``os.sched_getaffinity``), at least 1."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _outcome(fn, job, progress):
    try:
        return fn(job, progress)
    except Exception as exc:  # noqa: BLE001  one failed cell must not stop the others
        return Failed(f"{type(exc).__name__}: {exc}")


class SerialExecutor:
    """Every job in this process, one after another (``--jobs 1``)."""

    def run(self, fn, jobs, progress=None):
        return [_outcome(fn, job, progress) for job in jobs]


_QUEUE: Any = None  # a worker's progress queue, set by _init_worker
_STOPPING = False  # set in a worker by SIGTERM: it takes no further job


def _raise_interrupt(signum, frame) -> None:
    global _STOPPING
    _STOPPING = True
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _init_worker(progress_queue) -> None:
    global _QUEUE
    _QUEUE = progress_queue
    signal.signal(signal.SIGTERM, _raise_interrupt)  # the parent stops us with SIGTERM
    import torch

    torch.set_num_threads(1)


def _queue_progress(label: str, epoch: int, epochs: int) -> None:
    _QUEUE.put((label, epoch, epochs))


def _run_in_worker(fn, job):
    if _STOPPING:  # a job queued before the stop: do not start it
        raise KeyboardInterrupt("SIGTERM")
    return _outcome(fn, job, _queue_progress)


class PoolExecutor:
    """Jobs on ``workers`` worker processes, one torch thread each, via
    :class:`concurrent.futures.ProcessPoolExecutor` (``forkserver`` start method, else ``spawn``)."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers

    def run(self, fn, jobs, progress=None):
        # forkserver: workers fork from a clean server process that has imported lnbench and torch
        # once (no threads, nothing of ours inherited but the job); spawn where it does not exist
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(["lnbench.experiments", "torch._dynamo"])  # Adam imports _dynamo: 1 s
        progress_queue = ctx.Queue()
        pool = ProcessPoolExecutor(min(self.workers, max(len(jobs), 1)), ctx, _init_worker, (progress_queue,))
        futures: list[Future] = [pool.submit(_run_in_worker, fn, job) for job in jobs]
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                _drain(progress_queue, progress)
            _drain(progress_queue, progress)
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            for process in list(getattr(pool, "_processes", {}).values()):  # running cells: stop them
                if process.is_alive():
                    os.kill(process.pid, signal.SIGTERM)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            progress_queue.close()


def _drain(progress_queue, progress: Progress | None) -> None:
    while True:
        try:
            item = progress_queue.get_nowait()
        except queue.Empty:
            return
        if progress is not None:
            progress(*item)


def make_executor(jobs: int) -> Executor:
    """``jobs`` = 1: :class:`SerialExecutor`; more: a :class:`PoolExecutor` of that many workers.

    Raises:
        ValueError: ``jobs < 1``.
    """
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    return SerialExecutor() if jobs == 1 else PoolExecutor(jobs)
