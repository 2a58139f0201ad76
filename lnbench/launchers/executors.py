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

import json
import multiprocessing
import os
import queue
import signal
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from lnbench.launchers import interrupts

Progress = Callable[[str, int, int], None]


@dataclass
class Failed:
    """The outcome of a job that raised: the error as one line."""

    error: str


class Executor(Protocol):
    def run(
        self,
        fn: Callable[[Any, Progress | None], Any],
        jobs: Sequence[Any],
        progress: Progress | None = None,
        on_done: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """``[fn(job, progress) for job in jobs]`` (a raising job gives :class:`Failed`);
        ``on_done(k, outcome)`` is called in the caller's process as each job ends."""
        ...


def usable_cores() -> int:
    """The CPU cores this process may run on (``os.sched_getaffinity``), at least 1."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def worker_count(jobs: int, n_cells: int) -> int:
    """The worker processes ``--jobs jobs`` starts for ``n_cells`` cells: no more than the cells
    and the usable CPU cores (one torch thread each: a worker beyond them only competes for a
    core and holds its own copy of torch), at least 1."""
    return max(1, min(jobs, n_cells, usable_cores()))


def _outcome(fn, job, progress):
    try:
        return fn(job, progress)
    except Exception as exc:  # noqa: BLE001  one failed cell must not stop the others
        return Failed(f"{type(exc).__name__}: {exc}")


class SerialExecutor:
    """Every job in this process, one after another (``--jobs 1``)."""

    #: the jobs run in the caller's process (the other executors' run elsewhere: the caller is
    #: free to do other work meanwhile, as the driver fits the baselines)
    in_process = True

    def run(self, fn, jobs, progress=None, on_done=None):
        outcomes = []
        for k, job in enumerate(jobs):
            outcomes.append(_outcome(fn, job, progress))
            if on_done is not None:
                on_done(k, outcomes[-1])
        return outcomes


_QUEUE: Any = None  # a worker's progress queue, set by _init_worker
_STOPPING = False  # set in a worker by SIGTERM: it takes no further job
_IN_JOB = False  # a worker is inside a job (not inside the pool's own queue handling)
_IN_QUEUE = False  # a worker is putting a progress report (holding the queue's locks)
_DEFERRED = False  # SIGTERM came while _IN_QUEUE: raise once the put is done


def _raise_interrupt(signum, frame) -> None:
    """SIGTERM in a worker: raise KeyboardInterrupt only where no lock of a multiprocessing queue
    can be held (a lock left held by the exception would hang this process's exit, or every
    worker's next job), so: inside a job, and after a progress put rather than within it."""
    global _STOPPING, _DEFERRED
    if _STOPPING:  # once: a second signal must not cut short the writing of "interrupted"
        return
    _STOPPING = True
    if _IN_QUEUE:
        _DEFERRED = True
    elif _IN_JOB:
        raise KeyboardInterrupt(signal.Signals(signum).name)


def _init_worker(progress_queue) -> None:
    global _QUEUE
    _QUEUE = progress_queue
    signal.signal(signal.SIGTERM, _raise_interrupt)  # the parent stops us with SIGTERM
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent decides
    import torch

    torch.set_num_threads(1)


def _queue_progress(*report) -> None:
    """Forward a progress report, ``(label, epoch, epochs[, acc])``, to the parent."""
    global _IN_QUEUE
    _IN_QUEUE = True
    try:
        _QUEUE.put(report)
    finally:
        _IN_QUEUE = False
    if _DEFERRED:
        raise KeyboardInterrupt("SIGTERM")


def _run_in_worker(fn, job):
    global _IN_JOB
    if _STOPPING:  # a job queued before the stop: do not start it
        raise KeyboardInterrupt("SIGTERM")
    _IN_JOB = True
    try:
        return _outcome(fn, job, _queue_progress)
    finally:
        _IN_JOB = False


class PoolExecutor:
    """Jobs on ``workers`` worker processes, one torch thread each, via
    :class:`concurrent.futures.ProcessPoolExecutor` (``forkserver`` start method, else ``spawn``).

    A worker that dies (killed, out of memory) breaks the pool: the jobs that had not finished
    are run again, each alone on a fresh worker, and a job whose worker dies again is
    :class:`Failed`.
    """

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers

    def run(self, fn, jobs, progress=None, on_done=None):
        if not jobs:  # e.g. a resumed experiment whose every cell had finished
            return []
        # forkserver: workers fork from a clean server process that has imported lnbench and torch
        # once (no threads, nothing of ours inherited but the job); spawn where it does not exist
        ctx = _context()
        if _start_forkserver(ctx) == MAIN_RERAN:  # not started by start_workers: say why no worker runs
            raise RuntimeError(f"--jobs {self.workers}: {RERUN_ADVICE.format(script=_main_script())}")
        with interrupts.deferred():  # its semaphores exist, registered with the resource tracker, or not at all
            progress_queue = ctx.Queue()
        outcomes: dict[int, Any] = {}
        breaks = dict.fromkeys(range(len(jobs)), 0)
        try:
            self._one_pool(
                ctx, fn, jobs, list(range(len(jobs))), self.workers, progress_queue, progress, on_done, outcomes, breaks
            )
            for k in [k for k in range(len(jobs)) if k not in outcomes]:  # after a broken pool: one at a time
                while k not in outcomes:  # a job that dies alone gets one more try, then fails
                    self._one_pool(ctx, fn, jobs, [k], 1, progress_queue, progress, on_done, outcomes, breaks)
            _drain(progress_queue, progress)
            return [outcomes[k] for k in range(len(jobs))]
        finally:
            progress_queue.close()

    def _one_pool(self, ctx, fn, jobs, todo, workers, progress_queue, progress, on_done, outcomes, breaks) -> None:
        pool, futures, stopped = None, {}, False
        try:
            # a Ctrl-C waits until the workers have started: a worker started but not yet known to the
            # pool could be neither stopped nor waited for, and would outlive this process
            with interrupts.deferred():
                pool = ProcessPoolExecutor(min(workers, len(todo)), ctx, _init_worker, (progress_queue,))
                futures = {pool.submit(_run_in_worker, fn, jobs[k]): k for k in todo}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                _drain(progress_queue, progress)
                for f in done:
                    k = futures[f]
                    try:
                        outcomes[k] = f.result()
                    except BrokenProcessPool:
                        if len(todo) > 1:  # a shared pool broke: which job killed it is unknown; each runs again alone
                            continue
                        breaks[k] += 1
                        if breaks[k] < 2:
                            continue  # it died alone: one more try
                        outcomes[k] = Failed("a worker process died while running it (killed, or out of memory)")
                    if on_done is not None:
                        on_done(k, outcomes[k])
        except BaseException:
            stopped = True
            for f in futures:
                f.cancel()
            for process in list((getattr(pool, "_processes", None) or {}).values()):  # running cells: stop them
                if process.is_alive():
                    os.kill(process.pid, signal.SIGTERM)
            raise
        finally:
            if pool is not None:  # waits for every worker to end: none outlives this process
                _shut_down(pool, progress_queue, None if stopped else progress, STOP_GRACE_SECONDS)


def _nothing() -> None:
    """The first process forked by the forkserver: it returns once the server has preloaded."""


#: the exit code of a worker process that found itself re-running the caller's script (:func:`check_launcher`)
MAIN_RERAN = 86
#: what a worker that re-ran the caller's script means, and the fix (after "jobs=N: ")
RERUN_ADVICE = (
    "each worker process re-runs the script {script} (Python's multiprocessing imports it), and the script "
    'starts an experiment again; put the calls under if __name__ == "__main__": (README, "From a notebook")'
)


def _bootstrapping() -> bool:
    """Whether this process is a worker still importing its parent's main script (multiprocessing's
    spawn and forkserver start methods; ``multiprocessing.spawn._main`` sets ``_inheriting``)."""
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _main_script() -> str | None:
    """The file a worker process re-runs as its parent's ``__main__`` (as
    ``multiprocessing.spawn.get_preparation_data`` finds it): None for ``python -m``, ``-c``, a
    notebook or a console."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main.__spec__, "name", None) is not None:
        return None
    path = getattr(main, "__file__", None)
    return None if path is None else os.path.abspath(path)


def _lnbench_root() -> str:
    """The folder that holds the ``lnbench`` package this process runs (its import path entry)."""
    import lnbench

    return os.path.dirname(os.path.dirname(os.path.abspath(lnbench.__file__)))


def start_workers(jobs: int, launcher: str = "local") -> None:
    """Start the local worker processes' server and one worker (:class:`PoolExecutor`), before an
    experiment writes anything: a program whose workers cannot start stops here, with nothing
    written. Nothing to do for ``jobs`` = 1 or another launcher.

    Raises:
        ValueError: the workers cannot start (one line): the caller's script is not a file a worker
            can import (a script read from stdin), or it starts an experiment again when a worker
            imports it (no ``if __name__ == "__main__":``).
    """
    if launcher != "local" or jobs < 2:
        return
    script = _main_script()
    if script is not None and not os.path.isfile(script):
        raise ValueError(
            f"jobs={jobs}: the worker processes import this program's main script, and {script} is not a file "
            '(a script read from stdin?); save it as a .py file with its calls under if __name__ == "__main__":, '
            "or run with jobs=1"
        )
    code = _start_forkserver(_context())
    if code == MAIN_RERAN:
        raise ValueError(f"jobs={jobs}: {RERUN_ADVICE.format(script=script)}")
    if code:
        raise ValueError(f"jobs={jobs}: the worker processes could not start (a worker exited with code {code})")


def _context():
    """multiprocessing's ``forkserver`` context, else ``spawn``'s where it does not exist."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _start_forkserver(ctx) -> int | None:
    """Start the forkserver (``lnbench.experiments`` and ``torch._dynamo`` preloaded: Adam
    imports _dynamo, 1 s) with SIGINT blocked, so that a Ctrl-C sent to the whole process group
    never reaches it or the workers it forks (the parent decides what a Ctrl-C does); then wait,
    interruptibly, until it has preloaded, so that starting the workers (no Ctrl-C meanwhile) is
    quick. The server imports the lnbench this process runs: Python starts it with ``-c``, which
    puts the current directory first on its path (its ``sys_path`` argument is not applied), so
    another checkout there would be imported instead; ``PYTHONSAFEPATH`` leaves it out and
    ``PYTHONPATH`` puts this lnbench's folder first (:mod:`lnbench.launchers._forkserver_quiet`
    restores both in the server). Returns the exit code of the first worker (0: it started;
    :data:`MAIN_RERAN`: it re-ran the caller's script), None under ``spawn``."""
    if ctx.get_start_method() != "forkserver":
        return None
    from multiprocessing import forkserver, resource_tracker

    # _forkserver_quiet first: the server also ignores SIGINT where it cannot be blocked
    ctx.set_forkserver_preload(["lnbench.launchers._forkserver_quiet", "lnbench.experiments", "torch._dynamo"])
    resource_tracker.ensure_running()  # first: starting it unblocks SIGINT in this thread
    saved = {name: os.environ.get(name) for name in ("PYTHONSAFEPATH", "PYTHONPATH")}
    paths = [_lnbench_root(), *([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else [])]
    server_env = {"PYTHONSAFEPATH": "1", "PYTHONPATH": os.pathsep.join(paths), "LNBENCH_SERVER_ENV": json.dumps(saved)}
    try:
        os.environ.update(server_env)
        with interrupts.sigint_blocked():
            forkserver.ensure_running()
    finally:
        for name in server_env:
            os.environ.pop(name, None)
        os.environ.update({name: value for name, value in saved.items() if value is not None})
    ready = ctx.Process(target=_nothing, daemon=True)
    ready.start()
    ready.join()
    return ready.exitcode


#: how long the workers of a stopped pool have to record "interrupted" and end before they are killed
STOP_GRACE_SECONDS = 60.0


def _shut_down(pool, progress_queue, progress: Progress | None, grace: float) -> None:
    """End a pool and wait for its workers, reading the progress queue meanwhile: a worker's exit
    waits until every report it put has gone through the queue's pipe, so a full pipe that nobody
    reads would hold the worker, and this process waiting for it, for ever (multiprocessing's
    "joining processes that use queues"). A worker still alive after ``grace`` seconds is killed."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace
    for process in processes:
        while process.is_alive() and time.monotonic() < deadline:
            _drain(progress_queue, progress)
            process.join(0.05)
        if process.is_alive():
            process.kill()
            process.join()
    _drain(progress_queue, progress)
    pool.shutdown(wait=True)


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


class SubmititExecutor:
    """Each job as a Slurm job through submitit (``submitit.AutoExecutor``; ``cluster="local"``
    runs them as local processes with the same code path, for tests and laptops).

    The jobs are submitted as one job array into ``folder`` (on the shared filesystem: the
    children write their run folders next to it, where the parent reads them). The parent polls
    until every job ends, calling ``on_done`` as each does; a job that raises or dies is a
    :class:`Failed` whose message ends with the tail of its Slurm stderr log. Progress comes per
    finished job, not per epoch (``live_progress`` is False).

    Args:
        folder: where submitit keeps its pickles and logs (``<run folder>/submitit``).
        cluster: ``slurm`` or ``local``.
        params: ``submitit`` parameters (``timeout_min``, ``cpus_per_task``, ``mem_gb``,
            ``slurm_partition``, ``slurm_array_parallelism``, ``slurm_additional_parameters``).
        poll_seconds: how often the parent checks the jobs.
    """

    live_progress = False

    def __init__(self, folder, cluster: str = "slurm", params: dict | None = None, poll_seconds: float = 1.0) -> None:
        self.folder, self.cluster, self.params, self.poll = folder, cluster, dict(params or {}), poll_seconds

    def run(self, fn, jobs, progress=None, on_done=None):
        import time

        import submitit

        executor = submitit.AutoExecutor(folder=self.folder, cluster=self.cluster)
        executor.update_parameters(**self.params)
        with executor.batch():
            submitted = [executor.submit(_outcome, fn, job, None) for job in jobs]
        outcomes: list = [None] * len(jobs)
        pending = set(range(len(jobs)))
        try:
            while pending:
                for k in sorted(pending):
                    if submitted[k].done():
                        pending.discard(k)
                        outcomes[k] = _job_outcome(submitted[k])
                        if on_done is not None:
                            on_done(k, outcomes[k])
                if pending:
                    time.sleep(self.poll)
        except BaseException:
            for k in pending:  # Ctrl-C: cancel what is still queued or running
                submitted[k].cancel(check=False)
            raise
        return outcomes


def _job_outcome(job):
    try:
        return job.result()
    except Exception as exc:  # noqa: BLE001  a job that raised, or died: say why, with its log
        try:
            log = (job.stderr() or "").strip().splitlines()[-3:]
        except Exception:  # noqa: BLE001
            log = []
        first = str(exc).strip().splitlines()
        detail = first[-1] if first else type(exc).__name__
        return Failed(f"{detail} (job {job.job_id}; log: {' | '.join(log) if log else job.paths.stderr})")


LAUNCHERS = ("local", "submitit")


def check_launcher(jobs: int, launcher: str = "local", cluster: str = "local") -> None:
    """The one check of ``--jobs`` and ``--launcher``, before anything runs. In a worker process
    that is importing its parent's script (one without ``if __name__ == "__main__":``, which starts
    an experiment again) it ends the worker at once, exit code :data:`MAIN_RERAN`, before anything
    is written; the parent says why (:func:`start_workers`).

    Raises:
        ValueError: ``jobs < 1``, an unknown launcher, submitit not installed, or Slurm asked for
            (``launcher.cluster: slurm``) where its ``sbatch`` is not on PATH (one line each).
    """
    if _bootstrapping():  # a worker re-running an unguarded script: leave quietly; the parent says why
        os._exit(MAIN_RERAN)
    if jobs < 1:
        raise ValueError(f"--jobs: must be >= 1, got {jobs}")
    if launcher not in LAUNCHERS:
        raise ValueError(f"--launcher: unknown {launcher!r}; allowed: {', '.join(LAUNCHERS)}")
    if launcher == "submitit":
        import importlib.util

        if importlib.util.find_spec("submitit") is None:
            raise ValueError(
                "--launcher submitit: submitit is not installed; pip install 'lnbench[slurm]' (or pip install submitit)"
            )
        import shutil

        if cluster == "slurm" and shutil.which("sbatch") is None:
            raise ValueError(
                "--launcher submitit: launcher.cluster is slurm, but Slurm's sbatch is not on PATH here; run it on a "
                "Slurm login node, or try the same path with local processes: --set launcher.cluster=local"
            )


def make_launcher(jobs: int, launcher: str = "local", folder=None, launcher_cfg=None) -> Executor:
    """The executor of ``--launcher``: ``local`` (:func:`make_executor` with ``jobs``) or
    ``submitit`` (:class:`SubmititExecutor` configured by a :class:`lnbench.config.LauncherConfig`).

    Raises:
        ValueError: an unknown launcher, or submitit not installed (one line saying how to install it).
    """
    if launcher == "local":
        return make_executor(jobs)
    if launcher != "submitit":
        raise ValueError(f"--launcher: unknown {launcher!r}; allowed: {', '.join(LAUNCHERS)}")
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise ValueError(
            "--launcher submitit: submitit is not installed; pip install 'lnbench[slurm]' (or pip install submitit)"
        ) from None
    c = launcher_cfg
    params = {"timeout_min": c.timeout_min, "cpus_per_task": c.cpus_per_task, "mem_gb": c.mem_gb, "name": "lnbench"}
    if c.cluster == "slurm":
        params.update(
            slurm_array_parallelism=c.array_parallelism, slurm_additional_parameters=dict(c.slurm_additional_parameters)
        )
        if c.partition:
            params["slurm_partition"] = c.partition
    return SubmititExecutor(folder, c.cluster, params)
