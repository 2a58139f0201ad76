"""lnbench.experiments.claim_regimes: the claims' regimes loaded from their presets and checked, and the
cells the claims need in them."""

import pytest

from lnbench.analysis.claim_catalogue import select_claims
from lnbench.config import ConfigError, RunConfig
from lnbench.experiments.claim_regimes import cells_needed, load_regimes, regimes_yaml, setting_name
from lnbench.experiments.claims import CLAIMS as CLAIMS_EXPERIMENT
from lnbench.experiments.claims import ClaimsSpec


def test_cells_needed_lists_each_setting_once_with_the_regimes_batch_size():
    regimes = {"small_batches": RunConfig(), "default": RunConfig().with_changes(train__batch_size=32)}
    needed = cells_needed(select_claims(["rnn_faster_default", "rnn_ln_batch_size", "rnn_bn_batch_size_1"]), regimes)
    assert needed == [
        ("default", {"model__family": "rnn", "model__norm": "layer", "train__batch_size": 32}, ""),
        ("default", {"model__family": "rnn", "model__norm": "none", "train__batch_size": 32}, ""),
        ("small_batches", {"model__family": "rnn", "model__norm": "layer", "train__batch_size": 1}, ""),
        ("small_batches", {"model__family": "rnn", "model__norm": "layer", "train__batch_size": 64}, ""),
        ("small_batches", {"model__family": "rnn", "model__norm": "none", "train__batch_size": 1}, ""),
        ("small_batches", {"model__family": "rnn", "model__norm": "none", "train__batch_size": 64}, ""),
        ("small_batches", {"model__family": "rnn", "model__norm": "batch", "train__batch_size": 1}, ""),
        ("small_batches", {"model__family": "rnn", "model__norm": "batch", "train__batch_size": 64}, ""),
    ]
    assert setting_name(*needed[2]) == "small_batches_rnn_layer_bs1"


def test_regimes_yaml_nests_each_regime_under_its_name():
    class Stub:
        def __init__(self, text):
            self.text = text

        def to_yaml(self):
            return self.text

    assert regimes_yaml({"a": Stub("x: 1\ny: 2\n"), "b": Stub("z: 3")}) == (
        "# regime: a\na:\n  x: 1\n  y: 2\n# regime: b\nb:\n  z: 3\n"
    )


def test_cells_needed_sets_a_gain_only_where_it_differs_from_the_papers():
    regimes = {"lstm": RunConfig()}
    needed = cells_needed(select_claims(["lstm_ln_vs_bn", "lstm_ln_vs_bn_gain01", "lstm_ln_vs_bn_gain1"]), regimes)
    base = {"model__family": "lstm", "train__batch_size": 64}
    assert needed == [
        ("lstm", {**base, "model__norm": "layer"}, ""),  # also LayerNorm at gain 1 (lstm_ln_vs_bn_gain1)
        ("lstm", {**base, "model__norm": "batch"}, ""),  # also BatchNorm at gain 0.1 (lstm_ln_vs_bn_gain01)
        ("lstm", {**base, "model__norm": "layer", "model__norm_gain_init": 0.1}, ""),
        ("lstm", {**base, "model__norm": "batch", "model__norm_gain_init": 1.0}, ""),
    ]
    assert [setting_name(*n) for n in needed[2:]] == ["lstm_lstm_layer_gain0.1_bs64", "lstm_lstm_batch_gain1_bs64"]


def _preset(folder, name, text):
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)


def _load_and_check(ids, presets):
    """The claims experiment's regimes for ``ids`` from ``presets``, loaded and then checked as
    its ``check`` checks them."""
    selected = select_claims(ids)
    CLAIMS_EXPERIMENT.check(ClaimsSpec(selected, load_regimes(selected, presets), presets=presets))


def test_load_regimes_applies_overrides_and_seed_to_every_regime(tmp_path):
    _preset(tmp_path, "default", "seeds: [0, 1]\ndata:\n  n_train: 100\n")
    _preset(tmp_path, "small_batches", "seeds: [0, 1, 2]\n")
    regimes = load_regimes(select_claims(["rnn_faster_default", "rnn_ln_batch_size"]), tmp_path, ["train.epochs=3"])
    assert list(regimes) == ["default", "small_batches"]
    assert [r.train.epochs for r in regimes.values()] == [3, 3] and regimes["default"].data.n_train == 100
    assert regimes["small_batches"].seed_list == [0, 1, 2]


@pytest.mark.parametrize(
    "text,message",
    [
        ("seeds: [0]\n", "seeds: a claim's verdict is a paired test over seeds and needs at least 2 (got [0])"),
        (
            "seeds: [0, 1]\ndata:\n  n_train: 32\ntrain:\n  batch_size: 16\n",
            "claim rnn_ln_batch_size needs batch size 64 > data.n_train (32)",
        ),
    ],
)
def test_check_regimes_refuses_what_a_claim_cannot_use(tmp_path, text, message):
    _preset(tmp_path, "small_batches", text)
    with pytest.raises(ConfigError) as err:
        _load_and_check(["rnn_ln_batch_size"], tmp_path)
    assert str(err.value) == f"{tmp_path / 'small_batches.yaml'}: {message}"


