"""``lnbench claims --confirm`` and ``lnbench compare --confirm``: the pilot decides or plans, the
confirm stage trains what was planned on fresh seeds and decides it on those seeds alone, and the
folder records both stages."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from conftest import runner, tiny_args
from scipy import stats as scipy_stats

from lnbench.analysis.claim_catalogue import Claim, Condition
from lnbench.cli.app import app
from lnbench.config import RunConfig
from lnbench.experiments.claims import CLAIMS, ClaimsSpec, ConfirmSpec, plan_from_pilot
from lnbench.names import seeds_phrase
from lnbench.records.schema import SummaryRow

CLAIM = Claim("c", "LayerNorm converges faster", "r", "rnn", "mean_train_loss", Condition("layer"), Condition("none"), "less", 0.02)  # fmt: skip
PILOT = {0: -0.030, 1: -0.045, 2: -0.020, 3: -0.040, 4: -0.010}  # seed -> layer minus none: p ~ 0.02, borderline
FRESH_NOISE = [0.004, -0.003, 0.001, -0.002, 0.003, -0.004, 0.002, -0.001, 0.0, 0.001] * 3  # no effect


def confirmed_run(tmp_path, args: list[str], printed: list[str] | None = None) -> tuple[dict, dict]:
    """Run ``lnbench ARGS`` (a --confirm run into an empty ``tmp_path``); its summary.json and its
    ``confirm`` record (and its output appended to ``printed``)."""
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "confirm stage: the plan from the pilot" in result.output
    if printed is not None:
        printed.append(result.output)
    (run,) = list(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    return summary, summary["confirm"]


def row(norm: str, seed: int, loss: float) -> SummaryRow:
    return SummaryRow(
        family="rnn", norm=norm, batch_size=64, seed=seed, status="completed", epochs_completed=3,
        final_test_acc=0.8, final_test_acc_batch_stats=None, final_train_loss=loss, final_test_loss=loss,
        mean_train_loss=loss, first_epoch_at_target=None, n_test=200, run_dir=f"r_rnn_{norm}_bs64_seed{seed}",
    )  # fmt: skip


def loss(norm: str, seed: int) -> float:
    """NoNorm's loss 0.5 + 0.01 seed; LayerNorm's the pilot's difference below it, or noise on fresh seeds."""
    base = 0.5 + 0.01 * seed
    if norm == "none":
        return base
    return base + (PILOT[seed] if seed in PILOT else FRESH_NOISE[seed - len(PILOT)])


def test_the_confirm_stage_decides_on_the_fresh_seeds_alone(tmp_path):
    """A borderline pilot (LN below NoNorm by 0.03 nats, p ~ 0.02) is planned; its fresh seeds,
    disjoint from the pilot's, show no effect. The final verdict is the paired t-test of the fresh
    seeds alone (oracle: scipy.stats.ttest_rel on them), not of the pilot and fresh seeds pooled
    (which would still find the pilot's effect)."""
    regime = RunConfig().with_changes(seed=0, seeds=list(PILOT))
    pilot_rows = [row(n, s, loss(n, s)) for n in ("layer", "none") for s in PILOT]
    summary = {
        "rows": [r.to_dict() | {"regime": "r"} for r in pilot_rows],
        "baselines": {"r": [{"name": "chance", "mean": 0.5}]},
    }
    spec = ClaimsSpec([CLAIM], {"r": regime}, confirm=ConfirmSpec(summary, max_seeds=30))
    plan = plan_from_pilot(spec)
    assert plan.plans[0].action == "confirm" and plan.pilot[0].borderline
    fresh = plan.fresh["r"]
    assert fresh == list(range(5, 5 + plan.plans[0].seeds)) and not set(fresh) & set(PILOT)

    cells = CLAIMS.plan(spec, tmp_path)
    rows = [row(c.model.norm, c.seed, loss(c.model.norm, c.seed)) for cell in cells for c in cell.cfgs]
    assert sorted({r.seed for r in rows}) == sorted([*PILOT, *fresh])
    out = CLAIMS.analyse(spec, cells, rows, {"r": [{"name": "chance", "mean": 0.5}]})
    (final,) = out["claims"]
    a = [loss("layer", s) for s in fresh]
    b = [loss("none", s) for s in fresh]
    oracle = scipy_stats.ttest_rel(a, b)
    assert final["stage"] == "confirm" and final["seeds"] == fresh and final["n_seeds"] == len(fresh)
    assert final["effect"] == pytest.approx(np.mean(np.subtract(a, b)))
    assert final["p_value"] == pytest.approx(oracle.pvalue, rel=1e-6)
    assert final["verdict"] == "not held" and final["alpha"] == pytest.approx(0.04)
    assert final["pilot"]["seeds"] == list(PILOT) and final["pilot"]["verdict"] == "held"
    assert out["confirm"]["fresh_seeds"] == {"r": fresh} and out["confirm"]["pilot_seeds"] == {"r": list(PILOT)}


