"""``--confirm`` of compare and claims, the two-stage workflow (:mod:`lnbench.analysis.confirm`):
the pilot (run now, or an earlier folder's, finished first if it is not), the confirm stage's plan
from its results, pinned in the folder's confirm.json with the pilot's summary.json kept as
pilot_summary.json, then the confirm stage on fresh seeds in the same folder.

:func:`confirm` runs it all and returns both stages' results (a notebook's call); the CLI runs the
same steps (:func:`pilot_summary`, :func:`plan_stage`, :func:`check_pinned`, :func:`pin`,
:func:`run_stage`), printing between them. Nothing here prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from lnbench.analysis.confirm import MAX_SEEDS
from lnbench.config import ConfigError
from lnbench.experiments.base import LAUNCH_DEFAULTS, Experiment, ExperimentResult, LaunchOptions
from lnbench.records.folder import RunFolder
from lnbench.records.io import write_json_atomic


@dataclass
class ConfirmStage:
    """The confirm stage of one folder, planned from its pilot.

    Attributes:
        kind: ``compare`` or ``claims``.
        folder: the experiment folder both stages share.
        spec: the confirm stage's spec (a :class:`lnbench.experiments.compare.ConfirmCompareSpec`,
            or the claims spec with its ``confirm`` set).
        experiment: the confirm stage's experiment.
        plan: the plan (:class:`lnbench.experiments.compare.ComparePlan` or
            :class:`lnbench.experiments.claims.ConfirmPlan`): per question keep, confirm (on how many
            fresh seeds) or undecidable.
        max_seeds: the most fresh seeds a question may take.
        cost: the estimated training time of the stage (seconds on one worker), None: no fresh
            seeds, or no wall times in the pilot.
    """

    kind: str
    folder: Path
    spec: Any
    experiment: Experiment
    plan: Any
    max_seeds: int
    cost: float | None

    @property
    def record(self) -> dict:
        """What confirm.json pins: ``max_seeds`` and the fresh seeds of each regime or model group."""
        return json.loads(json.dumps({"max_seeds": self.max_seeds, "fresh_seeds": self.plan.fresh}))


def pilot_summary(exp: Experiment, spec: Any, folder: Path, launcher: str = "local") -> dict:
    """The pilot's results as a summary.json holds them (``rows``, each with its cell's group, a
    claims regime; ``baselines``), its rows read from its finished child runs: the folder's
    summary.json is the confirm stage's once that started (an interrupted confirm has its partial one).

    Raises:
        ConfigError: the folder's plan cannot be made (:func:`lnbench.experiments.driver.prepare`)."""
    from lnbench.experiments import driver

    cells = driver.prepare(exp, spec, 1, launcher, folder)
    rows = [row.to_dict() | {"regime": cell.group} for cell in cells for row, _ in exp.kept(cell) or []]
    return {"rows": rows, "baselines": (RunFolder(folder).summary() or {}).get("baselines")}


def plan_stage(
    kind: str, spec: Any, folder: str | Path, max_seeds: int = MAX_SEEDS, launcher: str = "local"
) -> ConfirmStage:
    """The confirm stage of the finished pilot in ``folder`` (``spec``: the pilot's config, or the
    claims spec), planned from its rows by the kind (:meth:`Experiment.confirm_stage`:
    ``analysis.confirm``'s :func:`plan_comparisons` or :func:`plan_claims`).

    Raises:
        ConfigError: the pilot cannot be confirmed (:meth:`Experiment.check_confirmable`) or planned."""
    from lnbench.experiments.registry import EXPERIMENTS

    folder, exp = Path(folder), EXPERIMENTS[kind]
    exp.check_confirmable(spec)
    stage_spec, stage_exp, plan, cost = exp.confirm_stage(spec, pilot_summary(exp, spec, folder, launcher), max_seeds)
    return ConfirmStage(kind, folder, stage_spec, stage_exp, plan, max_seeds, cost)


def check_pinned(stage: ConfirmStage) -> None:
    """Raise :class:`ConfigError` if the folder's confirm.json pins another plan (another
    ``max_seeds``): it would test seeds already looked at."""
    pinned = stage.folder / "confirm.json"
    if not pinned.is_file():
        return
    stored = json.loads(pinned.read_text())
    if stored != stage.record:
        raise ConfigError(
            f"--confirm: {stage.folder}'s confirm stage was planned with --max-seeds {stored.get('max_seeds')} "
            f"(fresh seeds {stored.get('fresh_seeds')}); another plan would test seeds already looked at: "
            f"give --max-seeds {stored.get('max_seeds')} (with the same lnbench)"
        )


def pin(stage: ConfirmStage) -> None:
    """Pin the plan in the folder's confirm.json, and keep the pilot's own summary.json as
    pilot_summary.json (the confirm stage rewrites summary.json); nothing if it is pinned already."""
    pinned = stage.folder / "confirm.json"
    if pinned.is_file():
        return
    pilot = RunFolder(stage.folder).summary() or {}
    if pilot.get("complete") and "confirm" not in pilot:  # the pilot's own (not an interrupted stage's partial one)
        write_json_atomic(stage.folder / "pilot_summary.json", pilot)
    write_json_atomic(pinned, stage.record)


def run_stage(stage: ConfirmStage, **options: Unpack[LaunchOptions]) -> ExperimentResult:
    """Run the confirm stage in the pilot's folder (its cells and the fresh-seed cells; the
    pilot's kept), as ``options`` say (``resume`` is the folder)."""
    from lnbench.experiments import driver

    return driver.run(stage.experiment, stage.spec, **LaunchOptions(**{**options, "resume": stage.folder}))


def confirm(
    kind: str, spec: Any, max_seeds: int = MAX_SEEDS, **options: Unpack[LaunchOptions]
) -> tuple[ConfirmStage, ExperimentResult]:
    """``lnbench compare --confirm`` / ``lnbench claims --confirm`` as a function: the pilot of
    ``spec`` (a compare's config, or :func:`lnbench.experiments.claims_spec`'s spec) in a new
    folder, or with ``resume`` that folder's (finished first), then its confirm stage, planned,
    pinned and run on at most ``max_seeds`` fresh seeds per question.

    Returns:
        The confirm stage (its plan) and its result (the folder's summary, with ``confirm``).

    Raises:
        ConfigError: before anything is written when the pilot cannot be confirmed; a folder
            pinned to another plan (:func:`check_pinned`).
    """
    from lnbench.experiments import driver
    from lnbench.experiments.registry import EXPERIMENTS

    exp = EXPERIMENTS[kind]
    exp.check_confirmable(spec)
    o = LaunchOptions(**{**LAUNCH_DEFAULTS, **options})
    if o["resume"] is None:
        folder = driver.run(exp, spec, **options).path
    else:
        folder = Path(o["resume"])
        cells = driver.prepare(exp, spec, o["jobs"], o["launcher"], folder, o["check_norm"])
        plan = driver.resume_plan(cells, folder, exp)  # the child folders read once
        if driver.cells_to_run(cells, folder, exp, plan):
            driver.execute(exp, spec, cells, plan=plan, **options)
    stage = plan_stage(kind, spec, folder, max_seeds, o["launcher"])
    check_pinned(stage)
    pin(stage)
    return stage, run_stage(stage, **options)
