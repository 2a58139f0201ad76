"""lnbench invariance: Ba et al. 2016, Table 1, measured. Each norm's row of invariances against the
table typed from the paper; RMSNorm's and GroupNorm's (not in the paper) against rows derived by hand."""

import json

import torch
from conftest import runner

from lnbench.cli.app import app
from lnbench.names import NORM_REGISTRY
from lnbench.nn import invariance as inv

# Ba, Kiros & Hinton 2016, Table 1, typed from the paper (columns in section 5.1's order)
PAPER = {
    "batch": "I N I I I N",
    "weight": "I N I N N N",
    "layer": "I I N I N I",
}
RMS_DERIVED = "I N N I N I"  # y = a / rms(a): per-case scale invariant, nothing subtracted
GROUP_DERIVED = "I I N I N I"  # LayerNorm's, group by group (lnbench.nn.invariance's docstring)


def test_expected_table_is_the_papers():
    for method, row in PAPER.items():
        assert " ".join(inv.EXPECTED[method]) == row
    assert " ".join(inv.EXPECTED["rms"]) == RMS_DERIVED
    assert " ".join(inv.EXPECTED["group"]) == GROUP_DERIVED
    assert [t for t, _ in inv.TRANSFORMATIONS] == [
        "weight_matrix_rescaling",
        "weight_matrix_recentering",
        "weight_vector_rescaling",
        "dataset_rescaling",
        "dataset_recentering",
        "single_case_rescaling",
    ]


def test_the_table_has_a_row_for_each_norm_kind_that_normalizes_as_the_help_says():
    """The rows (METHODS) are the registry's kinds that normalize something, the set ``lnbench
    invariance --help`` names by label; the oracle is the registry, read with no row in mind."""
    normalizing = {kind for kind, info in NORM_REGISTRY.items() if info.normalizes}
    assert set(inv.METHODS) == set(inv.EXPECTED) == normalizing == {"batch", "weight", "layer", "rms", "group"}
    help_text = runner.invoke(app, ["invariance", "--help"], env={"COLUMNS": "400"}).output
    assert "(Table 1) for BatchNorm, LayerNorm, RMSNorm, WeightNorm and GroupNorm." in help_text


def test_every_measured_cell_agrees_with_a_clear_margin():
    cells = inv.measure(seed=3)
    assert len(cells) == 30 and all(c.agrees for c in cells)  # 5 methods x 6 transformations
    assert max(c.max_change for c in cells if c.measured == "I") < 1e-6
    assert min(c.max_change for c in cells if c.measured == "N") > 0.1


def _layer_norm_without_centering(W, X):
    a = X @ W.T
    return a / torch.sqrt((a * a).mean(dim=1, keepdim=True) + inv.EPS), float(a.square().mean(dim=1).min())


def test_the_command_writes_the_table_and_exits_1_for_a_wrong_norm(tmp_path, monkeypatch):
    result = runner.invoke(app, ["invariance", "--json", str(tmp_path / "inv.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "inv.json").read_text())
    assert report["agrees"] and len(report["cells"]) == 30
    assert set(report["cells"][0]) >= {"method", "transformation", "max_change", "measured", "paper", "agrees"}
    assert {c["paper"] for c in report["cells"] if c["method"] in ("rms", "group")} == {None}
    monkeypatch.setitem(inv.METHODS, "layer", ("layer norm", _layer_norm_without_centering))
    result = runner.invoke(app, ["invariance", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 1 and "disagree" in result.output
    (run,) = list((tmp_path / "runs").iterdir())
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    bad = [c for c in json.loads((run / "invariance.json").read_text())["cells"] if not c["agrees"]]
    assert {(c["method"], c["transformation"]) for c in bad} == {("layer", "weight_matrix_recentering")}


def test_cells_are_classified_by_the_tolerance_with_an_unclear_band():
    assert inv.classify(1e-9, 1e-8) == "I"
    assert inv.classify(2e-8, 1e-8) == "?" and inv.classify(5e-6, 1e-8) == "?"  # neither: counts as a disagreement
    assert inv.classify(2e-5, 1e-8) == "N"
    assert inv.classify(5e-7, 1e-12) == "?"  # below 1e-6 is never "not invariant"