# the tiny config with one batch of 64 sequences per epoch, 32 test sequences, 4 timesteps of 64
# features (the defaults' batch size and features): the pilots whose plans these tests follow
ONE_BATCH = tiny_args("train.batch_size=64", "data.n_train=64", "data.n_test=32", "data.seq_len=4", "data.features=64")


@pytest.mark.e2e  # trains models and writes run folders
def test_claims_confirm_records_both_stages_and_its_plan_can_be_printed_later(tmp_path):
    """A pilot and its confirm stage in one folder: every claim has its stage, its pilot record
    and its plan; a confirmed claim's seeds are its regime's fresh seeds, disjoint from the
    pilot's. ``--resume DIR --confirm --dry-run`` prints the plan and changes nothing."""
    only = ["--only", "rnn_faster_default", "--only", "rnn_joint_does_not_learn"]
    summary, record = confirmed_run(tmp_path, ["claims", *only, *ONE_BATCH, "--confirm", "--max-seeds", "20"])
    (run,) = list(tmp_path.iterdir())
    assert record["max_seeds"] == 20 and record["pilot_seeds"] == {"default": [0, 1, 2, 3, 4]}
    for regime, fresh in record["fresh_seeds"].items():
        assert 0 < len(fresh) <= 20 and not set(fresh) & set(record["pilot_seeds"][regime])
    fresh = record["fresh_seeds"]["default"]
    for c in summary["claims"]:
        assert c["stage"] in ("pilot", "confirm", "not decidable") and c["pilot"]["seeds"] == [0, 1, 2, 3, 4]
        assert c["plan"]["action"] in ("keep", "confirm", "undecidable", "untested")
        if c["stage"] == "confirm":
            assert c["seeds"] == record["fresh_seeds"][c["regime"]][: c["n_seeds"]] and c["alpha"] == 0.04
    # an interrupted confirm stage: a fresh run lost, summary.json the partial one a run starts with
    final = [(c["id"], c["stage"], c["verdict"], c["effect"]) for c in summary["claims"]]
    lost = next(p for p in run.iterdir() if p.is_dir() and p.name.endswith(f"_seed{max(fresh)}"))
    shutil.rmtree(lost)
    (run / "summary.json").write_text(json.dumps({**summary, "rows": [], "claims": [], "complete": False}))
    shown = runner.invoke(app, ["show", str(run)])  # the pilot's results stand, and it says how to go on
    assert shown.exit_code == 0 and "its confirm stage did not finish" in shown.output, shown.output
    assert "--confirm" in shown.output and "LayerNorm converges faster than NoNorm" in shown.output
    resumed = runner.invoke(app, ["claims", *only, "--runs-dir", str(tmp_path), *ONE_BATCH, "--confirm", "--max-seeds", "20", "--resume", str(run)])  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads((run / "summary.json").read_text())
    assert lost.is_dir() and [(c["id"], c["stage"], c["verdict"], c["effect"]) for c in summary["claims"]] == final
    before = (run / "summary.json").read_bytes()
    again = runner.invoke(app, ["claims", *only, "--runs-dir", str(tmp_path), *ONE_BATCH, "--confirm", "--max-seeds", "20", "--resume", str(run), "--dry-run"])  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "confirm stage: the plan from the pilot" in again.output and "dry run" in again.output
    assert (run / "summary.json").read_bytes() == before
    replanned = runner.invoke(app, ["claims", *only, "--runs-dir", str(tmp_path), *ONE_BATCH, "--confirm", "--max-seeds", "10", "--resume", str(run)])  # fmt: skip
    assert replanned.exit_code == 2 and "--max-seeds 20" in replanned.output and "already looked at" in replanned.output
    assert len(replanned.output.strip().splitlines()) == 1 and (run / "summary.json").read_bytes() == before


