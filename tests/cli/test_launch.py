"""What every experiment command does before it trains (lnbench.cli.launch): --print-config and
--dry-run print the config and the plan, and write nothing."""

import re
from pathlib import Path

import pytest
import yaml
from conftest import runner

from lnbench.cli.app import app
from lnbench.config import RunConfig

pytestmark = pytest.mark.e2e  # runs the command line


def test_print_config_and_dry_run_write_nothing(tmp_path):
    runs = tmp_path / "runs"
    result = runner.invoke(
        app, ["compare", "--print-config", "--set", "train.epochs=3", "--seed", "7", "--runs-dir", str(runs)]
    )
    assert result.exit_code == 0
    cfg = RunConfig.model_validate(yaml.safe_load(result.output))
    assert cfg.train.epochs == 3 and cfg.seed == 7 and cfg.data.offset_std == 4.0
    result = runner.invoke(
        app,
        [
            "compare",
            "--dry-run",
            "--set",
            "seeds=[0,1]",
            "--set",
            "compare.norms=[none,layer]",
            "--runs-dir",
            str(runs),
        ],
    )
    # configs/compare.yaml: the RNN in both placements, the LSTM and the Transformer, 2 norms x 2 seeds, 10 epochs;
    # NoNorm is one network in both placements: its separate runs copy its joint ones
    assert (
        result.exit_code == 0
        and "would start 16 runs" in result.output
        and "14 runs trained (140 epochs) and 2 copies of identical runs" in result.output
    )
    assert "rnn-joint_layer_seed1" in result.output and "rnn-separate_none_seed0" in result.output
    names = re.findall(r"[\w-]+_seed\d+", result.output)  # the run names in order, at any terminal width
    after = names[names.index("rnn-separate_none_seed1") + 1]
    assert names.count("rnn-separate_none_seed1") == 1 and after == "rnn-joint_none_seed1"  # its "copy of"
    assert "transformer_none_seed0" in result.output
    assert "lstm_layer_seed1" in result.output
    result = runner.invoke(app, ["claims", "--dry-run", "--only", "rnn_bn_batch_size_1", "--runs-dir", str(runs)])
    assert (
        result.exit_code == 0
        and "would start 20 runs" in result.output
        and "small_batches_rnn_batch_bs1_seed4" in result.output
    )
    result = runner.invoke(app, ["train", "configs/train.yaml", "--print-config", "--runs-dir", str(runs)])
    assert result.exit_code == 0 and "pos_emb" not in result.output and "norm_placement" in result.output
    result = runner.invoke(app, ["compare", "--dry-run", "--set", "train.epochs=0", "--runs-dir", str(runs)])
    assert result.exit_code == 2  # a bad config is still an error
    assert not runs.exists()


def test_a_set_learning_rate_figure6_does_not_use_is_refused_before_anything_is_written(tmp_path):
    """Figure 6's regime gives batch sizes 4 and 128 their own rates: ``--set train.lr`` would train
    no run, so it is one line, exit code 2, and no folder."""
    args = ["claims", "--only", "figure6", "--set", "train.lr=0.02", "--runs-dir", str(tmp_path / "runs")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and result.output.startswith("lnbench: error: --set train.lr=0.02: no run of")
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


def _runs_dir_commands() -> dict[str, list[str]]:
    """Every command that takes --runs-dir, with the arguments it needs (train's CONFIG, card's NORM)."""
    import typer

    needs = {"train": ["configs/train.yaml"], "card": ["layer"]}
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    return {
        name: [name, *needs.get(name, [])]
        for name, command in commands.items()
        if any("--runs-dir" in getattr(p, "opts", ()) for p in command.params)
    }


def test_every_runs_dir_command_is_listed():
    assert sorted(_runs_dir_commands()) == sorted(
        ["train", "compare", "batchsize-sweep", "sweep", "claims", "invariance", "gradcheck", "card"]
    )


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("command", list(_runs_dir_commands().values()), ids=lambda c: c[0])
def test_a_runs_dir_where_no_folder_can_be_made_is_one_line_and_exit_2(command):
    """``--runs-dir /proc/x``: /proc passes ``os.access`` (for root too) but no folder can be made in
    it; every command that takes --runs-dir refuses it as docs/cli.md says of an unusable --runs-dir:
    one line naming it, exit code 2, before anything is written."""
    result = runner.invoke(app, [*command, "--runs-dir", "/proc/lnbench-no-such-runs"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("lnbench: error: --runs-dir /proc/lnbench-no-such-runs: /proc is not writable")
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
