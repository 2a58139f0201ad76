"""The command line's app (lnbench.cli.app): every command is listed, and every help text reaches the
screen whole."""

import re

import pytest
from conftest import runner

from lnbench.cli.app import app

pytestmark = pytest.mark.e2e  # runs every command's --help


def test_help_lists_every_command():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for cmd in ("train", "compare", "batchsize-sweep", "gradcheck"):
        assert cmd in result.output


def test_every_help_text_is_printed_whole():
    """Every command's and option's help reaches the screen character for character, brackets
    included (Rich would read "lnbench[tensorboard]" or "-g compare.norms=[...]" as markup)."""
    import typer.main

    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    assert len(commands) >= 11
    for name, command in commands.items():
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0
        shown = re.sub(r"[\s│╭╮╰╯─]+", "", result.output)
        texts = [command.help or ""] + [p.help for p in command.params if getattr(p, "help", None)]
        for text in texts:  # word by word: a wrapped table row interleaves an option's columns
            assert [w for w in text.split() if w not in shown] == [], (name, text)
    assert "lnbench[tensorboard]" in runner.invoke(app, ["train", "--help"]).output
