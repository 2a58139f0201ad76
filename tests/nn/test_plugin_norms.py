"""A user's own norm without a fork: ``model.norm: "package.module:ClassName"`` (a subclass of
lnbench.nn.Norm), checked by lnbench.testing.check_norm as the built-in norms are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import TINY_OVERRIDES, set_args
from typer.testing import CliRunner

from lnbench.cli.app import app
from lnbench.config import load_config
from lnbench.nn.batchnorm import BatchNorm1d
from lnbench.nn.invariance import EXPECTED
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.registry import norm_kind
from lnbench.nn.rmsnorm import RMSNorm
from lnbench.testing import check_norm, norm_checks

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
SCALE = "toy_norms:ScaleNorm"  # tests/nn/toy_norms.py, on sys.path as this test's folder


@pytest.mark.parametrize(("cls", "kind"), [(LayerNorm, "layer"), (RMSNorm, "rms"), (BatchNorm1d, "batch")])
def test_the_built_in_norms_pass_check_norm_with_their_table_1_row(cls, kind):
    report = check_norm(cls)
    assert tuple(report["invariance"].values()) == EXPECTED[kind]  # Ba et al. Table 1 / Zhang & Sennrich


def test_a_wrong_backward_and_a_non_norm_are_refused():
    import toy_norms

    with pytest.raises(AssertionError, match="WrongBackward: gradcheck failed"):
        check_norm(toy_norms.WrongBackward)
    with pytest.raises(TypeError, match="'NotANorm' is not a subclass of lnbench.nn.Norm"):
        check_norm(toy_norms.NotANorm)


def test_members_that_see_each_other_are_refused():
    """A norm whose statistics run over the member axis too: member s is not its own model."""
    import toy_norms

    class Pooled(toy_norms.ScaleNorm):
        def forward(self, x):
            return self.gamma * x / (x.norm() + self.eps)

    with pytest.raises(AssertionError, match="member 0 is not its own model"):
        check_norm(Pooled)


def test_a_users_norm_in_a_config_is_built_by_the_registry():
    cfg = load_config(None, [f"model.norm={SCALE}"])
    kind = norm_kind(cfg.model.norm)
    assert kind.label == "ScaleNorm" and kind.normalizes_activations and not kind.has_beta
    layer = kind.build(8, cfg.model)
    torch.testing.assert_close(layer(torch.ones(2, 8)), torch.ones(2, 8), rtol=1e-5, atol=1e-5)  # sqrt(D) x / ||x||


@pytest.mark.parametrize(
    ("norm", "message"),
    [
        ("no_such_module:Norm", "model.norm: norm 'no_such_module:Norm': cannot import no_such_module"),
        ("toy_norms:Missing", "model.norm: norm 'toy_norms:Missing': toy_norms has no Missing"),
        ("toy_norms:NotANorm", "model.norm: norm 'toy_norms:NotANorm': NotANorm is not a subclass of lnbench.nn.Norm"),
        ("layer2", "model.norm: Input should be 'none', 'batch', 'layer', 'rms', 'weight' or 'group', or a norm class"),
    ],
)
def test_a_bad_plugin_is_one_line_exit_2_and_no_folder(norm, message, tmp_path):
    args = [
        "train",
        str(REPO / "configs/train.yaml"),
        "--runs-dir",
        str(tmp_path / "runs"),
        *set_args(TINY_OVERRIDES),
        "--set",
        f"model.norm={norm}",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.e2e
def test_a_users_norm_trains_in_a_compare_against_layernorm(tmp_path):
    args = ["compare", "--runs-dir", str(tmp_path), "--jobs", "1", *set_args([*TINY_OVERRIDES, "seeds=[0,1]"])]
    args += ["--set", f'compare.norms=[none, layer, "{SCALE}"]', "--set", "compare.families=[rnn, transformer]"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    rows = [r for r in summary["rows"] if r["norm"] == SCALE]
    assert len(rows) == 6 and all(r["status"] == "completed" for r in rows)  # RNN x 2 placements + Transformer, 2 seeds
    assert "ScaleNorm" in (folder / "report.html").read_text()


def test_gradcheck_and_invariance_take_a_users_norm(tmp_path, monkeypatch):
    from lnbench.cli.console import console

    monkeypatch.setattr(console, "width", 250)  # one row a line, whatever the terminal: the phrases stay whole
    bad = runner.invoke(app, ["gradcheck", "--norm", "toy_norms:WrongBackward", "--runs-dir", str(tmp_path)])
    assert bad.exit_code == 1 and "WrongBackward: gradcheck failed" in " ".join(bad.output.split())
    good = runner.invoke(app, ["gradcheck", "--norm", SCALE, "--runs-dir", str(tmp_path)])
    assert good.exit_code == 0 and "ScaleNorm: members=3: each member its own model" in " ".join(good.output.split())
    table = runner.invoke(app, ["invariance", "--norm", SCALE, "--draws", "2", "--runs-dir", str(tmp_path)])
    assert table.exit_code == 0, table.output
    flat = " ".join(table.output.split())
    assert "ScaleNorm (yours" in flat and "1 norm of yours measured, not checked" in flat
    report = json.loads(next(tmp_path.glob("*_invariance/invariance.json")).read_text())
    row = {c["transformation"]: c["measured"] for c in report["cells"] if c["method"] == SCALE}
    assert row["weight_matrix_rescaling"] == "I" and row["dataset_recentering"] == "N"  # x / ||x||
    missing = runner.invoke(app, ["invariance", "--norm", "nosuch:X", "--runs-dir", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "cannot import nosuch" in missing.output and not (tmp_path / "none").exists()


@pytest.mark.e2e
def test_a_cell_that_fails_says_failed_in_its_progress_line_not_finished(tmp_path):
    """A failed cell's runs were reported as "finished" in the progress log (issue 32's attack)."""
    args = ["compare", "--runs-dir", str(tmp_path), "--jobs", "1", *set_args([*TINY_OVERRIDES, "seeds=[0]"])]
    args += ["--set", 'compare.norms=[none, "toy_norms:RaisingNorm"]', "--set", "compare.families=[transformer]"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("[")]
    assert any("RaisingNorm" in ln and " failed;" in ln for ln in lines), lines
    assert not any("RaisingNorm" in ln and " finished" in ln for ln in lines), lines
    assert any("none" in ln.lower() and " finished, test acc" in ln for ln in lines), lines


def test_a_norm_that_hides_its_batch_statistics_is_refused():
    """A new user's trial: a norm over the batch axis that declares uses_batch_statistics = False
    passed check_norm, and would have been trusted at batch size 1."""
    import toy_norms

    with pytest.raises(AssertionError, match="SecretBatchNorm: declares uses_batch_statistics = False, but an example"):
        check_norm(toy_norms.SecretBatchNorm)
    honest = type("HonestBatchNorm", (toy_norms.SecretBatchNorm,), {"uses_batch_statistics": True})
    assert check_norm(honest)["capabilities"]["uses_batch_statistics"] is True
    checks = {c.name: c for c in norm_checks(toy_norms.SecretBatchNorm)}
    failed = checks["SecretBatchNorm: each example its own output, unless it uses batch statistics"]
    assert not failed.passed and "normalizes over the batch" in failed.detail
