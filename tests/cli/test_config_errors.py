"""Config mistakes refused by the command line before anything runs: one line each, exit code 2,
no run folder. Nothing here trains."""

import re

import pytest
from conftest import runner

from lnbench.cli.app import app


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
            ["--set", "sweep.grid={model.d_ff: [8, 16]}"],
            "sweep.grid: model.d_ff: applies to the transformer only, and this sweep trains rnn",
        ),
        (
            ["--set", "model.d_ff=8"],
            "model.d_ff: applies to the transformer only, and this run trains rnn; remove it",
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
            ["--set", "sweep.grid={model.family: [rnn, transformer], model.d_ff: [8, 16]}"],
            "sweep.grid: model.d_ff: applies to the transformer only, and the grid's model.family also trains rnn",
        ),
    ],
)
def test_a_sweep_over_keys_that_apply_to_no_trained_family_is_refused(tmp_path, args, message):
    """A grid key of a family the sweep does not train would train identical cells: refused, naming
    the key, its family and the trained one (--dry-run runs the same checks)."""
    assert message in _refused(tmp_path, ["sweep", *args, "--dry-run"])


@pytest.mark.parametrize(
    "args",
    [
        ["--set", "sweep.grid={model.family: [transformer], model.d_ff: [8, 16]}"],
        [
            "--set",
            "sweep.grid={model.family: [rnn, transformer], model.norm: [none, layer]}",
            "--set",
            "model.d_ff=8",
        ],
        ["--set", "sweep.grid={model.num_layers: [1, 2]}"],  # stacked RNN layers
        ["--set", "sweep.grid={model.family: [rnn, lstm, transformer], model.num_layers: [1, 2]}"],
        ["--set", "sweep.grid={model.norm_placement: [joint, separate]}"],
    ],
)
def test_a_sweep_over_keys_of_a_trained_family_is_accepted(tmp_path, args):
    result = runner.invoke(app, ["sweep", *args, "--dry-run", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output


def test_train_refuses_seeds_it_would_not_use(tmp_path):
    """train trains one model, so a ``seeds`` list is refused (one line naming it and seed); --seed N
    with a seeds list trains the one model of seed N."""
    out = _refused(tmp_path, ["train", "configs/train.yaml", "--set", "seeds=[0, 1, 2]", "--dry-run"])
    assert "seeds: [0, 1, 2]: train trains one model, with seed (0); remove seeds" in out
    result = runner.invoke(app, ["train", "configs/train.yaml", "--set", "seeds=[0,1]", "--seed", "3", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "1 run, " in result.output and "│    3 │" in result.output  # the one model, of seed 3


def test_seed_is_the_first_of_as_many_seeds_as_the_list_has():
    """--seed N with a seeds list of k seeds: N .. N + k - 1 (as --num-seeds and seeds unset do), so
    a claims dry run with seeds [0, 1, 2] and --seed 10 plans seeds 10, 11 and 12."""
    from lnbench.config import load_config

    assert load_config(None, ["seeds=[0, 1, 2]"], seed=10).seeds == [10, 11, 12]
    assert load_config(None, ["seeds=[3, 7]"], seed=0).seed_list == [0, 1]
    assert load_config(None, [], seed=10).seed_list == [10, 11, 12, 13, 14]
    result = runner.invoke(
        app, ["claims", "--only", "rnn_faster_default", "--set", "seeds=[0,1,2]", "--seed", "10", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    seeds = {int(name.rpartition("_seed")[2]) for name in re.findall(r"\S+_seed\d+", result.output)}
    assert seeds == {10, 11, 12}
    assert "with seeds unset" not in result.output


def test_a_seed_whose_list_passes_the_largest_seed_is_refused(tmp_path):
    out = _refused(tmp_path, ["compare", "--set", "seeds=[0,1,2]", "--seed", "4294967294", "--dry-run"])
    assert out.strip() == (
        "lnbench: error: --seed 4294967294: with the 3 seeds of seeds, the last one, 4294967296, exceeds 4294967295"
    )


def test_a_train_folder_is_named_after_the_model_it_trains(tmp_path):
    """A train folder is named after the family and norm it trains (``train_transformer_layer``);
    a compare child's config.yaml re-run keeps its own name."""
    from lnbench.experiments.train import TRAIN, named

    result = runner.invoke(app, ["train", "configs/train.yaml", "--set", "model.family=transformer", "--dry-run"])
    assert result.exit_code == 0 and "train_transformer_layer" in result.output and "rnn" not in result.output
    from lnbench.config import RunConfig

    assert TRAIN.name(RunConfig().with_changes(name="train", model__norm="batch")) == "train_rnn_batch"
    child = RunConfig().with_changes(name="rnn_layer_seed0")  # a compare child's config.yaml, re-run
    assert named(child) is child


@pytest.mark.parametrize(
    "args,message",
    [
        (["--set", "model.hiden_size=32"], "model.hiden_size: unknown key (did you mean hidden_size?); allowed: "),
        (["--set", "trian.epochs=3"], "trian: unknown key (did you mean train?); allowed: "),
        (["--set", "train.epochs=null"], "train.epochs: Input should be a valid integer (got null)"),
        (
            ["--set", "sweep.grid={model.norm: [none, layer]"],
            "--set sweep.grid: invalid YAML in the value at column 27: expected ',' or '}', but got '<stream end>'",
        ),
        (["--set", "sweep.grid={train.lr: [0.1], train.lr: [0.2]}"], "--set sweep.grid: duplicate key 'train.lr'"),
        (["--set", "data.n_train=100000000000", "--set", "seeds=[0]"], "1 seed at once"),
    ],
)
def test_config_messages_say_what_a_new_user_needs(tmp_path, args, message):
    """Each message says what to fix: "did you mean" for a misspelt key, the column and what YAML
    expected for a brace left open, YAML's null (not Python's None), the duplicate key of a grid,
    and "1 seed" (not "1 seed(s)")."""
    assert message in _refused(tmp_path, ["sweep", *args, "--dry-run"])


def test_a_changed_config_on_resume_is_named_in_yaml_terms(tmp_path):
    import json

    from lnbench.config import ConfigError, RunConfig
    from lnbench.config.checks import check_resume

    (tmp_path / "run.json").write_text(json.dumps({"kind": "compare"}))
    (tmp_path / "config.yaml").write_text(RunConfig().to_yaml())
    with pytest.raises(ConfigError) as exc:
        check_resume(tmp_path, RunConfig().with_changes(train__grad_clip=0.5).to_yaml(), "compare")
    assert "train.grad_clip: null in the folder, 0.5 now" in str(exc.value)


def test_the_sweep_table_title_counts_in_words(tmp_path):
    from lnbench.experiments.sweep import SWEEP

    cell = {"values": {"model.norm": "layer"}, "n_seeds": 1, "n_diverged": 0, "mean_final_test_acc": 0.5}
    cell |= {"std_final_test_acc": None, "ci95_final_test_acc": None, "mean_mean_train_loss": 0.7}
    (table,) = SWEEP.tables(tmp_path, {"cells": [cell], "seeds": [0]})
    assert str(table.title).endswith(", 1 cell x 1 seed")


def test_the_shipped_configs_say_how_yaml_1_2_reads_them():
    """lnbench reads YAML 1.2, where 1e-3 is a float: every shipped config's ``lr: 1e-3`` loads as
    1e-3, and no config's comment says it is read as a string."""
    from pathlib import Path

    from lnbench.config import load_config

    for path in sorted(Path("configs").rglob("*.yaml")):
        text = path.read_text()
        assert "reads this as a string" not in text, path
        if "lr: 1e-3" in text:
            assert load_config(path).train.lr == 1e-3


@pytest.mark.parametrize("command", [["train", "configs/train.yaml"], ["compare"], ["sweep"]])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_fewer_than_one_layer_is_refused_in_one_line(tmp_path, command, value):
    """model.num_layers (every family's): at least one layer, said in one line."""
    output = _refused(tmp_path, [*command, "--set", f"model.num_layers={value}", "--dry-run"])
    assert (
        len(output.strip().splitlines()) == 1
        and "model.num_layers: Input should be greater than or equal to 1" in output
    ), output


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["invariance", "--draws", "0"],
            "lnbench: error: Invalid value for '--draws': Input should be greater than or equal to 1; "
            "see 'lnbench invariance --help'",
        ),
        (
            ["compare", "--bogus"],
            "lnbench: error: No such option: --bogus (Possible options: --jobs, --verbose); see 'lnbench compare --help'",
        ),
        (["nosuch"], "lnbench: error: No such command 'nosuch'; see 'lnbench --help'"),
        (
            ["compare", "--jobs", "x"],
            "lnbench: error: Invalid value for '--jobs' / '-j': Input should be a valid integer, unable to parse string "
            "as an integer; see 'lnbench compare --help'",
        ),
        (["compare", "--seed"], "lnbench: error: Option '--seed' requires an argument"),
    ],
)
def test_a_mistake_typer_catches_is_one_line_as_lnbenchs_own(tmp_path, args, line):
    """A usage error Typer catches (Typer's own form: a usage line, a hint and a boxed message) is
    one line like every other error of lnbench, exit code 2, nothing written."""
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 2 and result.output.strip().splitlines() == [line], result.output
    assert not (tmp_path / "runs").exists()


def test_lnbench_alone_still_prints_its_help():
    result = runner.invoke(app, [])
    assert result.exit_code == 2 and "Usage: lnbench [OPTIONS] COMMAND" in result.output
    assert "compare" in result.output and "lnbench: error" not in result.output
