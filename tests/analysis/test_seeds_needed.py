"""How many seeds would decide an inconclusive claim, against textbook values."""

from __future__ import annotations

import pytest

from lnbench.analysis.claim_catalogue import Claim, Condition
from lnbench.analysis.claims import seeds_needed
from lnbench.analysis.stats import seeds_for_interval, seeds_for_power


@pytest.mark.parametrize("d,n", [(0.5, 34), (0.8, 15), (1.0, 10), (2.0, 5)])
def test_seeds_for_80_percent_power_match_g_power(d, n):
    """G*Power, t tests, "Means: difference from constant (matched pairs)", two-tailed, alpha 0.05,
    power 0.8: d = 0.5 -> 34 pairs, 0.8 -> 15, 1.0 -> 10 (Cohen 1988's tables agree)."""
    assert seeds_for_power(d, 1.0) == n
    assert seeds_for_power(-3 * d, 3.0) == n  # only |effect| / sd matters


def test_seeds_for_an_interval_inside_the_margin_by_hand():
    # t_{0.975, n-1} / sqrt(n) < 1: n = 6 gives 2.571 / 2.449 = 1.050, n = 7 gives 2.447 / 2.646 = 0.925
    assert seeds_for_interval(0.0, 1.0, 1.0) == 7
    # room 0.5: n = 18 gives 2.110 / 4.243 = 0.497 < 0.5; n = 17: 2.120 / 4.123 = 0.514
    assert seeds_for_interval(0.5, 1.0, 1.0) == 18


def test_no_number_of_seeds_when_none_would_decide():
    assert seeds_for_power(0.0, 1.0) is None and seeds_for_power(0.1, 0.0) is None
    assert seeds_for_interval(0.03, 0.01, 0.02) is None  # the effect itself is past the margin
    assert seeds_for_power(0.001, 1.0) is None  # more than 1000 seeds


def claim(direction, margin=0.02):
    return Claim("x", "x", "default", "rnn", "final_test_acc", Condition("layer"), Condition("none"), direction, margin)


def test_a_claim_uses_the_sd_of_its_paired_differences():
    a, b = [0.71, 0.73, 0.69, 0.75, 0.72], [0.7] * 5  # differences 0.01, 0.03, -0.01, 0.05, 0.02: sample sd 0.0224
    assert seeds_needed(claim("less"), 0.02, a, b) == seeds_for_power(0.02, 0.022360679774997897) == 12
    n = seeds_for_interval(0.02, 0.022360679774997897, 0.05)
    # room 0.03: n = 5 gives 2.776 x 0.02236 / sqrt(5) = 0.0278 < 0.03; n = 4: 3.182 x 0.02236 / 2 = 0.0356
    assert n == 5 and seeds_needed(claim("equal", 0.05), 0.02, a, b) is None  # 5 were run: no hint of no more
    assert seeds_needed(claim("less"), 0.02, [0.72], [0.7]) is None  # one difference has no spread
    # a value of None (a run without one) counts as NaN, as in paired_over_seeds: no spread to plan with
    assert seeds_needed(claim("less"), 0.02, [0.71, None, 0.75], [0.7, 0.7, 0.7]) is None
    assert seeds_needed(claim("less"), 0.02, [0.71, 0.73, 0.75], [0.7, None, 0.7]) is None


def test_a_spread_within_the_round_off_of_the_data_is_no_spread():
    """As in paired_over_seeds: a spread of the differences of at most 1e-6 of the data's largest
    magnitude (1.0 exactly for data of 1e6) is round-off; the test was a sign test, and no t-test
    is planned on an sd of 0.71 (which 2 seeds would do)."""
    big = 1e6
    assert seeds_needed(claim("less"), 3.5, [big, big], [big - 3, big - 4]) is None  # spread 1.0: none
    assert seeds_needed(claim("less"), -3.5, [big - 3, big - 4], [big, big]) is None  # the magnitude of b counts too
    # spread 1.5 (differences 3 and 4.5): sd 1.5 / sqrt(2) = 1.0607, d = 3.54: 3 seeds (d = 4.75 needs 3, 2.13 needs 4)
    n = seeds_for_power(3.75, 1.5 / 2**0.5)
    assert n == 3 and seeds_needed(claim("less"), 3.75, [big, big], [big - 3, big - 4.5]) == n
    # relative, not absolute: the same differences over data of 1 are far above its round-off of 1e-6 (d = 4.95)
    assert seeds_needed(claim("less"), 3.5e-6, [1.0, 1.0], [1 - 3e-6, 1 - 4e-6]) == seeds_for_power(3.5, 0.5**0.5)


def test_an_inconclusive_verdict_says_how_many_seeds_and_the_command():
    from lnbench.analysis.claims import claim_sentences, evaluate_claims
    from lnbench.config import load_config
    from lnbench.records.schema import SummaryRow

    def row(norm, seed, acc):
        return SummaryRow(
            family="rnn", norm=norm, batch_size=64, seed=seed, status="completed", epochs_completed=10,
            final_test_acc=acc, final_test_acc_batch_stats=None, final_train_loss=0.3, final_test_loss=0.3,
            mean_train_loss=0.3, first_epoch_at_target=None, n_test=1000,
        )  # fmt: skip

    diffs = [0.01, 0.03, -0.01, 0.05, 0.02]  # layer - none; mean +2 points, not significant at 5 seeds
    rows = {
        ("default", "rnn", "none", 64): [row("none", s, 0.7) for s in range(5)],
        ("default", "rnn", "layer", 64): [row("layer", s, 0.7 + d) for s, d in enumerate(diffs)],
    }
    c = Claim(
        "x",
        "LayerNorm is less accurate",
        "default",
        "rnn",
        "final_test_acc",
        Condition("layer"),
        Condition("none"),
        "less",
        0.02,
    )
    (result,) = evaluate_claims([c], rows, {"default": load_config(None)})
    # +2.0 points [-0.8, +4.8], p = 0.12: not significant and the interval reaches past +-2: inconclusive
    assert result.verdict == "inconclusive"
    n = seeds_for_power(0.02, 0.022360679774997897)
    assert n == 12 and result.seeds_needed == n  # d = 0.894: 12 pairs for 80 % power
    (sentence,) = claim_sentences([result])
    assert f"About {n} seeds would decide it" in sentence and f"--only x --num-seeds {n}" in sentence
