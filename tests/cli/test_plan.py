"""What an experiment says before its first run: the plan line, at once (not after minutes of
training), and a --jobs beyond the cells or the CPU cores reduced in one line. Nothing here trains:
the driver's execute is replaced by one that records its jobs and stops."""

from __future__ import annotations

import pytest
import typer
from conftest import runner

from lnbench.cli.app import app
from lnbench.experiments import driver
from lnbench.launchers import executors
from lnbench.launchers.executors import worker_count

ONE_FAMILY = ["--set", "compare.families=[rnn]", "--set", "compare.placements=null"]  # 3 cells x 5 seeds


@pytest.fixture
def started(monkeypatch):
    """The jobs each experiment was started with (``driver.execute`` stops it there), on 2 cores."""
    calls: list[int] = []

    def execute(exp, spec, cells, plan, runs_dir, on_epoch, jobs, resume, launcher):
        calls.append(jobs)
        raise typer.Exit(0)

    monkeypatch.setattr(driver, "execute", execute)
    monkeypatch.setattr(executors, "usable_cores", lambda: 2)
    return calls


@pytest.mark.parametrize(
    "jobs,cells,cores,expected", [(1000, 12, 2, 2), (1000, 3, 8, 3), (3, 12, 8, 3), (4, 0, 2, 1), (1, 12, 2, 1)]
)
def test_workers_are_no_more_than_the_cells_and_the_cores(monkeypatch, jobs, cells, cores, expected):
    monkeypatch.setattr(executors, "usable_cores", lambda: cores)
    assert worker_count(jobs, cells) == expected


def test_the_plan_line_comes_first(tmp_path, started):
    result = runner.invoke(app, ["compare", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "compare: 55 runs in 23 cells (550 epochs) and 5 copies of identical runs, seeds 0-4, on 2 worker processes"
    ]
    assert started == [2]


def test_a_jobs_beyond_the_cores_is_reduced_in_one_line(tmp_path, started):
    result = runner.invoke(app, ["compare", "--jobs", "1000", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "--jobs 1000: 2 worker processes (23 cells to run, 2 usable CPU cores)",
        "compare: 55 runs in 23 cells (550 epochs) and 5 copies of identical runs, seeds 0-4, on 2 worker processes",
    ]
    assert started == [2]


def test_a_jobs_beyond_the_cells_is_reduced_too(tmp_path, started, monkeypatch):
    monkeypatch.setattr(executors, "usable_cores", lambda: 8)
    result = runner.invoke(
        app, ["compare", "--jobs", "6", *ONE_FAMILY, "--set", "seeds=[3]", "--runs-dir", str(tmp_path)]
    )
    assert result.output.splitlines() == [
        "--jobs 6: 3 worker processes (3 cells to run, 8 usable CPU cores)",
        "compare: 3 runs in 3 cells (30 epochs), seed 3, on 3 worker processes",
    ]
    assert started == [3]


def test_a_jobs_within_both_says_nothing_more(tmp_path, started):
    result = runner.invoke(app, ["compare", "--jobs", "1", *ONE_FAMILY, "--runs-dir", str(tmp_path)])
    assert result.output.splitlines() == ["compare: 15 runs in 3 cells (150 epochs), seeds 0-4, on 1 process"]
    assert started == [1]


def test_a_dry_run_says_the_reduction_too(tmp_path, started):
    result = runner.invoke(app, ["compare", "--jobs", "1000", "--dry-run", *ONE_FAMILY, "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0 and started == []
    assert result.output.splitlines()[0] == "--jobs 1000: 2 worker processes (3 cells to run, 2 usable CPU cores)"


@pytest.mark.e2e  # trains a tiny compare, then stops its resume before it trains
def test_a_resume_counts_its_cells_as_the_plan_line_does(tmp_path, monkeypatch):
    """A compare of NoNorm and LayerNorm in both placements (NoNorm's separate cell copies its joint
    one), 2 seeds, three runs lost: by hand, the joint NoNorm cell and the joint LayerNorm cell are
    trained (2 cells, 4 runs), the separate NoNorm cell is copied (2 runs), the separate LayerNorm
    cell kept. The resume line's cells to run are the plan line's cells."""
    import shutil

    from conftest import tiny_args

    sets = tiny_args("seeds=[0,1]", "train.epochs=1", "compare.families=[rnn]", "compare.norms=[none,layer]")
    made = runner.invoke(app, ["compare", *sets, "--set", "compare.placements=[joint,separate]", "--runs-dir", str(tmp_path)])  # fmt: skip
    assert made.exit_code == 0, made.output
    (run,) = list(tmp_path.iterdir())
    for lost in ("rnn-joint_none_seed1", "rnn-separate_none_seed0", "rnn-joint_layer_seed0"):
        shutil.rmtree(run / lost)
    monkeypatch.setattr(driver, "execute", lambda *a, **k: (_ for _ in ()).throw(typer.Exit(0)))
    result = runner.invoke(app, ["compare", "--resume", str(run), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[:2] == [
        f"Resuming {run}: 1 cell kept, 2 to run, 1 copied from an identical cell",
        "compare: 4 runs in 2 cells (4 epochs) and 2 copies of identical runs, seeds 0,1, on 1 process",
    ]
