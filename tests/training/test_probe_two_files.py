"""A new per-epoch probe takes 2 files: its field and computation in ``lnbench/training/probes.py``
(:class:`lnbench.training.probes.LayerProbes`) and its metrics fields, each declared once with its
doc and per-epoch shape, in ``lnbench/records/schema.py``. The loop records it (per epoch, before
training, per layer of a stacked model), and metrics.json, ``lnbench.load``, TensorBoard and the
generated schema reference follow from the declarations. Tested literally: a copy of the package
with exactly those two edits trains a tiny stacked RNN in a fresh interpreter. The oracle: the
toy probe is the largest entry of ``hidden_norm``, which the loop already records."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import TINY_OVERRIDES, insert_at, package_copy, set_args

FIELD = "    hidden_norm_peak: float | None = None  # a toy: the largest mean ||h_t|| over timesteps\n"
COMPUTATION = "        probes.hidden_norm_peak = max(probes.hidden_norm)\n"
DOC = "Per epoch: the largest mean ||h_t|| over timesteps (a toy probe)."
METRICS_FIELDS = f'''    hidden_norm_peak: list[float | None] = _metric("{DOC}", factory=list, per_epoch="scalar")
    hidden_norm_peak_init: float | None = _metric("The same at initialisation.")
    hidden_norm_peak_by_layer: list[list[float | None]] | None = _metric("Per layer.", per_epoch="by_layer")
'''

READ = """
import json, sys
from pathlib import Path
from tensorboard.backend.event_processing import event_accumulator
import lnbench

run = next(p for p in Path(sys.argv[1]).iterdir() if p.is_dir())
m = json.loads((run / "metrics.json").read_text())
epochs = lnbench.load(run).epochs
acc = event_accumulator.EventAccumulator(str(run))
acc.Reload()
out = {"metrics": m, "columns": list(epochs.columns), "load": epochs["hidden_norm_peak"].tolist(),
       "load_l2": epochs["hidden_norm_peak_by_layer.l2"].tolist(),
       "tensorboard": [e.value for e in acc.Scalars("hidden_norm_peak")],
       "tensorboard_l2": [e.value for e in acc.Scalars("hidden_norm_peak_by_layer/l2")]}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    root = package_copy(tmp_path_factory.mktemp("probe_two_files"), "docs", "configs")
    probes = root / "lnbench" / "training" / "probes.py"  # file 1: the probe's field and computation
    insert_at(probes, "\n\n@dataclass(kw_only=True)\nclass MemberProbes", "\n" + FIELD.rstrip("\n"))
    insert_at(probes, "        if sat is not None:  # RNN and LSTM\n", COMPUTATION)
    schema = root / "lnbench" / "records" / "schema.py"  # file 2: its metrics fields
    insert_at(schema, "    hidden_norm_by_layer: ", METRICS_FIELDS)
    env = {**os.environ, "PYTHONPATH": str(root), "LNBENCH_KERNELS": "0", "COLUMNS": "120"}
    runs = root / "runs"
    overrides = [*TINY_OVERRIDES, "model.num_layers=2"]
    train = [sys.executable, "-m", "lnbench", "train", "configs/train.yaml", "--runs-dir", str(runs), "--tensorboard"]
    done = subprocess.run(
        [*train, *set_args(overrides)], env=env, capture_output=True, text=True, timeout=300, cwd=root
    )
    assert done.returncode == 0, done.stdout + done.stderr
    read = subprocess.run(
        [sys.executable, "-c", READ, str(runs)], env=env, capture_output=True, text=True, timeout=300, cwd=root
    )
    assert read.returncode == 0, read.stderr
    docs = subprocess.run(
        [sys.executable, "docs/generate.py"], env=env, capture_output=True, text=True, timeout=300, cwd=root
    )
    assert docs.returncode == 0, docs.stderr
    return {
        **json.loads(read.stdout.strip().splitlines()[-1]),
        "reference": (root / "docs" / "schema-reference.md").read_text(),
    }


def test_the_loop_records_the_new_probe_per_epoch_before_training_and_per_layer(trained):
    m = trained["metrics"]
    assert len(m["epochs"]) == 2
    assert m["hidden_norm_peak"] == pytest.approx([max(h) for h in m["hidden_norm"]], rel=1e-12)
    assert m["hidden_norm_peak_init"] == pytest.approx(max(m["hidden_norm_init"]), rel=1e-12)
    by_layer = m["hidden_norm_peak_by_layer"]
    assert [len(e) for e in by_layer] == [2, 2]
    assert by_layer == [[pytest.approx(max(h), rel=1e-12) for h in epoch] for epoch in m["hidden_norm_by_layer"]]


def test_the_new_probe_reaches_lnbench_load_and_tensorboard(trained):
    m = trained["metrics"]
    assert trained["load"] == pytest.approx(m["hidden_norm_peak"], rel=1e-12)
    assert trained["load_l2"] == pytest.approx([e[1] for e in m["hidden_norm_peak_by_layer"]], rel=1e-12)
    assert trained["tensorboard"] == pytest.approx(m["hidden_norm_peak"], rel=1e-6)  # float32 event files
    assert trained["tensorboard_l2"] == pytest.approx([e[1] for e in m["hidden_norm_peak_by_layer"]], rel=1e-6)


def test_the_new_probe_is_in_the_generated_schema_reference(trained):
    rows = {line.split(" | ")[0]: line for line in trained["reference"].splitlines() if line.startswith("| `")}
    assert rows["| `hidden_norm_peak`"].endswith(DOC.replace("|", "\\|") + " |")  # a table cell escapes |
    assert rows["| `hidden_norm_peak_init`"].endswith("The same at initialisation. |")
