"""Checks of a whole experiment before anything is written: seeds, batch sizes, memory, and
config keys (set, or swept in a grid) that apply to no model being trained. Each raises
:class:`ConfigError` with one line per problem; the CLI turns it into exit code 2 before a run
folder exists."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import get_args

from lnbench.config.data import DataConfig
from lnbench.config.limits import MAX_SEED, ConfigError
from lnbench.config.model import ModelConfig
from lnbench.config.ownership import out_of_place, owners, refusal, set_away
from lnbench.config.schema import DEFAULT_NUM_SEEDS, RunConfig
from lnbench.config.words import joined
from lnbench.config.yaml12 import show_value
from lnbench.names import FAMILY_REGISTRY, NORM_REGISTRY, TASKS, plural


def check_seeds(cfg: RunConfig) -> None:
    """For compare and sweeps: raise :class:`ConfigError` if the default seeds (``seeds`` unset:
    ``seed`` .. ``seed + 4``) pass the largest seed."""
    if cfg.seeds is None and cfg.seed + DEFAULT_NUM_SEEDS - 1 > MAX_SEED:
        raise ConfigError(
            f"seed: {cfg.seed} with seeds unset means seeds {cfg.seed} .. {cfg.seed + DEFAULT_NUM_SEEDS - 1}, past {MAX_SEED}; "
            "set seeds to a list"
        )


def check_sweep(cfg: RunConfig) -> None:
    """Raise :class:`ConfigError` if a sweep batch size exceeds ``data.n_train`` (or the seeds
    pass the largest seed, :func:`check_seeds`)."""
    check_seeds(cfg)
    n = cfg.data.n_train - cfg.data.n_val
    too_big = [b for b in cfg.sweep.batch_sizes if b > n]
    if too_big:
        raise ConfigError(
            f"sweep.batch_sizes: {too_big} exceed {cfg.data.training_sequences}; "
            "every batch size must be <= the training sequences"
        )


def check_keys_apply(cfg: RunConfig, families: Iterable[str]) -> None:
    """Raise :class:`ConfigError` if the config gives a model key a value other than its default
    while that key applies to none of the model ``families`` being trained (``model.d_ff:
    8`` for an RNN-only run, ...): the value would be recorded as if it had been used. (A child
    run's config.yaml leaves such keys out, see :meth:`RunConfig.to_yaml`.)"""
    in_play = {"model.family": sorted(set(families))}
    refused = out_of_place(set_away("model", [cfg.model]), in_play)
    if refused:
        raise ConfigError("\n".join(refusal(rule, in_play, rule.key) for rule in refused))


def check_norm_options(cfgs: Iterable[RunConfig]) -> None:
    """Raise :class:`ConfigError` if a run's norm refuses its options (each norm's own check,
    declared once in its registry entry: :attr:`lnbench.names.NormInfo.check`; GroupNorm's
    ``model.norm_groups`` must divide ``model.hidden_size``), one line per problem. Run on the
    runs of a plan, so a compare that trains ``group`` among its ``compare.norms`` is checked too.
    A norm's own key set away from its default while no run trains that norm is refused too
    (``model.norm_groups: 4`` in a LayerNorm-only run), as :func:`check_keys_apply` refuses
    another family's key: the value would be recorded as if it had been used."""
    cfgs = list(cfgs)
    problems: list[str] = []
    for cfg in cfgs:
        info = NORM_REGISTRY.get(cfg.model.norm)
        problem = info.check(cfg.model) if info is not None and info.check is not None else None
        if problem is not None and problem not in problems:
            problems.append(problem)
    in_play = {"model.norm": list(dict.fromkeys(c.model.norm for c in cfgs))}
    refused = out_of_place(set_away("model", [c.model for c in cfgs]), in_play)
    problems += [refusal(rule, in_play, rule.key) for rule in refused]
    if problems:
        raise ConfigError("\n".join(problems))


def check_family_reads_task(cfgs: Iterable[RunConfig]) -> None:
    """Raise :class:`ConfigError` if a run's model family cannot read its task's inputs: a family that
    reads one vector per example (:attr:`lnbench.names.FamilyInfo.reads_vectors`: the MLP) needs a
    task of T = 1 (``data.mnist_order: flat``), and the sequence families a task of T >= 2 (not
    ``flat``). Run on the runs of a plan, so each family of a compare is checked; the families one
    value refuses are named in one line, with the values they all read."""
    problems: dict[tuple, list[str]] = {}  # what is wrong -> the families it is wrong for
    for cfg in cfgs:
        info, family = FAMILY_REGISTRY[cfg.model.family], cfg.model.family
        T = cfg.data.shape()[0]
        if info.reads_vectors == (T == 1):
            continue
        readable = tuple(order for order, steps in _orders(cfg).items() if (steps == 1) == info.reads_vectors)
        order_key = _order_key(cfg)
        if order_key is None or not readable:
            key: tuple = ("task", cfg.data.task, T, info.reads_vectors)
        else:
            key = ("order", order_key, getattr(cfg.data, order_key), T, readable)
        families = problems.setdefault(key, [])
        if family not in families:
            families.append(family)
    lines = []
    for key, families in problems.items():
        labels = joined([f"the {FAMILY_REGISTRY[f].label}" for f in families], "and")
        if key[0] == "task":
            _, task, T, vectors = key
            lines.append(
                f"data.task: {task} (T = {T}); {labels} read"
                + ("s" if len(families) == 1 else "")
                + (" one vector per example: data.task mnist with data.mnist_order flat" if vectors else " sequences")
            )
        else:
            _, order_key, value, T, readable = key
            shape = "one vector per example (T = 1)" if T == 1 else f"a sequence of T = {T}"
            lines.append(
                f"data.{order_key}: {value} is {shape}, which {labels} cannot read; "
                f"allowed with model.family {joined(families, 'and')}: {', '.join(readable)}"
            )
    if lines:
        raise ConfigError("\n".join(lines))


def _order_key(cfg: RunConfig) -> str | None:
    """The task's key that orders an image into a sequence (``digits_order``, ``mnist_order``), if any."""
    return next((k for k in TASKS[cfg.data.task].keys if k.endswith("_order")), None)


def _orders(cfg: RunConfig) -> dict[str, int]:
    """Each value of the task's order key (:func:`_order_key`) -> the T it gives; {} without one."""
    key = _order_key(cfg)
    if key is None:
        return {}
    values = get_args(DataConfig.model_fields[key].annotation)
    return {v: TASKS[cfg.data.task].shape(cfg.data.model_copy(update={key: v}))[0] for v in values}


def check_not_overridden(cfg: RunConfig, owned: dict[str, str]) -> None:
    """Raise :class:`ConfigError` if the config gives a model key that the experiment sets itself
    in every child (``owned``: ``{"norm": "compare.norms", ...}``) a value other than its default:
    the value would be ignored without a word, e.g. ``compare --set model.norm=rms`` trains
    ``compare.norms``. (The default is let through: an experiment's own config.yaml, read back by
    ``--resume``, spells out every key.)"""
    defaults = ModelConfig()
    for key, owner in owned.items():
        value = getattr(cfg.model, key)
        if value != getattr(defaults, key):
            section, field = owner.split(".")
            example = f"[{value}]" if isinstance(getattr(getattr(cfg, section), field), list) else value
            raise ConfigError(
                f"model.{key}: this experiment sets it from {owner} in every run; set {owner} instead, and "
                f"remove model.{key} ({value}) from the config file or --set (e.g. --set {owner}={example})"
            )


def check_lr_used(cfgs: Iterable[RunConfig], overrides: Iterable[str]) -> None:
    """Raise :class:`ConfigError` if ``--set train.lr`` (in ``overrides``) is used by none of the
    runs ``cfgs`` of a plan: ``train.lr_by_batch_size`` gives each of their batch sizes its own rate,
    so the value would be recorded in config.yaml as if it had been used. (A config file's
    ``train.lr`` is let through: a child run's config.yaml records its experiment's.)"""
    given = [o.strip() for o in overrides if o.partition("=")[0].strip() == "train.lr"]
    cfgs = list(cfgs)
    if not given or not cfgs or any(c.train.batch_size not in (c.train.lr_by_batch_size or {}) for c in cfgs):
        return
    rates = {c.train.batch_size: c.train.batch_lr for c in cfgs}
    table = ", ".join(f"{b}: {show_value(rates[b])}" for b in sorted(rates))
    raise ConfigError(
        f"--set {given[-1]}: no run of this plan trains at it: train.lr_by_batch_size gives each of its batch "
        f"sizes its own rate ({table}); set the rates there, or remove --set train.lr"
    )


def check_grid_keys_apply(cfg: RunConfig) -> None:
    """For ``lnbench sweep``: raise :class:`ConfigError` if a model key set in the config or swept
    in ``sweep.grid`` applies to no family the sweep trains (the grid's ``model.family`` values,
    else ``model.family``), as :func:`check_keys_apply` does for train and compare: its cells
    would train one model several times under different names. A swept key of one family in a
    grid that also trains the other is refused too: the other family's cells would repeat."""
    grid = cfg.sweep.grid or {}
    families = sorted(set(grid.get("model.family") or [cfg.model.family]))
    check_keys_apply(cfg, families)
    owned = owners("model.family")
    problems = []
    for key in grid:
        if key not in owned:
            continue
        owner = " and ".join(owned[key])
        others = [f for f in families if f not in owned[key]]
        if others == families:
            problems.append(
                f"sweep.grid: {key}: applies to the {owner} only, and this sweep trains {', '.join(families)}; "
                f"remove it from the grid (or sweep model.family: [{', '.join(owned[key])}])"
            )
        elif others:
            problems.append(
                f"sweep.grid: {key}: applies to the {owner} only, and the grid's model.family also trains "
                f"{', '.join(others)}, whose cells would repeat for each value; sweep it in a {owner}-only sweep"
            )
    if problems:
        raise ConfigError("\n".join(problems))


def memory_needed(cfg: RunConfig, members: int = 1) -> int:
    """A rough upper estimate of the peak memory, in bytes, of training ``members`` seeds of
    ``cfg`` at once: generating one split in float64 (~36 bytes per value), every member's
    splits in float32 twice (kept, and stacked for training), the baselines' float64 copies of
    the training split, the model's parameters with their gradients and Adam's two moments
    (16 bytes each), and the activations of the largest forward pass kept for a backward pass
    (the whole test split at once for the probes; a Transformer's attention is T x T per head)."""
    d, m = cfg.data, cfg.model
    (T, D, _), H = d.shape(), m.hidden_size
    per_seq = T * D
    generate = 36 * max(d.n_train, d.n_test) * per_seq
    kept = 8 * members * (d.n_train + d.n_test) * per_seq
    baselines = 24 * d.n_train * per_seq
    params, per_token, attention = FAMILY_REGISTRY[m.family].memory(H, D, T, m)
    batch = max(cfg.train.batch_size, d.n_test)
    activations = 4 * members * batch * (T * per_token + attention)
    return generate + kept + baselines + 16 * members * params + activations


def available_memory() -> int | None:
    """Bytes of memory available to a new process (Linux ``MemAvailable``), or None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(cfg: RunConfig, members: int = 1) -> None:
    """Raise :class:`ConfigError` if :func:`memory_needed` exceeds the available memory."""
    need, have = memory_needed(cfg, members), available_memory()
    if have is not None and need > have:
        d, m = cfg.data, cfg.model
        (T, D, _) = d.shape()
        model = f"{m.family}, model.hidden_size {m.hidden_size}"
        keys = "data.seq_len, model.hidden_size or model.num_layers"
        if "d_ff" in FAMILY_REGISTRY[m.family].keys:
            model += f", model.d_ff {m.d_ff or 4 * m.hidden_size}"
            keys = "data.seq_len, model.hidden_size, model.d_ff or model.num_layers"
        model += f", model.num_layers {m.num_layers}"
        fit = next((k for k in range(members - 1, 0, -1) if memory_needed(cfg, k) <= have), 0)
        seeds = f"set seeds to at most {plural(fit, 'seed')} (e.g. seeds: {cfg.seed_list[:fit]}), or " if fit else ""
        raise ConfigError(
            f"data and model: this config needs about {need / 2**30:.1f} GiB of memory "
            f"({d.n_train} + {d.n_test} sequences of {T} x {D} values, {model}, "
            f"{plural(members, 'seed')} at once), more than the {have / 2**30:.1f} GiB available; {seeds}lower "
            "data.n_train, data.n_test, " + keys
        )


def check_memory_of_families(
    cfg: RunConfig, families: Iterable[str], batch_sizes: Iterable[int] = (), members: int | None = None
) -> None:
    """:func:`check_memory` for each model family an experiment trains from ``cfg`` at its
    largest batch size, with ``members`` seeds at once (default: all of ``cfg``'s; one for a family
    whose members are too large to train together, :attr:`lnbench.names.FamilyInfo.member_fits`):
    a compare, a batch-size sweep or a claims regime does not train ``model.family``."""
    batch = max([cfg.train.batch_size, *batch_sizes])
    members = len(cfg.seed_list) if members is None else members
    T, H = cfg.data.shape()[0], cfg.model.hidden_size
    for family in families:
        fits = FAMILY_REGISTRY[family].member_fits
        at_once = members if fits is None or fits(batch, T, H) else 1
        check_memory(cfg.with_changes(model__family=family, train__batch_size=batch), at_once)


def _flatten(node, prefix: str = "") -> dict:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): node}


def check_not_a_child(run_dir) -> None:
    """Raise :class:`ConfigError` if ``run_dir`` is a child run of an experiment folder (its parent
    folder's run.json), naming the experiment to resume instead: a child goes on with its experiment."""
    from pathlib import Path

    from lnbench.records.folder import RunFolder

    run_dir = Path(run_dir)
    parent = RunFolder(run_dir.resolve().parent).manifest()
    if parent is not None and (run_dir / "summary.json").is_file():
        return  # an experiment inside another's folder (a card's science claims run): resumed as itself
    if parent is not None and parent.get("kind"):
        kind = parent["kind"]
        raise ConfigError(
            f"--resume {run_dir}: a run of the {kind} experiment {run_dir.parent}; "
            f"resume the experiment: lnbench {kind} --resume {run_dir.parent}"
        )


def check_resume(run_dir, config_yaml: str, kind: str) -> None:
    """Raise :class:`ConfigError` unless ``run_dir`` is a ``kind`` experiment folder (not a child
    run of one, :func:`check_not_a_child`) whose config.yaml is ``config_yaml`` (the resolved config
    of the resumed command); a difference is named key by key (``train.epochs: 50 in the folder, 3 now``)."""
    from pathlib import Path

    import yaml

    from lnbench.records.folder import RunFolder

    run_dir = Path(run_dir)
    check_not_a_child(run_dir)
    folder = RunFolder(run_dir)
    manifest, stored = folder.manifest(), folder.config_text()
    if manifest is None or stored is None:
        raise ConfigError(
            f"--resume {run_dir}: not an experiment folder (no readable run.json and config.yaml)"
        ) from None
    if manifest.get("kind") != kind:
        raise ConfigError(f"--resume {run_dir}: a {manifest.get('kind')!r} folder, not {kind!r}")
    if stored == config_yaml:
        return
    from lnbench.config.identity import without_added_keys

    # a folder written before a key was added lacks it: at its neutral value it is the same config
    old, new = (_flatten(without_added_keys(yaml.safe_load(text) or {})) for text in (stored, config_yaml))
    changed = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    if not changed and list(old) == list(new):
        return
    if not changed:  # the same keys and values in another order: claims' regimes (--task order)
        raise ConfigError(
            f"--resume {run_dir}: the same settings in another order (claims: give --task/--tasks in the "
            "folder's order, as its config.yaml lists the regimes)"
        )
    from lnbench.config.identity import ADDED_KEYS

    def value(flat: dict, k: str) -> str:  # an added key left out at its neutral value has that value
        return show_value(flat[k]) if k in flat else show_value(ADDED_KEYS[k]) if k in ADDED_KEYS else "absent"

    shown = "; ".join(f"{k}: {value(old, k)} in the folder, {value(new, k)} now" for k in changed[:5]) + (
        f"; and {len(changed) - 5} more" if len(changed) > 5 else ""
    )
    raise ConfigError(
        f"--resume {run_dir}: the config changed ({shown}); resume with the folder's own config: {run_dir / 'config.yaml'}"
    )
