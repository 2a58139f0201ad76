"""lnbench claims: verdicts computed from paired runs, the baselines, and the command."""

import json

import pytest
import torch
from conftest import runner

from lnbench.analysis.claim_catalogue import Claim, Condition, select_claims
from lnbench.analysis.claims import evaluate_claims
from lnbench.cli.app import app
from lnbench.config import ConfigError, RunConfig
from lnbench.records.schema import SummaryRow
from lnbench.training.baselines import baseline_accuracies
from lnbench.training.data import TrendData
from lnbench.training.tasks.trend import make_trend_data

REGIMES = {"r": RunConfig()}


def _row(norm, seed, value, metric="mean_train_loss", status="completed", bs=64):
    row = SummaryRow(
        family="rnn",
        norm=norm,
        batch_size=bs,
        seed=seed,
        status=status,
        epochs_completed=3,
        final_test_acc=0.8,
        final_test_acc_batch_stats=None,
        final_train_loss=0.5,
        final_test_loss=0.5,
        mean_train_loss=0.5,
        first_epoch_at_target=None,
        n_test=200,
        run_dir=f"{norm}_bs{bs}_seed{seed}",
    )
    setattr(row, metric, None if status == "diverged" else value)
    if status == "diverged":
        row.final_test_acc = None
    return row


def _claim(direction="less", metric="mean_train_loss", margin=0.02, a=Condition("layer"), b=Condition("none")):
    return Claim("c", "LayerNorm converges faster than NoNorm", "r", "rnn", metric, a, b, direction, margin)


def _evaluate(claim, a_values, b_values, metric="mean_train_loss", a_bs=64, b_bs=64, statuses=None):
    statuses = statuses or ["completed"] * len(a_values)
    rows = {
        ("r", "rnn", claim.a.norm, a_bs): [
            _row(claim.a.norm, s, v, metric, st, a_bs) for s, (v, st) in enumerate(zip(a_values, statuses))
        ],
        ("r", "rnn", claim.b.norm, b_bs): [_row(claim.b.norm, s, v, metric, bs=b_bs) for s, v in enumerate(b_values)],
    }
    return evaluate_claims([claim], rows, REGIMES)[0]


B = [0.40, 0.55, 0.47, 0.62, 0.50]  # the seed effect is large; the paired differences are not


def test_a_clear_paired_effect_in_the_claimed_direction_is_held():
    r = _evaluate(_claim(), [b - 0.10 + 0.01 * k for k, b in enumerate(B)], B)
    assert r.verdict == "held" and r.effect == pytest.approx(-0.08) and r.ci95[1] < 0 and r.n_seeds == 5
    assert r.p_adjusted == pytest.approx(r.p_value)  # one directional claim: Holm changes nothing
    assert r.runs == [f"layer_bs64_seed{s}" for s in range(5)] + [f"none_bs64_seed{s}" for s in range(5)]


def test_the_opposite_effect_is_not_held():
    r = _evaluate(_claim(), [b + 0.10 + 0.01 * k for k, b in enumerate(B)], B)
    assert r.verdict == "not held" and r.effect > 0


def test_an_effect_shown_negligible_is_not_held_and_a_noisy_one_is_inconclusive():
    tiny = _evaluate(_claim(), [b + d for b, d in zip(B, [0.001, -0.002, 0.0, 0.002, -0.001])], B)
    assert tiny.verdict == "not held" and "within" in tiny.reason
    noisy = _evaluate(_claim(), [b + d for b, d in zip(B, [0.2, -0.3, 0.1, -0.2, 0.15])], B)
    assert noisy.verdict == "inconclusive"


def test_equivalence_claims_need_the_whole_interval_inside_the_margin():
    claim = _claim("equal", "final_test_acc", 0.02, Condition("layer", 1), Condition("layer", 64))
    accs = [0.80, 0.85, 0.78, 0.90, 0.83]
    same = _evaluate(
        claim, [a + d for a, d in zip(accs, [0.005, -0.005, 0.0, 0.005, -0.005])], accs, "final_test_acc", a_bs=1
    )
    assert same.verdict == "held" and same.p_adjusted is None  # equivalence claims are not in the Holm family
    far = _evaluate(
        claim, [a - 0.2 + d for a, d in zip(accs, [0.005, -0.005, 0.0, 0.005, -0.005])], accs, "final_test_acc", a_bs=1
    )
    assert far.verdict == "not held"
    wide = _evaluate(
        claim, [a + d for a, d in zip(accs, [0.05, -0.06, 0.04, -0.03, 0.0])], accs, "final_test_acc", a_bs=1
    )
    assert wide.verdict == "inconclusive"


def test_diverged_seeds_leave_the_pairs_and_too_few_pairs_is_inconclusive():
    a = [b - 0.1 for b in B]
    r = _evaluate(_claim(), a, B, statuses=["completed", "diverged", "diverged", "diverged", "diverged"])
    assert r.verdict == "inconclusive" and r.n_seeds == 1 and "diverged" in r.reason and r.effect is None


