"""Which config keys apply only while another key has some values ("key K applies only when X"),
read from the registry entries that own them, and the one check and the one message that say so.

The owners declare their keys, each once, in their own entries (a newcomer adds its keys there
and nothing here):

- a task: :attr:`lnbench.names.Task.keys` (``data`` keys; ``data.task`` decides), and
  :attr:`lnbench.names.Task.applies_when` for a key of its own that applies only at some values of
  another of its keys (``permutation_seed`` at ``digits_order: permuted``);
- a model family: :attr:`lnbench.names.FamilyInfo.options` (``model`` keys; ``model.family`` decides);
- a norm kind: :attr:`lnbench.names.NormInfo.options` (``model`` keys; ``model.norm`` decides);
- an optimizer and a learning-rate schedule: :data:`lnbench.config.optimizers.OPTIMIZERS` and
  :data:`~lnbench.config.optimizers.LR_SCHEDULES` (``train`` keys; ``train.optimizer`` and
  ``train.lr_schedule`` decide).

:func:`key_rules` reads them into one table of :class:`Rule` s, in the registries' order. A key
set away from its default where it does not apply would be recorded as if it had been used:
:func:`out_of_place` finds such keys (the one check) and :func:`refusal` words each (the one
message, exit 2 on the command line). Each section of one config checks its own keys
(:func:`section_refusals`: a config has one task, one optimizer); the keys of the deciding keys
in :data:`PLAN_KEYS`, which an experiment varies over its runs (``compare.families``,
``compare.norms``), are checked over the runs of a plan (:mod:`lnbench.config.checks`). A run's
config.yaml leaves out the model keys that do not apply to its family and norm
(:meth:`lnbench.config.RunConfig.to_yaml`).

Pure data and functions: no torch, no pydantic.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lnbench.config.optimizers import LR_SCHEDULES, OPTIMIZERS
from lnbench.config.words import joined
from lnbench.names import FAMILY_REGISTRY, NORM_REGISTRY, TASKS, norm_label

#: The deciding keys an experiment varies over the runs of its plan (compare's families and
#: norms): their keys are checked over the plan's runs, not within one config's section.
PLAN_KEYS = ("model.family", "model.norm")


@dataclass(frozen=True)
class Rule:
    """``key`` applies only while the key ``by`` has one of ``values``: ``data.offset_std`` only
    while ``data.task`` is trend. ``within``: the rule holds only while another key has one value
    (``data.permutation_seed`` applies only at ``data.digits_order`` permuted, within the digits
    task: ``("data.task", "digits")``)."""

    key: str
    by: str
    values: tuple[Any, ...]
    within: tuple[str, Any] | None = None


def key_rules() -> list[Rule]:
    """The key-ownership table, read from the registries now (a family registered later is in it):
    one :class:`Rule` per owned key and deciding key, its ``values`` every owner that declares the
    key, in the registries' order."""
    owned: dict[tuple[str, str, tuple[str, Any] | None], list[Any]] = {}

    def own(section: str, keys: Iterable[str], by: str, owner: Any, within: tuple[str, Any] | None = None) -> None:
        for key in keys:
            owned.setdefault((f"{section}.{key}", by, within), []).append(owner)

    for name, task in TASKS.items():
        own("data", task.keys, "data.task", name)
    for name, task in TASKS.items():
        for key, (other, values) in task.applies_when.items():
            for value in values:
                own("data", [key], f"data.{other}", value, within=("data.task", name))
    for name, family in FAMILY_REGISTRY.items():
        own("model", family.keys, "model.family", name)
    for name, norm in NORM_REGISTRY.items():
        own("model", norm.keys, "model.norm", name)
    for name, optimizer in OPTIMIZERS.items():
        own("train", optimizer.keys, "train.optimizer", name)
    for name, schedule in LR_SCHEDULES.items():
        own("train", schedule.keys, "train.lr_schedule", name)
    return [Rule(key, by, tuple(values), within) for (key, by, within), values in owned.items()]


