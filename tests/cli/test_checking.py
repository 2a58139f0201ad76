"""The checking commands through the Typer CLI (lnbench.cli.checking): lnbench gradcheck and lnbench
invariance write their report, exit 1 naming a failing check, and refuse bad arguments in one line."""

import json

import pytest
from conftest import runner

from lnbench.cli.app import app

pytestmark = pytest.mark.e2e  # writes run folders


def _only_run(runs):
    (run,) = list(runs.iterdir())
    return run


def test_gradcheck_with_one_feature_writes_json(tmp_path):
    result = runner.invoke(app, ["gradcheck", "--shape", "3,1", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads((_only_run(tmp_path) / "gradcheck.json").read_text())
    assert report["passed"] is True and report["shape"] == [3, 1]


def test_gradcheck_passes_and_writes_json(tmp_path):
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["gradcheck", "--json", str(out), "--shape", "3,4", "--dtype", "float32"])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["passed"] and report["shape"] == [3, 4] and report["dtype"] == "float32"
    groups = {c["group"] for c in report["checks"]}
    assert groups == {"finite-diff", "vs-torch", "autograd", "edge-cases"}
    assert all(c["passed"] for c in report["checks"]) and "All" in result.output


def test_gradcheck_exits_1_and_names_the_failing_check(tmp_path, monkeypatch):
    import lnbench.nn.numpy_layernorm as nl

    real = nl.layernorm_backward

    def broken(grad_y, cache):
        dx, dgamma, dbeta = real(grad_y, cache)
        return dx * 1.001, dgamma, dbeta

    monkeypatch.setattr(nl, "layernorm_backward", broken)
    import lnbench.nn.gradient_checks as gc

    monkeypatch.setattr(gc, "layernorm_backward", broken, raising=False)
    result = runner.invoke(app, ["gradcheck", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "FAIL" in result.output and "dx" in result.output
    (run,) = list(tmp_path.iterdir())
    assert json.loads((run / "run.json").read_text())["status"] == "failed"
    assert not json.loads((run / "gradcheck.json").read_text())["passed"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--dtype", "int8"], "dtype"),
        (["--shape", "4,x"], "--shape"),
        (["--shape", "4,,5"], "--shape"),
        (["--shape", "4,0"], "shape"),
    ],
)
def test_gradcheck_bad_arguments_exit_2_without_folder(tmp_path, args, message):
    result = runner.invoke(app, ["gradcheck", *args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "runs").exists()


def test_invariance_json_to_an_unwritable_place_is_one_line(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = runner.invoke(app, ["invariance", "--json", str(blocker / "x.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_invariance_prints_where_its_report_is(tmp_path):
    """invariance prints its report.html as the report and its run folder; with --json, the JSON
    file and no report."""
    result = runner.invoke(app, ["invariance", "--draws", "1", "--runs-dir", str(tmp_path)])
    run = _only_run(tmp_path)
    assert result.exit_code == 0, result.output
    assert f"Report: {run / 'report.html'}" in result.output and (run / "report.html").exists()
    assert f"Run folder: {run}" in result.output
    out = tmp_path.parent / "inv.json"
    result = runner.invoke(app, ["invariance", "--draws", "1", "--json", str(out)])
    assert result.exit_code == 0 and f"JSON: {out}" in result.output and "Report:" not in result.output
