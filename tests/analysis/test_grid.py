"""lnbench sweep: any grid (issue 13, A)."""

import json

import pytest
from conftest import TINY_OVERRIDES, set_args
from typer.testing import CliRunner

from lnbench.analysis import grid
from lnbench.cli.app import app
from lnbench.config import ConfigError, RunConfig
from lnbench.records.schema import SummaryRow

runner = CliRunner()
TINY = set_args(["seeds=[0,1,2]", *TINY_OVERRIDES]) + ["--jobs", "1"]


def _cfg(g):
    return RunConfig.model_validate({"sweep": {"grid": g}})


def test_the_cells_are_the_product_of_the_grid_in_order():
    cells = grid.check_grid(_cfg({"model.norm": ["none", "layer"], "data.seq_len": [5, 10, 20]}))
    assert (
        len(cells) == 6
        and cells[0] == {"model__norm": "none", "data__seq_len": 5}
        and cells[-1] == {"model__norm": "layer", "data__seq_len": 20}
    )
    assert grid.cell_name(cells[1]) == "norm-none_seq_len-10" and grid.cell_label(cells[1]) == "norm=none, seq_len=10"


@pytest.mark.parametrize(
    "g,message",
    [
        ({}, "sweep.grid: empty"),
        ({"model.nrm": ["none"]}, "model.nrm: unknown key; allowed in model: family, norm"),
        ({"sweep.family": ["rnn"]}, "expected section.key with section one of data, model, train"),
        ({"data.seq_len": []}, "expected a non-empty list"),
        ({"data.seq_len": [1]}, "data.seq_len: value 1: Input should be greater than or equal to 2"),
        ({"model.norm": ["none", "group"]}, "model.norm: value 'group'"),
        (
            {"train.batch_size": [64, 5000]},
            "train.batch_size: value 5000: train.batch_size (5000) must be <= data.n_train",
        ),
        ({"train.batch_size": [64, 500], "data.n_train": [1000, 100]}, "the cell batch_size=500, n_train=100"),
        ({"data.seq_len": [5, 5]}, "duplicate values"),
    ],
)
def test_a_bad_grid_names_the_key(g, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        grid.check_grid(_cfg(g) if g else RunConfig())


def _row(norm, seed, acc):
    return SummaryRow(
        family="rnn",
        norm=norm,
        batch_size=64,
        seed=seed,
        status="completed",
        epochs_completed=2,
        final_test_acc=acc,
        final_test_acc_batch_stats=None,
        final_train_loss=0.5,
        final_test_loss=0.5,
        mean_train_loss=0.5 - acc / 10,
        first_epoch_at_target=None,
        n_test=200,
    )


def test_each_norm_is_paired_with_nonorm_at_the_same_other_values():
    cells = [{"model__norm": n, "data__seq_len": t} for n in ("none", "layer") for t in (5, 10)]
    rows = [
        [
            _row(
                c["model__norm"],
                s,
                0.6 + 0.01 * s + (0.1 if (c["model__norm"], c["data__seq_len"]) == ("layer", 10) else 0.001 * s),
            )
            for s in range(5)
        ]
        for c in cells
    ]
    comps = grid.comparisons(cells, rows)
    acc = {(c.condition_a, c.metric): c for c in comps}
    assert len(comps) == 4 and {c.norm_a for c in comps} == {"layer"} and {c.norm_b for c in comps} == {"none"}
    assert acc[("seq_len=10", "final_test_acc")].mean_diff == pytest.approx(0.1 - 0.002)
    assert acc[("seq_len=10", "final_test_acc")].significant and not acc[("seq_len=5", "final_test_acc")].significant
    entries = grid.aggregate(cells, rows)
    assert entries[3]["values"] == {"model.norm": "layer", "data.seq_len": 10} and entries[3][
        "mean_final_test_acc"
    ] == pytest.approx(0.72)
    lines = grid.sentences(entries, comps)
    assert any("LayerNorm minus NoNorm at seq_len=10, final test accuracy" in line for line in lines)
    assert grid.comparisons([{"data__seq_len": 5}], [rows[0]]) == []  # no norm axis: nothing paired


def test_sweep_command_writes_cells_rows_figures_and_resumes(tmp_path):
    args = [
        "sweep",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "sweep.grid={model.norm: [none, layer], data.seq_len: [3, 5]}",
        *TINY,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run,) = list(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert (
        summary["kind"] == "sweep" and summary["complete"] and len(summary["cells"]) == 4 and len(summary["rows"]) == 12
    )
    assert summary["figures"] == ["accuracy_vs_seq_len.png"] and (run / "report.html").exists()
    assert {tuple(r["values"].items()) for r in summary["rows"]} == {
        (("model.norm", n), ("data.seq_len", t)) for n in ("none", "layer") for t in (3, 5)
    }
    assert (run / "norm-layer_seq_len-5_seed2" / "metrics.json").exists()
    metrics = json.loads((run / "norm-layer_seq_len-5_seed2" / "metrics.json").read_text())
    assert len(metrics["hidden_norm"][0]) == 5  # the cell's seq_len was used
    resumed = runner.invoke(app, ["sweep", str(run / "config.yaml"), "--resume", str(run), "--jobs", "1"])
    assert resumed.exit_code == 0 and json.loads((run / "run.json").read_text())["resumed"][0]["cells_kept"] == 4
    assert json.loads((run / "summary.json").read_text())["cells"] == summary["cells"]


def test_the_batch_size_sweep_is_a_preset_grid():
    """batchsize-sweep's cells are the grid {family} x {norms} x {batch sizes}, as configs/sweep_batch_size.yaml writes it."""
    from lnbench.config import load_config

    bs = load_config("configs/batchsize_sweep.yaml")
    preset = load_config("configs/sweep_batch_size.yaml")
    cells = grid.check_grid(bs.with_changes(sweep__grid=grid.batch_size_grid(bs)))
    assert [(c["model__norm"], c["train__batch_size"]) for c in cells] == [
        (n, b) for n in bs.sweep.norms for b in bs.sweep.batch_sizes
    ]
    assert [(c["model__norm"], c["train__batch_size"]) for c in grid.check_grid(preset)] == [
        (c["model__norm"], c["train__batch_size"]) for c in cells
    ]
    for key in ("data", "train"):  # the same runs: same data and training but for the swept keys
        a, b = getattr(bs, key).model_dump(), getattr(preset, key).model_dump()
        a.pop("batch_size", None), b.pop("batch_size", None)
        assert a == b, key
