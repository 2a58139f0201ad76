"""The checking experiments: ``lnbench invariance`` (Ba et al.'s Table 1, measured) and
``lnbench gradcheck`` (the hand-written LayerNorm gradients against finite differences and
PyTorch). They train nothing: their work is one report (:meth:`Checking.compute`), which the
driver writes into a run folder like every kind's (run.json, ``<kind>.json``, summary.json with
the headline, report.html), or which goes to a given file alone (``--json``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from rich.table import Table

from lnbench.config import ConfigError, RunConfig
from lnbench.experiments import driver
from lnbench.experiments.base import Cell, Computed, Experiment
from lnbench.records.folder import RunFolder
from lnbench.records.index import make_headline
from lnbench.records.io import write_json_atomic
from lnbench.records.schema import SummaryRow
from lnbench.report import check_tables


@dataclass
class InvarianceSpec:
    """What ``lnbench invariance`` measures with (:func:`lnbench.nn.invariance.measure`'s arguments)."""

    seed: int = 0
    draws: int = 5
    methods: dict | None = None  # name -> (label, fn); None: lnbench.nn.invariance.METHODS


@dataclass
class GradcheckSpec:
    """What ``lnbench gradcheck`` checks with (:func:`lnbench.nn.gradient_checks.run_checks`'s
    arguments) and the ``extra`` checks already run (a user's norm's)."""

    dtype: str = "float64"
    shape: tuple[int, ...] = (4, 5, 8)
    seed: int = 0
    extra: list = field(default_factory=list)


class Checking(Experiment):
    """A kind that trains nothing: its plan is empty and its work, :meth:`compute`, is one report,
    ``<kind>.json``: a list of ``items`` (under the key ``items``), each good when its ``good`` key
    is true; its headline counts them. Its folder has no config.yaml and is not resumed."""

    seeded = False
    items: ClassVar[str]
    good: ClassVar[str]
    word: ClassVar[str]  # what a good item did: ``24/24 agree``

    @property
    def report(self) -> str:
        """The report's file name: ``<kind>.json``."""
        return f"{self.kind}.json"

    def configs(self, spec: Any) -> dict[str, RunConfig]:
        return {}

    def config_yaml(self, spec: Any) -> str | None:
        return None

    def name(self, spec: Any) -> str:
        return self.kind

    def seeds(self, spec: Any) -> int:
        return spec.seed

    def plan(self, spec: Any, parent: Path) -> list[Cell]:
        return []

    def baselines(self, spec: Any) -> None:
        return None

    def analyse(self, spec: Any, cells: Sequence[Cell], rows: list[SummaryRow], baselines: Any) -> dict:
        return {}

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        """The good items of its report, counted (``24/24 agree``, ``23/23 passed``); None without a
        report. The same for a folder of an older version, which has no summary.json."""
        report = folder.json(self.report)
        if report is None:
            return None
        items = report.get(self.items) or []
        return make_headline(f"{sum(bool(i.get(self.good)) for i in items)}/{len(items)} {self.word}")

    def tables(self, path: Path, summary: dict) -> list[Table]:
        report = RunFolder(path).json(self.report)
        return [self.table(report)] if report else []

    def table(self, report: dict) -> Table:
        """The printed table of a report."""
        raise NotImplementedError

    def run_check(
        self, spec: Any, runs_dir: str | Path | None, json_path: str | Path | None
    ) -> tuple[list, Path | None]:
        """Run the check on ``spec`` through the driver into a new run folder under ``runs_dir``,
        or, with ``json_path``, write only the report to that file (its folder must exist: a typo
        should not create folders); nowhere when both are None. Bad arguments raise before
        anything is written.

        Returns:
            The items of :meth:`compute` and the report's path (or None).

        Raises:
            ConfigError: bad arguments (one line naming them).
            OSError: the report cannot be written.
        """
        if json_path is None and runs_dir is not None:
            result = driver.run(self, spec, runs_dir=runs_dir)
            return result.items, result.path / self.report
        self.check(spec)
        computed = self.compute(spec)
        if json_path is None:
            return computed.items, None
        write_json_atomic(Path(json_path), computed.files[self.report])
        return computed.items, Path(json_path)


class Invariance(Checking):
    kind = "invariance"
    holds = ("invariance.json",)
    items, good, word = "cells", "agrees", "agree"

    def check(self, spec: InvarianceSpec) -> None:
        if spec.draws < 1:  # no draw measures no change: every cell would read as invariant
            raise ConfigError(f"draws: must be >= 1, got {spec.draws}")

    def compute(self, spec: InvarianceSpec) -> Computed:
        """Measure Table 1 (:func:`lnbench.nn.invariance.measure`): the report ``{"seed", "draws",
        "eps", "agrees", "cells": [...]}``, failed when a cell disagrees with the expected table."""
        from lnbench.nn import invariance as table1

        cells = table1.measure(seed=spec.seed, draws=spec.draws, methods=spec.methods)
        report = {
            "seed": spec.seed,
            "draws": spec.draws,
            "eps": table1.EPS,
            "agrees": all(c.agrees for c in cells),
            "cells": [c.to_dict() for c in cells],
        }
        wrong = [f"{c.method}/{c.transformation}" for c in cells if not c.agrees]
        error = "cells disagree with the expected table: " + ", ".join(wrong) if wrong else None
        return Computed({self.report: report}, error, cells)

    def table(self, report: dict) -> Table:
        return check_tables.invariance_table(report["cells"], report.get("draws", 0))


class Gradcheck(Checking):
    kind = "gradcheck"
    holds = ("gradcheck.json",)
    items, good, word = "checks", "passed", "passed"

    def check(self, spec: GradcheckSpec) -> None:
        from lnbench.nn.gradient_checks import check_arguments

        try:
            check_arguments(spec.dtype, spec.shape)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def compute(self, spec: GradcheckSpec) -> Computed:
        """Run :func:`lnbench.nn.gradient_checks.run_checks` (and keep the ``extra`` checks): the
        report ``{"dtype", "shape", "seed", "passed", "checks": [...]}``, failed when a check fails."""
        from lnbench.nn.gradient_checks import run_checks

        checks = run_checks(dtype=spec.dtype, shape=spec.shape, seed=spec.seed) + list(spec.extra)
        report = {
            "dtype": spec.dtype,
            "shape": list(spec.shape),
            "seed": spec.seed,
            "passed": all(c.passed for c in checks),
            "checks": [c.to_dict() for c in checks],
        }
        failed = [c.name for c in checks if not c.passed]
        return Computed({self.report: report}, "checks failed: " + ", ".join(failed) if failed else None, checks)

    def table(self, report: dict) -> Table:
        return check_tables.gradcheck_table(report)


INVARIANCE = Invariance()
GRADCHECK = Gradcheck()


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
    ``json_path`` if given (nothing else is written), otherwise to ``gradcheck.json`` in a new run
    folder under ``runs_dir`` with its summary.json and report.html (none if ``runs_dir`` is None),
    whose status is ``failed`` when a check fails. The arguments are checked before anything is
    written, so bad arguments leave no folder.

    Returns:
        The list of :class:`lnbench.nn.gradient_checks.Check` and the path of the report (or None).

    Raises:
        ValueError: bad ``dtype`` or ``shape`` (a :class:`ConfigError`; the message names which).
        OSError: the report cannot be written.
    """
    spec = GradcheckSpec(dtype, tuple(shape), seed, list(extra or []))
    return GRADCHECK.run_check(spec, runs_dir, json_path)


def invariance(
    seed: int = 0,
    draws: int = 5,
    runs_dir: str | Path | None = "runs",
    json_path: str | Path | None = None,
    methods: dict | None = None,
) -> tuple[list, Path | None]:
    """``lnbench invariance``: measure Ba et al.'s Table 1 (:mod:`lnbench.nn.invariance`) and write
    ``invariance.json`` (``{"seed", "draws", "eps", "agrees", "cells": [...]}``) to ``json_path``
    if given (nothing else is written), else into a new run folder under ``runs_dir`` (none if
    ``runs_dir`` is None), with its summary.json and report.html. The run folder's status is
    ``failed`` when a cell disagrees with the expected table.

    Returns:
        The :class:`lnbench.nn.invariance.Cell` list and the path of the report (or None).

    Raises:
        ValueError: ``draws`` < 1 (a :class:`ConfigError`), before anything is written.
        OSError: the report cannot be written.
    """
    return INVARIANCE.run_check(InvarianceSpec(seed, draws, methods), runs_dir, json_path)
