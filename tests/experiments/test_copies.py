"""Runs of the same effective config are trained once: the other cells copy them.

A model whose keys have no effect on it (``model.norm_gain_init`` with NoNorm or weight norm,
``model.norm_placement`` with NoNorm) is one network in every group of a compare or cell of a
sweep. The oracles: the models that the configs build (equal parameters and outputs where the
configs are the same run); the number of calls of the training function; the numbers of a run
trained on its own; and the rows of the same experiment run in one go.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from conftest import TINY_OVERRIDES

from lnbench import experiments
from lnbench.analysis import grid, verdicts
from lnbench.config import load_config
from lnbench.experiments import cells as cells_module
from lnbench.experiments import driver
from lnbench.experiments.base import copy_sources
from lnbench.experiments.compare import COMPARE
from lnbench.experiments.sweep import SWEEP
from lnbench.nn.models import build_model
from lnbench.records.schema import SummaryRow
from lnbench.report.html import table_data
from lnbench.report.tables import grid_table

GAINS = [*TINY_OVERRIDES, "seeds=[0, 1]", "compare.families=[rnn]", "compare.norms=[none, layer]"]
GAINS += ["compare.norm_gain_inits=[0.1, 1]", "compare.placements=[joint, separate]"]
TRAINED = "rnn-joint-gain0.1_none"  # NoNorm's one trained cell; its 3 other groups copy it
COPIES = [f"rnn-{p}-gain{g}_none" for p, g in (("joint", 1), ("separate", 0.1), ("separate", 1))]


def _model_output(overrides: list[str]) -> tuple[dict, torch.Tensor]:
    cfg = load_config(None, [*TINY_OVERRIDES, *overrides])
    torch.manual_seed(0)
    model = build_model(cfg.model, 8, 5, 2)
    torch.manual_seed(1)
    return model.state_dict(), model(torch.randn(3, 5, 8))


@pytest.mark.parametrize(
    "family,norm,key,values,same",
    [
        ("rnn", "none", "norm_gain_init", ["0.1", "1"], True),
        ("rnn", "none", "norm_placement", ["joint", "separate"], True),
        ("rnn", "weight", "norm_gain_init", ["0.1", "1"], True),
        ("transformer", "none", "input_norm", ["true", "false"], True),
        ("rnn", "batch", "batch_norm_stats", ["pooled", "per_timestep"], False),
        ("rnn", "layer", "batch_norm_stats", ["pooled", "per_timestep"], True),
        ("rnn", "weight", "norm_placement", ["joint", "separate"], False),
        ("rnn", "layer", "norm_gain_init", ["0.1", "1"], False),
        ("lstm", "rms", "norm_gain_init", ["0.1", "1"], False),
    ],
)
def test_two_configs_have_one_effective_config_when_they_build_one_model(family, norm, key, values, same):
    """Two configs that differ in ``key`` (and in their names) have equal effective YAML exactly
    when they build the same model: equal parameters and an equal output on one batch, from one seed."""
    sets = [[f"model.family={family}", f"model.norm={norm}", f"model.{key}={v}", f"name=run{v}"] for v in values]
    (a, out_a), (b, out_b) = (_model_output(s) for s in sets)
    built_alike = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a) and torch.equal(out_a, out_b)
    assert built_alike == same
    cfg_a, cfg_b = (load_config(None, [*TINY_OVERRIDES, *s]) for s in sets)
    assert (cfg_a.effective_yaml() == cfg_b.effective_yaml()) == same


def test_the_plan_copies_nonorm_into_its_other_groups():
    """gains [0.1, 1] x placements [joint, separate] x norms [none, layer]: 8 cells of 2 seeds.
    NoNorm's first cell is trained and its 3 others copy it; LayerNorm's 4 cells are trained."""
    cells = driver.prepare(COMPARE, load_config(None, GAINS))
    names = [cell.cfgs[0].name.rsplit("_seed", 1)[0] for cell in cells]
    copies = {names[k]: names[source] for k, source in copy_sources(cells).items()}
    assert copies == dict.fromkeys(COPIES, TRAINED)
    assert driver.cells_to_copy(cells, None) == {f"{c}_seed{s}": f"{TRAINED}_seed{s}" for c in COPIES for s in (0, 1)}


def _count_trainings(monkeypatch) -> list[list[int]]:
    """Record the seeds of every call of the training function."""
    trained: list[list[int]] = []
    train = cells_module.train_members

    def counted(model, datas, train_cfg, seeds, *args, **kwargs):
        trained.append(list(seeds))
        return train(model, datas, train_cfg, seeds, *args, **kwargs)

    monkeypatch.setattr(cells_module, "train_members", counted)
    return trained


def _metrics(path):
    body = json.loads((path / "metrics.json").read_text())
    body.pop("epoch_seconds")
    return body


def _rows(folder) -> list[dict]:
    rows = json.loads((folder / "summary.json").read_text())["rows"]
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]


@pytest.mark.e2e
def test_identical_runs_are_trained_once_and_their_copies_are_what_training_gives(tmp_path, monkeypatch):
    """The compare of GAINS calls the training function 5 times (NoNorm once, LayerNorm in each of
    its 4 groups), each with both seeds; each of the 6 NoNorm runs of the other groups is a copy
    whose run.json names the run it copies, and whose metrics.json is the one of that config
    trained on its own (a compare of that one group), bit for bit but the epoch times."""
    trained = _count_trainings(monkeypatch)
    result = experiments.compare(load_config(None, GAINS), runs_dir=tmp_path / "all")
    assert result.status == "completed" and len(result.rows) == 16
    assert trained == [[0, 1]] * 5
    folder = result.path
    for name in COPIES:
        for seed in (0, 1):
            manifest = json.loads((folder / f"{name}_seed{seed}" / "run.json").read_text())
            assert manifest["copy_of"] == f"{TRAINED}_seed{seed}" and manifest["status"] == "completed"
    assert not any("copy_of" in json.loads((p / "run.json").read_text()) for p in folder.glob("*_layer_seed*"))

    alone = [*GAINS, "compare.norm_gain_inits=[1]", "compare.placements=[separate]", "compare.norms=[none]"]
    single = experiments.compare(load_config(None, alone), runs_dir=tmp_path / "alone")
    for seed in (0, 1):
        name = f"rnn-separate-gain1_none_seed{seed}"
        assert _metrics(folder / name) == _metrics(single.path / name)
        assert (folder / name / "weights.pt").read_bytes() == (single.path / name / "weights.pt").read_bytes()
    ours = {r["run_dir"]: r for r in _rows(folder)}
    assert [ours[r["run_dir"]] for r in _rows(single.path)] == _rows(single.path)


@pytest.mark.e2e
def test_resume_copies_what_is_left_from_whichever_run_finished(tmp_path, monkeypatch):
    """Interrupted after the first copy, the compare resumed trains nothing and writes the other
    copies; with the trained run's folder then lost (a copy finished, its original not), a resume
    copies the original back from a finished copy, naming it. Either way the rows are those of the
    compare run in one go (but the wall times)."""
    cfg = load_config(None, [*GAINS, "compare.norms=[none]"])
    whole = experiments.compare(cfg, runs_dir=tmp_path / "whole")

    def stop(label, epoch, epochs, acc=None, status=None):
        if status == "copied" and label == f"{COPIES[0]}_seed1":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        experiments.compare(cfg, runs_dir=tmp_path / "stopped", on_epoch=stop)
    (folder,) = (tmp_path / "stopped").iterdir()
    assert not (folder / f"{COPIES[1]}_seed0").exists()
    trained = _count_trainings(monkeypatch)
    resumed = experiments.compare(cfg, runs_dir=tmp_path / "stopped", resume=folder)
    assert resumed.status == "completed" and trained == []
    assert _rows(folder) == _rows(whole.path)

    shutil.rmtree(folder / f"{TRAINED}_seed0")
    shutil.rmtree(folder / f"{TRAINED}_seed1")
    again = experiments.compare(cfg, runs_dir=tmp_path / "stopped", resume=folder)
    assert again.status == "completed" and trained == []
    assert _rows(folder) == _rows(whole.path)
    for seed in (0, 1):
        manifest = json.loads((folder / f"{TRAINED}_seed{seed}" / "run.json").read_text())
        assert manifest["copy_of"] == f"{COPIES[0]}_seed{seed}"
        assert _metrics(folder / f"{TRAINED}_seed{seed}") == _metrics(whole.path / f"{TRAINED}_seed{seed}")


def _row(norm, seed, acc, placement="joint", gain=None, family="rnn", loss=0.3):
    return SummaryRow(
        family=family,
        norm=norm,
        batch_size=64,
        seed=seed,
        status="completed",
        epochs_completed=10,
        final_test_acc=acc,
        final_test_acc_batch_stats=None,
        final_train_loss=loss,
        final_test_loss=loss,
        mean_train_loss=loss,
        first_epoch_at_target=None,
        n_test=100,
        norm_placement=placement if family == "rnn" else None,
        norm_gain_init=gain,
        run_dir=f"{family}-{placement}-gain{gain}_{norm}_seed{seed}",
    )


def test_a_norm_with_the_same_runs_at_every_gain_is_one_network_trained_once():
    """NoNorm's rows equal seed for seed at gains 0.1 and 1 (LayerNorm's differ): one line, which
    says the network was trained once when the runs of the other gain were copies, and only then."""
    rows = [_row("none", s, 0.6 + 0.01 * s, gain=g, family="lstm") for g in (0.1, 1.0) for s in range(2)]
    rows += [_row("layer", s, 0.7 + 0.1 * g, gain=g, family="lstm") for g in (0.1, 1.0) for s in range(2)]
    copied = {r.run_dir for r in rows if r.norm == "none" and r.norm_gain_init == 1.0}
    assert verdicts.same_runs_across_groups(rows, copied) == [
        "LSTM, gains 0.1 and LSTM, gains 1: NoNorm gives the same runs at every initial gain, seed for seed "
        "(2 seeds): without a gain it is one network, trained once and shown in each group, not a replicate."
    ]
    assert verdicts.same_runs_across_groups(rows)[0].endswith("one network, shown in each group, not a replicate.")
    rows[2] = _row("none", 0, 0.6, gain=1.0, family="lstm", loss=0.31)  # one seed's loss differs: other runs
    assert verdicts.same_runs_across_groups(rows, copied) == []


def test_a_norm_with_the_same_runs_in_every_placement_and_gain_is_named_in_one_line():
    """The RNN's NoNorm in 2 placements x 2 gains, the same runs in all 4 groups: one line naming them."""
    rows = [_row("none", s, 0.6, p, g) for p in ("joint", "separate") for g in (0.1, 1.0) for s in range(3)]
    copied = {r.run_dir for r in rows[3:]}
    assert verdicts.same_runs_across_groups(rows, copied) == [
        "RNN (joint), gains 0.1 and RNN (joint), gains 1 and RNN (separate), gains 0.1 and RNN (separate), gains 1: "
        "NoNorm gives the same runs in every placement and at every initial gain, seed for seed (3 seeds): with "
        "nothing to place and without a gain it is one network, trained once and shown in each group, not a replicate."
    ]


