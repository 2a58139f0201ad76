"""``lnbench claims --resume DIR``: the spec of a claims folder from what it recorded (its
config.yaml's claims, tasks and regimes), and the options given again checked against it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lnbench.analysis import claim_catalogue, claim_tasks
from lnbench.config import ConfigError
from lnbench.experiments import claim_regimes
from lnbench.experiments.claims import CLAIMS, ClaimsSpec, in_default_run, seed_overrides, selection
from lnbench.records.folder import RunFolder


def resumed_spec(
    folder: str | Path,
    only: Sequence[str] | None = None,
    everything: bool = False,
    tasks: Sequence[str] | None = None,
    overrides: Sequence[str] = (),
    seed: int | None = None,
    num_seeds: int | None = None,
    option: str = "--task",
    presets: str | Path | None = None,
) -> ClaimsSpec:
    """``lnbench claims --resume FOLDER``: the claims, tasks and regimes that FOLDER's config.yaml
    records (:func:`lnbench.experiments.claim_regimes.recorded_selection`; a folder written before
    it recorded them: its summary.json's claims, else ``only``/``everything``/``tasks`` as given).
    The options given are checked against it, not applied: ``only`` or ``everything`` that selects
    other claims, other ``tasks`` (``option``), or a ``--set`` override, ``seed`` or ``num_seeds``
    that changes a regime is refused; one that agrees is accepted.

    Raises:
        ConfigError: not a claims folder, an unreadable config.yaml, or one line naming the option
            that contradicts the folder.
    """
    from lnbench.config.checks import check_not_a_child

    folder = Path(folder)
    text = RunFolder(folder).config_text()
    if text is None:
        raise ConfigError(f"--resume {folder}: not an experiment folder (no config.yaml)")
    check_not_a_child(folder)
    found = RunFolder(folder).kind
    if found != CLAIMS.kind:
        raise ConfigError(f"--resume {folder}: a {found!r} folder, not {CLAIMS.kind!r}; resume it with lnbench {found}")
    regimes = claim_regimes.regimes_from_yaml(text, str(folder / "config.yaml"))
    chosen = None if not (only or everything) else selection(only, everything)
    flag = " ".join(f"--only {i}" for i in only or []) or "--all"
    given = None if tasks is None else claim_regimes.parse_tasks(tasks, option)
    recorded = claim_regimes.recorded_selection(text) or _summary_selection(folder)
    if recorded is None:  # written before config.yaml recorded its claims, and not finished
        ids = chosen if chosen is not None else [c.id for c in claim_catalogue.CLAIMS if in_default_run(c)]
        recorded = (ids, given or list(dict.fromkeys(claim_tasks.task_of(name) for name in regimes)))
    ids, on = recorded
    where = f"{folder / 'config.yaml'}"
    if chosen is not None and set(chosen) != set(ids):
        raise ConfigError(
            f"{flag}: {folder} tests the claims {', '.join(ids)} ({where}); resume it without {flag.split()[0]}"
        )
    if given is not None and given != on:
        raise ConfigError(
            f"{option} {','.join(given)}: {folder} runs on {','.join(on)} ({where}); resume without {option}"
        )
    card = [i for i in ids if "@" in i and i.partition("@")[0] in claim_catalogue.TEMPLATE_IDS]  # a card's claims
    unknown = [i for i in ids if i not in claim_catalogue.CLAIM_IDS and i not in card]
    if unknown:
        raise ConfigError(f"--resume {folder}: {where} names claims that lnbench does not have: {', '.join(unknown)}")
    try:
        instances = [claim_catalogue.norm_claim(i) for i in card]
    except ConfigError as exc:
        raise ConfigError(f"--resume {folder}: {where}: {exc}") from None
    named = [c for c in claim_catalogue.CLAIMS if c.id in ids] + instances
    selected, skipped = claim_tasks.claims_on_tasks(named, on)
    missing = [r for r in dict.fromkeys(c.regime for c in selected) if r not in regimes]
    if missing:
        raise ConfigError(f"--resume {folder}: {where} has no regime {missing[0]}, which its claims use")
    asked: list[tuple[str, list[str], int | None]] = [(f"--set {o}", [o], None) for o in overrides]
    asked += [(f"--num-seeds {num_seeds}", seed_overrides(num_seeds, seed), None)] if num_seeds is not None else []
    asked += [(f"--seed {seed}", [], seed)] if seed is not None and num_seeds is None else []
    for label, items, first in asked:
        for name, cfg in regimes.items():
            problem = claim_regimes.contradiction(cfg, items, first)
            if problem is not None:
                raise ConfigError(
                    f"{label}: contradicts {where} (regime {name}: {problem}); a resumed folder keeps its own "
                    f"config: resume without {label}"
                )
    kept = {name: cfg for name, cfg in regimes.items() if name in {c.regime for c in selected}}
    return ClaimsSpec(selected, kept, tasks=on, skipped=skipped, presets=Path(presets) if presets else None)


def _summary_selection(folder: Path) -> tuple[list[str], list[str]] | None:
    """The claim ids and tasks of a finished claims folder's summary.json; None without them."""
    summary = RunFolder(folder).summary() or {}
    ids = list(dict.fromkeys(c.get("id") for c in summary.get("claims") or [] if c.get("id")))
    ids += [r["id"] for r in summary.get("claims_by_task") or [] if r.get("id") and r["id"] not in ids]
    return (ids, list(summary.get("tasks") or ["trend"])) if ids else None
