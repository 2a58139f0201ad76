"""Compare's groups (family x RNN placement), its verdicts in words, and "did it learn
the task?" against the memoryless baseline. Hand-made rows; every number computed by hand."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t as t_dist

from lnbench.analysis import verdicts
from lnbench.analysis.aggregate import aggregate_over_seeds
from lnbench.analysis.comparisons import Comparison, compare_comparisons, memoryless_tests
from lnbench.analysis.stats import seeds_for_power
from lnbench.analysis.verdicts import describe_in_words
from lnbench.records.schema import SummaryRow
from lnbench.report.tables import aggregate_table


def row(norm, seed, acc, placement="joint", family="rnn", loss=0.3, correct=None, n_test=100):
    return SummaryRow(
        family=family,
        norm=norm,
        batch_size=64,
        seed=seed,
        status="completed",
        epochs_completed=10,
        final_test_acc=acc,
        final_test_acc_batch_stats=None,
        final_train_loss=loss,
        final_test_loss=loss,
        mean_train_loss=loss,
        first_epoch_at_target=None,
        n_test=n_test,
        norm_placement=placement if family == "rnn" else None,
        test_correct=correct,
    )


def baselines(accs, correct=None, n_test=100):
    seeds = list(range(len(accs)))
    out = [
        {"name": "chance", "label": "chance", "seeds": seeds, "acc_per_seed": [0.5] * len(accs), "mean": 0.5},
        {"name": "last_timestep", "label": "x_T", "seeds": seeds, "acc_per_seed": accs, "mean": sum(accs) / len(accs)},
    ]
    for b in out:
        b["n_test"] = n_test
    if correct is not None:
        out[1]["correct_per_seed"] = correct
    return out


def test_each_placement_is_its_own_group_with_its_own_holm_family():
    rows = [
        row(n, s, 0.6 + 0.01 * s + (0.1 if n == "layer" else 0), p)
        for p in ("joint", "separate")
        for n in ("none", "layer")
        for s in range(3)
    ]
    rows += [row(n, s, 0.7, family="transformer") for n in ("none", "layer") for s in range(3)]
    cmp = compare_comparisons(rows)
    assert sorted({c.holm_family for c in cmp}) == [
        "rnn-joint/final_test_acc", "rnn-joint/mean_train_loss",
        "rnn-separate/final_test_acc", "rnn-separate/mean_train_loss",
        "transformer/final_test_acc", "transformer/mean_train_loss",
    ]  # fmt: skip
    agg = aggregate_over_seeds(rows)
    assert [(e["family"], e["norm_placement"], e["norm"]) for e in agg] == [
        ("rnn", "joint", "none"), ("rnn", "joint", "layer"), ("rnn", "separate", "none"),
        ("rnn", "separate", "layer"), ("transformer", None, "none"), ("transformer", None, "layer"),
    ]  # fmt: skip
    text = verdicts.compare_verdicts(rows, cmp, 10, 0.9)
    assert any(line.startswith("RNN (separate), final test accuracy") for line in text)
    assert any(line.startswith("Transformer") for line in text) and not any("(None)" in line for line in text)


def comparison(metric, diff, lo, hi, significant, a="none", b="layer"):
    return Comparison(
        "rnn-joint/" + metric, a, b, metric, diff, (lo, hi), 0.001, 0.003, "paired t-test over 5 seeds", 5, significant
    )


@pytest.mark.parametrize(
    "c,expected",
    [
        (  # a - b = +0.10 nats: b's loss fell faster; named first, the numbers flip with it
            comparison("mean_train_loss", 0.10, 0.07, 0.12, True),
            "LayerNorm's train loss fell faster than NoNorm's (mean train loss -0.100 nats "
            "[unadjusted 95% CI -0.120, -0.070], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            comparison("mean_train_loss", -0.10, -0.12, -0.07, True),
            "NoNorm's train loss fell faster than LayerNorm's (mean train loss -0.100 nats "
            "[unadjusted 95% CI -0.120, -0.070], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            comparison("final_test_acc", -0.184, -0.27, -0.10, True),
            "LayerNorm is more accurate than NoNorm (final test accuracy +18.4 points "
            "[unadjusted 95% CI +10.0, +27.0], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
        (
            comparison("final_test_acc", 0.01, -0.02, 0.04, False),
            "NoNorm and LayerNorm are not distinguishable in accuracy with 5 seeds (final test accuracy +1.0 points "
            "[unadjusted 95% CI -2.0, +4.0], paired t-test over 5 seeds, Holm p = 0.003).",
        ),
    ],
)
def test_verdicts_say_which_is_faster_or_more_accurate(c, expected):
    assert describe_in_words(c) == expected


def test_a_row_at_the_memoryless_baseline_is_marked_and_one_above_it_is_not():
    base = [0.68, 0.66, 0.70, 0.67, 0.69]
    rows = [row("none", s, b + d) for s, (b, d) in enumerate(zip(base, [0.01, -0.02, 0.00, 0.02, -0.01]))]
    rows += [row("layer", s, b + d) for s, (b, d) in enumerate(zip(base, [0.15, 0.20, 0.12, 0.18, 0.16]))]
    tests = memoryless_tests(rows, baselines(base))
    none, layer = tests[("rnn-joint", "none")], tests[("rnn-joint", "layer")]
    assert none["diff"] == pytest.approx(0.0) and not none["learned"]
    # none: diffs +1, -2, 0, +2, -1 points; sd sqrt(2.5) = 1.581, half-width 2.776 x 1.581 / sqrt(5) = 1.96 < 2 points
    assert none["ci95"] == pytest.approx([-0.0196, 0.0196], abs=1e-4) and none["did_not_learn"]
    # layer: diffs 15, 20, 12, 18, 16 points; mean 16.2, sd sqrt(9.2) = 3.033; t(4) 2.776 x 3.033 / sqrt(5) = 3.77
    assert layer["diff"] == pytest.approx(0.162)
    assert layer["ci95"] == pytest.approx([0.162 - 0.0377, 0.162 + 0.0377], abs=2e-4)
    assert layer["learned"] and layer["p_adjusted"] == pytest.approx(2 * layer["p_value"])  # Holm over 2 rows
    agg = aggregate_over_seeds(rows)
    for e in agg:
        e["vs_memoryless"] = tests[("rnn-joint", e["norm"])]
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(aggregate_table(agg, 0.9))
    text = console.export_text()
    none_line = next(line for line in text.splitlines() if " none " in line)
    layer_line = next(line for line in text.splitlines() if " layer " in line)
    assert "+0.0 [" in none_line and "did not learn" in none_line
    assert "+16.2 [+12.4, +20.0] learned" in layer_line and "did not" not in layer_line
    sentences = verdicts.compare_verdicts(rows, compare_comparisons(rows), 10, 0.9, tests)
    learned = next(s for s in sentences if "did it learn the memory task?" in s)
    assert "NoNorm within 2 points of the memoryless baseline" in learned and "did not learn the memory task" in learned
    assert "LayerNorm above the memoryless baseline (+16.2 points" in learned


def test_one_seed_is_compared_with_the_baseline_on_the_same_test_examples():
    # 10 test sequences: the model is right on 9, the baseline on 4; b = 5 discordant for the model, c = 0
    model = [1, 1, 1, 1, 1, 1, 1, 1, 1, 0]
    base = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    rows = [row("layer", 0, 0.9, correct=model, n_test=10)]
    (test,) = memoryless_tests(rows, baselines([0.4], [base], n_test=10)).values()
    assert test["diff"] == pytest.approx(0.5)
    assert test["p_value"] == pytest.approx(2 * 0.5**5)  # exact McNemar: two-sided binomial, 5 of 5
    assert "McNemar" in test["test"] and not test["learned"]  # p = 0.0625: not enough examples to tell


def test_no_baseline_means_no_mark():
    assert memoryless_tests([row("none", 0, 0.7)], None) == {}


def _t(d):
    """Mean, two-sided p and 95% half-width of a paired t-test of the differences ``d``, by hand."""
    n, m = len(d), sum(d) / len(d)
    se = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1)) / math.sqrt(n)
    return m, 2 * t_dist.sf(abs(m) / se, n - 1), t_dist.ppf(0.975, n - 1) * se


BASE = [0.66, 0.68, 0.67, 0.65, 0.69]  # the memoryless baseline on 5 seeds: 67.0% on average
DIFFS = {  # each model minus the baseline, per seed
    "none": [0.01, -0.02, 0.00, 0.02, -0.01],  # +0.0 [-2.0, +2.0]: inside the 2-point margin
    "batch": [-0.09, -0.11, -0.10, -0.12, -0.08],  # -10.0, significantly below
    "layer": [0.02, -0.02, 0.00, 0.02, -0.02],  # +0.0 [-2.5, +2.5]: not inside the margin, not significant
    "rms": [0.26, 0.01, 0.13, 0.21, 0.05],  # 80.2% on average: +13.2 [+0.2, +26.2], p = 0.048, Holm x 3
}


def test_did_not_learn_only_where_the_data_show_it():
    rows = [row(n, s, b + d) for n, ds in DIFFS.items() for s, (b, d) in enumerate(zip(BASE, ds))]
    tests = {n: t for (_, n), t in memoryless_tests(rows, baselines(BASE)).items()}
    by_hand = {n: _t(d) for n, d in DIFFS.items()}
    assert by_hand["batch"][1] < by_hand["rms"][1] < 0.05 and by_hand["none"][1] == by_hand["layer"][1] == 1.0
    holm = {"batch": 4 * by_hand["batch"][1], "rms": 3 * by_hand["rms"][1], "none": 1.0, "layer": 1.0}
    for n, (m, p, half) in by_hand.items():
        assert tests[n]["diff"] == pytest.approx(m, abs=1e-12) and tests[n]["p_value"] == pytest.approx(p)
        assert tests[n]["ci95"] == pytest.approx([m - half, m + half]) and tests[n]["p_adjusted"] == pytest.approx(
            holm[n]
        )
    assert by_hand["none"][2] < 0.02 < by_hand["layer"][2]  # half-widths 1.96 and 2.48 points
    assert holm["rms"] == pytest.approx(0.1447, abs=1e-4)  # not significant, and not borderline
    flags = {n: (t["learned"], t["did_not_learn"], t["borderline"], t["seeds_to_settle"]) for n, t in tests.items()}
    assert flags == {
        "none": (False, True, False, None),
        "batch": (False, True, False, None),
        "layer": (False, False, False, None),
        "rms": (False, False, False, None),
    }

    def effect(n):
        m, _, half = by_hand[n]
        pts = lambda x: f"{100 * x:+.1f}"  # noqa: E731
        return (
            f"{pts(m)} points [unadjusted 95% CI {pts(m - half)}, {pts(m + half)}], paired t-test over 5 seeds,"
            f" Holm p = {holm[n]:.2g}"
        )

    assert effect("rms") == "+13.2 points [unadjusted 95% CI +0.2, +26.2], paired t-test over 5 seeds, Holm p = 0.14"
    said = {n: verdicts.describe_memoryless(t) for n, t in tests.items()}
    assert said == {
        "batch": f"below the memoryless baseline ({effect('batch')}): did not learn the memory task",
        "none": f"within 2 points of the memoryless baseline ({effect('none')}): did not learn the memory task",
        "layer": f"not significantly above the memoryless baseline ({effect('layer')}): not shown to learn the memory"
        " task with 5 seeds",
        "rms": f"not significantly above the memoryless baseline ({effect('rms')}): not shown to learn the memory"
        " task with 5 seeds",
    }
    agg = aggregate_over_seeds(rows)
    for e in agg:
        e["vs_memoryless"] = tests[e["norm"]]
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(aggregate_table(agg, 0.9))
    lines = console.export_text().splitlines()
    cell = {n: next(line for line in lines if f" {n} " in line) for n in DIFFS}
    assert "-10.0 [-12.0, -8.0] did not learn" in cell["batch"] and "+0.0 [-2.0, +2.0] did not learn" in cell["none"]
    assert "+13.2 [+0.2, +26.2] not shown" in cell["rms"] and "+0.0 [-2.5, +2.5] not shown" in cell["layer"]


def test_a_borderline_test_against_the_baseline_says_so_with_the_seeds_that_would_settle_it():
    rows = [row("rms", s, b + d) for s, (b, d) in enumerate(zip(BASE, DIFFS["rms"]))]
    ((_, test),) = memoryless_tests(rows, baselines(BASE)).items()  # alone: Holm p = p = 0.048, significant
    m, p, half = _t(DIFFS["rms"])
    sd = math.sqrt(sum((x - m) ** 2 for x in DIFFS["rms"]) / 4)  # 10.5 points, above the floor 0.01 / sqrt(6)
    settle = seeds_for_power(m, sd, alpha=0.01 * p / p)  # family of one: Holm p < 0.01 needs p < 0.01
    assert test["p_adjusted"] == pytest.approx(p) and test["learned"] and test["borderline"]
    assert test["seeds_to_settle"] == settle and settle > 5
    assert verdicts.describe_memoryless(test) == (
        "above the memoryless baseline (+13.2 points [unadjusted 95% CI +0.2, +26.2], paired t-test over 5 seeds,"
        " Holm p = 0.048): it learned more than the last input (borderline: Holm p between 0.01 and 0.1, another"
        f" machine's rounding can flip it; about {settle} seeds would settle it)"
    )


def test_a_borderline_comparison_in_words():
    c = comparison("final_test_acc", 0.03, 0.005, 0.055, True)
    c.p_adjusted, c.borderline, c.seeds_to_settle = 0.03, True, 9
    assert describe_in_words(c) == (
        "NoNorm is more accurate than LayerNorm (final test accuracy +3.0 points [unadjusted 95% CI +0.5, +5.5],"
        " paired t-test over 5 seeds, Holm p = 0.03). Borderline (Holm p between 0.01 and 0.1): another machine's"
        " rounding can flip it; about 9 seeds would settle it."
    )
    c.seeds_to_settle = None
    assert describe_in_words(c).endswith(
        "Holm p = 0.03). Borderline (Holm p between 0.01 and 0.1): another machine's rounding can flip it."
    )


def _lstm_rows(gain_bn, gain_ln):
    rows = []
    for s in range(3):
        rows.append(row("none", s, 0.58 + 0.01 * s, family="lstm"))
        for norm, acc, gain in (("batch", 0.98, gain_bn), ("layer", 0.85, gain_ln)):
            r = row(norm, s, acc + 0.01 * s, family="lstm")
            r.initial_gain = gain
            rows.append(r)
    return rows


def test_a_comparison_of_norms_at_unequal_initial_gains_says_so():
    """The default compare's LSTM starts BatchNorm's gains at 0.1 and LayerNorm's at 1 (each its
    paper's): the verdicts must say that BN vs LN is also a comparison of initial gains."""
    rows = _lstm_rows(0.1, 1.0)
    cmp = compare_comparisons(rows)
    text = verdicts.compare_verdicts(rows, cmp, epochs=10, target_acc=0.9)
    warning = [v for v in text if "different initial gains" in v]
    assert warning == [
        "LSTM: the norms start at different initial gains (BatchNorm 0.1, LayerNorm 1, each its paper's), so a "
        "difference between them is also a difference of initial gains; --set model.norm_gain_init=G (or "
        "compare.norm_gain_inits) starts every norm's gain at G."
    ]
    accuracy = next(v for v in text if v.startswith("LSTM, final test accuracy"))
    assert accuracy.count("At unequal initial gains (BatchNorm 0.1, LayerNorm 1).") == 1  # BN vs LN only
    # at equal gains (norm_gain_init set) nothing is said
    rows = _lstm_rows(0.1, 0.1)
    text = verdicts.compare_verdicts(rows, compare_comparisons(rows), epochs=10, target_acc=0.9)
    assert not any("initial gains" in v for v in text)


def test_a_norm_with_the_same_runs_in_both_placements_is_named_once_as_one_network():
    # NoNorm: the same numbers seed for seed in both placements (one network); LayerNorm differs in one seed
    rows = [row("none", s, 0.6 + 0.01 * s, p) for p in ("joint", "separate") for s in range(3)]
    rows += [
        row("layer", s, 0.7 + (0.05 if p == "separate" and s == 2 else 0), p)
        for p in ("joint", "separate")
        for s in range(3)
    ]
    lines = verdicts.same_runs_across_groups(rows)
    assert lines == [
        "RNN (joint) and RNN (separate): NoNorm gives the same runs in every placement, seed for seed (3 seeds): "
        "with nothing to place it is one network, shown in each group, not a replicate."
    ]
    assert lines[0] in verdicts.compare_verdicts(rows, [], epochs=10, target_acc=0.9)
    # one seed's loss differs: not the same runs
    rows[3] = row("none", 0, 0.6, "separate", loss=0.31)
    assert verdicts.same_runs_across_groups(rows) == []
    # one placement only (the LSTM, the Transformer): nothing to say
    assert verdicts.same_runs_across_groups([r for r in rows if r.norm_placement == "joint"]) == []