def test_a_sweep_cell_of_copies_is_marked_and_not_the_best():
    """A sweep over gains x norms: the cell norm_gain_init=1, norm=none has the runs of
    norm_gain_init=0.1, norm=none. Its entry names that cell, the best is the first of the two
    (not both), the table marks it ``=`` and a verdict says it was trained once. Rows: NoNorm 0.9,
    LayerNorm 0.8."""
    grid_overrides = ['sweep.grid={"model.norm_gain_init": [0.1, 1], "model.norm": [none, layer]}', "seeds=[0, 1]"]
    spec = load_config(None, [*TINY_OVERRIDES, *grid_overrides])
    cells = driver.prepare(SWEEP, spec)
    rows = [
        _row(c.model.norm, c.seed, 0.9 if c.model.norm == "none" else 0.8, gain=c.model.norm_gain_init)
        for cell in cells
        for c in cell.cfgs
    ]
    body = SWEEP.analyse(spec, cells, rows, None)
    same = [e["same_runs_as"] for e in body["cells"]]
    assert same == [None, None, {"model.norm_gain_init": 0.1, "model.norm": "none"}, None]
    assert grid.best_cells(body["cells"]) == [body["cells"][0]]
    assert body["best_cell"]["values"] == {"model.norm_gain_init": 0.1, "model.norm": "none"}
    assert (
        "norm_gain_init=1, norm=none gives the same runs as norm_gain_init=0.1, norm=none, seed for seed: "
        "model.norm_gain_init changes nothing in its model, so it was trained once and is shown in both cells, "
        "not a replicate (a tie, never chosen over the first)."
    ) in body["verdicts"]
    table = table_data(grid_table(body["cells"]))
    assert [r[-1] for r in table["rows"]] == ["*", "", "=", ""]


