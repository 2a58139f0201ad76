"""Reference accuracies every train, compare, sweep and claims run computes from its own data.

A norm comparison means little if the task can be passed without memory. Each baseline is fit
on the training split of one seed's data and scored on its test split:

- ``chance``: always predict the training split's majority class.
- ``last_timestep``: a linear classifier of x_T alone (memoryless: what a model that forgets
  everything but the last input can reach). None for a task of one step (MNIST ``flat``: x_T is
  the whole input, and there is no memory to test).
- ``whole_sequence``: a linear classifier of the whole flattened sequence (T x H features):
  the task's linear ceiling. The trend task is linear in the sequence (d . (x_T - x_1)), so
  this is near 100 %: a model below it is not using everything a linear readout can.

The classifiers are scikit-learn's ``LogisticRegression`` (L2, C = 1, lbfgs) on standardized
features (``StandardScaler`` fit on the training split).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from statistics import mean, stdev

import numpy as np

from lnbench.training.data import TaskData

#: the memoryless baseline: a model at or below it has not learned the memory task
MEMORYLESS = "last_timestep"

#: name -> (label, description) of each baseline, in table order.
BASELINES = {
    "chance": ("chance", "the training split's majority class"),
    "last_timestep": (
        "linear readout of x_T alone",
        "memoryless: what a model that keeps only the last input can reach",
    ),
    "whole_sequence": ("linear readout of all T x D inputs", "the task's linear ceiling"),
}


def _linear_correct(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray) -> np.ndarray:
    """Per test example, 1 if the linear classifier fit on the training split is right, else 0.

    The fit runs BLAS on one thread: its sums then do not depend on the machine's core count (on
    MNIST, 784 inputs, two threads moved 1-3 of 1000 test predictions against one), and two BLAS
    threads beside the training processes took 4.5x the CPU time of one (26 against 6 s for
    the claims regimes' data) and 2.8x the wall time."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    if len(np.unique(y_train)) < 2:  # one class only: the classifier is the majority class
        return (y_test == y_train[0]).astype(np.int64)
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_train, y_train)
        return (clf.predict(X_test) == y_test).astype(np.int64)


def baseline_correct(data: TaskData) -> dict[str, np.ndarray]:
    """Per baseline of :data:`BASELINES`, its per-example correctness on one seed's test split
    (``(n_test,)`` int64, 0/1): what a model is compared with pairwise (McNemar, one seed).

    Args:
        data: the train and test splits (``X (N, T, H)``, ``y (N,)``); with T = 1 there is no
            ``last_timestep`` (it would be ``whole_sequence`` again).
    """
    X_tr, y_tr = data.X_train.numpy(), data.y_train.numpy()
    X_te, y_te = data.X_test.numpy(), data.y_test.numpy()
    majority = np.bincount(y_tr).argmax()
    out = {"chance": (y_te == majority).astype(np.int64)}
    if data.seq_len > 1:
        out["last_timestep"] = _linear_correct(X_tr[:, -1], y_tr, X_te[:, -1], y_te)
    whole = _linear_correct(data.X_train.flatten(1).numpy(), y_tr, data.X_test.flatten(1).numpy(), y_te)
    return out | {"whole_sequence": whole}


def baseline_accuracies(data: TaskData) -> dict[str, float]:
    """The test accuracy (fraction) of each baseline in :data:`BASELINES` on one seed's data.

    Args:
        data: the train and test splits (``X (N, T, H)``, ``y (N,)``).

    Returns:
        ``{"chance": ..., "last_timestep": ..., "whole_sequence": ...}``, each in [0, 1].
    """
    return {name: float(np.mean(correct)) for name, correct in baseline_correct(data).items()}


def summarize_baselines(
    per_seed: Sequence[dict[str, float]],
    seeds: Sequence[int],
    n_test: int,
    correct: Sequence[dict[str, np.ndarray]] | None = None,
) -> list[dict]:
    """The ``baselines`` entry of summary.json: one dict per baseline with ``name``, ``label``,
    ``description``, ``acc_per_seed``, ``seeds``, ``mean``, ``sd`` (None for one seed),
    ``n_test`` and, for the memoryless baseline (``last_timestep``), ``correct_per_seed`` (its
    per-example 0/1 on each seed's test split, when ``correct`` is given) so that a model can be
    compared with it pairwise."""
    out = []
    for name, (label, description) in BASELINES.items():
        if any(name not in b for b in per_seed):  # last_timestep of a one-step task
            continue
        accs = [b[name] for b in per_seed]
        entry = {
            "name": name,
            "label": label,
            "description": description,
            "seeds": list(seeds),
            "acc_per_seed": accs,
            "mean": mean(accs),
            "sd": stdev(accs) if len(accs) > 1 else None,
            "n_test": n_test,
        }
        if correct is not None and name == MEMORYLESS:
            entry["correct_per_seed"] = [c[name].tolist() for c in correct]
        out.append(entry)
    return out


def baselines_for(cfgs: Sequence, make_data) -> list[dict]:
    """Baselines over the seeds of ``cfgs`` (one :class:`lnbench.config.RunConfig` per seed;
    ``make_data(cfg)`` builds that seed's :class:`TaskData`)."""
    correct = [baseline_correct(make_data(c)) for c in cfgs]
    per_seed = [{name: float(np.mean(c)) for name, c in seed.items()} for seed in correct]
    return summarize_baselines(per_seed, [c.seed for c in cfgs], cfgs[0].data.n_test, correct)
