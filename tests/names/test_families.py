"""The model-family registry (lnbench.names.families, FAMILY_REGISTRY): a family registered from outside
lnbench is built, trained through compare, labelled and grouped from its entry alone."""

from __future__ import annotations

import json

import pytest
from conftest import TINY_OVERRIDES

from lnbench import names
from lnbench.config import ConfigError, load_config
from lnbench.experiments import driver
from lnbench.experiments.registry import EXPERIMENTS
from lnbench.names import FAMILY_REGISTRY, FamilyInfo, register_family

pytestmark = pytest.mark.e2e


@pytest.fixture
def toy_family():
    """``meanpool``: registered for this test only (every module reads the one registry dict)."""
    info = FamilyInfo(
        "MeanPool (toy)",
        recurrent=False,
        placements=(),
        options={},
        seeds_together=lambda norm, batch_size: False,
        memory=lambda H, D, T, m: (H * D + 3 * H, 4 * H, 0),
        cost=0.5,
        builder="toy_family:MeanPool",
    )
    register_family("meanpool", info)
    yield info
    del FAMILY_REGISTRY["meanpool"], names.FAMILIES["meanpool"]


def test_an_unknown_family_is_one_line_naming_the_registered_ones():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["model.family=gru"])
    assert str(err.value).endswith("model.family: Input should be 'rnn', 'lstm', 'transformer' or 'mlp' (got gru)")


def test_a_registered_family_trains_through_compare(toy_family, tmp_path):
    cfg = load_config(
        None,
        [*TINY_OVERRIDES, "seeds=[0,1]", "compare.families=[meanpool, rnn]", "compare.norms=[none, layer]", "compare.placements=[joint]"],
    )  # fmt: skip
    result = driver.run(EXPERIMENTS["compare"], cfg, runs_dir=tmp_path)
    assert result.status == "completed"
    rows = [r for r in result.rows if r.family == "meanpool"]
    assert [(r.norm, r.seed, r.status) for r in rows] == [
        (n, s, "completed") for n in ("none", "layer") for s in (0, 1)
    ]
    summary = json.loads((result.path / "summary.json").read_text())
    groups = {a.get("group") or a["family"] for a in summary["aggregate"]}
    assert "meanpool" in groups
    manifest = json.loads((result.path / "meanpool_layer_seed0" / "run.json").read_text())
    assert manifest["ensemble"]["mechanism"] == "sequential"  # its entry's seeds_together
    assert "MeanPool (toy)" in (result.path / "report.html").read_text()
