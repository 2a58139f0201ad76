"""Executors: the pool gives the serial results, survives a failing cell, and stops on SIGTERM."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TINY_OVERRIDES, runner

from lnbench import experiments
from lnbench.config import load_config
from lnbench.launchers.executors import Failed, PoolExecutor, SerialExecutor

pytestmark = pytest.mark.e2e  # trains models and writes run folders


def _square_or_fail(job, progress):
    if job == 3:
        raise ValueError("three is not allowed")
    progress(f"job{job}", 1, 1)
    return job * job


def test_pool_and_serial_give_the_same_outcomes_and_a_failure_does_not_stop_the_others():
    seen = []
    pool = PoolExecutor(2).run(_square_or_fail, [1, 2, 3, 4], lambda *a: seen.append(a))
    serial = SerialExecutor().run(_square_or_fail, [1, 2, 3, 4], lambda *a: None)
    assert pool[:2] == serial[:2] == [1, 4] and pool[3] == serial[3] == 16
    assert pool[2] == serial[2] == Failed("ValueError: three is not allowed")
    assert sorted(seen) == [("job1", 1, 1), ("job2", 1, 1), ("job4", 1, 1)]  # progress crossed processes


def test_compare_on_two_workers_equals_one(tmp_path):
    cfg = load_config(None, [*TINY_OVERRIDES, "compare.norms=[none,batch]", "seeds=[0,1]"])
    one = experiments.compare(cfg, runs_dir=tmp_path / "one", jobs=1)
    two = experiments.compare(cfg, runs_dir=tmp_path / "two", jobs=2)
    strip = lambda rows: [{k: v for k, v in r.to_dict().items() if k != "wall_seconds"} for r in rows]  # noqa: E731
    assert strip(one.rows) == strip(two.rows) and one.verdicts == two.verdicts


def test_on_two_workers_the_baselines_are_fitted_while_the_cells_train(tmp_path, monkeypatch):
    """With worker processes, the baselines' fit does not hold back the first cell: a fit that
    returns only once a cell has written its metrics.json still ends, and the final summary has
    its baselines (fitted first, as with one worker, it would wait for that file in vain)."""
    from lnbench.experiments.compare import Compare

    fit = Compare.baselines

    def fit_after_a_cell(self, spec):
        deadline = time.time() + 120
        while not list(tmp_path.glob("*/*/metrics.json")):
            assert time.time() < deadline, "no cell trained while the baselines were being fitted"
            time.sleep(0.05)
        return fit(self, spec)

    monkeypatch.setattr(Compare, "baselines", fit_after_a_cell)
    cfg = load_config(None, [*TINY_OVERRIDES, "compare.norms=[none]", "seeds=[0,1]"])
    result = experiments.compare(cfg, runs_dir=tmp_path, jobs=2)
    body = json.loads((result.path / "summary.json").read_text())
    assert result.status == "completed" and body["baselines"] == result.baselines
    assert [b["name"] for b in body["baselines"]] == ["chance", "last_timestep", "whole_sequence"]


def test_sigterm_stops_the_workers_and_marks_unfinished_runs_interrupted(tmp_path):
    args = [
        sys.executable,
        "-m",
        "lnbench",
        "compare",
        "--jobs",
        "2",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "train.epochs=400",
        "--set",
        "seeds=[0,1]",
    ]
    args += [f"--set={kv}" for kv in TINY_OVERRIDES if not kv.startswith("train.epochs")]  # its own 400 epochs
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # a hang is shown: SIGABRT prints every thread's stack
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env
    )
    try:
        deadline = time.time() + 600
        while time.time() < deadline and len(list(Path(tmp_path).glob("*/*/metrics.json"))) < 2:  # two cells training
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGABRT)  # every process of the command prints where it waits
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"compare did not end within 180 s of SIGTERM; its stacks:\n{err}")
    finally:
        if proc.poll() is None:  # hung: leave no process behind
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(
        "lnbench: interrupted: stopped by SIGTERM"
    )
    (run,) = list(Path(tmp_path).iterdir())
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"
    children = [json.loads(p.read_text()) for p in run.glob("*/run.json")]
    assert children and {c["status"] for c in children} <= {"interrupted", "completed"}
    assert any(c["status"] == "interrupted" for c in children)


def _flood(reports, progress):
    for k in range(reports):
        progress("x" * 1000, k, reports)  # 1 kB each: 2000 of them are far more than a pipe holds
    return "ok"


def _hung(signum, frame):
    raise TimeoutError("PoolExecutor.run did not return: a worker did not end")


def test_a_stop_while_the_workers_flood_the_progress_queue_ends_every_worker_within_seconds():
    """The caller stops (its progress callback raises KeyboardInterrupt) while two workers have put
    about 2 MB of progress reports: run raises that KeyboardInterrupt and returns, every worker
    ended (oracle: a worker's exit waits until its reports have gone through the queue's pipe, so
    a caller that stops reading the queue while it waits for the workers waits for ever)."""

    def stop(*report):
        raise KeyboardInterrupt("Ctrl-C")

    before = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(60)
    try:
        with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
            PoolExecutor(2).run(_flood, [2000, 2000], stop)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def _die_once_or_always(job, progress):
    kind, marker = job
    if kind == "always" or (kind == "once" and not Path(marker).exists()):
        Path(marker).touch()
        os._exit(1)  # the worker process dies, as if killed or out of memory
    return "ok"


def test_a_dead_worker_is_retried_alone_and_then_failed(tmp_path):
    jobs = [("once", str(tmp_path / "a")), ("always", str(tmp_path / "b")), ("never", str(tmp_path / "c"))]
    done = []
    outcomes = PoolExecutor(2).run(_die_once_or_always, jobs, None, lambda k, o: done.append(k))
    assert outcomes[0] == outcomes[2] == "ok" and isinstance(outcomes[1], Failed) and "died" in outcomes[1].error
    assert sorted(done) == [0, 1, 2]


def test_the_submitit_launcher_gives_the_results_of_a_local_run(tmp_path):
    """The real submitit code path, with its local executor (no cluster): the same rows (norm,
    seed, status, accuracies, losses) as the same compare run in this process, and a progress call
    for each run folder."""
    pytest.importorskip("submitit")
    from lnbench import experiments
    from lnbench.config import load_config

    cfg = load_config(
        None,
        [
            *TINY_OVERRIDES,
            "data.seq_len=4",  # the tiny config on 4 timesteps
            "seeds=[0,1]",
            "compare.norms=[none,layer]",
            "compare.families=[rnn]",
            "launcher.cluster=local",
        ],
    )
    local = experiments.compare(cfg, runs_dir=tmp_path / "local", jobs=1)
    seen = []
    remote = experiments.compare(
        cfg, runs_dir=tmp_path / "submitit", on_epoch=lambda *a: seen.append(a), launcher="submitit"
    )
    keys = ("norm", "seed", "status", "final_test_acc", "final_train_loss", "mean_train_loss")
    assert [[getattr(r, k) for k in keys] for r in remote.rows] == [[getattr(r, k) for k in keys] for r in local.rows]
    assert remote.status == "completed" and sorted(a[0] for a in seen) == sorted(r.run_dir for r in remote.rows)
    assert list((remote.path / "submitit").glob("*_log.out"))  # submitit's own logs, next to the runs


def test_a_failing_submitit_job_is_a_failed_outcome_and_the_others_go_on(tmp_path):
    pytest.importorskip("submitit")
    from lnbench.launchers.executors import Failed, SubmititExecutor

    ex = SubmititExecutor(tmp_path / "s", "local", {"timeout_min": 5}, poll_seconds=0.2)
    done = []
    # dict.get(job, None): fine for a dict, a TypeError for an int (a function the job process can import)
    out = ex.run(dict.get, [{"a": 1}, 3], None, lambda k, o: done.append(k))
    assert out[0] is None and isinstance(out[1], Failed) and "descriptor 'get'" in out[1].error
    assert sorted(done) == [0, 1]


def test_slurm_without_sbatch_is_refused_before_anything_runs(tmp_path, monkeypatch):
    """check_launcher refuses the submitit launcher on cluster slurm when sbatch is not on PATH
    (a ValueError saying so, before any folder or job); the local cluster needs no Slurm, and an
    sbatch on PATH is enough."""
    from lnbench.launchers.executors import check_launcher

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ValueError, match="launcher.cluster is slurm, but Slurm's sbatch is not on PATH"):
        check_launcher(1, "submitit", "slurm")
    check_launcher(1, "submitit", "local")  # the local cluster needs no Slurm
    sbatch = tmp_path / "sbatch"
    sbatch.write_text("#!/bin/sh\n")
    sbatch.chmod(0o755)
    check_launcher(1, "submitit", "slurm")  # found on PATH


def test_compare_with_slurm_off_a_slurm_node_is_one_line_and_no_folder(tmp_path, monkeypatch):

    from lnbench.cli.app import app

    monkeypatch.setenv("PATH", str(tmp_path))
    result = runner.invoke(app, ["compare", "--launcher", "submitit", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "--set launcher.cluster=local" in result.output and not (tmp_path / "runs").exists()
