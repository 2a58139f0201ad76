"""Reference accuracies every compare, sweep and claims run computes from its own data.

A norm comparison means little if the task can be passed without memory. Each baseline is fit
on the training split of one seed's data and scored on its test split:

- ``chance``: always predict the training split's majority class.
- ``last_timestep``: a linear classifier of x_T alone (memoryless: what a model that forgets
  everything but the last input can reach).
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

from lnbench.training.data import TrendData

#: name -> (label, description) of each baseline, in table order.
BASELINES = {
    "chance": ("chance", "the training split's majority class"),
    "last_timestep": (
        "linear readout of x_T alone",
        "memoryless: what a model that keeps only the last input can reach",
    ),
    "whole_sequence": ("linear readout of all T x H inputs", "the task's linear ceiling"),
}


def _linear_accuracy(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray) -> float:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if len(np.unique(y_train)) < 2:  # one class only: the classifier is the majority class
        return float(np.mean(y_test == y_train[0]))
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_train, y_train)
    return float(clf.score(X_test, y_test))


def baseline_accuracies(data: TrendData) -> dict[str, float]:
    """The test accuracy (fraction) of each baseline in :data:`BASELINES` on one seed's data.

    Args:
        data: the train and test splits (``X (N, T, H)``, ``y (N,)``).

    Returns:
        ``{"chance": ..., "last_timestep": ..., "whole_sequence": ...}``, each in [0, 1].
    """
    X_tr, y_tr = data.X_train.numpy(), data.y_train.numpy()
    X_te, y_te = data.X_test.numpy(), data.y_test.numpy()
    majority = np.bincount(y_tr).argmax()
    return {
        "chance": float(np.mean(y_te == majority)),
        "last_timestep": _linear_accuracy(X_tr[:, -1], y_tr, X_te[:, -1], y_te),
        "whole_sequence": _linear_accuracy(X_tr.reshape(len(X_tr), -1), y_tr, X_te.reshape(len(X_te), -1), y_te),
    }


def summarize_baselines(per_seed: Sequence[dict[str, float]], seeds: Sequence[int], n_test: int) -> list[dict]:
    """The ``baselines`` entry of summary.json: one dict per baseline with ``name``, ``label``,
    ``description``, ``acc_per_seed``, ``seeds``, ``mean``, ``sd`` (None for one seed) and
    ``n_test``."""
    out = []
    for name, (label, description) in BASELINES.items():
        accs = [b[name] for b in per_seed]
        out.append(
            {
                "name": name,
                "label": label,
                "description": description,
                "seeds": list(seeds),
                "acc_per_seed": accs,
                "mean": mean(accs),
                "sd": stdev(accs) if len(accs) > 1 else None,
                "n_test": n_test,
            }
        )
    return out


def baselines_for(cfgs: Sequence, make_data) -> list[dict]:
    """Baselines over the seeds of ``cfgs`` (one :class:`lnbench.config.RunConfig` per seed;
    ``make_data(cfg)`` builds that seed's :class:`TrendData`)."""
    per_seed = [baseline_accuracies(make_data(c)) for c in cfgs]
    return summarize_baselines(per_seed, [c.seed for c in cfgs], cfgs[0].data.n_test)
