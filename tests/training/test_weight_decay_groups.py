"""Which parameters ``train.weight_decay`` decays (:mod:`lnbench.training.optim`).

Oracles: nanoGPT's rule written out by hand for each model (a norm layer's gamma and beta, every
bias and weight norm's gains g in a zero-decay group; the weights decayed), torch's own optimizer
built from a hand-made pair of parameter groups, the same model alone for a seed ensemble, and
``torch.optim.AdamW(model.parameters())`` for ``weight_decay_params: all``.
"""

from __future__ import annotations

import pytest
import torch
from conftest import TINY_OVERRIDES

from lnbench.config import ModelConfig, RunConfig, TrainConfig, load_config
from lnbench.config.limits import ConfigError
from lnbench.nn.models import build_model
from lnbench.training.optim import build_optimizer, decay_groups

#: (family, norm) -> the names of the zero-decay group, by hand (every other parameter is decayed)
NOT_DECAYED = {
    ("rnn", "layer"): ["cell.norm.gamma", "cell.norm.beta", "head.bias"],
    ("rnn", "batch"): ["cell.norm.gamma", "cell.norm.beta", "head.bias"],
    ("rnn", "rms"): ["cell.bias", "cell.norm.gamma", "head.bias"],
    ("rnn", "weight"): ["cell.bias", "cell.g", "head.bias"],
    ("rnn", "none"): ["cell.bias", "head.bias"],
    ("lstm", "weight"): ["cell.bias", "cell.g_h", "cell.g_x", "head.bias"],
    ("lstm", "batch"): [
        "cell.bias",
        *(f"cell.norm_{k}.{p}" for k in "hxc" for p in ("gamma", "beta")),
        "head.bias",
    ],
    ("transformer", "layer"): [
        "input_norm.gamma",
        "input_norm.beta",
        "blocks.0.norm_1.gamma",
        "blocks.0.norm_1.beta",
        "blocks.0.attn.qkv.bias",
        "blocks.0.attn.proj.bias",
        "blocks.0.norm_2.gamma",
        "blocks.0.norm_2.beta",
        "blocks.0.mlp.0.bias",
        "blocks.0.mlp.2.bias",
        "norm_f.gamma",
        "norm_f.beta",
        "head.bias",
    ],
}


def _model(family: str, norm: str, seed: int = 0, **keys):
    torch.manual_seed(seed)
    cfg = ModelConfig(family=family, norm=norm, hidden_size=4, **keys)
    return build_model(cfg, 3, 4)


@pytest.mark.parametrize("family,norm", list(NOT_DECAYED), ids=[f"{f}-{n}" for f, n in NOT_DECAYED])
def test_the_norms_gains_and_biases_are_not_decayed_alone_or_in_an_ensemble(family, norm):
    """The zero-decay group is the hand-written list; a seed ensemble of the same model (every
    parameter with a leading member axis: a gain (S, 1, D), a bias (S, 1, H), weight norm's g (S, H))
    gets exactly the groups of its model alone."""
    decay = TrainConfig(weight_decay=0.1)
    solo = _model(family, norm)
    groups = decay_groups(solo, decay)
    names = [n for n, _ in solo.named_parameters()]
    assert groups == {"no_decay": NOT_DECAYED[family, norm], "decay": [n for n in names if n not in groups["no_decay"]]}
    assert all(solo.get_parameter(n).dim() == 2 for n in groups["decay"])  # the weights: (out, in)
    ensemble = type(solo).stack([solo, _model(family, norm, seed=1)])
    assert decay_groups(ensemble, decay) == groups
    assert decay_groups(solo, TrainConfig(weight_decay=0.1, weight_decay_params="all")) == {
        "decay": names,
        "no_decay": [],
    }


