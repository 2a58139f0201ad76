"""``lnbench --help`` and ``--version`` answer at once: they import neither torch nor the config
schema (pydantic), and lnbench itself imports neither pydantic nor rich's Markdown (benchmarks/bench_startup.py
times them; this test reads the import graph, not a clock)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

HEAVY = ("torch", "numpy", "pydantic", "lnbench.config.schema", "rich.markdown")
_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \| (?P<indent> *)(?P<module>\S+)$")


def import_tree(args: list[str]) -> dict[str, str]:
    """Each module ``python -X importtime -m lnbench ARGS`` imported -> the top-level import it
    came in by (``-X importtime`` prints a module after the ones it imported, two spaces deeper)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "lnbench", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    top: dict[str, str] = {}
    pending: list[str] = []
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        pending.append(match["module"])
        if not match["indent"]:
            top.update(dict.fromkeys(pending, match["module"]))
            pending = []
    return top


def heavy(top: dict[str, str]) -> dict[str, str]:
    return {m: by for m, by in top.items() if m.split(".")[0] in HEAVY or m in HEAVY}


def test_the_tree_names_what_brought_a_module_in():
    top = import_tree(["--version"])
    assert top["lnbench.cli.app"] == "lnbench.cli.app"
    assert top["typer"] == "lnbench.cli.app"  # imported by the app, under it
    assert top["lnbench.launchers.interrupts"] == "lnbench._entry"


def test_version_imports_nothing_heavy():
    assert heavy(import_tree(["--version"])) == {}


def test_help_imports_neither_torch_nor_pydantic():
    """rich.markdown comes in with typer's own help formatter (typer.rich_utils imports it at its
    top, whatever the markup mode): only from there, never from lnbench."""
    found = heavy(import_tree(["--help"]))
    assert found == {m: "typer.rich_utils" for m in found if m.startswith("rich.markdown")}


@pytest.mark.parametrize("command", ["compare", "claims", "invariance"])
def test_a_command_help_imports_nothing_heavy_of_its_own(command):
    """A command's --help: typer itself reads the options through pydantic (typer._adapters), but
    neither torch nor numpy nor lnbench's config schema is imported."""
    found = heavy(import_tree([command, "--help"]))
    assert not [m for m in found if m.split(".")[0] in ("torch", "numpy") or m == "lnbench.config.schema"]
    assert "pydantic" in found and not [by for by in found.values() if by.startswith("lnbench")]
