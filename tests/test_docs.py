"""The documentation: generated pages match the code, README stays short, links resolve, and the
tests read as a specification (no issue numbers of this project in tests/).

The reference pages that restate the code (docs/config-reference.md, docs/schema-reference.md,
the generated blocks of docs/figures.md and docs/claims.md) are written by docs/generate.py
(`make docs`). A page that differs from what the generator gives now fails here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, runner

DOCS = REPO / "docs"
README = REPO / "README.md"
MAX_README_LINES = 250


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generate():
    return _generator()


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_generated_pages_match_the_code(generate):
    expected = generate.pages()
    assert {_rel(p) for p in expected} >= {
        "docs/config-reference.md",
        "docs/schema-reference.md",
        "docs/figures.md",
        "docs/claims.md",
    }
    stale = [_rel(p) for p, text in expected.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    assert not stale, f"{', '.join(stale)} out of date with the code: run make docs"


def test_the_generator_notices_a_changed_description(generate, monkeypatch):
    """A drift in the code (here: a config description, a caption) makes its page stale."""
    from lnbench.config import DataConfig
    from lnbench.report import figures

    assert generate.stale() == []
    monkeypatch.setattr(DataConfig.model_fields["n_train"], "description", "Training sequences (changed).")
    monkeypatch.setitem(figures.CAPTIONS, "claims.png", "A changed caption.")
    assert sorted(_rel(p) for p in generate.stale()) == ["docs/config-reference.md", "docs/figures.md"]
    assert "| `data.n_train` | int, >= 1 | `1000` | Training sequences (changed). |" in generate.config_reference()


def test_every_documented_field_has_its_text(generate):
    """Every config key has a description; every metrics.json / summary-row field and run status its line."""
    from dataclasses import fields

    from pydantic import BaseModel

    from lnbench.config import RunConfig
    from lnbench.records import schema
    from lnbench.records.runs import STATUSES

    missing = []
    for name, info in RunConfig.model_fields.items():
        missing += [] if info.description else [name]
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            missing += [f"{name}.{key}" for key, sub in info.annotation.model_fields.items() if not sub.description]
    assert not missing, f"config keys without description=: {missing}"
    assert set(schema.METRICS_DOCS) == {f.name for f in fields(schema.Metrics)}
    assert set(schema.SUMMARY_ROW_DOCS) == {f.name for f in fields(schema.SummaryRow)}
    assert tuple(generate.STATUS_DOCS) == STATUSES


def test_the_generator_is_deterministic():
    """Another process, another hash seed: the same pages (``--check`` passes)."""
    env = {**os.environ, "PYTHONHASHSEED": "12345", "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, str(DOCS / "generate.py"), "--check"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; keep it <= {MAX_README_LINES} and move the rest to docs/"


def test_readme_lists_every_command():
    """The README's command table names exactly the commands the CLI has."""
    import typer

    from lnbench.cli.app import app

    commands = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    listed = set(re.findall(r"^\| `lnbench ([a-z-]+)", README.read_text(encoding="utf-8"), re.MULTILINE))
    assert listed == commands


_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _links(page: Path) -> list[str]:
    text = _CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return _LINK.findall(text)


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: _rel(p))
def test_relative_links_resolve(page):
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no heading #{anchor} in {_rel(resolved)})")
    assert not broken, f"{_rel(page)}: broken links: {broken}"


def test_the_error_example_of_cli_md_is_what_the_command_prints(tmp_path):
    """docs/cli.md's example of a bad config ("Errors and exit codes"): the command it shows prints
    exactly its lines (the oracle: the command run now), exit code 2."""
    from lnbench.cli.app import app

    text = (DOCS / "cli.md").read_text()
    block = text[text.index("## Errors and exit codes") :].split("```")[1].strip().splitlines()
    assert block[0].startswith("$ lnbench ")
    args = block[0].removeprefix("$ lnbench ").split()
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and result.output.strip().splitlines() == block[1:]


# ---------------------------------------------------------------- the tests read as a specification

#: "issue", "Issue" or "issues", then a number ("#" allowed): a reference to an issue of a tracker
ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? ?#?[0-9]+")
#: ``owner/repo`` (and a space, comma or colon) right before the issue: a public upstream's
#: tracker, named (``pytorch/pytorch issue 12345``; ``pytorch/pytorch#12345`` has no "issue")
UPSTREAM = re.compile(r"[\w.-]+/[\w.-]+[ ,:]*$")


def issue_numbers(root: Path) -> list[str]:
    """``path:line: text`` of every issue number in the ``.py`` files under ``root`` that does not
    name its public repository: a test's docstring or comment says what it checks and against which
    oracle; where a case came from is the history's (git log), not the test's."""
    hits = []
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(not UPSTREAM.search(line[: m.start()]) for m in ISSUE_NUMBER.finditer(line)):
                hits.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return hits


def test_no_test_cites_an_issue_number_of_its_own():
    hits = issue_numbers(REPO / "tests")
    assert hits == [], "issue numbers in tests/ (say the behaviour and its oracle instead):\n" + "\n".join(hits)


def test_the_issue_check_finds_a_planted_number_and_lets_a_named_upstream_pass(tmp_path):
    issue = "Iss" + "ue"  # split: this file itself passes the check
    (tmp_path / "test_planted.py").write_text(
        f'"""{issue} 31 (C): the sweep refuses a key."""\n'
        "# as torch does (pytorch/pytorch issue 12345; pytorch/pytorch#678; github.com/a/b/issues/9)\n"
        f"x = 1  # see {issue.lower()}s #4\n"
    )
    assert issue_numbers(tmp_path) == [
        f'test_planted.py:1: """{issue} 31 (C): the sweep refuses a key."""',
        f"test_planted.py:3: x = 1  # see {issue.lower()}s #4",
    ]
