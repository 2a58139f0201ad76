"""The claims on other tasks (lnbench.analysis.claim_tasks): which claims apply where, each
regime's config on a task, and the claim x task table and its sentences, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from lnbench.analysis import claim_catalogue, claim_tasks
from lnbench.analysis import claims as claim_rules
from lnbench.config import ConfigError
from lnbench.experiments import claim_regimes
from lnbench.experiments.claims import claims_spec

PRESETS = REPO / "configs/claims"


def test_tasks_are_parsed_once_each_and_unknown_ones_named():
    assert claim_regimes.parse_tasks(["adding", "trend,digits", "adding"]) == ["adding", "trend", "digits"]
    with pytest.raises(ConfigError, match="unknown task 'cifar'; allowed: trend, adding, digits, mnist"):
        claim_regimes.parse_tasks(["trend,cifar"])


def test_the_scale_claims_apply_to_trend_only():
    selected = claim_catalogue.select_claims(None)
    kept, skipped = claim_tasks.claims_on_tasks(selected, ["trend", "adding"])
    scale = {c.id for c in selected if c.metric == "abs_scale_spearman"}
    figure6 = {c.id for c in selected if c.family == "mlp"}  # their regime holds its own data (flat MNIST)
    assert scale and {s["id"] for s in skipped} == scale | figure6 and {s["task"] for s in skipped} == {"adding"}
    assert [c.regime for c in kept[: len(selected)]] == [c.regime for c in selected]  # trend keeps its names
    assert {c.regime for c in kept[len(selected) :]} == {
        f"{c.regime}@adding" for c in selected if c.id not in scale | figure6
    }


def test_a_regime_on_a_task_keeps_model_train_seeds_and_takes_the_tasks_data():
    spec = claims_spec(["rnn_separate_learns", "rnn_ln_batch_size"], PRESETS, tasks=["digits", "adding"])
    digits = spec.regimes["separate_placement@digits"]
    base = claims_spec(["rnn_separate_learns"], PRESETS).regimes["separate_placement"]
    assert digits.data.task == "digits" and digits.data.digits_order == "rows"  # configs/claims/tasks/digits.yaml
    assert (digits.data.n_train, digits.data.n_test) == (1437, 360)  # the regime's 5000 and 1000, capped
    assert digits.data.offset_std == 4.0 == type(digits.data).model_fields["offset_std"].default  # trend's own: default
    assert digits.model == base.model and digits.train == base.train and digits.seed_list == base.seed_list
    adding = spec.regimes["small_batches@adding"]
    assert (adding.data.task, adding.data.n_train, adding.data.seq_len) == ("adding", 1000, 20)
    assert adding.data.offset_std == 4.0  # small_batches' offset_std 1.0 is trend's, not carried over
    assert "separate_placement" not in spec.regimes  # trend was not asked for
    assert spec.tasks == ["digits", "adding"] and spec.skipped == []


def test_a_task_preset_with_more_than_data_is_refused(tmp_path):
    for name in ("default.yaml",):
        (tmp_path / name).write_text((PRESETS / name).read_text())
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/adding.yaml").write_text("data:\n  seq_len: 30\ntrain:\n  epochs: 99\n")
    with pytest.raises(ConfigError, match="a task preset has a data section only; got train"):
        claims_spec(["rnn_faster_default"], tmp_path, tasks=["adding"])
    (tmp_path / "tasks/adding.yaml").write_text("data:\n  digits_order: pixels\n")
    with pytest.raises(ConfigError, match="digits_order: applies to the digits task only"):
        claims_spec(["rnn_faster_default"], tmp_path, tasks=["adding"])
    (tmp_path / "tasks/adding.yaml").write_text("data:\n  seq_len: 30\n")
    assert claims_spec(["rnn_faster_default"], tmp_path, tasks=["adding"]).regimes["default@adding"].data.seq_len == 30


def test_a_task_where_no_selected_claim_applies_is_refused():
    with pytest.raises(ConfigError, match="none of the claims applies.*tf_scale_invariant on adding"):
        claims_spec(["tf_scale_invariant"], PRESETS, tasks=["adding"])


@pytest.mark.parametrize("tasks", [["trend"], ["mnist"], ["trend", "adding"]])
def test_a_regime_that_holds_its_own_data_takes_no_task(tasks):
    """figure6 (the MLP on flat MNIST, its preset's data.task mnist) runs on its own data: a task the
    user gives, trend included, is refused naming the regime and the task it runs on, whether --only
    names the regime or one of its claims; without a task it runs as its preset says."""
    message = (
        f"--tasks {','.join(tasks)}: the figure6 regime (--only) runs on its own data only, the mnist task "
        f"as {PRESETS / 'figure6.yaml'} sets it; drop --tasks"
    )
    for only in (["figure6"], ["mlp_ln_batch_size"]):
        with pytest.raises(ConfigError) as err:
            claims_spec(only, PRESETS, tasks=tasks, option="--tasks")
        assert str(err.value) == message
    assert claims_spec(["figure6"], PRESETS).regimes["figure6"].data.task == "mnist"


def test_a_regime_named_by_only_must_measure_a_claim_on_a_task_given():
    """transformer_no_input_norm's claims read each sequence's own input scale, which trend alone has
    (:func:`lnbench.analysis.claim_tasks.not_applicable`): --only naming it with adding and digits is
    refused naming the task it measures on; with trend among them it runs on trend."""
    with pytest.raises(ConfigError) as err:
        claims_spec(["transformer_no_input_norm"], PRESETS, tasks=["adding", "digits"], option="--tasks")
    assert (
        str(err.value)
        == "--tasks adding,digits: the transformer_no_input_norm regime (--only) measures its claims on trend only"
    )
    spec = claims_spec(["transformer_no_input_norm"], PRESETS, tasks=["adding", "trend"])
    assert list(spec.regimes) == ["transformer_no_input_norm"]


def _result(cid, regime, verdict, effect=0.01, metric="final_test_acc"):
    return claim_rules.ClaimResult(
        id=cid, claim=f"claim {cid}", regime=regime, family="rnn", metric=metric, a="LayerNorm", b="NoNorm",
        direction="less", margin=0.02, effect=effect, ci95=[effect - 0.01, effect + 0.01], p_value=0.01,
        p_adjusted=0.02, test="t", n_seeds=5, mean_a=0.9, mean_b=0.8, verdict=verdict, reason="",
    )  # fmt: skip


def test_the_claim_by_task_table_and_what_it_says():
    results = [
        _result("a", "default", "held"),
        _result("b", "default", "held"),
        _result("c", "default", "not held"),
        _result("a", "default@adding", "held"),
        _result("b", "default@adding", "inconclusive"),
        _result("c", "default@adding", "not held"),
    ]
    skipped = [{"id": "d", "claim": "claim d", "family": "transformer", "metric": "abs_scale_spearman", "task": "adding", "reason": "no scale"}]  # fmt: skip
    results.append(_result("d", "default", "held", metric="abs_scale_spearman"))
    table = claim_tasks.by_task(results, skipped, ["trend", "adding"])
    assert [r["id"] for r in table] == ["a", "b", "c", "d"]
    assert {t: v["verdict"] for t, v in table[1]["tasks"].items()} == {"trend": "held", "adding": "inconclusive"}
    assert table[3]["tasks"]["adding"] == {"verdict": "n/a", "reason": "no scale"}
    assert list(table[3]["tasks"]) == ["trend", "adding"]  # the tasks' order, not the results'
    assert claim_tasks.holds_everywhere(table) == (["a", "d"], ["b"])
    assert claim_tasks.task_sentences(table, ["trend", "adding"]) == [
        "Held on every task it was measured on: a (trend, adding), d (trend).",
        "b: held on trend only (adding: inconclusive).",
        "Held on none of the tasks it was measured on: c.",
    ]


def test_each_task_is_its_own_holm_family(monkeypatch):
    """Two tasks' claims do not share a Holm correction: a trend-only run gives trend's column."""
    from lnbench.experiments.claims import CLAIMS

    spec = claims_spec(["rnn_faster_default", "tf_faster"], PRESETS, tasks=["trend", "adding"])
    seen = []

    def spy(claims, *args, **kwargs):
        seen.append(sorted({claim_tasks.task_of(c.regime) for c in claims}))
        return []

    monkeypatch.setattr(claim_rules, "evaluate_claims", spy)
    CLAIMS.analyse(spec, [], [], {name: [{"name": "chance", "mean": 0.5}] for name in spec.regimes})
    assert seen == [["trend"], ["adding"]]


def test_set_wins_over_a_task_preset_and_reaches_the_tasks_own_keys():
    spec = claims_spec(
        ["rnn_faster_default"],
        PRESETS,
        ["data.seq_len=5", "data.digits_order=pixels"],
        tasks=["trend", "adding", "digits"],
    )
    assert spec.regimes["default"].data.seq_len == 5
    assert spec.regimes["default@adding"].data.seq_len == 5  # configs/claims/tasks/adding.yaml says 20
    assert spec.regimes["default@digits"].data.digits_order == "pixels"  # the preset says rows


@pytest.mark.parametrize(
    ("overrides", "tasks", "message"),
    [
        (["data.task=adding"], ["trend"], "--set data.task: claims take their tasks from --task / --tasks"),
        (["data.digits_order=pixels"], ["trend", "adding"], "--set data.digits_order: read by the digits task only; add --task digits"),
        ([], ["trend,,adding"], "--task: unknown task ''"),
    ],
)  # fmt: skip
def test_what_claims_cannot_run_on_a_task_is_one_line(overrides, tasks, message):
    with pytest.raises(ConfigError) as err:
        claims_spec(["rnn_faster_default"], PRESETS, overrides, tasks=tasks)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data: [1, 2\n", "cannot read it"),
        ("data: [seq_len]\n", "data: expected a mapping of data keys"),
        ("data:\n  task: trend\n", "data.task: the file's name is its task"),
        ("data:\n  seq_len: 1\n", "data.seq_len: Input should be greater than or equal to 2"),
    ],
)
def test_a_malformed_task_preset_is_one_line_naming_the_file(text, message, tmp_path):
    (tmp_path / "default.yaml").write_text((PRESETS / "default.yaml").read_text())
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/adding.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        claims_spec(["rnn_faster_default"], tmp_path, tasks=["adding"])
    assert str(err.value).startswith(str(tmp_path / "tasks/adding.yaml")) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_validation_split_is_a_key_every_task_reads():
    """data.n_val, like n_train and n_test, is a split of every task: every regime takes it."""
    spec = claims_spec(["rnn_faster_default"], Path("configs/claims"), ["data.n_val=100"])
    assert {cfg.data.n_val for cfg in spec.regimes.values()} == {100}


@pytest.mark.parametrize("key", ["model.norm", "model.family"])
def test_a_set_norm_or_family_that_claims_would_drop_is_refused(key):
    with pytest.raises(ConfigError, match=rf"^--set {key}: each claim trains its own"):
        claims_spec(["rnn_faster_default"], Path("configs/claims"), [f"{key}=group"])


def test_a_set_batch_size_is_refused_while_a_claim_with_batch_sizes_of_its_own_is_selected():
    """Figure 6's claims train at batch sizes 4 and 128 whatever train.batch_size says: with one of
    them selected --set train.batch_size is refused, naming it; a claim that trains at the
    regime's batch size takes it."""
    with pytest.raises(
        ConfigError, match=r"^--set train.batch_size: mlp_ln_batch_size train at batch sizes of their own"
    ):
        claims_spec(["rnn_faster_default", "mlp_ln_batch_size"], Path("configs/claims"), ["train.batch_size=8"])
    spec = claims_spec(["rnn_faster_default"], Path("configs/claims"), ["train.batch_size=8"])
    assert {cfg.train.batch_size for cfg in spec.regimes.values()} == {8}


def test_a_regime_on_a_task_keeps_its_own_split_sizes_below_the_tasks():
    """n_train and n_test are the regime's own, capped at the task's fixed split only where they
    exceed it: small_batches (1000 and 1000) on digits (1437 and 360) trains on 1000 images and
    tests on 360; on MNIST (4000 and 1000) it keeps both."""
    spec = claims_spec(["rnn_ln_batch_size"], PRESETS, tasks=["trend", "digits", "mnist"])
    sizes = {name: (cfg.data.n_train, cfg.data.n_test) for name, cfg in spec.regimes.items()}
    assert sizes == {
        "small_batches": (1000, 1000),
        "small_batches@digits": (1000, 360),
        "small_batches@mnist": (1000, 1000),
    }


@pytest.mark.parametrize("level", [0.30, 0.10])
def test_a_claim_on_another_task_is_held_against_that_tasks_chance_level(level):
    """Every condition at ~30% accuracy: on trend (2 classes, chance 50%) the references are at
    chance and the claim is withheld; on digits (10 classes, chance 10%: the chance baseline of its
    own data) 30% is far above chance and the claim is decided by its test. At ~10% both are at chance."""
    from types import SimpleNamespace

    from lnbench.experiments.claims import CLAIMS
    from lnbench.records.schema import SummaryRow

    spec = claims_spec(["rnn_ln_batch_size"], PRESETS, tasks=["trend", "digits"])
    (claim,) = [c for c in spec.selected if c.regime == "small_batches"]
    cells, rows = [], []
    for regime, cfg in spec.regimes.items():
        for cond in claim.conditions:
            seeds = cfg.seed_list
            cells.append(SimpleNamespace(group=regime, cfgs=seeds, setting={}))
            rows += [
                SummaryRow(
                    family="rnn",
                    norm=cond.norm,
                    batch_size=cond.batch_size,
                    seed=s,
                    status="completed",
                    epochs_completed=3,
                    final_test_acc=level + 0.01 * (k % 2),
                    final_test_acc_batch_stats=None,
                    final_train_loss=2.0,
                    final_test_loss=2.0,
                    mean_train_loss=2.0,
                    first_epoch_at_target=None,
                    n_test=cfg.data.n_test,
                    run_dir=f"{regime}_{cond.norm}_bs{cond.batch_size}_seed{s}",
                )  # fmt: skip
                for k, s in enumerate(seeds)
            ]
    chance = {"small_batches": 0.5, "small_batches@digits": 0.1}  # the chance baseline of each regime's data
    baselines = {name: [{"name": "chance", "mean": value}] for name, value in chance.items()}
    out = CLAIMS.analyse(spec, cells, rows, baselines)
    verdicts = {c["regime"]: (c["verdict"], c["reason"]) for c in out["claims"]}
    at_chance = f"is at chance ({level + 0.004:.1%})"
    assert verdicts["small_batches"][0] == "inconclusive" and at_chance in verdicts["small_batches"][1]
    if level > 0.1 + claim.margin:
        assert verdicts["small_batches@digits"][0] == "held" and "chance" not in verdicts["small_batches@digits"][1]
    else:
        assert (
            verdicts["small_batches@digits"][0] == "inconclusive" and at_chance in verdicts["small_batches@digits"][1]
        )
