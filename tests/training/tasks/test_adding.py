"""lnbench.training.tasks.adding, the adding problem: its distribution at fixed seeds, its arguments and
its baselines."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from lnbench.training.baselines import baseline_accuracies
from lnbench.training.tasks.adding import make_adding_data


@pytest.fixture(scope="module")
def adding():
    return make_adding_data(4000, 4000, 20, seed=0)


def test_adding_marks_exactly_two_steps_one_in_each_half(adding):
    markers = adding.X_train[..., 1]
    assert set(torch.unique(markers).tolist()) == {0.0, 1.0}
    assert torch.all(markers.sum(1) == 2)
    assert torch.all(markers[:, :10].sum(1) == 1) and torch.all(markers[:, 10:].sum(1) == 1)


def test_adding_marked_positions_are_uniform_in_each_half(adding):
    positions = adding.X_train[..., 1].nonzero()[:, 1].view(-1, 2)  # (N, 2): first, second
    for half, offset in ((positions[:, 0], 0), (positions[:, 1], 10)):
        counts = torch.bincount(half - offset, minlength=10).numpy()
        assert stats.chisquare(counts).pvalue > 0.01, counts


def test_adding_values_are_uniform_and_the_label_is_the_sum_past_one(adding):
    values = adding.X_train[..., 0]
    assert stats.kstest(values.flatten().numpy(), "uniform").pvalue > 0.01
    marked = (values * adding.X_train[..., 1]).sum(1)
    assert torch.equal(adding.y_train, (marked > 1).long())
    # balanced in expectation: P(v_a + v_b > 1) = 1/2, binomial within 4 sd
    n = len(adding.y_train)
    assert abs(adding.y_train.float().mean().item() - 0.5) < 4 * 0.5 / np.sqrt(n)


@pytest.mark.parametrize("seq_len", [3, 7, 21])
def test_adding_halves_at_an_odd_length_are_floor_and_ceil_of_half(seq_len):
    """At odd T the first half is steps 0 .. h - 1 and the second h .. T - 1, h = floor(T / 2)
    (the module docstring): T = 7 marks one of {0, 1, 2} and one of {3, 4, 5, 6}, each step of a
    half equally often (chi-square), every step reachable, none twice."""
    data = make_adding_data(3000, 1, seq_len, seed=3)
    positions = data.X_train[..., 1].nonzero()[:, 1].view(-1, 2)  # (N, 2): first, second
    h = seq_len // 2
    for marked, steps in ((positions[:, 0], range(0, h)), (positions[:, 1], range(h, seq_len))):
        counts = torch.bincount(marked, minlength=seq_len).numpy()
        assert set(np.flatnonzero(counts)) == set(steps), counts
        if len(steps) > 1:
            assert stats.chisquare(counts[list(steps)]).pvalue > 0.001, counts


def test_adding_is_a_pure_function_of_its_seed():
    a, b, c = (make_adding_data(50, 20, 8, seed=s) for s in (1, 1, 2))
    assert torch.equal(a.X_train, b.X_train) and torch.equal(a.X_test, b.X_test)
    assert not torch.equal(a.X_train, c.X_train)
    assert not torch.equal(a.X_train[:20], a.X_test)  # the test split is its own draw


def test_adding_refuses_what_it_cannot_make():
    with pytest.raises(ValueError, match="seq_len must be >= 2"):
        make_adding_data(10, 10, 1)
    with pytest.raises(ValueError, match="n_train and n_test must be >= 1"):
        make_adding_data(0, 10, 5)


def test_adding_has_no_memoryless_shortcut():
    """The memoryless readout of x_T is near chance (at best 1/2 + 1/4 / (T - T/2) = 52.5% at
    T = 20, when x_T is marked), so the task needs memory; a linear readout of the whole
    sequence cannot form v_t m_t either. Over 3 seeds of 4000 test sequences."""
    for seed in range(3):
        acc = baseline_accuracies(make_adding_data(4000, 4000, 20, seed=seed))
        assert abs(acc["chance"] - 0.5) < 0.03
        assert acc["last_timestep"] < 0.56, acc
        assert acc["whole_sequence"] < 0.68, acc
