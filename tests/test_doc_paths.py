"""Every repository path the project names exists: in README.md and docs/*.md, in the comments of
configs/, in lnbench's strings, captions and comments (the C++ kernels' too), in pyproject.toml and
benchmarks/. A module that moved (lnbench/invariance.py is lnbench/nn/invariance.py) leaves no
stale caption behind."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

#: ``lnbench/nn/rnn.py``, ``configs/claims/default.yaml``, ``docs/cli.md``, ...: a path from the
#: repository root (not a URL's tail, a relative ``../x`` or a pattern such as ``configs/<name>.yaml``)
PATH = re.compile(
    r"(?<![\w/.<>*{}-])(?:lnbench|configs|docs|benchmarks|tests|examples)/[\w/.-]*\.(?:py|yaml|md|cpp|j2|toml)(?![\w*])"
)


def _comments(yaml_text: str) -> str:
    return "\n".join(line.split("#", 1)[1] for line in yaml_text.splitlines() if "#" in line)


def named_texts(root: Path) -> Iterator[tuple[Path, str]]:
    """The files that name paths, each with the text that may name them (a config: its comments)."""
    for path in [root / "README.md", root / "pyproject.toml", *sorted((root / "docs").glob("*.md"))]:
        yield path, path.read_text(encoding="utf-8")
    for path in sorted((root / "configs").rglob("*.yaml")):
        yield path, _comments(path.read_text(encoding="utf-8"))
    for pattern in ("lnbench/**/*.py", "lnbench/nn/csrc/*.cpp", "lnbench/report/templates/*", "benchmarks/*.py"):
        for path in sorted(root.glob(pattern)):
            yield path, path.read_text(encoding="utf-8")


def missing_paths(root: Path) -> list[str]:
    """``"<file>: <path>"`` for every path named in :func:`named_texts` that does not exist under ``root``."""
    return [
        f"{where.relative_to(root)}: {named}"
        for where, text in named_texts(root)
        for named in sorted(set(PATH.findall(text)))
        if not (root / named).exists()
    ]


def test_every_named_path_exists():
    assert missing_paths(REPO) == []


def test_the_pattern_finds_paths_and_leaves_patterns_and_urls_alone():
    text = (
        "see lnbench/nn/rnn.py, `configs/claims/default.yaml` and (docs/cli.md); not "
        "configs/claims/<regime>.yaml, lnbench/nn/*.py, https://github.com/x/y/docs/a.md, ../docs/b.md, "
        "f'configs/{name}.yaml', runs/x/config.yaml"
    )
    assert PATH.findall(text) == ["lnbench/nn/rnn.py", "configs/claims/default.yaml", "docs/cli.md"]


def test_a_planted_wrong_path_is_found(tmp_path):
    for name in ("docs", "configs", "lnbench/nn/csrc", "lnbench/report/templates", "benchmarks"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "README.md").write_text("Table 1: `lnbench/invariance.py`; the kernel: lnbench/nn/csrc/kernel.cpp\n")
    (tmp_path / "pyproject.toml").write_text("# [tool.x] reads docs/cli.md\n")
    (tmp_path / "configs" / "a.yaml").write_text("# like configs/b.yaml\nname: docs/not-a-comment.md\n")
    (tmp_path / "lnbench" / "caption.py").write_text('CAPTION = "derived in lnbench/invariance.py"\n')
    (tmp_path / "lnbench" / "nn" / "csrc" / "kernel.cpp").write_text("// the reference: lnbench/nn/rnn.py\n")
    (tmp_path / "docs" / "cli.md").write_text("configs/a.yaml\n")
    assert missing_paths(tmp_path) == [
        "README.md: lnbench/invariance.py",
        "configs/a.yaml: configs/b.yaml",
        "lnbench/caption.py: lnbench/invariance.py",
        "lnbench/nn/csrc/kernel.cpp: lnbench/nn/rnn.py",
    ]
