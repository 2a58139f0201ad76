"""A run's identity across versions of lnbench: what makes two configs the same run.

A run folder's config.yaml records every key of its version. A key added later is absent from
an older folder; :data:`ADDED_KEYS` holds each such key with the value that does what the older
folder did, and :func:`without_added_keys` leaves it out at that value, so a new key does not
make every earlier folder "changed" (``--resume``) or give its runs a new ``config_hash``
(:func:`identity_yaml`). :func:`effective_yaml` goes further: what a run trains, without the keys
that change nothing in its model, so that equal runs of one experiment are trained once.

Pure functions of configs as nested dicts (no pydantic): the schema's :class:`RunConfig` calls them.
"""

from __future__ import annotations

from typing import Any

import yaml

from lnbench.names import FAMILY_REGISTRY, NORM_REGISTRY, TASK_OPTIONS, norm_keys_without_effect

#: every norm kind's own keys (:attr:`lnbench.names.NormInfo.options`) at their defaults
NORM_OPTION_DEFAULTS = {
    f"model.{key}": option.default for info in NORM_REGISTRY.values() for key, option in info.options.items()
}

#: the model families' and the tasks' own keys declared ``added`` (:attr:`lnbench.names.KeyOption.added`),
#: at their defaults
ADDED_REGISTRY_OPTIONS = {
    **{
        f"model.{key}": option.default
        for info in FAMILY_REGISTRY.values()
        for key, option in info.options.items()
        if option.added
    },
    **{f"data.{key}": option.default for key, option in TASK_OPTIONS.items() if option.added},
}

#: Keys added after run folders were first written, each with the value that does what a folder
#: written before the key existed did (its config.yaml lacks the key). A run's identity
#: (:func:`identity_yaml`, ``config_hash``) and ``--resume``'s comparison leave such a
#: key out at that value, so a new key does not make every earlier folder "changed" and its
#: finished runs train again. Add a new key here with its neutral value.
ADDED_KEYS: dict[str, Any] = {
    "model.num_layers": 1,  # of the RNN and the LSTM (ADDED_FOR); the Transformer always had it
    **NORM_OPTION_DEFAULTS,  # every norm's own keys (model.norm_groups: 2), at their defaults
    "data.n_val": 0,
    "train.optimizer": "adam",
    "train.momentum": 0.0,
    "train.nesterov": False,
    "train.weight_decay": 0.0,
    # a folder written before this key decayed every parameter; at weight_decay 0 (every such folder
    # of the built-in configs) the key does nothing, and INERT_WHEN leaves it out at any value
    "train.weight_decay_params": "all",
    "train.lr_schedule": "constant",
    "train.lr_step_epochs": None,
    "train.lr_gamma": 0.1,
    "train.warmup_epochs": None,
    "train.lr_by_batch_size": None,
    "train.rmsprop_alpha": 0.99,
    "model.norm_eps": 1e-5,
    **ADDED_REGISTRY_OPTIONS,  # the family and task keys declared added (model.state_noise_std, data.mnist_order)
    # of the LSTM (ADDED_FOR): the RNN always had it; the LSTM's W_h was uniform before the key reached it
    "model.recurrent_init": "uniform",
}


#: An added key that was new for some model families only: the families it was added for (a
#: folder of another family always had it, and keeps it in its identity).
ADDED_FOR: dict[str, tuple[str, ...]] = {"model.num_layers": ("rnn", "lstm"), "model.recurrent_init": ("lstm",)}

#: An added key that does nothing while another key has a value (``key: (other key, value)``): left out
#: of the identity then, at any value, so an old folder at that value is the same run whatever the
#: key's default became (train.weight_decay_params at weight_decay 0: nothing is decayed either way).
INERT_WHEN: dict[str, tuple[str, Any]] = {"train.weight_decay_params": ("train.weight_decay", 0.0)}


def _value(raw: dict, key: str) -> Any:
    section, _, leaf = key.partition(".")
    return raw[section].get(leaf) if isinstance(raw.get(section), dict) else None


def without_added_keys(raw: Any) -> Any:
    """``raw`` (a config as nested dicts, or a mapping of configs: claims' regimes) without the
    :data:`ADDED_KEYS` at their neutral values (for the families of :data:`ADDED_FOR`), at any
    depth; ``raw`` itself is not changed."""
    if not isinstance(raw, dict):
        return raw
    out = {k: without_added_keys(v) for k, v in raw.items()}
    family = out["model"].get("family") if isinstance(out.get("model"), dict) else None
    for key, neutral in ADDED_KEYS.items():
        section, _, leaf = key.partition(".")
        if key in ADDED_FOR and family not in ADDED_FOR[key]:
            continue
        # None: the other key was left out above, at its own neutral value
        inert = key in INERT_WHEN and _value(out, INERT_WHEN[key][0]) in (None, INERT_WHEN[key][1])
        if isinstance(out.get(section), dict) and leaf in out[section] and (out[section][leaf] == neutral or inert):
            del out[section][leaf]
    return out


def identity_yaml(recorded: dict) -> str:
    """What makes a child run the same run (``config_hash``): its recorded config (config.yaml's
    body: its family's and norm's keys only) without the :data:`ADDED_KEYS` at their neutral
    values, so that a run written before such a key existed is the same run as one written after
    it at that value."""
    return yaml.safe_dump(without_added_keys(recorded), sort_keys=False)


def effective_yaml(recorded: dict) -> str:
    """What a run trains, as YAML: its recorded config without its ``name`` and without the model
    keys that change nothing in a model with its norm (:attr:`lnbench.names.NormInfo.keys_without_effect`:
    ``model.norm_gain_init`` with norm none or weight, ``model.norm_placement`` with none). Runs of
    one experiment with equal effective YAML give the same numbers: one is trained, the others
    copy it (:func:`lnbench.experiments.base.copy_sources`). ``recorded`` is not changed."""
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in recorded.items()}
    raw.pop("name")
    for key in norm_keys_without_effect(raw["model"]["norm"]):
        raw["model"].pop(key, None)
    return yaml.safe_dump(raw, sort_keys=False)
