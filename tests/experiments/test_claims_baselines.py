"""The claims' baselines: one fit per distinct (data, seeds), the same numbers as a fit per regime."""

from __future__ import annotations

from conftest import REPO

from lnbench.experiments import base
from lnbench.experiments.claims import Claims, claims_spec

PRESETS = REPO / "configs" / "claims"
SMALL = ["data.n_train=80", "data.n_test=40", "data.features=4", "seeds=[0,1]"]


def test_regimes_with_the_same_data_share_one_fit_with_the_same_numbers(monkeypatch):
    spec = claims_spec(
        ["rnn_faster_default", "rnn_separate_learns", "rnn_faster_unstable", "rnn_bn_batch_size_1"], PRESETS, SMALL
    )
    assert list(spec.regimes) == ["default", "separate_placement", "unstable_recurrence", "small_batches"]
    fits = []
    real = base.Experiment.baselines

    def counted(self, cfg):
        fits.append(cfg.name)
        return real(self, cfg)

    monkeypatch.setattr(base.Experiment, "baselines", counted)
    shared = Claims().baselines(spec)
    # default, separate_placement and unstable_recurrence draw the same data; small_batches another (offset_std 1)
    assert len(fits) == 2
    monkeypatch.setattr(base.Experiment, "baselines", real)
    for name, cfg in spec.regimes.items():
        alone = real(Claims(), cfg)
        assert [b["name"] for b in shared[name]] == [b["name"] for b in alone]
        for got, want in zip(shared[name], alone):
            assert got == want
    shared["default"][0]["mean"] = -1.0  # a copy each: one regime's entry is not another's
    assert shared["separate_placement"][0]["mean"] != -1.0