def test_holm_runs_over_the_directional_claims():
    c1, c2 = (
        _claim(),
        Claim("c2", "x", "r", "rnn", "mean_train_loss", Condition("batch"), Condition("none"), "less", 0.02),
    )
    rows = {
        ("r", "rnn", "layer", 64): [_row("layer", s, b - 0.1 + 0.01 * s) for s, b in enumerate(B)],
        ("r", "rnn", "batch", 64): [_row("batch", s, b - 0.1 + 0.03 * (-1) ** s) for s, b in enumerate(B)],
        ("r", "rnn", "none", 64): [_row("none", s, b) for s, b in enumerate(B)],
    }
    r1, r2 = evaluate_claims([c1, c2], rows, REGIMES)
    lo, hi = sorted([r1.p_value, r2.p_value])
    assert sorted([r1.p_adjusted, r2.p_adjusted]) == pytest.approx([2 * lo, max(2 * lo, hi)])


def test_baselines_on_hand_made_data():
    """Class readable from the last step -> the memoryless readout is right; from no step alone -> not."""
    easy = make_trend_data(
        n_train=400,
        n_test=400,
        seq_len=6,
        features=8,
        trend_strength=4.0,
        offset_std=0.0,
        scale_min=1,
        scale_max=1,
        seed=0,
    )
    b = baseline_accuracies(easy)
    assert b["chance"] == 0.5 and b["last_timestep"] > 0.95 and b["whole_sequence"] > 0.95
    X = torch.randn(400, 4, 3)
    y = (X[:, 0, 0] > 0).long()  # the first timestep decides; the last one carries nothing
    first = TrendData(X[:200], y[:200], X[200:], y[200:], torch.ones(200), torch.ones(200))
    b = baseline_accuracies(first)
    assert b["last_timestep"] < 0.65 and b["whole_sequence"] > 0.9


def test_the_default_task_has_no_memoryless_shortcut():
    """A linear readout of x_T alone stays <= 75% on the default data (n_test = 1000, seeds 0-2),
    and above chance (> 55%)."""
    lasts = [baseline_accuracies(make_trend_data(n_test=1000, seed=s))["last_timestep"] for s in range(3)]
    assert max(lasts) <= 0.75 and min(lasts) > 0.55  # not chance either: the offset hides most, not all


