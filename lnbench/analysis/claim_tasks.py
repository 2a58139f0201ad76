"""The claims on other tasks (``lnbench claims --task NAME``, ``--tasks a,b,c``).

A claim is written for a regime of the trend task (``configs/claims/<regime>.yaml``). On another
task it keeps its regime's model, training and seeds, and takes the task's data
(:func:`lnbench.experiments.claim_regimes.regime_for_task`). Its regime is then named ``<regime>@<task>`` (``default@adding``); on trend it keeps its name,
so a trend-only run is the plain ``lnbench claims``. A claim does not apply to a task whose data
cannot measure it: ``abs_scale_spearman`` needs each sequence's own input scale, which only trend
has (:attr:`lnbench.names.Task.has_scale`); the MLP's claims (Ba et al.'s Figure 6, regime
``figure6``) are written for flat MNIST, which their regime holds itself, and go to no other task.
Each task's directional claims are one Holm family, as in a run of that task alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from lnbench.analysis.claim_catalogue import Claim
from lnbench.analysis.claims import ClaimResult
from lnbench.names import FAMILY_REGISTRY, TASKS

TASK_SEP = "@"
CLAIMS_TASK = "trend"  # the task the claims and their regimes are written for


def regime_on(regime: str, task: str) -> str:
    """``default`` on trend, ``default@adding`` on adding."""
    return regime if task == CLAIMS_TASK else f"{regime}{TASK_SEP}{task}"


def task_of(regime: str) -> str:
    """The task of a regime name: ``default@adding`` -> ``adding``; ``default`` -> ``trend``."""
    return regime.partition(TASK_SEP)[2] or CLAIMS_TASK


def base_regime(regime: str) -> str:
    """``default@adding`` -> ``default``."""
    return regime.partition(TASK_SEP)[0]


def not_applicable(claim: Claim, task: str) -> str | None:
    """Why ``claim`` cannot be measured on ``task`` (None: it can)."""
    if claim.metric == "abs_scale_spearman" and not TASKS[task].has_scale:
        return f"its metric needs each sequence's own input scale; the {task} task has none"
    if FAMILY_REGISTRY[claim.family].reads_vectors and task != CLAIMS_TASK:
        return f"its regime ({claim.regime}) holds its own data, one vector per example, which the {task} task's sequences are not"
    return None


def claims_on_tasks(claims: Sequence[Claim], tasks: Sequence[str]) -> tuple[list[Claim], list[dict]]:
    """Each claim on each task where it applies (its regime renamed :func:`regime_on`), and the
    ``{"id", "claim", "family", "metric", "task", "reason"}`` of those left out, task by task."""
    kept, skipped = [], []
    for task in tasks:
        for c in claims:
            reason = not_applicable(c, task)
            if reason is None:
                kept.append(replace(c, regime=regime_on(c.regime, task)))
            else:
                skipped.append(
                    {
                        "id": c.id,
                        "claim": c.text,
                        "family": c.family,
                        "metric": c.metric,
                        "task": task,
                        "reason": reason,
                    }
                )
    return kept, skipped


def by_task(results: Sequence[ClaimResult], skipped: Sequence[dict], tasks: Sequence[str]) -> list[dict]:
    """The claim x task table as data: one entry per claim id (in the results' order),
    ``{"id", "claim", "family", "metric", "tasks": {task: {"verdict", "effect", "ci95", "regime",
    "borderline"} or {"verdict": "n/a", "reason"}}}``, the tasks in ``tasks``' order."""
    rows: dict[str, dict] = {}
    for r in results:
        row = rows.setdefault(r.id, {"id": r.id, "claim": r.claim, "family": r.family, "metric": r.metric, "tasks": {}})
        row["tasks"][task_of(r.regime)] = {
            "verdict": r.verdict,
            "effect": r.effect,
            "ci95": r.ci95,
            "regime": r.regime,
            "borderline": r.borderline,
        }
    for s in skipped:
        row = rows.setdefault(
            s["id"], {"id": s["id"], "claim": s["claim"], "family": s["family"], "metric": s["metric"], "tasks": {}}
        )
        row["tasks"][s["task"]] = {"verdict": "n/a", "reason": s["reason"]}
    order = {t: i for i, t in enumerate(tasks)}
    for row in rows.values():
        row["tasks"] = dict(sorted(row["tasks"].items(), key=lambda kv: order.get(kv[0], len(order))))
    return list(rows.values())


def holds_everywhere(table: Sequence[dict]) -> tuple[list[str], list[str]]:
    """The claim ids held on every task they were measured on (n/a aside), and those held on some
    but not all."""
    everywhere, some = [], []
    for row in table:
        verdicts = [v["verdict"] for v in row["tasks"].values() if v["verdict"] != "n/a"]
        if verdicts and all(v == "held" for v in verdicts):
            everywhere.append(row["id"])
        elif "held" in verdicts:
            some.append(row["id"])
    return everywhere, some


def task_sentences(table: Sequence[dict], tasks: Sequence[str]) -> list[str]:
    """What the claim x task table says, computed from it: which claims held on every task they
    were measured on, which on some only (with where), and which held nowhere."""
    everywhere, some = holds_everywhere(table)
    measured = {row["id"]: [t for t, v in row["tasks"].items() if v["verdict"] != "n/a"] for row in table}
    lines = []
    if everywhere:
        lines.append(
            "Held on every task it was measured on: "
            + ", ".join(f"{i} ({', '.join(measured[i])})" for i in everywhere)
            + "."
        )
    for row in table:
        if row["id"] in some:
            held = [t for t, v in row["tasks"].items() if v["verdict"] == "held"]
            other = [f"{t}: {v['verdict']}" for t, v in row["tasks"].items() if v["verdict"] not in ("held", "n/a")]
            lines.append(f"{row['id']}: held on {', '.join(held)} only ({'; '.join(other)}).")
    nowhere = [r["id"] for r in table if measured[r["id"]] and r["id"] not in everywhere and r["id"] not in some]
    if nowhere:
        lines.append(f"Held on none of the tasks it was measured on: {', '.join(nowhere)}.")
    return lines