def owners(by: str) -> dict[str, tuple[Any, ...]]:
    """Each key that applies only at some values of ``by`` (for every value of the other keys) ->
    those values: ``owners("model.family")["model.d_ff"] == ("transformer",)``."""
    return {rule.key: rule.values for rule in key_rules() if rule.by == by and rule.within is None}


def set_away(section: str, models: Iterable[Any]) -> set[str]:
    """The keys (``section.key``) that any of ``models`` (that section's pydantic models, one per
    run) gives a value other than its default."""
    out = set()
    for model in models:
        for key, info in type(model).model_fields.items():
            if getattr(model, key) != info.get_default(call_default_factory=True):
                out.add(f"{section}.{key}")
    return out


def out_of_place(keys: Collection[str], in_play: Mapping[str, Sequence[Any]]) -> list[Rule]:
    """The one check: the rules that refuse ``keys`` (keys set away from their defaults), in the
    table's order. ``in_play``: each deciding key checked -> the values it takes in the runs
    (``{"model.family": ["rnn"]}``; for one config, its own values); a rule of another deciding
    key is not checked. A rule refuses its key when none of those values is one of its own (and
    its ``within`` key takes its value)."""
    refused = []
    for rule in key_rules():
        if rule.key not in keys or rule.by not in in_play:
            continue
        if rule.within is not None and rule.within[1] not in in_play.get(rule.within[0], ()):
            continue
        if not any(value in rule.values for value in in_play[rule.by]):
            refused.append(rule)
    return refused


def _owners_words(rule: Rule) -> str:
    """The rule's owners as a message names them: ``the trend and adding tasks``, ``the
    transformer``, ``GroupNorm``, ``optimizer sgd or rmsprop``."""
    if rule.by == "data.task":
        return f"the {' and '.join(rule.values)} task{'s' if len(rule.values) > 1 else ''}"
    if rule.by == "model.family":
        return f"the {' and '.join(rule.values)}"
    if rule.by == "model.norm":
        return " and ".join(norm_label(n) for n in rule.values)
    return f"{rule.by.partition('.')[2]} {joined(rule.values)}"


def _state_words(by: str, values: Sequence[Any]) -> str:
    """What the runs give the deciding key: ``task is digits``, ``this run trains rnn, transformer``
    (the families as given, the norms by their labels), ``optimizer is adam``."""
    if by == "data.task":
        return f"task is {values[0]}"
    if by == "model.family":
        return f"this run trains {', '.join(values)}"
    if by == "model.norm":
        return f"this run trains {', '.join(norm_label(n) for n in values)}"
    return f"{by.partition('.')[2]} is {values[0]}"


def refusal(rule: Rule, in_play: Mapping[str, Sequence[Any]], shown: str) -> str:
    """The one message: the line that refuses the key of ``rule`` (``shown``: as the line names it,
    ``offset_std`` in its section's check, ``model.d_ff`` in a plan's):
    ``offset_std: applies to the trend task only, and task is adding; remove it``. A key that
    applies only at a value of its task's own key says no "remove it" (as before the table)."""
    remedy = "" if rule.within is not None else "; remove it"
    return f"{shown}: applies to {_owners_words(rule)} only, and {_state_words(rule.by, in_play[rule.by])}{remedy}"


def section_refusals(section: str, model: Any) -> list[tuple[Rule, str]]:
    """For a section's own check (``data``, ``train``): the keys of ``model`` (the section of one
    config) set away from their defaults where the section's own values say they do not apply,
    each with the line refusing it (the key named without its section, which the error adds), in
    the table's order. The keys of :data:`PLAN_KEYS` are left to the plan's checks."""
    in_play = {f"{section}.{key}": (getattr(model, key),) for key in type(model).model_fields}
    in_play = {by: values for by, values in in_play.items() if by not in PLAN_KEYS}
    refused = out_of_place(set_away(section, [model]), in_play)
    return [(rule, refusal(rule, in_play, rule.key.partition(".")[2])) for rule in refused]
