"""``model.norm_gain_init`` sets every norm's initial gain in every family, changes
nothing else, is recorded, and compare puts it on an axis with one Holm family per gain."""

from __future__ import annotations

import json

import pytest
import torch

from lnbench.analysis.comparisons import compare_comparisons
from lnbench.config import ConfigError, load_config
from lnbench.experiments import driver
from lnbench.experiments.compare import COMPARE
from lnbench.nn.base import Norm
from lnbench.nn.models import build_model, initial_gain
from lnbench.records.schema import SummaryRow

FAMILIES = ("rnn", "lstm", "transformer")
GAINED = ("batch", "layer", "rms")  # the kinds with a gain on activations


def model(family: str, norm: str, gain: float | None, seed: int = 0, placement: str = "joint"):
    sets = [f"model.family={family}", f"model.norm={norm}"] + ([f"model.norm_gain_init={gain}"] if gain else [])
    sets += [f"model.norm_placement={placement}"] if family == "rnn" else []
    cfg = load_config(None, sets)
    torch.manual_seed(seed)
    return cfg, build_model(cfg.model, 64, 20)


def norm_layers(m: torch.nn.Module) -> list[Norm]:
    return [mod for mod in m.modules() if isinstance(mod, Norm)]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("norm", GAINED)
def test_every_gain_of_every_norm_starts_at_the_value_and_nothing_else_changes(family, norm):
    placement = "separate" if family == "rnn" else "joint"  # the RNN's two norms
    _, default = model(family, norm, None, placement=placement)
    _, tenth = model(family, norm, 0.1, placement=placement)
    layers = norm_layers(tenth)
    assert len(layers) >= 2  # every position: RNN h and x, LSTM h, x and c, Transformer input, blocks, final
    assert all(torch.equal(layer.gamma, torch.full_like(layer.gamma, 0.1)) for layer in layers)
    # the same seed gives the same weights: only the gains differ, so the runs stay paired
    other = {k: v for k, v in default.state_dict().items() if not k.endswith("gamma")}
    assert other.keys() == {k for k in tenth.state_dict() if not k.endswith("gamma")}
    assert all(torch.equal(v, tenth.state_dict()[k]) for k, v in other.items())


def test_null_keeps_each_papers_gains_and_a_value_overrides_the_bn_lstm():
    assert initial_gain(model("lstm", "batch", None)[0].model) == 0.1  # Cooijmans et al. 2016, section 4.2
    assert all(
        float(n.gamma.detach().mean()) == pytest.approx(0.1) for n in norm_layers(model("lstm", "batch", None)[1])
    )
    assert initial_gain(model("lstm", "layer", None)[0].model) == 1.0  # Ba et al. 2016
    _, bn_at_one = model("lstm", "batch", 1.0)
    assert all(torch.equal(n.gamma, torch.ones_like(n.gamma)) for n in norm_layers(bn_at_one))
    for family in FAMILIES:
        assert initial_gain(model(family, "none", 0.5)[0].model) is None  # no gain to set
        assert initial_gain(model(family, "weight", 0.5)[0].model) is None
        assert initial_gain(model(family, "rms", 0.5)[0].model) == 0.5


def test_a_gain_that_is_not_positive_is_one_line_naming_the_key():
    for bad in ("0", "-1", "abc"):
        with pytest.raises(ConfigError, match=r"model\.norm_gain_init") as err:
            load_config(None, [f"model.norm_gain_init={bad}"])
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"compare.norm_gain_inits: duplicate"):
        load_config(None, ["compare.norm_gain_inits=[0.1, 0.1]"])


def test_the_gain_reaches_each_child_config_name_and_metrics(tmp_path):
    cfg = load_config(
        None,
        [
            "seeds=[0]",
            "compare.families=[lstm]",
            "compare.norms=[batch,layer]",
            "compare.norm_gain_inits=[null, 0.1]",
        ],
    )
    children = [
        (c.name, c.model.norm, c.model.norm_gain_init) for cell in driver.prepare(COMPARE, cfg) for c in cell.cfgs
    ]
    assert children == [
        ("lstm_batch_seed0", "batch", None),
        ("lstm_layer_seed0", "layer", None),
        ("lstm-gain0.1_batch_seed0", "batch", 0.1),
        ("lstm-gain0.1_layer_seed0", "layer", 0.1),
    ]
    small = ["data.n_train=64", "data.n_test=16", "train.epochs=1", "model.hidden_size=8"]
    run = load_config(None, small + ["model.family=lstm", "model.norm=batch", "model.norm_gain_init=0.5"])
    from lnbench.experiments import train

    result = train(run, runs_dir=tmp_path)
    metrics = json.loads((result.path / "metrics.json").read_text())
    assert (metrics["norm_gain_init"], metrics["initial_gain"]) == (0.5, 0.5)
    assert "norm_gain_init: 0.5" in (result.path / "config.yaml").read_text()


def row(norm: str, seed: int, acc: float, gain: float | None) -> SummaryRow:
    return SummaryRow(
        family="lstm", norm=norm, batch_size=64, seed=seed, status="completed", epochs_completed=10,
        final_test_acc=acc, final_test_acc_batch_stats=None, final_train_loss=0.3, final_test_loss=0.3,
        mean_train_loss=0.3, first_epoch_at_target=None, n_test=1000, norm_gain_init=gain,
        initial_gain=gain if gain is not None else (0.1 if norm == "batch" else 1.0),
    )  # fmt: skip


def test_norms_are_compared_only_at_one_gain():
    # LN gains 1 is far below BN gains 0.1 (the papers' inits); at gains 0.1 they are equal
    rows = [row("batch", s, 0.98 + 0.001 * s, None) for s in range(5)]
    rows += [row("layer", s, 0.85 + 0.002 * s, None) for s in range(5)]
    rows += [row("batch", s, 0.98 + 0.001 * s, 0.1) for s in range(5)]
    rows += [row("layer", s, 0.98 + 0.0012 * s, 0.1) for s in range(5)]
    comparisons = {c.holm_family: c for c in compare_comparisons(rows) if c.metric == "final_test_acc"}
    assert set(comparisons) == {"lstm/final_test_acc", "lstm@0.1/final_test_acc"}
    assert comparisons["lstm/final_test_acc"].mean_diff == pytest.approx(0.98 + 0.002 - 0.85 - 0.004)
    assert comparisons["lstm@0.1/final_test_acc"].mean_diff == pytest.approx(0.002 - 0.0024)
