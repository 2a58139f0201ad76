"""The claims on other tasks (``lnbench claims --task NAME``, ``--tasks a,b,c``).

A claim is written for a regime of the trend task (``configs/claims/<regime>.yaml``). On another
task it keeps its regime's model, training and seeds, and takes the task's data:

- the regime's ``n_train`` and ``n_test``, at most the task's (digits: 1437 and 360);
- the regime's values of the keys the task shares with trend (``seq_len`` for adding);
- the task's preset ``<presets>/tasks/<task>.yaml`` if there is one (its ``data`` section only,
  e.g. ``digits_order``), then the defaults;
- none of trend's own keys (the offset and the scale spread are trend's).

Its regime is then named ``<regime>@<task>`` (``default@adding``); on trend it keeps its name,
so a trend-only run is the plain ``lnbench claims``. A claim does not apply to a task whose data
cannot measure it: ``abs_scale_spearman`` needs each sequence's own input scale, which only trend
has (:attr:`lnbench.names.Task.has_scale`); the MLP's claims (Ba et al.'s Figure 6, regime
``figure6``) are written for flat MNIST, which their regime holds itself, and go to no other task.
Each task's directional claims are one Holm family, as in a run of that task alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pydantic import ValidationError

from lnbench.analysis.claims import Claim, ClaimResult
from lnbench.config import ConfigError, DataConfig, RunConfig, apply_overrides, yaml12
from lnbench.config.checks import check_memory_of_families
from lnbench.names import FAMILY_REGISTRY, TASK_NAMES, TASKS

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


def parse_tasks(names: Sequence[str], option: str = "--task") -> list[str]:
    """``["adding", "trend,digits"]`` -> ``["adding", "trend", "digits"]`` (each once, in order).

    Raises:
        ConfigError: an unknown or empty task name (the message names ``option`` and the tasks).
    """
    tasks: list[str] = []
    for name in (n.strip() for chunk in names for n in chunk.split(",")):
        if name not in TASKS:
            raise ConfigError(f"{option}: unknown task {name!r}; allowed: {', '.join(TASK_NAMES)}")
        if name not in tasks:
            tasks.append(name)
    if not tasks:
        raise ConfigError(f"{option}: no task given; allowed: {', '.join(TASK_NAMES)}")
    return tasks


def split_overrides(overrides: Sequence[str], tasks: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The ``--set`` overrides for the trend regimes, and per task those of its own ``data`` keys
    (applied to its regimes after its preset: ``--set`` wins). A key only other tasks read
    (``data.digits_order``) goes to them alone; one that trend shares (``data.seq_len``) to both.

    Raises:
        ConfigError: ``data.task`` (the tasks are ``--task``'s), or a data key none of ``tasks`` reads.
    """
    trend_keys = {*TASKS[CLAIMS_TASK].keys, "n_train", "n_val", "n_test"}  # the splits: every task's
    base: list[str] = []
    per_task: dict[str, list[str]] = {t: [] for t in tasks}
    for item in overrides:
        key = item.partition("=")[0].strip()
        section, _, name = key.partition(".")
        if section != "data" or not name:
            base.append(item)
            continue
        if name == "task":
            raise ConfigError("--set data.task: claims take their tasks from --task / --tasks (e.g. --task adding)")
        readers = [t for t in tasks if name in TASKS[t].keys]
        if name in trend_keys:
            base.append(item)
        elif not readers:
            owners = [t for t, e in TASKS.items() if name in e.keys] or ["no"]
            raise ConfigError(f"--set {key}: read by the {' and '.join(owners)} task only; add --task {owners[0]}")
        for t in readers:
            if t != CLAIMS_TASK:
                per_task[t].append(f"{name}={item.partition('=')[2]}")
    return base, per_task


def not_applicable(claim: Claim, task: str) -> str | None:
    """Why ``claim`` cannot be measured on ``task`` (None: it can)."""
    if claim.metric == "abs_scale_spearman" and not TASKS[task].has_scale:
        return f"its metric needs each sequence's own input scale; the {task} task has none"
    if FAMILY_REGISTRY[claim.family].reads_vectors and task != CLAIMS_TASK:
        return f"its regime ({claim.regime}) holds its own data, one vector per example, which the {task} task's sequences are not"
    return None


