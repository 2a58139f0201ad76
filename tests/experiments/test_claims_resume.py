"""``lnbench claims --resume DIR`` goes on with the folder's own claims, tasks and regimes (its
config.yaml), whatever options made it (``--only``, ``--set``); an option given again is accepted
when it agrees with the folder and refused, in one line naming it, when it contradicts it."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import runner, tiny_args

from lnbench.cli.app import app

pytestmark = pytest.mark.e2e  # trains models and writes run folders

#: a claims run of one claim, made with --only and --set (2 seeds of the tiny config, 1 epoch)
ONLY = ["--only", "rnn_faster_default"]
SETS = tiny_args("train.batch_size=64", "data.n_train=64", "data.n_test=32", "data.seq_len=4", "seeds=[0,1]", "train.epochs=1")  # fmt: skip


@pytest.fixture(scope="module")
def claims_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    result = runner.invoke(app, ["claims", *ONLY, *SETS, "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    (run,) = list(runs.iterdir())
    return run


def _resume(run, *extra):
    return runner.invoke(app, ["claims", "--resume", str(run), "--jobs", "1", *extra])


def test_an_interrupted_run_of_only_and_set_resumes_with_no_option_given(claims_run):
    """config.yaml records the claims and tasks first (YAML comments); a run that lost a child resumes
    from them alone, trains the lost run again and keeps the other cell, with --confirm too."""
    assert claims_run.joinpath("config.yaml").read_text().startswith("# claims: rnn_faster_default\n# tasks: trend\n")
    summary = json.loads((claims_run / "summary.json").read_text())
    lost = claims_run / summary["rows"][-1]["run_dir"]
    shutil.rmtree(lost)
    (claims_run / "summary.json").write_text(json.dumps({**summary, "claims": [], "complete": False}))
    resumed = _resume(claims_run)
    assert resumed.exit_code == 0, resumed.output
    assert f"Resuming {claims_run}: 1 cell kept, 1 to run" in " ".join(resumed.output.split())
    assert (lost / "metrics.json").is_file()
    again = json.loads((claims_run / "summary.json").read_text())
    assert [c["id"] for c in again["claims"]] == ["rnn_faster_default"] and again["complete"] is True
    planned = _resume(claims_run, "--confirm", "--dry-run")
    assert planned.exit_code == 0 and "confirm stage: the plan from the pilot" in planned.output, planned.output


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            ["--set", "train.epochs=3"],
            "--set train.epochs=3: contradicts {cfg} (regime default: train.epochs: 1 in the folder, 3 given); a resumed folder keeps its own config: resume without --set train.epochs=3",
        ),  # noqa: E501
        (
            ["--seed", "5"],
            "--seed 5: contradicts {cfg} (regime default: seed: 0 in the folder, 5 given); a resumed folder keeps its own config: resume without --seed 5",
        ),  # noqa: E501
        (
            ["--num-seeds", "3"],
            "--num-seeds 3: contradicts {cfg} (regime default: seeds: [0, 1] in the folder, [0, 1, 2] given); a resumed folder keeps its own config: resume without --num-seeds 3",
        ),  # noqa: E501
        (
            ["--only", "figure6"],
            "--only figure6: {run} tests the claims rnn_faster_default ({cfg}); resume it without --only",
        ),  # noqa: E501
        (["--all"], "--all: {run} tests the claims rnn_faster_default ({cfg}); resume it without --all"),
        (["--task", "adding"], "--task adding: {run} runs on trend ({cfg}); resume without --task"),
    ],
)
def test_an_option_that_contradicts_the_folder_is_refused_in_one_line(claims_run, given, message):
    before = (claims_run / "summary.json").read_bytes()
    result = _resume(claims_run, *given)
    assert result.exit_code == 2
    expected = "lnbench: error: " + message.format(run=claims_run, cfg=claims_run / "config.yaml")
    assert " ".join(result.output.split()) == expected
    assert (claims_run / "summary.json").read_bytes() == before


def test_options_that_agree_with_the_folder_and_an_older_folder_resume(claims_run):
    """The folder's own values given again change nothing (nothing to do); a folder written before
    config.yaml recorded its claims resumes from its summary.json's claims."""
    agreeing = [*ONLY, "--set", "train.epochs=1", "--set", "seeds=[0,1]", "--seed", "0", "--task", "trend"]
    assert "Nothing to do" in _resume(claims_run, *agreeing).output
    config = claims_run / "config.yaml"
    config.write_text("".join(config.read_text().splitlines(keepends=True)[2:]))
    older = _resume(claims_run)
    assert older.exit_code == 0 and "Nothing to do" in older.output, older.output
