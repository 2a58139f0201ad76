"""A kernel build (~30-60 s, or ~100-200 s on a loaded machine) happens before any run starts, in
the experiment's process and in each worker, so that it is never in a run's ``wall_seconds`` (in
a run's time it would make a LayerNorm cell look many times slower than a BatchNorm one)."""

from __future__ import annotations

import pytest
from conftest import TINY_OVERRIDES

from lnbench.config import load_config
from lnbench.experiments import cells, driver
from lnbench.experiments.registry import EXPERIMENTS
from lnbench.nn import kernels

pytestmark = pytest.mark.e2e


def test_the_kernels_are_built_before_any_run_folder_exists(tmp_path, monkeypatch):
    calls = []

    def ensure_built():  # what exists when the kernels are built
        calls.append(len(list(tmp_path.rglob("run.json"))))

    monkeypatch.setattr(kernels, "ensure_built", ensure_built)
    monkeypatch.setattr(cells, "ensure_built", ensure_built)
    cfg = load_config(None, [*TINY_OVERRIDES, "seeds=[0,1]", "compare.families=[rnn]", "compare.norms=[none,layer]"])
    result = driver.run(EXPERIMENTS["compare"], cfg, runs_dir=tmp_path)
    assert result.status == "completed"
    # the experiment's process before its own folder; then each cell (norm none, norm layer) before
    # its 2 runs: the first sees the folder's run.json, the second also the first cell's 2
    assert calls == [0, 1, 3]
