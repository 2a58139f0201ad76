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


def test_a_sweep_with_a_rate_per_batch_size_resumes_and_its_child_reads_back(tmp_path):
    """A sweep whose batch sizes have their own rates (train.lr_by_batch_size, as Figure 6's): its
    folder resumes with its own config.yaml (nothing left to do), a child's config.yaml trains the
    same run again (``lnbench train CHILD/config.yaml``: the same per-epoch test loss and the child's
    rate in metrics.json), and ``lnbench.load_model`` rebuilds the child's model from it."""
    from conftest import runner

    import lnbench
    from lnbench.cli.app import app

    sets = [*TINY_OVERRIDES, "sweep.norms=[layer]", "sweep.batch_sizes=[8,16]", "seeds=[0]"]
    cfg = load_config(None, [*sets, "train.lr_by_batch_size={8: 3e-3}", "train.epochs=1"])
    run = experiments.batchsize_sweep(cfg, runs_dir=tmp_path / "runs").path
    resumed = runner.invoke(app, ["batchsize-sweep", "--resume", str(run), "--jobs", "1"])
    assert resumed.exit_code == 0 and "Nothing to do" in resumed.output, resumed.output
    child = run / "rnn_layer_bs8_seed0"
    again = runner.invoke(app, ["train", str(child / "config.yaml"), "--runs-dir", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    (retrained,) = list((tmp_path / "again").iterdir())
    first, second = (json.loads((p / "metrics.json").read_text()) for p in (child, retrained))
    assert first["lr"] == second["lr"] == [3e-3] and first["test_loss"] == second["test_loss"]
    assert lnbench.load_model(child).training is False
