"""The regimes of ``lnbench claims``: their preset configs read from files, with ``--set``,
``--seed`` and ``--task`` applied, and the cells the claims need in them.

A claim (:mod:`lnbench.analysis.claim_catalogue`) is written for a regime of the trend task,
``configs/claims/<regime>.yaml`` (an ordinary lnbench config). On another task it keeps its regime's
model, training and seeds, and takes the task's data (:func:`regime_for_task`):

- the regime's ``n_train`` and ``n_test``, at most the task's (digits: 1437 and 360);
- the regime's values of the keys the task shares with trend (``seq_len`` for adding);
- the task's preset ``<presets>/tasks/<task>.yaml`` if there is one (its ``data`` section only,
  e.g. ``digits_order``), then the defaults;
- none of trend's own keys (the offset and the scale spread are trend's).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from lnbench.analysis.claim_catalogue import Claim, Condition
from lnbench.analysis.claim_tasks import CLAIMS_TASK, base_regime, not_applicable, task_of
from lnbench.config import ConfigError, DataConfig, RunConfig, apply_overrides, load_config, yaml12
from lnbench.config.checks import check_keys_apply, check_memory_of_families, check_seeds
from lnbench.config.load import validate_config
from lnbench.config.ownership import owners as key_owners
from lnbench.names import FAMILY_REGISTRY, TASK_NAMES, TASKS, norm_slug

#: the config sections a claim condition's variant may override (its overrides' keys)
OVERRIDE_SECTIONS = ("data", "model", "train")


def load_regimes(
    claims: Sequence[Claim], presets: Path, overrides: Sequence[str] = (), seed: int | None = None
) -> dict[str, RunConfig]:
    """Load the preset config of every regime the claims use (``presets/<regime>.yaml``), with
    the same ``--set`` overrides and ``--seed`` applied to each. Whether the regimes can run their
    claims is :func:`check_regimes`' (the claims experiment's ``check``).

    Raises:
        ConfigError: a missing or invalid preset, a ``--set`` of ``model.norm`` or
            ``model.family`` (each claim trains its own: it would be dropped without a word), or
            of ``train.batch_size`` while a claim that trains at batch sizes of its own is selected
            (those claims would not use it).
    """
    own = [c.id for c in claims if any(cond.batch_size is not None for cond in c.conditions)]
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key in ("model.norm", "model.family"):
            raise ConfigError(
                f"--set {key}: each claim trains its own {key.partition('.')[2]}s (lnbench claims --list); "
                "choose claims with --only ID instead"
            )
        if key == "train.batch_size" and own:
            raise ConfigError(
                f"--set train.batch_size: {', '.join(own)} train at batch sizes of their own and would not use it "
                "(lnbench claims --list); choose the other claims with --only ID"
            )
    regimes = {}
    for name in dict.fromkeys(c.regime for c in claims):
        path = presets / f"{name}.yaml"
        if not path.is_file():
            raise ConfigError(
                f"{path}: regime preset not found (claims use: {', '.join(sorted({c.regime for c in claims}))})"
            )
        cfg = load_config(path, list(overrides), seed)
        regimes[name] = _without_untrained_norms_keys(cfg, [c for c in claims if c.regime == name], overrides)
    return regimes


def _without_untrained_norms_keys(cfg: RunConfig, claims: Sequence[Claim], overrides: Sequence[str]) -> RunConfig:
    """``cfg`` with the preset's keys of a norm that none of ``claims`` trains at their defaults
    (``model.batch_norm_population`` in a regime whose selected claims train LayerNorm and NoNorm
    only: ``--only rows_ln_vs_none``), so that a subset of a regime's claims runs as the whole
    does; a key given by ``--set`` is kept (and refused by the plan's check, naming it)."""
    trained = {cond.norm for c in claims for cond in c.conditions}
    given = {item.partition("=")[0].strip() for item in overrides}
    fields = type(cfg.model).model_fields
    reset = {
        f"model__{key.partition('.')[2]}": fields[key.partition(".")[2]].get_default(call_default_factory=True)
        for key, norms in key_owners("model.norm").items()
        if key.startswith("model.") and key not in given and not trained & set(norms)
    }
    return cfg.with_changes(**reset) if reset else cfg


def check_regimes(claims: Sequence[Claim], regimes: dict[str, RunConfig], presets: Path | None = None) -> None:
    """Raise :class:`ConfigError` if a regime cannot run the claims that use it: its seeds (bad,
    or fewer than 2: a verdict is a paired test over seeds), a key that does not apply to the
    families its claims train, more memory than the machine has for its seeds at once, or a
    claim's batch size above its ``data.n_train``. Each line names the regime's preset file
    (``presets/<regime>.yaml``; a regime on another task, ``<regime>@<task>``: that file and the
    task) or, without ``presets``, the regime."""
    for name, cfg in regimes.items():
        mine = [c for c in claims if c.regime == name]
        if not mine:
            continue
        base, _, task = name.partition("@")
        where = f"{presets / f'{base}.yaml'}" if presets is not None else base
        where += f" on task {task}" if task else ""
        try:
            check_seeds(cfg)
            families = {c.family for c in mine}
            check_keys_apply(cfg, families)
            check_memory_of_families(cfg, sorted(families))
        except ConfigError as exc:
            raise ConfigError("\n".join(f"{where}: {line}" for line in str(exc).splitlines())) from None
        if len(cfg.seed_list) < 2:
            raise ConfigError(
                f"{where}: seeds: a claim's verdict is a paired test over seeds and needs at least 2 (got {cfg.seed_list})"
            )
        check_conditions(mine, cfg, where)
        for c in mine:
            for cond in c.conditions:
                if cond.batch_size is not None and cond.batch_size > cfg.data.n_train:
                    raise ConfigError(
                        f"{where}: claim {c.id} needs batch size {cond.batch_size} > data.n_train ({cfg.data.n_train})"
                    )


def regimes_yaml(
    regimes: dict[str, RunConfig], claim_ids: Sequence[str] | None = None, tasks: Sequence[str] | None = None
) -> str:
    """The config.yaml of a claims run: every regime's resolved config under its name, after two
    comment lines naming the claims it tests (``claim_ids``) and its tasks, which ``--resume``
    reads back (:func:`recorded_selection`); YAML ignores them."""
    head = ""
    if claim_ids is not None and tasks is not None:
        head = f"{_CLAIMS_LINE}{' '.join(claim_ids)}\n{_TASKS_LINE}{' '.join(tasks)}\n"
    return head + "".join(
        f"# regime: {name}\n{name}:\n" + "".join(f"  {line}\n" for line in cfg.to_yaml().splitlines())
        for name, cfg in regimes.items()
    )


_CLAIMS_LINE, _TASKS_LINE = "# claims: ", "# tasks: "  # config.yaml's first two lines (regimes_yaml)


def recorded_selection(text: str) -> tuple[list[str], list[str]] | None:
    """The claim ids and the tasks a claims folder's config.yaml (``text``) records in its first two
    lines (:func:`regimes_yaml`); None for a folder written before it recorded them."""
    lines = text.splitlines()[:2]
    if len(lines) < 2 or not lines[0].startswith(_CLAIMS_LINE) or not lines[1].startswith(_TASKS_LINE):
        return None
    return lines[0].removeprefix(_CLAIMS_LINE).split(), lines[1].removeprefix(_TASKS_LINE).split()


def regimes_from_yaml(text: str, source: str) -> dict[str, RunConfig]:
    """Each regime of a claims folder's config.yaml (``text``, read from ``source``), in its order.

    Raises:
        ConfigError: invalid YAML, not a mapping of regimes, or a regime's config invalid (one line
            naming ``source``, the regime and the key).
    """
    try:
        raw = yaml12.load(text)
    except yaml12.yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(raw, dict) or not raw or not all(isinstance(v, dict) for v in raw.values()):
        raise ConfigError(f"{source}: expected a mapping of regimes (each regime's config under its name)")
    return {str(name): validate_config(body, f"{source}: regime {name}") for name, body in raw.items()}


def contradiction(regime: RunConfig, overrides: Sequence[str], seed: int | None = None) -> str | None:
    """What ``--set`` ``overrides`` and ``--seed`` would change in ``regime`` (a resumed folder's):
    ``train.epochs: 1 in the folder, 3 given``, the first key; None if they give it what it has.
    An override of a data key the regime's task does not read leaves it alone (as a claims run
    applies it to the tasks that read it).

    Raises:
        ConfigError: an override or seed that makes the regime invalid.
    """
    data_keys = {*TASKS[regime.data.task].keys, "task", "n_train", "n_val", "n_test"}
    mine = [o for o in overrides if not o.startswith("data.") or o.partition("=")[0][5:].strip() in data_keys]
    given = validate_config(regime.model_dump(mode="python"), f"the {regime.name} regime", mine, seed)
    before, after = _flat(regime.model_dump(mode="python")), _flat(given.model_dump(mode="python"))
    key = next((k for k in before if before[k] != after.get(k)), None)
    if key is None:
        return None
    return f"{key}: {yaml12.show_value(before[key])} in the folder, {yaml12.show_value(after[key])} given"


def _flat(raw: dict) -> dict:
    """``{"train": {"epochs": 1}, "seed": 0}`` -> ``{"train.epochs": 1, "seed": 0}`` (the sections only)."""
    out: dict = {}
    for key, value in raw.items():
        sections = isinstance(value, dict) and key in OVERRIDE_SECTIONS + ("compare", "sweep", "launcher")
        out.update({f"{key}.{k}": v for k, v in value.items()} if sections else {key: value})
    return out


def condition_changes(claim: Claim, cond: Condition, regime: RunConfig) -> dict:
    """The ``section__key`` changes (for :meth:`RunConfig.with_changes`) that make ``regime`` train
    ``cond`` of ``claim``: family, norm, batch size, an initial gain the condition sets, then its
    variant's overrides (:attr:`lnbench.analysis.claim_catalogue.Variant.overrides`)."""
    changes: dict = {
        "model__family": claim.family,
        "model__norm": cond.norm,
        "train__batch_size": cond.batch_size_in(regime),
    }
    if cond.gain_in(claim.family, regime) is not None:
        changes["model__norm_gain_init"] = cond.gain_in(claim.family, regime)
    changes.update({key.replace(".", "__"): value for key, value in cond.overrides})
    return changes


def cells_needed(claims: Sequence[Claim], regimes: dict[str, RunConfig]) -> list[tuple[str, dict, str]]:
    """Every (regime, changes, variant) setting the claims need, each once: its
    :func:`condition_changes` and its variant's name (empty: none)."""
    out: dict[tuple, tuple[str, dict, str]] = {}
    for c in claims:
        regime = regimes[c.regime]
        for cond in c.conditions:
            variant = cond.variant.name if cond.variant is not None else ""
            out.setdefault(
                cond.setting(c.family, c.regime, regime), (c.regime, condition_changes(c, cond, regime), variant)
            )
    return list(out.values())


def setting_name(regime: str, changes: dict, variant: str = "") -> str:
    """The child-run name prefix of a setting: ``unstable_recurrence_rnn_layer_bs64``, with a set
    initial gain ``lstm_lstm_layer_gain0.1_bs64``, with a variant ``lstm_recipe_rows_lstm_layer_gain0.1_no_clip_bs100``."""
    gain = changes.get("model__norm_gain_init")
    gain_part = "" if gain is None else f"_gain{gain:g}"
    gain_part += f"_{variant}" if variant else ""
    prefix = regime.replace("@", "_")  # a regime on another task, default@adding: default_adding_...
    norm = norm_slug(changes["model__norm"])  # a user's norm (a card's claims) without its colon
    return f"{prefix}_{changes['model__family']}_{norm}{gain_part}_bs{changes['train__batch_size']}"


def check_conditions(claims: Sequence[Claim], cfg: RunConfig, where: str) -> None:
    """Raise :class:`ConfigError` (one line naming ``where``, the claim and the key) if a claim's
    condition cannot train in the regime ``cfg``: an override of a key the config does not have,
    a value the key refuses in this regime, or a key that does not apply to the condition's model."""
    for c in claims:
        for cond in c.conditions:
            if not cond.overrides:
                continue
            changes = condition_changes(c, cond, cfg)
            for key, _ in cond.overrides:
                section, _, leaf = key.partition(".")
                if section not in OVERRIDE_SECTIONS or leaf not in type(getattr(cfg, section)).model_fields:
                    raise ConfigError(f"{where}: claim {c.id} sets {key}, which is not a config key")
            try:
                changed = cfg.with_changes(**changes)
                check_keys_apply(changed, [c.family])
            except ValidationError as exc:
                first = exc.errors()[0]
                at = ".".join(str(p) for p in first["loc"] if p)
                raise ConfigError(
                    f"{where}: claim {c.id} ({cond.label()}): {at}: {first['msg'].removeprefix('Value error, ')}"
                ) from None
            except ConfigError as exc:
                raise ConfigError(f"{where}: claim {c.id} ({cond.label()}): {' '.join(str(exc).split())}") from None


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
            owners = key_owners("data.task").get(f"data.{name}", ("no",))
            raise ConfigError(f"--set {key}: read by the {' and '.join(owners)} task only; add --task {owners[0]}")
        for t in readers:
            if t != CLAIMS_TASK:
                per_task[t].append(f"{name}={item.partition('=')[2]}")
    return base, per_task


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
    measure one of its claims on one of ``tasks``. A regime whose preset sets a task of its own
    (``lstm_recipe_rows``: MNIST by rows) holds its own data too. ``base``: the regimes' configs
    (from ``presets``), whose ``data.task`` the message names.

    Raises:
        ConfigError: one line naming the first such regime, the task(s) it runs on and those given.
    """
    given = f"{option} {','.join(tasks)}"
    for regime in dict.fromkeys(c.regime for c in claims):
        own = [c for c in claims if c.regime == regime]
        if all(FAMILY_REGISTRY[c.family].reads_vectors for c in own) or base[regime].data.task != CLAIMS_TASK:
            raise ConfigError(
                f"{given}: the {regime} regime (--only) runs on its own data only, the {base[regime].data.task} "
                f"task as {presets / f'{regime}.yaml'} sets it; drop {option}"
            )
        if regime in named and not any(not_applicable(c, t) is None for c in own for t in tasks):
            where = [t for t in TASK_NAMES if any(not_applicable(c, t) is None for c in own)]
            raise ConfigError(f"{given}: the {regime} regime (--only) measures its claims on {', '.join(where)} only")


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
