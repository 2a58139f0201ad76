"""The example plugin passes lnbench's norm checks and trains through lnbench by its entry point."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from lnbench_scalenorm import ScaleNorm
from typer.testing import CliRunner

from lnbench.cli.app import app
from lnbench.config import ModelConfig
from lnbench.nn.registry import norm_kind
from lnbench.testing import check_norm

REPO = Path(__file__).resolve().parents[3]


def test_it_passes_check_norm_with_the_invariances_of_its_formula():
    report = check_norm(ScaleNorm)
    # x / ||x||: invariant to re-scaling the weights, the data and one case; not to re-centering
    assert report["invariance"] == {
        "weight_matrix_rescaling": "I",
        "weight_matrix_recentering": "N",
        "weight_vector_rescaling": "N",
        "dataset_rescaling": "I",
        "dataset_recentering": "N",
        "single_case_rescaling": "I",
    }


def test_its_entry_point_names_it_in_a_config():
    kind = norm_kind("scalenorm")
    assert kind.layer is ScaleNorm and kind.label == "ScaleNorm"
    x = torch.randn(3, 8)
    torch.testing.assert_close(kind.build(8, ModelConfig())(x).norm(dim=-1), torch.full((3,), 8**0.5))


def test_it_trains_in_a_compare_against_layernorm(tmp_path):
    tiny = ["data.n_train=32", "data.n_test=16", "data.seq_len=5", "data.features=8", "model.hidden_size=8"]
    tiny += ["train.epochs=2", "train.batch_size=16", "seeds=[0,1]", "compare.norms=[none, layer, scalenorm]"]
    args = ["compare", str(REPO / "configs/compare.yaml"), "--runs-dir", str(tmp_path), "--jobs", "1"]
    result = CliRunner().invoke(app, [*args, *[a for o in tiny for a in ("--set", o)]])
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    rows = json.loads((folder / "summary.json").read_text())["rows"]
    assert {r["status"] for r in rows if r["norm"] == "scalenorm"} == {"completed"}
