"""The layers of DESIGN.md hold: imports go down only, and no module imports itself back.

Read from the source (``ast``), every ``import`` counted, also those inside functions: a lazy
import is still a dependency. Layers, top to bottom (one tier may hold independent siblings):

    cli > experiments > report > analysis | training | testing > nn > config > records | launchers > names
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "lnbench"
TIERS = [
    {"cli"},
    {"experiments"},
    {"report"},
    {"analysis", "training", "testing"},
    {"nn"},
    {"config"},
    {"records", "launchers"},
    {"names"},
]
RANK = {layer: rank for rank, tier in enumerate(TIERS) for layer in tier}
ROOT_MODULES = {"__init__", "__main__", "_entry"}  # the package's entry points sit above every layer


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The lnbench modules ``path`` imports (``from lnbench.x import y`` counts lnbench.x.y when
    that is a module, else lnbench.x)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("lnbench")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lnbench"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in MODULES else node.module)
    return out


FILES = sorted(PACKAGE.rglob("*.py"))
MODULES = {module_name(p): p for p in FILES}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] not in ROOT_MODULES else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in graph.items():
        a = layer(src)
        for dst in targets:
            b = layer(dst)
            if a is None or b is None or a == b:
                continue
            if RANK[b] <= RANK[a]:  # same tier (siblings) or above
                bad.append(f"{src} imports {dst} ({a} may not import {b})")
    return sorted(bad)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_package_folder_is_a_known_layer():
    folders = {p.relative_to(PACKAGE).parts[0] for p in FILES if p.parent != PACKAGE}  # a layer's own subfolders too
    top = {p.stem for p in FILES if p.parent == PACKAGE} - ROOT_MODULES - {"_forkserver_quiet"}
    assert folders | top <= set(RANK), sorted((folders | top) - set(RANK))


def test_no_layer_imports_a_higher_or_sibling_layer():
    assert upward_imports(GRAPH) == []


def test_no_import_circles():
    assert cycles(GRAPH) == []


@pytest.mark.parametrize(
    "graph,expected",
    [
        ({"lnbench.nn.a": {"lnbench.experiments.b"}, "lnbench.experiments.b": set()}, 1),  # upward
        ({"lnbench.training.a": {"lnbench.analysis.b"}, "lnbench.analysis.b": set()}, 1),  # siblings
        ({"lnbench.cli.a": {"lnbench.names"}, "lnbench.names": set()}, 0),  # down
    ],
)
def test_the_layer_check_catches_a_planted_upward_import(graph, expected):
    assert len(upward_imports(graph)) == expected


def test_the_cycle_check_catches_a_planted_circle():
    graph = {"lnbench.a": {"lnbench.b"}, "lnbench.b": {"lnbench.c"}, "lnbench.c": {"lnbench.a"}, "lnbench.d": set()}
    assert cycles(graph) == [["lnbench.a", "lnbench.b", "lnbench.c"]]


#: what a pure-functions module must not touch: the config loaders and their checks, YAML, and files
IMPURE_IMPORTS = {
    "lnbench.config.load.load_config",
    "lnbench.config.load.apply_overrides",
    "lnbench.config.load_config",
    "lnbench.config.apply_overrides",
}
IMPURE_MODULES = {"lnbench.config.checks", "lnbench.config.yaml12", "pydantic", "yaml", "json", "pathlib"}
IMPURE_CALLS = {"open", "read_text", "read_bytes", "write_text", "is_file", "exists", "load_config", "apply_overrides"}


def impurities(source: str) -> list[str]:
    """What a module's source does that a pure analysis module must not: import a config loader,
    YAML, JSON or pathlib, or call a file or loader function (``open``, ``.read_text()``, ...)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names if a.name in IMPURE_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in IMPURE_MODULES:
                out.append(f"from {node.module} import ...")
            out += [
                f"imports {node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in IMPURE_IMPORTS
            ]
            out += [
                f"imports {node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in IMPURE_MODULES
            ]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in IMPURE_CALLS:
                out.append(f"calls {name}()")
    return out


def test_analysis_is_pure_functions_of_rows():
    """``lnbench/analysis`` computes from rows and configs it is given: it imports no config loader,
    YAML, JSON or pathlib, and opens no file (the experiments read presets and run folders)."""
    found = {
        name: bad
        for name, path in MODULES.items()
        if layer(name) == "analysis" and (bad := impurities(path.read_text()))
    }
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "from lnbench.config import load_config",
        "from lnbench.config.checks import check_seeds",
        "import json",
        "from pathlib import Path",
        "x = p.read_text()",
        "open('f')",
    ],
)
def test_the_purity_check_catches_a_planted_file_read(source):
    assert impurities(source) != []
