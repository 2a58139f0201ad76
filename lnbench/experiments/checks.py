"""The checking experiments: ``lnbench invariance`` (Ba et al.'s Table 1, measured) and
``lnbench gradcheck`` (the hand-written LayerNorm gradients against finite differences and
PyTorch). They train nothing: each writes one JSON report, into a run folder or a given file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.table import Table

from lnbench.experiments import driver
from lnbench.experiments.base import Experiment
from lnbench.records.folder import RunFolder
from lnbench.records.index import make_headline
from lnbench.records.runs import Run, write_json_atomic
from lnbench.report import tables


class Checking(Experiment):
    """A kind that trains nothing and writes one report, ``<kind>.json``: a list of ``items``
    (under the key ``items``), each good when its ``good`` key is true; its headline counts them."""

    seeded = False
    items: ClassVar[str]
    good: ClassVar[str]
    word: ClassVar[str]  # what a good item did: ``24/24 agree``

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        """The good items of its report, counted (``24/24 agree``, ``23/23 passed``); None without a report."""
        report = folder.json(f"{self.kind}.json")
        if report is None:
            return None
        items = report.get(self.items) or []
        return make_headline(f"{sum(bool(i.get(self.good)) for i in items)}/{len(items)} {self.word}")


class Invariance(Checking):
    kind = "invariance"
    holds = ("invariance.json",)
    items, good, word = "cells", "agrees", "agree"

    def tables(self, path: Path, summary: dict) -> list[Table]:
        report = RunFolder(path).json("invariance.json")
        return [tables.invariance_table(report["cells"], report.get("draws", 0))] if report else []


class Gradcheck(Checking):
    kind = "gradcheck"
    holds = ("gradcheck.json",)
    items, good, word = "checks", "passed", "passed"

    def tables(self, path: Path, summary: dict) -> list[Table]:
        report = RunFolder(path).json("gradcheck.json")
        return [tables.gradcheck_table(report)] if report else []


INVARIANCE = Invariance()
GRADCHECK = Gradcheck()


def _write_report(kind: str, report: dict, seed: int, runs_dir: Any, json_path: Any, failed: str | None) -> Path | None:
    """Write a checking command's report to ``json_path`` (its folder must exist: a typo should
    not create folders), or as ``<kind>.json`` in a new run folder under ``runs_dir`` whose status
    is ``failed`` with the message ``failed`` (if not None); nowhere when both are None."""
    if json_path is not None:
        write_json_atomic(Path(json_path), report)
        return Path(json_path)
    if runs_dir is None:
        return None
    with Run(runs_dir, kind, None, seed, kind) as run:
        path = run.write_json(f"{kind}.json", report)
        if failed is not None:
            run.set_status("failed", failed)
    return path


def gradcheck(
    dtype: str = "float64",
    shape: tuple[int, ...] = (4, 5, 8),
    seed: int = 0,
    runs_dir: str | Path | None = "runs",
    json_path: str | Path | None = None,
    extra: list | None = None,
) -> tuple[list, Path | None]:
    """``lnbench gradcheck``: run :func:`lnbench.nn.gradient_checks.run_checks` (and the ``extra``
    checks already run, e.g. a user's norm's, :func:`lnbench.testing.norm_checks`) and write the report.

    The report (``{"dtype", "shape", "seed", "passed", "checks": [...]}``) goes to
    ``json_path`` if given, otherwise to ``gradcheck.json`` (and ``report.html``) in a new run
    folder under ``runs_dir`` (none if ``runs_dir`` is None). The checks run before anything is
    written, so bad arguments leave no folder.

    Returns:
        The list of :class:`lnbench.nn.gradient_checks.Check` and the path of the report (or None).

    Raises:
        ValueError: bad ``dtype`` or ``shape`` (the message names which).
        OSError: the report cannot be written.
    """
    from lnbench.nn.gradient_checks import run_checks

    checks = run_checks(dtype=dtype, shape=shape, seed=seed) + list(extra or [])
    report = {
        "dtype": dtype,
        "shape": list(shape),
        "seed": seed,
        "passed": all(c.passed for c in checks),
        "checks": [c.to_dict() for c in checks],
    }
    failed = None if report["passed"] else "checks failed: " + ", ".join(c.name for c in checks if not c.passed)
    path = _write_report("gradcheck", report, seed, runs_dir, json_path, failed)
    if json_path is None and path is not None:
        driver.write_html(GRADCHECK, path.parent)
    return checks, path


def invariance(
    seed: int = 0,
    draws: int = 5,
    runs_dir: str | Path | None = "runs",
    json_path: str | Path | None = None,
    methods: dict | None = None,
) -> tuple[list, Path | None]:
    """``lnbench invariance``: measure Ba et al.'s Table 1 (:mod:`lnbench.nn.invariance`) and write
    ``invariance.json`` (``{"seed", "draws", "eps", "agrees", "cells": [...]}``) to ``json_path``
    if given, else into a new run folder under ``runs_dir`` (none if ``runs_dir`` is None), with
    its report.html. The run folder's status is ``failed`` when a cell disagrees with the
    expected table.

    Returns:
        The :class:`lnbench.nn.invariance.Cell` list and the path of the report (or None).
    """
    from lnbench.nn import invariance as table1

    cells = table1.measure(seed=seed, draws=draws, methods=methods)
    report = {
        "seed": seed,
        "draws": draws,
        "eps": table1.EPS,
        "agrees": all(c.agrees for c in cells),
        "cells": [c.to_dict() for c in cells],
    }
    failed = (
        None
        if report["agrees"]
        else "cells disagree with the expected table: "
        + ", ".join(f"{c.method}/{c.transformation}" for c in cells if not c.agrees)
    )
    path = _write_report("invariance", report, seed, runs_dir, json_path, failed)
    if json_path is None and path is not None:
        driver.write_html(INVARIANCE, path.parent)
    return cells, path