@pytest.mark.e2e  # trains models and writes run folders
def test_claims_command_writes_verdicts_runs_and_figure(tmp_path):
    args = [
        "claims",
        "--only",
        "rnn_faster_unstable",
        "--only",
        "rnn_bn_batch_size_1",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "seeds=[0,1]",
        "--set",
        "train.epochs=2",
        "--set",
        "data.n_train=80",
        "--set",
        "data.n_test=40",
        "--set",
        "data.seq_len=4",
        "--set",
        "model.hidden_size=8",
        "--jobs",
        "1",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run,) = list(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] and summary["kind"] == "claims" and summary["figures"] == ["claims.png"]
    assert [c["id"] for c in summary["claims"]] == ["rnn_faster_unstable", "rnn_bn_batch_size_1"]
    for c in summary["claims"]:
        assert {"claim", "regime", "metric", "effect", "ci95", "verdict", "runs"} <= set(c) and c["verdict"] in (
            "held",
            "not held",
            "inconclusive",
        )
        assert all((run / d / "metrics.json").exists() for d in c["runs"]) and len(c["runs"]) == (
            8 if c["id"] == "rnn_bn_batch_size_1" else 4
        )  # a DiD: 4 settings
    assert set(summary["baselines"]) == {"unstable_recurrence", "small_batches"}
    assert {r["regime"] for r in summary["rows"]} == {"unstable_recurrence", "small_batches"}
    assert all(r["run_dir"].startswith(r["regime"]) for r in summary["rows"])
    assert "baselines on each regime's data" in result.output
    children = sorted(p.name for p in run.iterdir() if p.is_dir())
    assert "small_batches_rnn_batch_bs1_seed0" in children and "unstable_recurrence_rnn_layer_bs64_seed1" in children
    cfg = json.loads((run / "small_batches_rnn_batch_bs1_seed0" / "metrics.json").read_text())
    assert cfg["batch_size"] == 1 and cfg["norm"] == "batch"
    assert "BatchNorm degrades at batch size 1" in result.output and "Run folder" in result.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--only", "nope"], "--only: unknown claim 'nope'"),
        (["--presets", "no/such/dir"], "regime preset not found"),
        (["--set", "model.norm_placement=diagonal"], "model.norm_placement: Input should be 'joint' or 'separate'"),
    ],
)
def test_claims_bad_input_is_one_line_and_writes_nothing(tmp_path, args, message):
    result = runner.invoke(app, ["claims", "--runs-dir", str(tmp_path / "runs"), *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


def test_an_accuracy_claim_whose_reference_is_at_chance_is_inconclusive():
    claim = _claim("less", "final_test_acc", 0.02, Condition("batch", 1), Condition("batch", 64))
    at_chance = [0.50, 0.51, 0.49, 0.50, 0.51]
    rows = {
        ("r", "rnn", "batch", 1): [_row("batch", s, v - 0.05, "final_test_acc", bs=1) for s, v in enumerate(at_chance)],
        ("r", "rnn", "batch", 64): [_row("batch", s, v, "final_test_acc") for s, v in enumerate(at_chance)],
    }
    (r,) = evaluate_claims([claim], rows, REGIMES, chance={"r": 0.5})
    assert r.verdict == "inconclusive" and "at chance" in r.reason
    (r,) = evaluate_claims([claim], rows, REGIMES)  # without the check: the test alone decides
    assert r.verdict == "held"


def test_the_baseline_verdict_says_when_the_target_needs_no_memory():
    from lnbench.analysis.verdicts import baseline_verdicts
    from lnbench.training.baselines import summarize_baselines

    shortcut = summarize_baselines(
        [
            {"chance": 0.5, "last_timestep": 0.92, "whole_sequence": 1.0},
            {"chance": 0.5, "last_timestep": 0.88, "whole_sequence": 1.0},
        ],
        [0, 1],
        200,
    )
    (line,) = baseline_verdicts(shortcut, 0.9)
    assert "linear readout of x_T alone 90.0%" in line and "does not need memory" in line and "1 of 2 seeds" in line
    fair = summarize_baselines([{"chance": 0.5, "last_timestep": 0.66, "whole_sequence": 1.0}], [0], 200)
    (line,) = baseline_verdicts(fair, 0.9)
    assert "stays below the 90% target" in line


def test_a_significant_effect_smaller_than_the_margin_is_not_held():
    r = _evaluate(_claim(margin=0.05), [b - 0.02 + 0.001 * k for k, b in enumerate(B)], B)
    assert r.p_adjusted < 0.05 and r.effect == pytest.approx(-0.018)
    assert r.verdict == "not held" and "smaller than" in r.reason


def test_claims_need_two_seeds_before_anything_runs(tmp_path):
    result = runner.invoke(
        app, ["claims", "--only", "tf_faster", "--set", "seeds=[0]", "--runs-dir", str(tmp_path / "runs")]
    )
    assert result.exit_code == 2 and "needs at least 2" in result.output and not (tmp_path / "runs").exists()


@pytest.mark.e2e  # trains models and writes run folders
def test_progress_counts_every_run_of_every_regime(tmp_path):
    """Two regimes train the same family/norm/batch size/seed: each run must count its epochs."""
    from pathlib import Path

    from lnbench import experiments
    from lnbench.experiments.claim_regimes import load_regimes

    selected = select_claims(["rnn_faster_default", "rnn_faster_unstable"])
    tiny = [
        "seeds=[0,1]",
        "train.epochs=2",
        "data.n_train=64",
        "data.n_test=16",
        "data.seq_len=3",
        "model.hidden_size=4",
    ]
    regimes = load_regimes(selected, Path("configs/claims"), tiny)
    last: dict[str, int] = {}
    experiments.claims(
        selected,
        regimes,
        runs_dir=tmp_path,
        on_epoch=lambda label, epoch, epochs, acc=None: last.__setitem__(label, epoch),
        jobs=1,
    )
    assert len(last) == 8 and set(last.values()) == {2}  # 2 regimes x 2 norms x 2 seeds, 2 epochs each


def test_inputs_that_overflow_float32_and_numbers_as_booleans_are_config_errors():
    from lnbench.config import load_config

    with pytest.raises(ConfigError, match="overflow float32"):
        load_config(None, ["data.scale_min=1e38", "data.scale_max=1e38"])
    with pytest.raises(ConfigError, match="model.input_norm: Input should be a valid boolean"):
        load_config(None, ["model.input_norm=1"])


def test_scale_invariance_uses_the_absolute_correlation():
    """A state whose size falls as the scale grows (rho = -0.9) follows the scale as much as rho = +0.9."""
    claim = Claim(
        "s",
        "LayerNorm stabilises",
        "r",
        "rnn",
        "abs_scale_spearman",
        Condition("layer"),
        Condition("none"),
        "less",
        0.1,
    )
    rows = {
        ("r", "rnn", "layer", 64): [_row("layer", s, -0.9 + 0.01 * s, "final_scale_spearman") for s in range(5)],
        ("r", "rnn", "none", 64): [
            _row("none", s, 0.9 - 0.01 * s + 0.002 * s * s, "final_scale_spearman") for s in range(5)
        ],
    }
    (r,) = evaluate_claims([claim], rows, REGIMES)
    assert r.verdict != "held" and abs(r.effect) < 0.05
    rows[("r", "rnn", "layer", 64)] = [_row("layer", s, 0.05 * (-1) ** s, "final_scale_spearman") for s in range(5)]
    (r,) = evaluate_claims([claim], rows, REGIMES)
    assert r.verdict == "held" and r.mean_a == pytest.approx(0.05)
