"""Checks of a whole experiment before anything is written: seeds, batch sizes, memory, and
config keys that apply to no model being trained. Each raises :class:`ConfigError` with one
line per problem; the CLI turns it into exit code 2 before a run folder exists."""

from __future__ import annotations

import os
from collections.abc import Iterable

from lnbench.config import DEFAULT_NUM_SEEDS, FAMILY_KEYS, MAX_SEED, ConfigError, ModelConfig, RunConfig


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
    too_big = [b for b in cfg.sweep.batch_sizes if b > cfg.data.n_train]
    if too_big:
        raise ConfigError(
            f"sweep.batch_sizes: {too_big} exceed data.n_train ({cfg.data.n_train}); every batch size must be <= n_train"
        )


def check_keys_apply(cfg: RunConfig, families: Iterable[str]) -> None:
    """Raise :class:`ConfigError` if the config gives a model key a value other than its default
    while that key applies to none of the model ``families`` being trained (``model.num_layers:
    2`` for an RNN-only run, ...): the value would be recorded as if it had been used. (A child
    run's config.yaml leaves such keys out, see :meth:`RunConfig.to_yaml`.)"""
    families = set(families)
    defaults = ModelConfig()
    unused = [
        k for fam, keys in FAMILY_KEYS.items() if fam not in families for k in keys
        if k in cfg.model.model_fields_set and getattr(cfg.model, k) != getattr(defaults, k)
    ]
    if unused:
        owner = {k: fam for fam, keys in FAMILY_KEYS.items() for k in keys}
        raise ConfigError("\n".join(
            f"model.{k}: applies to the {owner[k]} only, and this run trains {', '.join(sorted(families))}; remove it"
            for k in unused
        ))


def memory_needed(cfg: RunConfig, members: int = 1) -> int:
    """A rough upper estimate of the peak memory, in bytes, of training ``members`` seeds of
    ``cfg`` at once: generating one split in float64 (~36 bytes per value), every member's
    splits in float32 twice (kept, and stacked for training), the baselines' float64 copies of
    the training split, and the probes' graph over the test split (~24 bytes per value)."""
    d = cfg.data
    per_seq = d.seq_len * d.features
    generate = 36 * max(d.n_train, d.n_test) * per_seq
    kept = 8 * members * (d.n_train + d.n_test) * per_seq
    baselines = 24 * d.n_train * per_seq
    probes = 24 * members * d.n_test * per_seq * max(1, cfg.model.hidden_size // max(d.features, 1))
    return generate + kept + baselines + probes


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
        d = cfg.data
        raise ConfigError(
            f"data.n_train: this config needs about {need / 2**30:.1f} GiB of memory "
            f"({d.n_train} + {d.n_test} sequences of {d.seq_len} x {d.features} values, {members} seed(s) at once), "
            f"more than the {have / 2**30:.1f} GiB available; lower data.n_train or data.n_test"
        )
