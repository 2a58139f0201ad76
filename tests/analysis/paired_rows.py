"""Hand-made summary rows and test results that the tests of :mod:`lnbench.analysis.comparisons`
and :mod:`lnbench.analysis.verdicts` share: :func:`row` (test_comparisons.py, test_verdicts.py),
:func:`rule_row` and the rest (test_comparison_rules.py, test_verdict_rules.py)."""

import math

from scipy.stats import t as t_dist

from lnbench.records.schema import SummaryRow


def row(
    norm,
    seed=0,
    acc=0.9,
    loss=0.3,
    first=3,
    status="completed",
    family="rnn",
    bs=64,
    correct=None,
    acc_bs=None,
    correct_bs=None,
):
    return SummaryRow(
        family=family,
        norm=norm,
        batch_size=bs,
        seed=seed,
        status=status,
        epochs_completed=10,
        final_test_acc=None if status == "diverged" else acc,
        final_test_acc_batch_stats=acc_bs,
        final_train_loss=loss,
        final_test_loss=loss,
        mean_train_loss=None if status == "diverged" else loss,
        first_epoch_at_target=first,
        n_test=len(correct) if correct else 200,
        test_correct=correct,
        test_correct_batch_stats=correct_bs,
    )


def rule_row(norm, seed=0, acc=0.9, loss=0.3, status="completed", bs=64, correct=None, acc_bs=None, correct_bs=None):
    """A row of the RNN as :func:`row` makes it, but with no first epoch at the target (and ``status``
    the fifth argument)."""
    return row(norm, seed, acc, loss, None, status, "rnn", bs, correct, acc_bs, correct_bs)


def vectors(b, c, both_right=0, both_wrong=0):
    """Two runs' per-example 0/1: the first right and the second wrong on b examples, the other way on c."""
    first = [1] * b + [0] * c + [1] * both_right + [0] * both_wrong
    second = [0] * b + [1] * c + [1] * both_right + [0] * both_wrong
    return first, second


def t_by_hand(d, floor=0.0):
    n, m = len(d), sum(d) / len(d)
    sd = max(math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1)), floor)
    se = sd / math.sqrt(n)
    return m, 2 * t_dist.sf(abs(m) / se, n - 1), t_dist.ppf(0.975, n - 1) * se


def result(p, diff=0.01):
    from lnbench.analysis.stats import PairedResult

    return PairedResult(diff, (diff - 0.01, diff + 0.01), p, "t", 5)


def baselines(last, n_test=200):
    from lnbench.training.baselines import summarize_baselines

    per_seed = [{"chance": 0.5, "last_timestep": a, "whole_sequence": 1.0} for a in last]
    return summarize_baselines(per_seed, list(range(len(last))), n_test)
