"""``lnbench train``: ``--resume`` continues an interrupted run in its own folder, the run prints
the baselines of its data, and configs/train.yaml has the default compare's budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import REPO, TINY_OVERRIDES, runner, set_args

from lnbench.cli.app import app
from lnbench.config import load_config
from lnbench.experiments import compare, train
from lnbench.training.baselines import baseline_accuracies
from lnbench.training.checkpoints import CHECKPOINT, WEIGHTS
from lnbench.training.tasks import make_task_data

OVERRIDES = [*TINY_OVERRIDES, "train.epochs=3", "model.norm=batch"]  # BatchNorm: running statistics resume too


def _metrics(run: Path) -> dict:
    body = json.loads((run / "metrics.json").read_text())
    body.pop("epoch_seconds")  # wall times
    return body


@pytest.mark.e2e
def test_resume_continues_an_interrupted_train_run_in_its_folder_as_one_run_would(tmp_path):
    cfg = load_config(REPO / "configs/train.yaml", OVERRIDES)
    whole = train(cfg, tmp_path / "whole")

    def ctrl_c(label, epoch, epochs, acc=None):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "stopped", ctrl_c)
    (run,) = (tmp_path / "stopped").iterdir()
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"
    assert torch.load(run / CHECKPOINT, weights_only=True)["epoch"] == 2

    result = runner.invoke(app, ["train", "--resume", str(run)])  # the folder's own config.yaml
    assert result.exit_code == 0, result.output
    assert f"Resuming {run}: 0 cells kept, 1 to run" in result.output
    assert [p.name for p in (tmp_path / "stopped").iterdir()] == [run.name]  # in place: no new folder
    assert _metrics(run) == _metrics(whole.path)  # bit for bit, but the wall times
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["status"] == "completed" and manifest["resumed"][0]["status"] == "interrupted"
    assert manifest["resumed_from"] == {"run_dir": run.name, "epoch": 2}
    assert (run / WEIGHTS).is_file() and not (run / CHECKPOINT).exists()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["rows"][0]["final_test_acc"] == whole.rows[0].final_test_acc

    again = runner.invoke(app, ["train", str(run / "config.yaml"), "--resume", str(run)])  # finished: kept
    assert again.exit_code == 0 and f"Nothing to do: {run} is completed" in again.output, again.output
    assert _metrics(run) == _metrics(whole.path)
    changed = runner.invoke(app, ["train", "--resume", str(run), "--set", "train.epochs=4"])
    assert changed.exit_code == 2 and "train.epochs: 3 in the folder, 4 now" in changed.output, changed.output


@pytest.mark.e2e
def test_a_child_run_is_resumed_with_its_experiment(tmp_path):
    """A compare's child run (a train folder too) goes on with its compare, and the hint "resume it
    with lnbench train" names a command that has --resume now."""
    cfg = load_config(None, [*TINY_OVERRIDES, "train.epochs=1", "seeds=[0]", "compare.families=[rnn]"])
    cfg = cfg.with_changes(compare__norms=["none"], compare__placements=None)
    folder = compare(cfg, runs_dir=tmp_path).path
    child = folder / "rnn_none_seed0"
    for args in (["train", "--resume", str(child)], ["train", str(child / "config.yaml"), "--resume", str(child)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.output.strip() == (
            f"lnbench: error: --resume {child}: a run of the compare experiment {folder}; "
            f"resume the experiment: lnbench compare --resume {folder}"
        )
    train_run = train(cfg, tmp_path / "t").path
    refused = runner.invoke(app, ["compare", "--resume", str(train_run)])  # the hint names a command that resumes
    assert refused.exit_code == 2
    assert refused.output.strip() == (
        f"lnbench: error: --resume {train_run}: a 'train' folder, not 'compare'; resume it with lnbench train"
    )
    assert runner.invoke(app, ["train", "--resume", str(train_run)]).exit_code == 0


def test_train_without_config_or_resume_is_one_line(tmp_path):
    result = runner.invoke(app, ["train", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and not (tmp_path / "runs").exists()
    assert result.output.strip() == (
        "lnbench: error: CONFIG: missing; give a config file, e.g. lnbench train configs/train.yaml (or --resume RUN_DIR)"
    )


def test_train_yaml_has_the_budget_of_the_default_compare():
    """configs/train.yaml kept 1000 x 50, the budget every RNN memorised (configs/compare.yaml)."""
    one, default = load_config(REPO / "configs/train.yaml"), load_config(REPO / "configs/compare.yaml")
    assert one.data == default.data and (one.data.n_train, one.data.n_test) == (5000, 1000)
    assert one.train == default.train and one.train.epochs == 10


@pytest.mark.e2e
def test_train_prints_and_records_the_baselines_of_its_data(tmp_path):
    """README: "Every run prints the baselines": lnbench train prints and records (summary.json) the
    baselines of its seed's data, equal to an independent fit on that data, and show prints them."""
    args = ["train", "configs/train.yaml", "--seed", "3", "--runs-dir", str(tmp_path), *set_args(OVERRIDES)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run,) = tmp_path.iterdir()
    cfg = load_config(run / "config.yaml")
    expected = baseline_accuracies(make_task_data(cfg.data, 3))  # an independent fit on seed 3's data
    baselines = json.loads((run / "summary.json").read_text())["baselines"]
    assert {b["name"]: b["acc_per_seed"] for b in baselines} == {k: [v] for k, v in expected.items()}
    assert all(b["seeds"] == [3] for b in baselines)
    assert "baselines on the same data (over 1 seed)" in result.output
    memoryless = next(b for b in baselines if b["name"] == "last_timestep")
    assert f"{memoryless['mean']:.1%}" in result.output.split("baselines on the same data")[1]
    shown = runner.invoke(app, ["show", str(run)])
    assert "baselines on the same data (over 1 seed)" in shown.output


@pytest.mark.e2e
def test_an_enormous_finite_gradient_is_a_note_in_metrics_run_json_and_the_printed_summary(tmp_path):
    """Sequential digits (pixel by pixel: its first pixels are 0) with the LN-LSTM and SGD: the
    first step's gradient of the biases has an L2 norm far above 1e6 (the norm's Jacobian
    1/sqrt(eps) at the all-zero state, once per blank pixel). The run completes, and metrics.json,
    run.json and the printed notes carry the one warning naming the tensor."""
    args = ["train", str(REPO / "configs/train.yaml"), "--runs-dir", str(tmp_path)]
    overrides = ["data.task=digits", "data.digits_order=pixels", "data.n_train=64", "data.n_test=36"]
    overrides += ["model.family=lstm", "model.norm=layer", "model.hidden_size=16", "train.epochs=1"]
    overrides += ["train.batch_size=32", "train.optimizer=sgd", "train.lr=0.05", "train.momentum=0.9"]
    result = runner.invoke(app, [*args, *set_args(overrides)])
    assert result.exit_code == 0, result.output
    [run] = tmp_path.iterdir()
    warnings = json.loads((run / "metrics.json").read_text())["warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("the gradient of cell.bias reached an L2 norm of ")
    assert float(warnings[0].split("L2 norm of ")[1].split(" ")[0]) > 1e6
    assert json.loads((run / "run.json").read_text())["warnings"] == warnings
    assert json.loads((run / "run.json").read_text())["status"] == "completed"
    from lnbench.records.folder import RunFolder

    said = f"note: {RunFolder(run).name}: the gradient of cell.bias reached an L2 norm of"
    assert said in " ".join(result.output.split())


@pytest.mark.e2e
def test_a_diverged_train_resumed_is_kept_and_its_report_written_again(tmp_path):
    """docs/cli.md: ``train --resume`` of a run that diverged trains nothing (metrics.json byte for
    byte, "1 cell kept, 0 to run"), writes its report again (report.html deleted, then back) and
    exits 3, as the run itself did (its only run diverged)."""
    cfg = load_config("configs/train.yaml", [*TINY_OVERRIDES, "train.optimizer=sgd", "train.lr=1e30"])
    run = train(cfg, tmp_path).path
    assert json.loads((run / "run.json").read_text())["status"] == "diverged"
    before = (run / "metrics.json").read_bytes()
    (run / "report.html").unlink()
    result = runner.invoke(app, ["train", "--resume", str(run)])
    assert result.exit_code == 3 and f"Resuming {run}: 1 cell kept, 0 to run" in result.output, result.output
    assert (run / "metrics.json").read_bytes() == before and (run / "report.html").is_file()
