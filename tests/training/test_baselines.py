"""The baselines (lnbench.training.baselines) against hand computations and an independent
scikit-learn pipeline written out step by step, on tiny data sets built so that fitting or
scoring on the wrong split, or standardizing with the wrong split's statistics, gives a
different answer."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from lnbench.training.baselines import (
    BASELINES,
    baseline_accuracies,
    baseline_correct,
    baselines_for,
    summarize_baselines,
)
from lnbench.training.data import TrendData


def linear_oracle(X_fit, y_fit, X_score, y_score):
    """Per example of the scored split: 1 where a logistic regression (C = 1) on features
    standardized with the statistics of the split it is fit on gets the class right."""
    scaler = StandardScaler().fit(X_fit)
    clf = LogisticRegression(max_iter=1000).fit(scaler.transform(X_fit), y_fit)
    return (clf.predict(scaler.transform(X_score)) == y_score).astype(np.int64)


def trend_data(X_train, y_train, X_test, y_test) -> TrendData:
    t = lambda a, dtype=torch.float32: torch.tensor(np.asarray(a), dtype=dtype)  # noqa: E731
    return TrendData(
        t(X_train),
        t(y_train, torch.int64),
        t(X_test),
        t(y_test, torch.int64),
        t(np.ones(len(y_train))),
        t(np.ones(len(y_test))),
    )


# One feature, two timesteps. The last timestep: training class 0 at -10, -10, -10, -8, class 1 at +10;
# test points -20, 0, 5, 9, 400. Standardized with the training split (mean -5.6, sd 7.66) the fit puts the
# boundary between 5 and 9 (at 7.3), so the test predictions are 0, 0, 0, 1, 1 and, with the classes
# 0, 1, 0, 1, 1, the per-example results 1, 0, 1, 1, 1: 80 %. The first timestep says the opposite
# (its sign reversed), so a readout of x_1 instead of x_T is wrong where x_T is right.
LAST_TRAIN, Y_TRAIN = [-10.0, -10.0, -10.0, -8.0, 10.0], [0, 0, 0, 0, 1]
LAST_TEST, Y_TEST = [-20.0, 0.0, 5.0, 9.0, 400.0], [0, 1, 0, 1, 1]
DATA = trend_data(
    [[[-x], [x]] for x in LAST_TRAIN],  # (5, T=2, H=1)
    Y_TRAIN,
    [[[-x], [x]] for x in LAST_TEST],
    Y_TEST,
)


def test_the_memoryless_baseline_fits_on_train_and_scores_on_test():
    correct = baseline_correct(DATA)
    assert correct["last_timestep"].tolist() == [1, 0, 1, 1, 1] and correct["last_timestep"].dtype == np.int64
    assert baseline_accuracies(DATA)["last_timestep"] == pytest.approx(0.8)
    # the same steps written out; and each wrong choice of split gives another answer on this data
    X_tr, X_te = np.array(LAST_TRAIN)[:, None], np.array(LAST_TEST)[:, None]
    y_tr, y_te = np.array(Y_TRAIN), np.array(Y_TEST)
    assert linear_oracle(X_tr, y_tr, X_te, y_te).tolist() == [1, 0, 1, 1, 1]
    assert linear_oracle(X_te, y_te, X_te, y_te).mean() == pytest.approx(0.6)  # fit on the test split
    assert linear_oracle(X_tr, y_tr, X_tr, y_tr).mean() == 1.0  # scored on the training split
    assert linear_oracle(X_te, y_te, X_tr, y_tr).mean() == pytest.approx(0.2)  # both swapped


def test_the_scaler_sees_the_training_split_only():
    X_tr, X_te = np.array(LAST_TRAIN)[:, None], np.array(LAST_TEST)[:, None]
    scaler = StandardScaler().fit(X_te)  # standardized with the test split's statistics instead
    clf = LogisticRegression(max_iter=1000).fit(scaler.transform(X_tr), Y_TRAIN)
    assert (clf.predict(scaler.transform(X_te)) == Y_TEST).mean() == pytest.approx(0.4)
    raw = LogisticRegression(max_iter=1000).fit(X_tr, Y_TRAIN)  # not standardized at all
    assert (raw.predict(X_te) == Y_TEST).mean() == pytest.approx(0.6)
    assert baseline_accuracies(DATA)["last_timestep"] == pytest.approx(0.8)  # neither of those


def test_chance_is_the_training_splits_majority_scored_on_the_test_split():
    # training majority 0 (4 of 5); the test split has 2 of class 0: 40 %. Fit on the test split
    # (majority 1) it would be 60 %; scored on the training split, 80 %.
    assert baseline_correct(DATA)["chance"].tolist() == [1, 0, 1, 0, 0]
    assert baseline_accuracies(DATA)["chance"] == pytest.approx(0.4)


def test_the_whole_sequence_baseline_reads_every_timestep():
    rng = np.random.default_rng(0)
    X_tr, X_te = rng.normal(size=(40, 3, 2)), rng.normal(size=(30, 3, 2))
    # the class is the sign of x_1 - x_3 on feature 0: no single timestep gives it
    y_tr, y_te = (X_tr[:, 0, 0] > X_tr[:, 2, 0]).astype(int), (X_te[:, 0, 0] > X_te[:, 2, 0]).astype(int)
    data = trend_data(X_tr, y_tr, X_te, y_te)
    whole = baseline_correct(data)["whole_sequence"]
    X_tr32, X_te32 = data.X_train.numpy(), data.X_test.numpy()  # the float32 values the baseline sees
    expected = linear_oracle(X_tr32.reshape(40, 6), y_tr, X_te32.reshape(30, 6), y_te)
    assert whole.tolist() == expected.tolist() and whole.mean() >= 0.9
    last = baseline_correct(data)["last_timestep"]
    assert last.tolist() == linear_oracle(X_tr32[:, -1], y_tr, X_te32[:, -1], y_te).tolist()
    assert last.mean() < 0.8  # x_3 alone carries part of the class only


def test_a_training_split_of_one_class_predicts_that_class():
    two_steps = lambda values: [[[v], [v]] for v in values]  # noqa: E731  (T = 1 has no last_timestep baseline)
    data = trend_data(two_steps([1.0, 2.0, 3.0]), [1, 1, 1], two_steps([0.0, 5.0, 9.0, 1.0]), [1, 0, 1, 0])
    correct = baseline_correct(data)
    for name in BASELINES:
        assert correct[name].tolist() == [1, 0, 1, 0], name


def test_summarize_baselines_by_hand():
    per_seed = [
        {"chance": 0.5, "last_timestep": 0.6, "whole_sequence": 1.0},
        {"chance": 0.52, "last_timestep": 0.7, "whole_sequence": 0.98},
        {"chance": 0.54, "last_timestep": 0.8, "whole_sequence": 0.99},
    ]
    correct = [
        {"last_timestep": np.array([1, 0])},
        {"last_timestep": np.array([0, 0])},
        {"last_timestep": np.array([1, 1])},
    ]
    chance, last, whole = summarize_baselines(per_seed, (3, 4, 5), 200, correct)
    assert [b["name"] for b in (chance, last, whole)] == list(BASELINES)
    assert (last["label"], last["description"]) == BASELINES["last_timestep"]
    # last: mean 0.7; deviations -0.1, 0, 0.1: sd = sqrt(0.02 / 2) = 0.1 (ddof 1; ddof 0 would give 0.0816)
    assert last["mean"] == pytest.approx(0.7) and last["sd"] == pytest.approx(0.1)
    assert chance["mean"] == pytest.approx(0.52) and chance["sd"] == pytest.approx(0.02)
    assert whole["sd"] == pytest.approx(0.01)
    assert last["acc_per_seed"] == [0.6, 0.7, 0.8] and last["seeds"] == [3, 4, 5] and last["n_test"] == 200
    assert last["correct_per_seed"] == [[1, 0], [0, 0], [1, 1]]  # what a model is paired with
    assert "correct_per_seed" not in chance and "correct_per_seed" not in whole
    (one_seed, *_) = summarize_baselines(per_seed[:1], [0], 50)
    assert one_seed["sd"] is None and one_seed["mean"] == 0.5 and "correct_per_seed" not in one_seed


def test_baselines_for_builds_each_seeds_data_and_keeps_its_seed():
    def cfg(seed):
        return SimpleNamespace(seed=seed, data=SimpleNamespace(n_test=5))

    flipped = trend_data(DATA.X_train.numpy(), Y_TRAIN, DATA.X_test.numpy(), [1 - y for y in Y_TEST])
    made = []

    def make_data(c):
        made.append(c.seed)
        return DATA if c.seed == 7 else flipped

    chance, last, whole = baselines_for([cfg(7), cfg(2)], make_data)
    assert made == [7, 2] and last["seeds"] == [7, 2] and last["n_test"] == 5
    assert last["acc_per_seed"] == pytest.approx([0.8, 0.2]) and chance["acc_per_seed"] == pytest.approx([0.4, 0.6])
    assert last["correct_per_seed"] == [[1, 0, 1, 1, 1], [0, 1, 0, 0, 0]]
    assert last["mean"] == pytest.approx(0.5) and last["sd"] == pytest.approx(0.6 / 2**0.5)


def test_per_example_results_are_integers_and_one_training_example_is_a_class():
    data = trend_data(
        [[[1.0], [1.0]]], [1], [[[0.0], [0.0]], [[5.0], [5.0]]], [1, 0]
    )  # one sequence: its class for all
    correct = baseline_correct(data)
    for name in BASELINES:
        assert correct[name].dtype == np.int64 and correct[name].tolist() == [1, 0], name
    (chance, last, _) = baselines_for([SimpleNamespace(seed=3, data=SimpleNamespace(n_test=2))], lambda c: data)
    assert last["correct_per_seed"] == [[1, 0]] and all(type(v) is int for v in last["correct_per_seed"][0])
    assert chance["seeds"] == [3] and chance["n_test"] == 2 and chance["sd"] is None


def test_only_the_solvers_convergence_warning_is_silenced(monkeypatch):
    """A fit that stops at max_iter says nothing (the baseline is still the best fit found); any
    other warning of the fit reaches the user."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    fit = LogisticRegression.fit
    raised, params = [], []

    def fit_warning(category):
        def warned_fit(self, X, y, *args, **kwargs):
            warnings.warn("from the fit", category)
            raised.append(category)
            params.append(self.get_params())
            return fit(self, X, y, *args, **kwargs)

        return warned_fit

    monkeypatch.setattr(LogisticRegression, "fit", fit_warning(ConvergenceWarning))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert baseline_correct(DATA)["last_timestep"].tolist() == [1, 0, 1, 1, 1]
    assert raised == [ConvergenceWarning, ConvergenceWarning] and caught == []  # one fit per linear baseline
    # the classifier the module docstring names (L2, C = 1, lbfgs), stopped after at most 1000 iterations
    documented = LogisticRegression(C=1.0, l1_ratio=0.0, solver="lbfgs", max_iter=1000).get_params()  # l1_ratio 0: L2
    assert params == [documented, documented]
    monkeypatch.setattr(LogisticRegression, "fit", fit_warning(UserWarning))
    with pytest.warns(UserWarning, match="^from the fit$") as record:
        baseline_correct(DATA)
    assert [w.category for w in record] == [UserWarning, UserWarning]


def test_the_linear_fits_run_blas_on_one_thread_whatever_the_process_allows(monkeypatch):
    """Oracle: threadpoolctl's report of the BLAS libraries inside each fit and prediction, under
    a process limit of two threads: one thread, so that the sums (and a borderline prediction) do
    not depend on the machine's cores; the process's own limit is back afterwards."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = []
    fit, predict = LogisticRegression.fit, LogisticRegression.predict

    def counted(method):
        def call(self, *args, **kwargs):
            seen.append(blas_threads())
            return method(self, *args, **kwargs)

        return call

    monkeypatch.setattr(LogisticRegression, "fit", counted(fit))
    monkeypatch.setattr(LogisticRegression, "predict", counted(predict))
    with threadpool_limits(limits=2, user_api="blas"):
        assert baseline_correct(DATA)["last_timestep"].tolist() == [1, 0, 1, 1, 1]
        assert blas_threads() == {2}
    assert seen == [{1}] * 4  # a fit and a prediction per linear baseline
