"""The pool's retry rules, on a stand-in for ProcessPoolExecutor that breaks as a real
one does: a job that kills its worker breaks the whole pool, and every job of the pool that had
not finished gets BrokenProcessPool. The rules (lnbench.launchers.executors.PoolExecutor):

- a shared pool that breaks counts against no job (which one killed it is unknown): each job
  that had not finished runs again, alone;
- a job that dies alone gets exactly one more try, then is Failed.
"""

from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

import pytest

from lnbench.launchers import executors
from lnbench.launchers.executors import Failed, PoolExecutor


class Died(BaseException):
    """Raised by a job to kill its worker (not an Exception: a job's exception is a Failed outcome)."""


class BreakingPool:
    """Runs each job on submit, in order; a job raising Died breaks the pool for itself and every
    job after it, as the death of a worker process breaks a ProcessPoolExecutor."""

    pools: list[list] = []  # each pool's jobs, in the order they were created

    def __init__(self, workers, ctx, initializer, initargs):
        self.workers, self.broken, self.jobs = workers, False, []
        self._processes = {}
        BreakingPool.pools.append(self.jobs)

    def submit(self, fn, job_fn, job):
        self.jobs.append(job)
        future = Future()
        if not self.broken:
            try:
                future.set_result(fn(job_fn, job))
                return future
            except Died:
                self.broken = True
        future.set_exception(BrokenProcessPool("a process in the process pool was terminated abruptly"))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


@pytest.fixture
def pool(monkeypatch):
    BreakingPool.pools = []
    monkeypatch.setattr(executors, "ProcessPoolExecutor", BreakingPool)
    monkeypatch.setattr(executors, "_start_forkserver", lambda ctx: None)  # no worker process is started
    return BreakingPool


ATTEMPTS: dict[str, int] = {}


def dies_first(job, progress):
    """Job (name, n): its worker dies on the first n attempts, then it returns its name."""
    name, n = job
    ATTEMPTS[name] = ATTEMPTS.get(name, 0) + 1
    if ATTEMPTS[name] <= n:
        raise Died
    return name


def run(jobs, workers=3):
    ATTEMPTS.clear()
    done = []
    outcomes = PoolExecutor(workers).run(dies_first, jobs, None, lambda k, o: done.append((k, o)))
    return outcomes, dict(ATTEMPTS), done


def test_a_broken_shared_pool_counts_against_no_job(pool):
    # "b" kills the shared pool; "c" had not run. Each then runs alone: "b" dies once more (its one
    # more try), then succeeds. Had the shared break counted against it, that was its last try.
    outcomes, attempts, done = run([("a", 0), ("b", 2), ("c", 0)])
    assert outcomes == ["a", "b", "c"] and attempts == {"a": 1, "b": 3, "c": 1}
    assert pool.pools == [[("a", 0), ("b", 2), ("c", 0)], [("b", 2)], [("b", 2)], [("c", 0)]]
    assert sorted(done) == [(0, "a"), (1, "b"), (2, "c")]  # each reported once, when it ended


def test_a_job_that_dies_alone_gets_exactly_one_more_try(pool):
    outcomes, attempts, done = run([("a", 0), ("b", 9), ("c", 0)])
    assert outcomes[0] == "a" and outcomes[2] == "c"
    assert outcomes[1] == Failed("a worker process died while running it (killed, or out of memory)")
    assert attempts["b"] == 3  # once in the shared pool, then alone twice
    assert [len(p) for p in pool.pools] == [3, 1, 1, 1] and sorted(k for k, _ in done) == [0, 1, 2]


def test_one_job_alone_from_the_start_dies_twice_at_most(pool):
    outcomes, attempts, _ = run([("x", 1)], workers=4)
    assert outcomes == ["x"] and attempts == {"x": 2}  # alone from the start: one more try, and it works
    outcomes, attempts, _ = run([("x", 2)], workers=4)
    assert isinstance(outcomes[0], Failed) and attempts == {"x": 2}


def test_jobs_finished_before_the_break_are_not_run_again(pool):
    outcomes, attempts, _ = run([("a", 0), ("b", 0), ("c", 1), ("d", 0)], workers=2)
    assert outcomes == ["a", "b", "c", "d"] and attempts == {"a": 1, "b": 1, "c": 2, "d": 1}
    assert pool.pools[0] == [("a", 0), ("b", 0), ("c", 1), ("d", 0)] and pool.pools[1:] == [[("c", 1)], [("d", 0)]]


def test_no_jobs_no_pool(pool):
    assert PoolExecutor(2).run(dies_first, []) == [] and pool.pools == []
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        PoolExecutor(0)
