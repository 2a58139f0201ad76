"""Every fact about a model family, a task, a norm kind or an experiment kind lives
in its registry entry (lnbench.names.FAMILY_REGISTRY, TASKS, NORM_REGISTRY;
lnbench.experiments.registry.EXPERIMENTS), and everything else asks the entry. Read from the
source (``ast``): no comparison with a family's, a task's, a norm kind's or an experiment kind's
name outside the registries and the claims catalogue (which names each claim's family and norms);
the norm ``"none"``, the baseline, is allowed."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

from lnbench.names import FAMILY_REGISTRY, NORM_REGISTRY, TASKS

PACKAGE = REPO / "lnbench"
#: the registries (the modules of lnbench/names/), and the claims catalogue
ALLOWED = {*(f"names/{p.name}" for p in (PACKAGE / "names").glob("*.py")), "analysis/claim_catalogue.py"}
NORM_NAMES = set(NORM_REGISTRY) - {"none"}  # batch, layer, rms, weight, group: "none" is the baseline


def name_comparisons(names: set[str], package: Path = PACKAGE) -> list[str]:
    """``path:line: [names]`` of every ``==``, ``!=``, ``in``, ``not in`` with one of ``names`` as a
    constant (alone or in a tuple, list or set), and every ``startswith`` of them."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            operands = []
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "startswith":
                operands = list(node.args)
            consts = [
                c
                for o in operands
                for c in ([o] if isinstance(o, ast.Constant) else o.elts if isinstance(o, (ast.Tuple, ast.List, ast.Set)) else [])
            ]  # fmt: skip
            hits = sorted({c.value for c in consts if isinstance(c, ast.Constant) and c.value in names})
            if hits:
                out.append(f"{rel}:{node.lineno}: {hits}")
    return out


def test_no_family_or_task_name_is_compared_outside_the_registries():
    assert name_comparisons(set(FAMILY_REGISTRY) | set(TASKS)) == []


def test_the_check_sees_a_planted_comparison(tmp_path):
    (tmp_path / "planted.py").write_text(
        'def f(cfg):\n    return cfg.model.family == "lstm" or cfg.data.task in ("adding",)\n'
    )
    assert name_comparisons({"lstm", "adding"}, tmp_path) == ["planted.py:2: ['lstm']", "planted.py:2: ['adding']"]


def test_no_norm_kind_is_compared_outside_the_registries():
    assert NORM_NAMES >= {"batch", "layer", "rms", "weight", "group"}
    assert name_comparisons(NORM_NAMES) == []


def test_the_check_sees_a_planted_norm_comparison(tmp_path):
    (tmp_path / "planted.py").write_text(
        'def f(cfg, mode):\n    if cfg.model.norm == "none":\n        return 0\n'
        '    return mode == "batch" or cfg.model.norm in ("group", "layer")\n'
    )
    assert name_comparisons(NORM_NAMES, tmp_path) == ["planted.py:4: ['batch']", "planted.py:4: ['group', 'layer']"]


def test_no_experiment_kind_name_is_compared_outside_the_registries():
    """Experiment kinds: no module compares with an experiment kind's name (``kind == "train"``);
    each kind answers for itself (lnbench.experiments.registry.EXPERIMENTS: its headline, the files
    it holds, whether its folder is its own run, its figures' captions)."""
    from lnbench.experiments.registry import EXPERIMENTS

    assert name_comparisons(set(EXPERIMENTS)) == []


def test_the_check_sees_a_planted_kind_comparison(tmp_path):
    (tmp_path / "planted.py").write_text(
        'def f(manifest):\n    return manifest.get("kind") == "train" or manifest["kind"] in ("invariance", "gradcheck")\n'
    )
    assert name_comparisons({"train", "invariance", "gradcheck"}, tmp_path) == [
        "planted.py:2: ['train']",
        "planted.py:2: ['gradcheck', 'invariance']",
    ]
