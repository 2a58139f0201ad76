"""Config mistakes refused by the command line before anything runs: one line each, exit code 2,
no run folder (issue 20 (6) and (12)). Nothing here trains."""

import pytest
from typer.testing import CliRunner

from lnbench.cli.app import app

runner = CliRunner()


def _refused(tmp_path, args):
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "runs").exists()
    lines = result.output.strip().splitlines()
    assert lines and all(line.startswith("lnbench: error: ") for line in lines), result.output
    return result.output


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--set", "sweep.grid={model.num_layers: [1, 2]}"],
            "sweep.grid: model.num_layers: applies to the transformer only, and this sweep trains rnn",
        ),
        (
            ["--set", "model.num_layers=2"],
            "model.num_layers: applies to the transformer only, and this run trains rnn; remove it",
        ),
        (
            ["--set", "sweep.grid={model.pos_emb: [sinusoidal, learned], model.norm: [none, layer]}"],
            "sweep.grid: model.pos_emb: applies to the transformer only, and this sweep trains rnn",
        ),
        (
            ["--set", "model.family=transformer", "--set", "sweep.grid={model.norm_placement: [joint, separate]}"],
            "sweep.grid: model.norm_placement: applies to the rnn only, and this sweep trains transformer",
        ),
        (
            ["--set", "sweep.grid={model.family: [rnn, transformer], model.num_layers: [1, 2]}"],
            "sweep.grid: model.num_layers: applies to the transformer only, and the grid's model.family also trains rnn",
        ),
    ],
)
def test_a_sweep_over_keys_that_apply_to_no_trained_family_is_refused(tmp_path, args, message):
    """Issue 20 (6): such a sweep trained identical cells and ranked them (--dry-run: the same checks)."""
    assert message in _refused(tmp_path, ["sweep", *args, "--dry-run"])


@pytest.mark.parametrize(
    "args",
    [
        ["--set", "sweep.grid={model.family: [transformer], model.num_layers: [1, 2]}"],
        [
            "--set",
            "sweep.grid={model.family: [rnn, transformer], model.norm: [none, layer]}",
            "--set",
            "model.num_layers=2",
        ],
        ["--set", "sweep.grid={model.norm_placement: [joint, separate]}"],
    ],
)
def test_a_sweep_over_keys_of_a_trained_family_is_accepted(tmp_path, args):
    result = runner.invoke(app, ["sweep", *args, "--dry-run", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
