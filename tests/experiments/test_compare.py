"""The placement reaches each RNN child's config and name; the Transformer has none."""

from __future__ import annotations

from conftest import REPO

from lnbench.config import load_config
from lnbench.experiments import driver
from lnbench.experiments.compare import COMPARE


def test_the_placement_reaches_the_child_config_and_name():
    cfg = load_config(REPO / "configs" / "compare.yaml", ["seeds=[0,1]", "compare.norms=[none,layer]"])
    assert cfg.compare.placements == ["joint", "separate"]  # the shipped default compares both
    children = [
        (c.name, c.model.family, c.model.norm_placement, c.model.norm)
        for cell in driver.prepare(COMPARE, cfg)
        for c in cell.cfgs
    ]
    rnn = [(name, placement, norm) for name, family, placement, norm in children if family == "rnn"]
    assert rnn == [
        (f"rnn-{p}_{n}_seed{s}", p, n) for p in ("joint", "separate") for n in ("none", "layer") for s in (0, 1)
    ]
    transformer = [name for name, family, _, _ in children if family == "transformer"]
    assert transformer == [f"transformer_{n}_seed{s}" for n in ("none", "layer") for s in (0, 1)]


def test_without_placements_the_children_keep_their_names():
    cfg = load_config(
        None, ["seeds=[0]", "compare.families=[rnn]", "compare.norms=[layer]", "model.norm_placement=separate"]
    )
    (cell,) = driver.prepare(COMPARE, cfg)
    assert [(c.name, c.model.norm_placement) for c in cell.cfgs] == [("rnn_layer_seed0", "separate")]
