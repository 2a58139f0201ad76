"""lnbench batchsize-sweep as a library call (lnbench.experiments.batchsize_sweep): seeds, the
aggregate and one Holm family."""

import json

import pytest
from conftest import TINY_OVERRIDES

from lnbench import experiments
from lnbench.config import load_config

pytestmark = pytest.mark.e2e  # trains models and writes run folders


def test_sweep_with_seeds_writes_aggregate_and_one_holm_family(tmp_path):
    cfg = load_config(None, [*TINY_OVERRIDES, "sweep.norms=[none,batch]", "sweep.batch_sizes=[8,16]", "seeds=[0,1]"])
    result = experiments.batchsize_sweep(cfg, runs_dir=tmp_path)
    assert len(result.rows) == 8 and {e["n_seeds"] for e in result.aggregate} == {2}
    summary = json.loads((result.path / "summary.json").read_text())
    assert summary["reference_batch_size"] == 16  # train.batch_size, which is swept
    # batch vs none at 2 sizes, each norm at 8 vs 16, batch stats vs eval at 2 sizes
    assert len(summary["comparisons"]) == 2 + 2 + 2 and {c["family"] for c in summary["comparisons"]} == {"sweep"}
    assert (result.path / "rnn_batch_bs8_seed1" / "metrics.json").exists()
    assert any(v.startswith("Significance:") for v in summary["verdicts"])
