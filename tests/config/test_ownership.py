"""The key-ownership table (lnbench.config.ownership): every "key K applies only when X" read from
the registry entries that declare the keys, one check and one message for all of them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lnbench import names
from lnbench.config import ConfigError, DataConfig, ModelConfig, TrainConfig, load_config
from lnbench.config.checks import check_keys_apply
from lnbench.config.optimizers import LR_SCHEDULES, OPTIMIZERS
from lnbench.config.ownership import Rule, key_rules, out_of_place, owners, refusal, section_refusals
from lnbench.names import FAMILY_REGISTRY, NORM_REGISTRY, TASKS, register_family
from lnbench.names.families import D_FF

SECTIONS = {"data": DataConfig, "model": ModelConfig, "train": TrainConfig}


def _declared() -> dict[tuple[str, str], list[str]]:
    """Oracle: (key, deciding key) -> the owners, read entry by entry from the registries."""
    out: dict[tuple[str, str], list[str]] = {}
    for by, section, registry, keys_of in (
        ("data.task", "data", TASKS, lambda e: e.keys),
        ("model.family", "model", FAMILY_REGISTRY, lambda e: e.keys),
        ("model.norm", "model", NORM_REGISTRY, lambda e: tuple(e.options)),
        ("train.optimizer", "train", OPTIMIZERS, lambda e: e.keys),
        ("train.lr_schedule", "train", LR_SCHEDULES, lambda e: e.keys),
    ):
        for name, entry in registry.items():
            for key in keys_of(entry):
                out.setdefault((f"{section}.{key}", by), []).append(name)
    return out


def test_the_table_is_every_key_each_registry_entry_declares_with_its_owners():
    table = {(r.key, r.by): list(r.values) for r in key_rules() if r.within is None}
    assert table == _declared()
    assert all(key.partition(".")[2] in SECTIONS[key.partition(".")[0]].model_fields for key, _ in table)


def test_a_tasks_conditional_key_is_a_rule_within_that_task():
    within = [r for r in key_rules() if r.within is not None]
    assert within == [
        Rule("data.permutation_seed", "data.digits_order", ("permuted",), ("data.task", "digits")),
        Rule("data.permutation_seed", "data.mnist_order", ("permuted",), ("data.task", "mnist")),
    ]


@pytest.mark.parametrize(
    ("keys", "in_play", "refused"),
    [
        (["data.offset_std", "data.seq_len"], {"data.task": ["adding"]}, ["data.offset_std"]),
        (["data.seq_len"], {"data.task": ["digits"]}, ["data.seq_len"]),
        (
            ["data.permutation_seed"],
            {"data.task": ["digits"], "data.digits_order": ["rows"]},
            ["data.permutation_seed"],
        ),
        (["data.permutation_seed"], {"data.task": ["mnist"], "data.digits_order": ["rows"]}, []),  # digits' rule only
        (["model.d_ff", "model.forget_bias"], {"model.family": ["lstm", "rnn"]}, ["model.d_ff"]),
        (["model.norm_groups"], {"model.norm": ["layer", "group"]}, []),  # a plan that trains group among others
        (["model.norm_groups"], {"model.norm": ["layer"]}, ["model.norm_groups"]),
        (["train.momentum", "train.nesterov"], {"train.optimizer": ["rmsprop"]}, ["train.nesterov"]),
        (["train.lr_gamma"], {"train.lr_schedule": ["step"]}, []),
        (["model.d_ff"], {"model.norm": ["layer"]}, []),  # a rule of a deciding key not in play is not checked
    ],
)
def test_the_one_check_refuses_a_key_none_of_whose_owners_is_in_play(keys, in_play, refused):
    """Oracle: the registries' declarations (trend alone reads offset_std, trend and adding seq_len,
    the transformer d_ff, GroupNorm norm_groups, sgd nesterov, step lr_gamma)."""
    assert [r.key for r in out_of_place(keys, in_play)] == refused


def test_the_one_message_names_the_owners_and_what_the_runs_give():
    (rule,) = out_of_place(["model.batch_norm_unbiased"], {"model.norm": ["none", "layer"]})
    assert refusal(rule, {"model.norm": ["none", "layer"]}, rule.key) == (
        "model.batch_norm_unbiased: applies to BatchNorm only, and this run trains NoNorm, LayerNorm; remove it"
    )


def test_a_section_checks_its_own_keys_and_leaves_the_plans_to_the_plan():
    """A ModelConfig of norm layer with norm_groups set is a valid section: a compare may train
    group from compare.norms (the plan's check refuses it otherwise)."""
    assert section_refusals("model", ModelConfig(norm="layer", norm_groups=4, d_ff=8)) == []
    [(rule, line)] = section_refusals("train", TrainConfig.model_construct(momentum=0.9))
    assert rule.key == "train.momentum" and line.startswith("momentum: applies to optimizer sgd or rmsprop only")


def test_owners_lists_the_keys_of_one_deciding_key():
    assert owners("data.task")["data.seq_len"] == ("trend", "adding")
    assert owners("model.family")["model.d_ff"] == ("transformer",)
    assert "data.permutation_seed" in owners("data.task")  # its conditional rules are not owners


@pytest.fixture
def toy_family_with_a_key():
    """``toyfam``: a family registered with the key ``d_ff`` of its own (as the transformer's)."""
    register_family("toyfam", replace(FAMILY_REGISTRY["rnn"], label="Toy", options={"d_ff": D_FF}))
    yield
    del FAMILY_REGISTRY["toyfam"], names.FAMILIES["toyfam"]


def test_a_newcomer_declares_its_key_in_its_entry_alone(toy_family_with_a_key):
    """A family's key needs its entry only: the table, the check and config.yaml follow."""
    cfg = load_config(None, ["model.d_ff=8"])
    check_keys_apply(cfg, ["toyfam"])  # its own key: no error
    with pytest.raises(ConfigError, match=r"^model.d_ff: applies to the transformer and toyfam only, and this run"):
        check_keys_apply(cfg, ["rnn"])


def test_every_owned_keys_description_names_its_owners():
    """A description's "X only" (``Trend only: ...``, ``sgd and rmsprop only: ...``) says the rule
    the table holds: each owner of the key is named (case aside) before the first "only" (or the
    first colon, for a description without one: seq_len's "trend and adding: at least 2")."""
    missing = []
    for rule in key_rules():
        section, _, leaf = rule.key.partition(".")
        text = SECTIONS[section].model_fields[leaf].description or ""
        head = text.split(" only")[0] if " only" in text else text.split(":")[0]
        words = {str(v).lower() for v in rule.values} | ({rule.by.partition(".")[2]} if rule.within else set())
        missing += [f"{rule.key}: {w}" for w in sorted(words) if w not in head.lower()]
    assert missing == []