@pytest.mark.e2e
def test_a_reference_folders_finished_cells_are_copied_and_a_changed_config_is_trained(tmp_path, monkeypatch):
    """``reference=`` an earlier compare: a cell whose runs finished there under the same name and
    config is copied, not trained (run.json's copy_of the source's path, its metrics the source's,
    the rows the source's but for their folders), and a cell whose config differs (its norm's,
    a cell with a run missing there, or every cell at another learning rate) is trained; run.json
    counts the cells copied."""
    base = [*TINY_OVERRIDES, "seeds=[0, 1]", "compare.families=[rnn]", "compare.norms=[none, layer]"]
    first = experiments.compare(load_config(None, base), runs_dir=tmp_path / "first")
    trained = _count_trainings(monkeypatch)
    again = experiments.compare(load_config(None, base), runs_dir=tmp_path / "again", reference=first.path)
    assert trained == [] and again.status == "completed"
    for seed in (0, 1):
        name = f"rnn_none_seed{seed}"
        manifest = json.loads((again.path / name / "run.json").read_text())
        assert manifest["copy_of"] == str((first.path / name).resolve())
        assert _metrics(again.path / name) == _metrics(first.path / name)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "run_dir"} for r in rows]  # noqa: E731
    assert strip(_rows(again.path)) == strip(_rows(first.path))
    assert json.loads((again.path / "run.json").read_text())["reference"]["cells_copied"] == 2

    shutil.rmtree(first.path / "rnn_layer_seed1")  # LayerNorm's cell no longer finished there
    partly = experiments.compare(load_config(None, base), runs_dir=tmp_path / "partly", reference=first.path)
    assert trained == [[0, 1]]  # LayerNorm's cell trained (both seeds), NoNorm's copied
    assert json.loads((partly.path / "run.json").read_text())["reference"]["cells_copied"] == 1
    changed = experiments.compare(
        load_config(None, [*base, "train.lr=0.002"]), runs_dir=tmp_path / "changed", reference=first.path
    )
    assert trained == [[0, 1]] * 3  # another learning rate: every cell trained again
    assert json.loads((changed.path / "run.json").read_text())["reference"]["cells_copied"] == 0