def _steps(model, opt, steps=4):
    gen = torch.Generator().manual_seed(3)
    X, y = torch.randn(8, 4, 3, generator=gen), torch.randint(0, 2, (8,), generator=gen)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        opt.step()


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd", "rmsprop"])
def test_the_optimizer_steps_as_torchs_own_over_a_hand_built_pair_of_groups(optimizer):
    """build_optimizer(model) with weight decay trains bit for bit as torch's optimizer (fused; RMSprop
    foreach) over
    [{W_hh, W_xh, head.weight}, {gamma, beta, head.bias; weight_decay 0}], and with
    weight_decay_params all as over model.parameters(); the gain then moves differently."""
    cfg = TrainConfig(optimizer=optimizer, lr=0.05, weight_decay=0.5)
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD, "rmsprop": torch.optim.RMSprop}
    how = {"foreach": True} if optimizer == "rmsprop" else {"fused": True}  # RMSprop has no fused form
    ours, theirs = _model("rnn", "layer"), _model("rnn", "layer")
    _steps(ours, build_optimizer(ours, cfg))
    p = dict(theirs.named_parameters())
    groups = [
        {"params": [p["cell.W_hh"], p["cell.W_xh"], p["head.weight"]]},
        {"params": [p["cell.norm.gamma"], p["cell.norm.beta"], p["head.bias"]], "weight_decay": 0.0},
    ]
    _steps(theirs, cls[optimizer](groups, lr=0.05, weight_decay=0.5, **how))
    for (name, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert torch.equal(a, b), name

    everything = _model("rnn", "layer")
    _steps(everything, build_optimizer(everything, cfg.model_copy(update={"weight_decay_params": "all"})))
    old = _model("rnn", "layer")
    _steps(old, cls[optimizer](old.parameters(), lr=0.05, weight_decay=0.5, **how))
    for (name, a), b in zip(everything.state_dict().items(), old.state_dict().values()):
        assert torch.equal(a, b), name
    assert not torch.equal(everything.cell.norm.gamma, ours.cell.norm.gamma)


def test_without_decay_the_optimizer_is_one_group_as_before():
    """weight_decay 0: one group of every parameter in named_parameters order, as
    torch.optim.Adam(model.parameters()) (so a checkpoint written before loads)."""
    model = _model("rnn", "layer")
    opt = build_optimizer(model, TrainConfig())
    assert len(opt.param_groups) == 1
    assert [id(p) for p in opt.param_groups[0]["params"]] == [id(p) for p in model.parameters()]
    assert len(build_optimizer(model, TrainConfig(weight_decay=0.1)).param_groups) == 2


def test_an_old_folder_keeps_its_identity_and_a_decayed_one_asks_for_all(tmp_path):
    """A config.yaml written before weight_decay_params (it decayed every parameter): at
    weight_decay 0 it is the same run whatever the key says now; at weight_decay > 0 it is the run
    of weight_decay_params all, not of the new default (weights), and --resume names the key."""
    import json

    import yaml

    from lnbench.config.checks import check_resume
    from lnbench.experiments.base import config_hash

    def old_hash(cfg: RunConfig) -> str:
        import hashlib

        raw = yaml.safe_load(cfg.identity_yaml())
        raw["train"].pop("weight_decay_params", None)  # as the code before the key wrote it
        return hashlib.sha256(yaml.safe_dump(raw, sort_keys=False).encode()).hexdigest()[:16]

    plain = RunConfig()
    assert "weight_decay_params" not in plain.identity_yaml()
    assert config_hash(plain.with_changes(train__weight_decay_params="all")) == config_hash(plain)
    decayed = plain.with_changes(train__weight_decay=0.01, train__weight_decay_params="all")
    assert "weight_decay_params" not in decayed.identity_yaml()
    assert config_hash(decayed) == old_hash(decayed)
    assert config_hash(decayed.with_changes(train__weight_decay_params="weights")) != config_hash(decayed)

    raw = yaml.safe_load(decayed.to_yaml(model_family_only=True))
    del raw["train"]["weight_decay_params"]
    (tmp_path / "run.json").write_text(json.dumps({"kind": "compare"}))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    check_resume(tmp_path, decayed.to_yaml(model_family_only=True), "compare")  # the same: no error
    now = decayed.with_changes(train__weight_decay_params="weights").to_yaml(model_family_only=True)
    with pytest.raises(ConfigError, match=r"train\.weight_decay_params: all in the folder, weights now"):
        check_resume(tmp_path, now, "compare")


@pytest.mark.parametrize("value", ["1e39", "1e300"])
def test_a_weight_decay_beyond_float32_is_a_one_line_error(value):
    """torch takes weight_decay as a float32 scalar (above ~3.4e38 its first step raises); the
    config stops it, naming the key and the bound."""
    with pytest.raises(ConfigError) as err:
        load_config(None, [f"train.weight_decay={value}"])
    assert "\n" not in str(err.value)
    assert str(err.value).endswith(
        f"train.weight_decay: {float(value):g} overflows the optimizers' float32 arithmetic; give weight_decay <= 1e+30"
    )
    assert load_config(None, ["train.weight_decay=1e30"]).train.weight_decay == 1e30


@pytest.mark.e2e
def test_run_json_records_the_groups(tmp_path):
    """A child run's run.json lists the decayed and the not decayed parameters by name."""
    import json

    from lnbench.experiments.cells import run_one

    cfg = load_config(None, TINY_OVERRIDES + ["train.epochs=1", "train.weight_decay=0.01"])
    _, path = run_one(cfg, tmp_path, timestamped=False)
    groups = json.loads((path / "run.json").read_text())["weight_decay_groups"]
    assert groups == {"decay": ["cell.W_hh", "cell.W_xh", "head.weight"], "no_decay": NOT_DECAYED["rnn", "layer"]}