def test_the_clis_default_max_seeds_is_the_designs():
    from lnbench.analysis.confirm import MAX_SEEDS
    from lnbench.cli.confirm import MAX_SEEDS_DEFAULT

    assert MAX_SEEDS_DEFAULT == MAX_SEEDS == 20


def test_a_compare_pilot_of_one_seed_cannot_be_confirmed(tmp_path):
    result = runner.invoke(app, ["compare", "--runs-dir", str(tmp_path / "runs"), "--set", "seeds=[0]", "--confirm"])
    assert result.exit_code == 2 and "--confirm: seeds" in result.output and not (tmp_path / "runs").exists()


def test_max_seeds_without_confirm_is_one_line_exit_2(tmp_path):
    result = runner.invoke(app, ["claims", "--runs-dir", str(tmp_path / "runs"), "--max-seeds", "20"])
    assert result.exit_code == 2 and "--max-seeds" in result.output and "--confirm" in result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.e2e  # trains models and writes run folders
def test_compare_confirm_tests_the_open_pairs_on_the_fresh_seeds_alone(tmp_path):
    """A tiny compare and its confirm stage: each confirmed pair's p-value is scipy's paired
    t-test over the fresh seeds' rows alone (read back from summary.json), the fresh seeds are
    disjoint from the pilot's, and every pair records its stage and the pilot's test. The pilot's
    results are printed once (its baselines and table over seeds), then the confirmed table of
    every pair with its stage, and the confirm stage's sentences."""
    args = ["compare", *ONE_BATCH, "--set", "compare.families=[rnn]", "--set", "compare.placements=null", "--confirm"]
    summary, record = confirmed_run(tmp_path, args, printed := [])
    assert record["pilot_seeds"] == [0, 1, 2, 3, 4]
    fresh = {s for norms in record["fresh_seeds"].values() for seeds in norms.values() for s in seeds}
    assert fresh and not fresh & set(record["pilot_seeds"])
    rows = summary["rows"]
    confirmed = [c for c in summary["comparisons"] if c["stage"] == "confirm"]
    assert confirmed, [c["plan"] for c in summary["comparisons"]]
    for c in summary["comparisons"]:
        assert c["stage"] in ("pilot", "confirm", "not decidable") and c["pilot"]["seeds"] == [0, 1, 2, 3, 4]
    for c in confirmed:
        assert set(c["seeds"]) <= fresh
        a = {r["seed"]: r[c["metric"]] for r in rows if r["norm"] == c["norm_a"] and r["seed"] in c["seeds"]}
        b = {r["seed"]: r[c["metric"]] for r in rows if r["norm"] == c["norm_b"] and r["seed"] in c["seeds"]}
        seeds = sorted(a)
        oracle = scipy_stats.ttest_rel([a[s] for s in seeds], [b[s] for s in seeds]).pvalue
        if c["metric"] == "mean_train_loss":  # accuracies floor the sd at their resolution: not scipy's
            assert c["p_value"] == pytest.approx(oracle, rel=1e-6)
        assert c["n_seeds"] == len(seeds) == len(c["seeds"])
    out = " ".join(printed[0].split())  # the words, at any terminal width
    assert out.count("baselines on the same data") == out.count("- Baselines on the same data") == 1  # the pilot once
    after = out.split("confirm stage: the plan from the pilot", 1)[1]
    assert f"confirmed comparisons (pilot seeds 0-4, fresh seeds {seeds_phrase(sorted(fresh))})" in after
    assert "- Confirm stage, RNN (joint), " in after and "- RNN (joint), final test accuracy" not in after


def test_a_confirm_dry_run_before_the_pilot_states_the_confirm_stages_worst_case(tmp_path):
    """Before the pilot has run, ``--confirm --dry-run`` states the most the confirm stage can
    train: every setting of the pilot on --max-seeds fresh seeds (oracle: the pilot's own plan,
    its runs over its 2 seeds, times 7), and writes nothing."""
    args = ["compare", *tiny_args(), "--set", "seeds=[0,1]", "--confirm", "--max-seeds", "7", "--dry-run"]
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    runs = int(result.output.split("would start ", 1)[1].split(" runs", 1)[0])
    settings = runs // 2
    assert (
        f"trains each of the pilot's {settings} settings on --max-seeds 7 fresh seeds: up to {settings * 7} runs"
        in (" ".join(result.output.split()))
    )
    assert "3.5 times the pilot's training" in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()
