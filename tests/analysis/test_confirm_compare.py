"""``lnbench compare --confirm``: the pairs a pilot compare leaves open are tested on fresh seeds
alone, Holm over the confirmed pairs of a family, and the whole procedure keeps its 5%.

Oracles: scipy's paired t-test on the fresh seeds, and a simulation of three identical norms
through the real comparison, planning and confirm code (seeded: the same rate on every machine)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from lnbench.analysis import confirm
from lnbench.analysis.comparisons import compare_comparisons
from lnbench.records.schema import SummaryRow

NORMS = ("none", "batch", "layer")


def row(norm: str, seed: int, loss: float) -> SummaryRow:
    return SummaryRow(
        family="rnn", norm=norm, batch_size=64, seed=seed, status="completed", epochs_completed=3,
        final_test_acc=0.8, final_test_acc_batch_stats=None, final_train_loss=loss, final_test_loss=loss,
        mean_train_loss=loss, first_epoch_at_target=None, n_test=200, norm_placement="joint",
    )  # fmt: skip


def rows_for(rng: np.random.Generator, seeds: range, effects: dict[str, float], sd: float = 0.02) -> list[SummaryRow]:
    """Each seed's loss: a seed effect shared by the norms, plus the norm's effect and its own noise."""
    out = []
    for s in seeds:
        shared = rng.normal(0.5, 0.1)
        out += [row(n, s, shared + effects.get(n, 0.0) + rng.normal(0, sd)) for n in NORMS]
    return out


def two_stage(pilot_rows, draw_fresh, max_seeds=confirm.MAX_SEEDS):
    pilot = compare_comparisons(pilot_rows)
    plans = confirm.plan_comparisons(pilot_rows, pilot, max_seeds)
    groups = confirm.group_seeds(pilot, plans)
    n = max((n for norms in groups.values() for n in norms.values()), default=0)
    fresh = list(range(5, 5 + n))
    fresh_rows = draw_fresh(fresh) if n else []
    return confirm.confirm_comparisons(pilot, plans, fresh_rows, list(range(5)), fresh), plans


def test_a_confirmed_pair_is_tested_on_its_fresh_seeds_alone_with_holm_over_the_confirmed():
    """A pilot where LayerNorm looks faster (borderline) and fresh seeds where it is not: the final
    test is scipy's paired t-test of the fresh seeds alone, Holm-adjusted over the confirmed pairs
    of its family only (pairs kept or not decidable are not in that family)."""
    rng = np.random.default_rng(0)
    pilot_rows = rows_for(rng, range(5), {"layer": -0.025})
    pilot = compare_comparisons(pilot_rows)
    plans = confirm.plan_comparisons(pilot_rows, pilot, max_seeds=30)
    planned = [c for c, p in zip(pilot, plans) if p.action == "confirm"]
    assert planned, [p.why for p in plans]
    n = max(p.seeds for p in plans if p.action == "confirm")
    fresh = list(range(5, 5 + n))
    fresh_rows = rows_for(rng, range(5, 5 + n), {})
    final = confirm.confirm_comparisons(pilot, plans, fresh_rows, list(range(5)), fresh)
    by_key = {(c.holm_family, c.norm_a, c.norm_b): c for c in final}
    raw = []
    for c in planned:
        a = [r.mean_train_loss for r in fresh_rows if r.norm == c.norm_a]
        b = [r.mean_train_loss for r in fresh_rows if r.norm == c.norm_b]
        got = by_key[(c.holm_family, c.norm_a, c.norm_b)]
        assert got.stage == "confirm" and got.seeds == fresh and got.n_seeds == n
        assert got.p_value == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue, rel=1e-6)
        raw.append(got.p_value)
    m = len(raw)
    for c in planned:  # Holm over the m confirmed pairs of this family
        got = by_key[(c.holm_family, c.norm_a, c.norm_b)]
        assert got.p_adjusted >= got.p_value and got.p_adjusted <= min(1.0, m * got.p_value) + 1e-12
        assert got.significant == (got.p_adjusted < 0.04) and got.alpha == 0.04


def test_three_identical_norms_are_falsely_split_at_most_5_percent_over_both_stages():
    """Three identical norms, one Holm family of 3 pairs per metric: the rate of runs in which any
    pair is said to differ (decided in the pilot, or in the confirm stage) is at most 5% (+ three
    Monte-Carlo standard errors)."""
    rng = np.random.default_rng(1)
    sims, wrong = 300, 0
    for _ in range(sims):
        final, _ = two_stage(rows_for(rng, range(5), {}), lambda seeds: rows_for(rng, seeds, {}))
        wrong += any(c.significant for c in final)
    assert wrong / sims <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sims)


def test_a_decided_pilot_pair_is_kept_and_a_tiny_effect_is_not_decidable():
    """LayerNorm far faster (Holm p < 0.01): kept, stage "pilot". NoNorm vs BatchNorm, identical:
    a tiny pilot effect needs far more than 20 seeds, so nothing runs for it and it is not significant."""
    rng = np.random.default_rng(2)
    final, plans = two_stage(
        rows_for(rng, range(5), {"layer": -0.2}), lambda seeds: rows_for(rng, seeds, {"layer": -0.2})
    )
    stages = {(c.norm_a, c.norm_b): (c.stage, c.significant) for c in final}
    assert stages[("none", "layer")] == ("pilot", True) and stages[("batch", "layer")] == ("pilot", True)
    assert stages[("none", "batch")][1] is False and stages[("none", "batch")][0] in ("not decidable", "confirm")


def test_the_comparisons_confirmed_in_one_family_are_planned_at_its_bonferroni_level():
    """Three open pairs of one family (a model group and metric) that all fit within max_seeds are
    each planned at 0.04 / 3, with the seeds the paired t-test's 80% power needs at that level
    from the pilot's effect and sd (oracle: stats.seeds_for_power, computed here); the level is
    recorded in each plan."""
    from lnbench.analysis import stats
    from lnbench.analysis.comparisons import pair_by_seed, seed_values

    pilot_rows = [
        row(n, s, 0.5 + 0.1 * s + {"none": 0.0, "batch": 0.004, "layer": 0.008}[n] + 0.003 * ((s * 7 + k) % 3 - 1))
        for s in range(5)
        for k, n in enumerate(NORMS)
    ]
    pilot = [c for c in compare_comparisons(pilot_rows) if c.metric == "mean_train_loss"]
    plans = confirm.plan_comparisons(pilot_rows, pilot, max_seeds=10_000)
    assert len(pilot) == 3 and all(p.action == "confirm" for p in plans)
    for c, p in zip(pilot, plans, strict=True):
        sd = stats.paired_sd(*seed_values(pair_by_seed(
            [r for r in pilot_rows if r.norm == c.norm_a], [r for r in pilot_rows if r.norm == c.norm_b], c.metric
        ), c.metric))  # fmt: skip
        assert p.alpha == pytest.approx(0.04 / 3) and p.why.endswith("(Holm over 3)")
        assert p.seeds == stats.seeds_for_power(c.mean_diff, sd, power=0.8, alpha=0.04 / 3, max_n=confirm.MAX_N)