def test_check_regimes_names_a_regime_on_another_task_and_a_regime_built_in_code(tmp_path):
    """A regime on another task (``default@adding``) is named by its preset file and the task; a
    regime built in code (no presets folder) by its name; a regime no selected claim uses is not
    checked."""
    import dataclasses

    from lnbench.config import load_config
    from lnbench.experiments.claim_regimes import check_regimes

    claim = dataclasses.replace(select_claims(["rnn_faster_default"])[0], regime="default@adding")
    one_seed = load_config(None, ["seeds=[0]"])
    message = "seeds: a claim's verdict is a paired test over seeds and needs at least 2 (got [0])"
    with pytest.raises(ConfigError) as err:
        check_regimes([claim], {"default@adding": one_seed}, tmp_path)
    assert str(err.value) == f"{tmp_path / 'default.yaml'} on task adding: {message}"
    with pytest.raises(ConfigError) as err:
        check_regimes([claim], {"default@adding": one_seed})
    assert str(err.value) == f"default on task adding: {message}"
    check_regimes([claim], {"default@adding": load_config(None), "unused": one_seed})


def test_load_regimes_names_a_missing_preset(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_regimes(select_claims(["rnn_faster_default", "rnn_ln_batch_size"]), tmp_path)
    assert (
        str(err.value) == f"{tmp_path / 'default.yaml'}: regime preset not found (claims use: default, small_batches)"
    )


def test_check_regimes_names_the_preset_on_every_line_of_a_check_and_load_regimes_takes_the_seed(tmp_path):
    _preset(tmp_path, "default", "seeds: [0, 1]\nmodel:\n  d_ff: 8\n")
    with pytest.raises(ConfigError) as err:
        _load_and_check(["rnn_faster_default"], tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'default.yaml'}: model.d_ff: applies to the transformer only, and this run trains rnn; remove it"
    )
    _preset(tmp_path, "default", "seeds: [0, 1]\n")
    # --seed 7 with a list of two seeds: seeds 7 and 8 (not the one seed 7)
    regimes = load_regimes(select_claims(["rnn_faster_default"]), tmp_path, seed=7)
    assert [r.seeds for r in regimes.values()] == [[7, 8]]


def test_check_regimes_checks_memory_for_all_seeds_and_names_every_line(tmp_path, monkeypatch):
    from lnbench.config import checks

    _preset(tmp_path, "small_batches", "seeds: [0, 1, 2]\ndata:\n  n_train: 64\n")
    regimes = load_regimes(select_claims(["rnn_ln_batch_size"]), tmp_path)  # batch size 64 = n_train: allowed
    need = checks.memory_needed(regimes["small_batches"], 3)
    monkeypatch.setattr(checks, "available_memory", lambda: need - 1)  # enough for one seed, not for three
    with pytest.raises(ConfigError, match="seeds at once"):
        _load_and_check(["rnn_ln_batch_size"], tmp_path)
    monkeypatch.undo()
    _preset(tmp_path, "default", "seeds: [0, 1]\nmodel:\n  pos_emb: learned\n  d_ff: 8\n")
    with pytest.raises(ConfigError) as err:
        _load_and_check(["rnn_faster_default"], tmp_path)
    lines = str(err.value).splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{tmp_path / 'default.yaml'}: model.") for line in lines)


@pytest.mark.parametrize("only", ["rows_ln_vs_none", "mlp_ln_batch_size"])
def test_a_regimes_claims_without_batchnorm_run_without_its_batchnorm_keys(only):
    """A preset that sets BatchNorm's keys for its BN claims (lstm_recipe_rows: batch_norm_population;
    figure6: batch_norm_unbiased) runs a selection of its claims that trains no BatchNorm with those
    keys at their defaults, so ``claims --only`` of one LN claim plans; the same keys given by --set
    are still refused, naming the key."""
    from pathlib import Path

    from lnbench.experiments import driver

    presets = Path(__file__).parents[2] / "configs" / "claims"
    claims = select_claims([only])
    (cfg,) = load_regimes(claims, presets, ["seeds=[0, 1]"]).values()
    full = next(iter(load_regimes(select_claims([claims[0].regime]), presets, ["seeds=[0, 1]"]).values()))
    default = RunConfig().model
    assert (cfg.model.batch_norm_population, cfg.model.batch_norm_unbiased) == (
        default.batch_norm_population,
        default.batch_norm_unbiased,
    )
    assert (full.model.batch_norm_population, full.model.batch_norm_unbiased) != (
        default.batch_norm_population,
        default.batch_norm_unbiased,
    )
    spec = ClaimsSpec(claims, {claims[0].regime: cfg}, presets=presets)
    assert driver.prepare(CLAIMS_EXPERIMENT, spec, check_norm=False)  # plans
    given = ["seeds=[0, 1]", "model.batch_norm_unbiased=true"]
    with pytest.raises(ConfigError, match="model.batch_norm_unbiased: applies to BatchNorm only"):
        spec = ClaimsSpec(claims, load_regimes(claims, presets, given), presets=presets)
        driver.prepare(CLAIMS_EXPERIMENT, spec, check_norm=False)
