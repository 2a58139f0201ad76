"""Options that are one or the other (lnbench.cli.console.ALTERNATIVES: docs/cli.md's usage lines
write them ``[A | B]``) given together are refused before the command runs: one line naming both,
exit code 2, nothing written; neither is ignored, and the two are never merged."""

import re
from pathlib import Path

import pytest
import typer
from conftest import runner

from lnbench.cli.app import app
from lnbench.cli.console import ALTERNATIVES

VALUES = {  # a value each option takes, one that is right on its own
    "--runs-dir": ["{tmp}/runs"],
    "--json": ["{tmp}/report.json"],
    "--task": ["adding"],
    "--tasks": ["trend,digits"],
    "--all": [],
    "--only": ["lstm_faster"],
    "--print-config": [],
    "--dry-run": [],
}
NEEDS = {"train": ["configs/train.yaml"], "card": ["layer"]}  # a command's arguments


def _cases() -> list[tuple[str, str, str]]:
    """(command, first, second): every command with both options of a pair."""
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    cases = []
    for name, command in commands.items():
        flags = {flag for p in command.params for flag in getattr(p, "opts", ())}
        cases += [(name, first, second) for first, second, _ in ALTERNATIVES if {first, second} <= flags]
    return cases


def test_every_alternative_of_the_usage_lines_is_declared():
    """The pairs docs/cli.md's usage lines write ``[--a ... | --b ...]`` are the declared ones."""
    usage = (Path(__file__).parents[2] / "docs" / "cli.md").read_text().split("```")[1]
    written = {
        tuple(sorted(re.findall(r"--[\w-]+", group))) for group in re.findall(r"\[(--[^\[\]]*\|\s*--[^\[\]]*)\]", usage)
    }
    assert written == {tuple(sorted((first, second))) for first, second, _ in ALTERNATIVES}


def test_the_pairs_are_where_the_usage_lines_say():
    assert sorted(_cases()) == sorted(
        [
            ("invariance", "--runs-dir", "--json"),
            ("gradcheck", "--runs-dir", "--json"),
            ("claims", "--task", "--tasks"),
            ("claims", "--all", "--only"),
            *[(kind, "--print-config", "--dry-run") for kind in ("train", "compare", "batchsize-sweep", "sweep")],
            ("claims", "--print-config", "--dry-run"),
        ]
    )


@pytest.mark.parametrize("order", ["as declared", "reversed"])
@pytest.mark.parametrize(("command", "first", "second"), _cases(), ids=lambda v: v)
def test_two_alternatives_together_are_one_line_and_exit_2(tmp_path, monkeypatch, command, first, second, order):
    """``gradcheck --json F --runs-dir D`` would write F and ignore D; ``claims --task adding --tasks
    trend,digits`` would run all three: each such pair, in either order, is one line naming both
    flags, exit code 2, and nothing is written (the current folder stays empty)."""
    monkeypatch.chdir(tmp_path)
    for target in ("configs", "docs"):
        (tmp_path / target).symlink_to(Path(__file__).parents[2] / target)
    flags = [first, second] if order == "as declared" else [second, first]
    args = [command, *NEEDS.get(command, [])]
    for flag in flags:
        args += [flag, *(v.format(tmp=tmp_path) for v in VALUES[flag])]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"lnbench: error: {first} and {second}: give one of them (")
    assert len(result.output.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "docs"]