def check_regimes_take_tasks(
    claims: Sequence[Claim],
    tasks: Sequence[str],
    base: dict[str, RunConfig],
    presets: Path,
    named: Sequence[str] = (),
    option: str = "--task",
) -> None:
    """Refuse tasks the user gave (``option``) that a regime of ``claims`` (those ``--only`` chose)
    cannot run on. A regime that holds its own data (the MLP's ``figure6``: flat MNIST) runs on that
    data alone, so it takes no task at all, trend included; a regime ``--only`` ``named`` must
    measure one of its claims on one of ``tasks``. ``base``: the regimes' configs (from
    ``presets``), whose ``data.task`` the message names.

    Raises:
        ConfigError: one line naming the first such regime, the task(s) it runs on and those given.
    """
    given = f"{option} {','.join(tasks)}"
    for regime in dict.fromkeys(c.regime for c in claims):
        own = [c for c in claims if c.regime == regime]
        if all(FAMILY_REGISTRY[c.family].reads_vectors for c in own):
            raise ConfigError(
                f"{given}: the {regime} regime (--only) runs on its own data only, the {base[regime].data.task} "
                f"task as {presets / f'{regime}.yaml'} sets it; drop {option}"
            )
        if regime in named and not any(not_applicable(c, t) is None for c in own for t in tasks):
            where = [t for t in TASK_NAMES if any(not_applicable(c, t) is None for c in own)]
            raise ConfigError(f"{given}: the {regime} regime (--only) measures its claims on {', '.join(where)} only")


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


def _preset_data(preset: Path) -> dict:
    """The ``data`` section of a task preset.

    Raises:
        ConfigError: unreadable YAML, more than a data section, a data section that is not a
            mapping, or one that sets ``task`` (one line naming the file).
    """
    try:
        raw = yaml12.load(preset.read_text()) or {}
    except (OSError, ValueError, yaml12.yaml.YAMLError) as exc:
        raise ConfigError(f"{preset}: cannot read it: {' '.join(str(exc).split())}") from None
    if not isinstance(raw, dict) or set(raw) - {"data"}:
        got = ", ".join(sorted(map(str, set(raw) - {"data"}))) if isinstance(raw, dict) else type(raw).__name__
        raise ConfigError(f"{preset}: a task preset has a data section only; got {got}")
    data = raw.get("data") or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{preset}: data: expected a mapping of data keys, got {data!r}")
    if "task" in data:
        raise ConfigError(f"{preset}: data.task: the file's name is its task; remove the key")
    return data


def regime_for_task(cfg: RunConfig, task: str, presets: Path, overrides: Sequence[str] = ()) -> RunConfig:
    """A trend regime's config with ``task``'s data (the module docstring gives the rule), then
    ``overrides`` (``key=value`` of the task's own data keys, from ``--set``).

    Raises:
        ConfigError: the task preset is unreadable or sets a key the task does not have, or the
            regime's batch size exceeds the task's ``n_train``.
    """
    if task == CLAIMS_TASK:
        return cfg
    entry, base = TASKS[task], cfg.data
    data: dict = {"task": task}
    for key, most in (("n_train", entry.max_train), ("n_test", entry.max_test)):
        data[key] = getattr(base, key) if most is None else min(getattr(base, key), most)
    data.update({k: getattr(base, k) for k in entry.keys if k in TASKS[CLAIMS_TASK].keys})
    preset = presets / "tasks" / f"{task}.yaml"
    if preset.is_file():
        data.update(_preset_data(preset))
    data = apply_overrides(data, list(overrides))
    try:
        new = DataConfig(**data)
        merged = {**cfg.model_dump(), "data": new.model_dump(), "name": f"{cfg.name}_{task}"}
        return RunConfig.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(["data", *(str(p) for p in first["loc"] if p)])
        source = preset if preset.is_file() else f"the {cfg.name} regime on {task}"
        source = f"{source} (with --set)" if overrides else source
        raise ConfigError(f"{source}: {where}: {first['msg'].removeprefix('Value error, ')}") from None


def regimes_on_tasks(
    base: dict[str, RunConfig], claims: Sequence[Claim], presets: Path, overrides: dict[str, list[str]] | None = None
) -> dict[str, RunConfig]:
    """The config of every regime the (task-renamed) ``claims`` use, from the trend ``base``,
    with each task's own ``--set`` ``overrides`` (:func:`split_overrides`)."""
    regimes: dict[str, RunConfig] = {}
    for name in dict.fromkeys(c.regime for c in claims):
        task = task_of(name)
        cfg = regime_for_task(base[base_regime(name)], task, presets, (overrides or {}).get(task, []))
        check_memory_of_families(cfg, sorted({c.family for c in claims if c.regime == name}))
        regimes[name] = cfg
    return regimes


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
