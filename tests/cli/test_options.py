"""The experiment commands are built from the kinds' entries (lnbench.names.EXPERIMENT_KINDS)
and the shared options, each declared once (lnbench.cli.options.ExperimentArgs): a command has
exactly the shared options its entry names, with the declaration's help (or the entry's own), and
a kind registered at runtime gets its command, with its default config."""

from __future__ import annotations

import inspect
from dataclasses import fields
from typing import Any, get_args, get_type_hints

import pytest
import typer
from conftest import runner

from lnbench.cli.app import app, experiment_command
from lnbench.cli.options import ExperimentArgs, config_help, flag_of
from lnbench.experiments.compare import Compare
from lnbench.experiments.registry import EXPERIMENTS
from lnbench.names import EXPERIMENT_KINDS, EXPERIMENT_OPTIONS, KindInfo, register_kind

DECLARED = {  # flag -> its help, as ExperimentArgs declares it
    flag_of(f.name): get_args(get_type_hints(ExperimentArgs, include_extras=True)[f.name])[1].help
    for f in fields(ExperimentArgs)[1:]
}


def _command(group: typer.Typer, kind: str) -> Any:
    return typer.main.get_command(group).commands[kind]  # type: ignore[attr-defined]


def _shared(command: Any) -> dict[str, str | None]:
    """The shared options of a command: flag -> help, in --help's order."""
    return {p.opts[0]: p.help for p in command.params if p.param_type_name == "option" and p.opts[0] in DECLARED}


def test_the_shared_options_are_the_declared_ones():
    assert list(DECLARED) == list(EXPERIMENT_OPTIONS)


@pytest.mark.parametrize("kind", list(EXPERIMENT_KINDS))
def test_a_command_has_exactly_the_shared_options_its_entry_names(kind):
    info, command = EXPERIMENT_KINDS[kind], _command(app, kind)
    shared = _shared(command)
    assert list(shared) == list(info.options)
    assert shared == {flag: info.option_help.get(flag, DECLARED[flag]) for flag in info.options}
    assert command.help == inspect.cleandoc(info.help)
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    if info.config is None:
        assert arguments == []
    else:
        assert [(a.name, a.help) for a in arguments] == [("config", config_help(kind))]  # type: ignore[attr-defined]


def test_the_commands_options_as_before():
    """What each built command takes (a hand-written list: train runs in process, claims has no CONFIG)."""
    everything = ["--set", "--runs-dir", "--seed", "--jobs", "--print-config", "--dry-run", "--resume", "--launcher"]
    everything += ["--tensorboard", "--no-check", "--verbose"]
    expected = {
        "train": [o for o in everything if o not in ("--jobs", "--launcher")],
        "compare": [*everything[:-1], "--confirm", "--max-seeds", "--verbose"],
        "batchsize-sweep": everything,
        "sweep": [*everything[:-1], "--grid", "--verbose"],
        "claims": ["--presets", "--only", "--all", "--list", "--task", "--tasks", *everything],  # no user's norm
    }
    expected["claims"].remove("--no-check")
    expected["claims"].insert(expected["claims"].index("--seed") + 1, "--num-seeds")
    expected["claims"][-1:-1] = ["--confirm", "--max-seeds"]  # its own, before --verbose
    for kind, flags in expected.items():
        assert [p.opts[0] for p in _command(app, kind).params if p.param_type_name == "option"] == flags
    assert "seed of the one model" in _shared(_command(app, "train"))["--seed"]


class CompareAgain(Compare):
    kind = "compare-again"


@pytest.fixture
def again(monkeypatch, tmp_path):
    """A kind registered at runtime: compare's experiment under another name, its own default
    config, and four of the shared options; its command on an app of its own."""
    config = tmp_path / "again.yaml"
    config.write_text(
        "name: again\nseeds: [0, 1]\ncompare:\n  families: [rnn]\n  placements: null\n  norms: [none, layer]\ntrain:\n  epochs: 10\n"
    )
    info = KindInfo("Compare, again.", config=str(config), options=("--set", "--seed", "--print-config", "--dry-run"))
    register_kind("compare-again", info)
    monkeypatch.setitem(EXPERIMENTS, "compare-again", CompareAgain())
    group = typer.Typer()
    group.callback()(lambda: None)  # a group, not the one command
    experiment_command("compare-again", into=group)
    yield group, config
    del EXPERIMENT_KINDS["compare-again"]


def test_a_kind_registered_at_runtime_gets_a_command_with_its_options(again):
    group, config = again
    command = _command(group, "compare-again")
    assert _shared(command) == {o: DECLARED[o] for o in ("--set", "--seed", "--print-config", "--dry-run")}
    assert command.help == "Compare, again."
    help_text = runner.invoke(group, ["compare-again", "--help"], env={"COLUMNS": "200"}).output
    assert f"default: {config}" in help_text
    done = runner.invoke(group, ["compare-again", "--jobs", "2"])
    assert done.exit_code == 2 and "No such option: --jobs" in done.output


def test_a_kind_registered_at_runtime_reads_its_default_config(again):
    group, _ = again
    done = runner.invoke(group, ["compare-again", "--print-config", "--seed", "7", "--set", "train.epochs=3"])
    assert done.exit_code == 0, done.output
    assert "name: again\nseed: 7\nseeds:\n- 7\n- 8\n" in done.output  # --seed: the first of its 2 seeds
    assert "  epochs: 3\n" in done.output
    done = runner.invoke(group, ["compare-again", "--dry-run"])
    assert done.exit_code == 0, done.output
    assert "4 runs, 40 epochs in all" in done.output  # RNN x (none, layer) x 2 seeds, 10 epochs each


def test_an_entry_naming_an_option_that_is_not_shared_is_refused(monkeypatch):
    monkeypatch.setitem(EXPERIMENT_KINDS, "odd", KindInfo("Odd.", options=("--set", "--epochs")))
    with pytest.raises(ValueError, match="odd: unknown shared option --epochs; allowed: --set, --runs-dir"):
        experiment_command("odd", into=typer.Typer())


def test_a_command_without_its_experiment_or_disagreeing_on_seeds_is_refused():
    from lnbench.experiments.registry import check_commands

    check_commands(EXPERIMENTS, EXPERIMENT_KINDS)
    with pytest.raises(RuntimeError, match="^compare-again: a command .* but no experiment in EXPERIMENTS$"):
        check_commands(EXPERIMENTS, {"compare-again": KindInfo("Compare, again.")})
    with pytest.raises(RuntimeError, match="^compare: seeded is True in its Experiment, False in its entry$"):
        check_commands(EXPERIMENTS, {"compare": KindInfo("Compare.", seeded=False)})


@pytest.mark.parametrize("command", ["", *sorted(typer.main.get_command(app).commands)])  # type: ignore[attr-defined]
def test_help_shows_flags_without_a_type_and_arguments_by_their_metavar(command):
    """Every command's --help (and lnbench --help), at 160 columns: a flag takes no value, so no
    ``<bool>`` beside it; an argument shows its metavar, not its Python type (``<list[Path]>``,
    ``<path>``); report and export name several folders ``RUN_DIR...`` once, in the usage line too
    (the oracle: the metavars written in lnbench.cli's modules)."""
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "<list" not in result.output and "<path>" not in result.output
    assert "--help  " in result.output
    if command in ("report", "export"):
        usage = next(line.strip() for line in result.output.splitlines() if "Usage:" in line)
        assert usage == f"Usage: lnbench {command} [OPTIONS] {{RUN_DIR}}..."
        assert "RUN_DIR...  " in result.output and "RUN_DIR......" not in result.output
