"""lnbench sweep: any grid of config keys, its cells, their names and checks, and the sweep run."""

import json

import pytest
from conftest import runner, tiny_args

from lnbench.analysis import grid
from lnbench.cli.app import app
from lnbench.config import ConfigError, RunConfig, load_config
from lnbench.records.schema import SummaryRow

THREE_SEEDS = tiny_args("seeds=[0,1,2]")  # the tiny config on 3 seeds


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
        ({"model.norm": ["none", "instance"]}, "model.norm: value 'instance'"),
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


@pytest.mark.e2e  # trains models and writes run folders
def test_sweep_command_writes_cells_rows_figures_and_resumes(tmp_path):
    args = [
        "sweep",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "sweep.grid={model.norm: [none, layer], data.seq_len: [3, 5]}",
        *THREE_SEEDS,
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
    assert (
        resumed.exit_code == 0
        and "Nothing to do: " in resumed.output
        and "(4 cells, every run finished)" in resumed.output
    )
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


# ---------------------------------------------------------------- child names

LONG_GRID = {  # 64 cells whose readable names agree on their first 70 characters
    "data.trend_strength": [0.5, 1.0],
    "data.offset_std": [1.0, 4.0],
    "data.noise_std": [0.1, 0.2],
    "model.recurrent_gain": [1.0, 3.0],
    "model.batch_norm_stats": ["pooled", "per_timestep"],
    "train.lr": [1e-3, 1e-2],
}


def _readable(changes):
    return "_".join(f"{k.split('__')[-1]}-{v}" for k, v in changes.items())


def test_a_short_clean_name_is_the_cells_values():
    changes = {"model__norm": "layer", "train__lr": 0.001, "data__seq_len": 20}
    assert grid.cell_name(changes) == "norm-layer_lr-0.001_seq_len-20"


def test_names_cut_to_70_characters_stay_unique_and_say_which_cell():
    import hashlib

    cells = grid.check_grid(_cfg(LONG_GRID))
    names = [grid.cell_name(c) for c in cells]
    assert len(cells) == 64 and len(set(names)) == 64  # cut at 70 characters alone they are 16 names
    assert len({_readable(c)[:70] for c in cells}) == 16
    for c, name in zip(cells, names):
        digest = hashlib.sha256(repr(list(c.items())).encode()).hexdigest()[:8]
        assert name == f"{_readable(c)[:61]}-{digest}" and len(name) == 70  # the same in every run (resume)


def test_values_that_clean_alike_get_their_own_names():
    # "1e+20" and "1e-20" both read "1e-20" once "+" is replaced
    cells = grid.check_grid(_cfg({"train.lr": [1e20, 1e-20]}))
    names = [grid.cell_name(c) for c in cells]
    assert names[1] == "lr-1e-20" and names[0].startswith("lr-1e-20-") and len(names[0]) == len("lr-1e-20-") + 8


def test_a_grid_whose_names_still_clash_is_refused(monkeypatch):
    monkeypatch.setattr(grid, "cell_name", lambda changes: f"folder-{len(changes)}")  # one name per cell size
    with pytest.raises(ConfigError) as err:
        grid.check_grid(_cfg({"data.seq_len": [5, 10]}))
    assert str(err.value) == (
        "sweep.grid: the cells seq_len=5 and seq_len=10 would share the run folder 'folder-1';"
        " give values that differ as text"
    )


def test_values_equal_after_validation_are_duplicates():
    for values in ([1, 1.0], [0.5, "0.5"]):
        with pytest.raises(ConfigError) as err:
            grid.check_grid(_cfg({"data.noise_std": values}))
        assert str(err.value) == f"sweep.grid: data.noise_std: duplicate values in {values}"
    assert len(grid.check_grid(_cfg({"data.noise_std": [1, 1.5]}))) == 2


def test_the_sweep_plans_one_folder_per_cell_and_seed(tmp_path):
    from lnbench.experiments.sweep import SWEEP

    spec = _cfg(LONG_GRID).with_changes(seeds=[0, 1])
    names = [c.name for cell in SWEEP.plan(spec, tmp_path) for c in cell.cfgs]
    assert len(names) == 128 and len(set(names)) == 128


def test_a_value_error_is_one_line_without_pydantics_prefix():
    with pytest.raises(ConfigError) as err:
        grid.check_grid(_cfg({"train.batch_size": [64, 5000]}))
    assert (
        str(err.value)
        == "sweep.grid: train.batch_size: value 5000: train.batch_size (5000) must be <= data.n_train (1000)"
    )


# ---------------------------------------------------------------- aggregate, comparisons, sentences by hand


def _cell_rows(accs, losses=None, diverged=0, norm="layer"):
    rows = [_row(norm, s, a) for s, a in enumerate(accs)]
    for r, loss in zip(rows, losses or []):
        r.mean_train_loss = loss
    for s in range(len(accs), len(accs) + diverged):
        r = _row(norm, s, 0.5)
        r.status, r.final_test_acc, r.mean_train_loss = "diverged", None, None
        rows.append(r)
    return rows


def test_the_aggregate_of_a_cell_by_hand():
    from scipy.stats import t as t_dist

    cells = [{"model__norm": "layer", "data__seq_len": 5}, {"model__norm": "none", "data__seq_len": 5}]
    rows = [_cell_rows([0.80, 0.82, 0.87], [0.3, 0.4, 0.5], diverged=1), _cell_rows([0.6], [0.7], norm="none")]
    first, one = grid.aggregate(cells, rows)
    # mean 0.83; deviations -0.03, -0.01, 0.04: sd = sqrt(0.0026 / 2) = 0.0360555 (ddof 1)
    sd = (0.0026 / 2) ** 0.5
    half = t_dist.ppf(0.975, 2) * sd / 3**0.5  # 4.302653 * 0.0208167 = 0.089567
    assert first["values"] == {"model.norm": "layer", "data.seq_len": 5}
    assert (first["n_seeds"], first["n_diverged"]) == (4, 1)
    assert first["mean_final_test_acc"] == pytest.approx(0.83) and first["std_final_test_acc"] == pytest.approx(sd)
    assert first["ci95_final_test_acc"] == pytest.approx([0.83 - half, 0.83 + half]) and half == pytest.approx(
        0.089567, abs=1e-6
    )
    assert first["mean_mean_train_loss"] == pytest.approx(0.4)
    assert one["std_final_test_acc"] is None and one["ci95_final_test_acc"] is None  # one seed: no spread over seeds
    assert one["mean_final_test_acc"] == 0.6 and one["mean_mean_train_loss"] == 0.7 and one["n_diverged"] == 0


def test_the_aggregate_interval_is_clipped_to_0_and_1():
    # two seeds: half-width 12.706 * sd / sqrt(2) reaches far past both ends
    (high,) = grid.aggregate([{"model__norm": "layer"}], [_cell_rows([0.9, 1.0])])
    (low,) = grid.aggregate([{"model__norm": "layer"}], [_cell_rows([0.0, 0.1])])
    assert high["ci95_final_test_acc"] == [pytest.approx(0.95 - 12.7062047 * 0.0707107 / 2**0.5, abs=1e-6), 1.0]
    assert low["ci95_final_test_acc"] == [0.0, pytest.approx(0.05 + 12.7062047 * 0.0707107 / 2**0.5, abs=1e-6)]
    (dead,) = grid.aggregate([{"model__norm": "layer"}], [_cell_rows([], diverged=2)])
    assert dead["mean_final_test_acc"] is None and dead["mean_mean_train_loss"] is None and dead["n_diverged"] == 2


def test_comparisons_pair_by_seed_on_both_metrics_with_holm_over_all():
    from lnbench.analysis.stats import holm, paired_over_seeds

    cells = [{"model__norm": n, "data__seq_len": t} for n in ("none", "layer", "batch") for t in (5, 10)]
    base = [0.60, 0.70, 0.65, 0.72, 0.58]
    gain = {("layer", 10): 0.1, ("batch", 5): -0.05}
    rows = []
    for c in cells:
        g = gain.get((c["model__norm"], c["data__seq_len"]), 0.0)
        rows.append(
            [_row(c["model__norm"], s, a + g + 0.003 * s * (c["model__norm"] != "none")) for s, a in enumerate(base)]
        )
    rows[3] = list(reversed(rows[3]))  # rows out of order: pairing is by seed
    comps = grid.comparisons(cells, rows)
    assert [(c.norm_a, c.condition_a, c.metric) for c in comps] == [
        (n, f"seq_len={t}", m)
        for n in ("layer", "batch")
        for t in (5, 10)
        for m in ("final_test_acc", "mean_train_loss")
    ]
    assert all(c.norm_b == "none" and c.condition_b == c.condition_a and c.n_seeds == 5 for c in comps)
    assert {c.holm_family for c in comps} == {"sweep"}  # one Holm family, so named in summary.json
    by = {(c.norm_a, c.condition_a, c.metric): c for c in comps}
    expected = paired_over_seeds([a + 0.1 + 0.003 * s for s, a in enumerate(base)], base, resolution=1 / 200)
    got = by[("layer", "seq_len=10", "final_test_acc")]
    assert got.mean_diff == pytest.approx(expected.mean_diff) and got.p_value == pytest.approx(expected.p_value)
    loss = by[("layer", "seq_len=10", "mean_train_loss")]
    assert loss.mean_diff == pytest.approx(-(0.1 + 0.006) / 10)  # mean_train_loss = 0.5 - acc / 10
    assert [c.p_adjusted for c in comps] == pytest.approx(holm([c.p_value for c in comps]))
    assert {c.holm_family for c in comps} == {"sweep"}


def test_comparisons_need_two_paired_seeds_and_a_nonorm_cell():
    cells = [{"model__norm": "none"}, {"model__norm": "layer"}]
    one_seed = [[_row("none", 0, 0.6)], [_row("layer", 0, 0.9)]]
    one_seed[0][0].test_correct, one_seed[1][0].test_correct = [0] * 200, [1] * 200
    assert grid.comparisons(cells, one_seed) == []  # the sweep compares over seeds only
    missing = [[_row("none", 0, 0.6), _row("none", 1, 0.61)], [_row("layer", 1, 0.9), _row("layer", 2, 0.91)]]
    assert grid.comparisons(cells, missing) == []  # one seed in common
    no_base = [{"model__norm": "layer", "data__seq_len": 5}, {"model__norm": "none", "data__seq_len": 10}]
    assert grid.comparisons(no_base, [_cell_rows([0.9, 0.8]), _cell_rows([0.5, 0.6], norm="none")]) == []
    assert grid.comparisons([], []) == []


def test_sentences_by_hand():
    from lnbench.analysis.comparisons import Comparison

    entries = [
        {
            "values": {"model.norm": "none", "data.seq_len": 5},
            "mean_final_test_acc": 0.612,
            "n_seeds": 3,
            "n_diverged": 0,
        },
        {
            "values": {"model.norm": "layer", "data.seq_len": 5},
            "mean_final_test_acc": 0.905,
            "n_seeds": 3,
            "n_diverged": 1,
        },
        {
            "values": {"model.norm": "batch", "data.seq_len": 5},
            "mean_final_test_acc": None,
            "n_seeds": 3,
            "n_diverged": 3,
        },
    ]
    comps = [
        Comparison("sweep", "layer", "none", "final_test_acc", 0.293, (0.25, 0.336), 0.001, 0.002, "t", 3, True, "seq_len=5", "seq_len=5"),
        Comparison("sweep", "layer", "none", "mean_train_loss", -0.0412, (-0.05, -0.0323), 0.01, 0.02, "t", 3, True, "seq_len=5", "seq_len=5"),
        Comparison("sweep", "rms", "none", "final_test_acc", 0.01, (-0.02, 0.04), 0.4, 0.4, "t", 3, False, "", ""),
        Comparison("sweep", "rms", "none", "mean_train_loss", 0.0, (-0.01, 0.01), 0.9, 0.9, "t", 3, False, "", ""),
    ]  # fmt: skip
    assert grid.sentences(entries, comps) == [
        "Final test accuracy (mean over seeds) ranges from 61.2% (norm=none, seq_len=5) to 90.5% (norm=layer, seq_len=5).",
        "Every seed diverged in: model.norm=batch, data.seq_len=5.",
        "Each norm vs NoNorm at every other grid value, paired over seeds, on final test accuracy and mean train loss; "
        "Holm over all 4 comparisons (2 per metric): 2 significant at 0.05.",
        "LayerNorm minus NoNorm at seq_len=5, final test accuracy: +29.3 points [+25.0, +33.6], Holm p = 0.002.",
        "LayerNorm minus NoNorm at seq_len=5, mean train loss: -0.041 nats [-0.050, -0.032], Holm p = 0.02.",
    ]
    two_dead = entries[2:] + [{**entries[2], "values": {"model.norm": "rms", "data.seq_len": 5}}]
    assert grid.sentences(two_dead, [])[0] == (
        "Every seed diverged in: model.norm=batch, data.seq_len=5; model.norm=rms, data.seq_len=5."
    )
    assert grid.sentences(entries[2:], []) == [
        "Every seed diverged in: model.norm=batch, data.seq_len=5.",
        "No paired comparisons: the grid has no model.norm axis with none among its values (or too few seeds).",
    ]
    sig_everywhere = Comparison(
        "sweep", "rms", "none", "final_test_acc", -0.05, (-0.07, -0.03), 0.001, 0.001, "t", 3, True
    )
    assert grid.sentences([], [sig_everywhere])[-1] == (
        "RMSNorm minus NoNorm at every cell, final test accuracy: -5.0 points [-7.0, -3.0], Holm p = 0.001."
    )


def test_by_key_averages_the_cells_at_each_value_per_norm():
    def entry(norm, t, acc, ci):
        values = {"data.seq_len": t} if norm is None else {"model.norm": norm, "data.seq_len": t}
        return {"values": values, "mean_final_test_acc": acc, "ci95_final_test_acc": ci}

    entries = [
        entry("layer", 5, 0.8, [0.7, 0.9]),
        entry("layer", 5, 0.9, [0.85, 0.95]),
        entry("layer", 10, 0.6, None),
        entry("none", 5, None, None),
        entry("none", 10, 0.5, [0.4, 0.6]),
    ]
    out = grid.by_key(entries, "data.seq_len")
    assert list(out) == ["layer", "none"]
    (t5, m5, ci5), (t10, m10, ci10) = out["layer"]
    assert (t5, t10) == (5, 10) and m5 == pytest.approx(0.85) and ci5 == pytest.approx((0.775, 0.925))
    assert m10 == 0.6 and all(x != x for x in ci10)  # no interval: NaN, drawn as no bar
    assert out["none"] == [(10, 0.5, (0.4, 0.6))]
    assert grid.by_key([entry(None, 5, 0.7, [0.6, 0.8])], "data.seq_len") == {"all": [(5, 0.7, (0.6, 0.8))]}


def test_the_batch_size_grid_is_family_norms_and_sizes():
    cfg = RunConfig().with_changes(
        sweep__family="transformer", sweep__norms=["none", "layer"], sweep__batch_sizes=[1, 8]
    )
    assert grid.batch_size_grid(cfg) == {
        "model.family": ["transformer"],
        "model.norm": ["none", "layer"],
        "train.batch_size": [1, 8],
    }


@pytest.mark.parametrize(
    "g,message",
    [
        (
            {},
            "sweep.grid: empty; give config keys and their values, e.g. sweep.grid: {data.seq_len: [10, 20], model.norm: [none, layer]}",
        ),
        (
            {"sweep.family": ["rnn"]},
            "sweep.grid: 'sweep.family': expected section.key with section one of data, model, train",
        ),
        ({"data": [1]}, "sweep.grid: 'data': expected section.key with section one of data, model, train"),
        (
            {"data.seq_len.x": [1]},
            "sweep.grid: 'data.seq_len.x': expected section.key with section one of data, model, train",
        ),
        ({"data.seq_len": []}, "sweep.grid: data.seq_len: expected a non-empty list of values, got []"),
        ({"data.seq_len": [1]}, "sweep.grid: data.seq_len: value 1: Input should be greater than or equal to 2"),
        ({"data.seq_len": [5, 5]}, "sweep.grid: data.seq_len: duplicate values in [5, 5]"),
        (
            {"train.batch_size": [64, 500], "data.n_train": [1000, 100]},
            "sweep.grid: the cell batch_size=500, n_train=100: train.batch_size (500) must be <= data.n_train (100)",
        ),
    ],
)
def test_each_grid_error_in_full(g, message):
    with pytest.raises(ConfigError) as err:
        grid.check_grid(_cfg(g) if g else RunConfig())
    assert str(err.value) == message


def test_an_unknown_key_lists_the_sections_keys():
    from lnbench.config import ModelConfig

    with pytest.raises(ConfigError) as err:
        grid.check_grid(_cfg({"model.nrm": ["none"]}))
    assert (
        str(err.value) == f"sweep.grid: model.nrm: unknown key; allowed in model: {', '.join(ModelConfig.model_fields)}"
    )


def test_a_cell_label_and_the_values_of_an_entry_use_the_last_key_part():
    assert grid.cell_label({"model__norm": "layer", "data__seq_len": 5}) == "norm=layer, seq_len=5"
    assert grid.cell_label({}) == ""


def test_names_keep_upper_case_values_and_70_characters_exactly():
    assert grid.cell_name({"model__input_norm": True}) == "input_norm-True"
    seventy = {"data__seq_len": 5, "model__norm": "x" * 55}  # "seq_len-5_norm-" (15) + 55 = 70 characters
    assert len(grid.cell_name(seventy)) == 70 and grid.cell_name(seventy).endswith("x" * 55)
    seventy["model__norm"] += "x"
    assert grid.cell_name(seventy)[-9] == "-" and len(grid.cell_name(seventy)) == 70  # 71: cut and hashed


def test_first_error_reads_pydantic_errors_or_the_message():
    assert grid._first_error(ValueError("Value error, n_train too small")) == "n_train too small"
    assert grid._first_error(ValueError("plain")) == "plain"


def test_the_aggregate_leaves_out_rows_that_are_not_ok_even_with_values():
    rows = _cell_rows([0.8, 0.9], [0.3, 0.5])
    failed = _row("layer", 5, 0.5)
    failed.status, failed.final_test_acc, failed.mean_train_loss = "failed", None, 9.0  # a loss but no accuracy
    diverged = _row("layer", 6, 0.1)
    diverged.status = "diverged"  # a value it should not have had
    (e,) = grid.aggregate([{"model__norm": "layer"}], [rows + [failed, diverged]])
    assert e["mean_final_test_acc"] == pytest.approx(0.85) and e["mean_mean_train_loss"] == pytest.approx(0.4)
    assert e["std_final_test_acc"] == pytest.approx(0.0707107, rel=1e-5)  # two seeds have an sd


def test_comparisons_go_on_past_a_cell_without_its_nonorm_cell_and_need_two_seeds():
    cells = [{"model__norm": "layer", "data__seq_len": 5}, {"model__norm": "none", "data__seq_len": 10}]
    cells.append({"model__norm": "layer", "data__seq_len": 10})
    rows = [_cell_rows([0.9, 0.8]), _cell_rows([0.5, 0.6], norm="none"), _cell_rows([0.7, 0.75])]
    comps = grid.comparisons(cells, rows)
    assert [(c.condition_a, c.metric, c.n_seeds) for c in comps] == [
        ("seq_len=10", "final_test_acc", 2),
        ("seq_len=10", "mean_train_loss", 2),
    ]


def test_keys_that_depend_on_each_other_are_judged_together():
    """Each cell is checked whole: train.momentum is refused alone on an adam base config, but every
    cell of optimizer [sgd, rmsprop] x momentum [0.5, 0.9] is valid; the one impossible cell of a
    grid is named, and a value no cell can take is named as a value."""
    base = RunConfig().with_changes(sweep__grid={"train.optimizer": ["sgd", "rmsprop"], "train.momentum": [0.5, 0.9]})
    assert len(grid.check_grid(base)) == 4
    mixed = base.with_changes(sweep__grid={"train.optimizer": ["adam", "sgd"], "train.momentum": [0.0, 0.9]})
    with pytest.raises(ConfigError, match=r"^sweep.grid: the cell optimizer=adam, momentum=0.9: momentum: applies to"):
        grid.check_grid(mixed)  # the one impossible cell, named
    bad = base.with_changes(sweep__grid={"train.optimizer": ["sgd"], "train.lr": [1e-3, -1.0]})
    with pytest.raises(ConfigError, match=r"^sweep.grid: train.lr: value -1.0: "):
        grid.check_grid(bad)  # a value no cell can take is named as a value


def test_a_cell_too_big_for_memory_is_refused_before_anything_runs(tmp_path):
    result = runner.invoke(
        app,
        ["sweep", "--set", "sweep.grid={model.num_layers: [1, 30000]}", "--runs-dir", str(tmp_path), "--dry-run"],
    )
    assert result.exit_code == 2 and "model.num_layers 30000" in result.output and "GiB" in result.output
    assert not any(tmp_path.iterdir())


def test_a_grid_over_the_task_picks_a_best_cell_per_task_and_never_across_tasks():
    """Cells over data.task x model.norm: trend (2 classes) at 70% and 80%, digits (10 classes) at
    40% and 30%. The best of each task is its own highest (trend layer, digits none), never the
    highest of all; best_cell has no single answer (None); the sentences give each task its own
    range; the headline names one best per task. Oracle: the numbers set by hand."""
    from lnbench.experiments.registry import EXPERIMENTS

    cells = [{"data__task": t, "model__norm": n} for t in ("trend", "digits") for n in ("none", "layer")]
    accs = {("trend", "none"): 0.7, ("trend", "layer"): 0.8, ("digits", "none"): 0.4, ("digits", "layer"): 0.3}
    rows = [[_row(c["model__norm"], s, accs[c["data__task"], c["model__norm"]]) for s in (0, 1)] for c in cells]
    entries = grid.aggregate(cells, rows)
    assert grid.best_cells(entries) == [entries[1], entries[2]]
    assert grid.best_cell(entries) is None
    assert grid.best_cell(entries[:2]) is entries[1]
    text = grid.sentences(entries, [])
    assert (
        "Final test accuracy on trend (mean over seeds) ranges from 70.0% (task=trend, norm=none) to 80.0%" in text[0]
    )
    assert (
        "Final test accuracy on digits (mean over seeds) ranges from 30.0% (task=digits, norm=layer) to 40.0%"
        in text[1]
    )
    headline = EXPERIMENTS["sweep"].headline(None, {"cells": entries})
    assert headline["label"] == "best task=trend, norm=layer: 0.800; best task=digits, norm=none: 0.400"


def test_a_grid_over_the_task_applies_a_task_own_key_to_its_cells_only():
    """configs/sweep.yaml sets offset_std, a trend-only key; a grid over data.task = trend, adding
    is accepted: the trend cells keep the config's offset_std, the adding cells leave it at its
    default (it does not apply there). Oracle: the config file's value and the schema's default."""
    from lnbench.config.data import DataConfig

    cfg = load_config("configs/sweep.yaml", ["sweep.grid={data.task: [trend, adding], model.norm: [none, layer]}"])
    assert cfg.data.offset_std != DataConfig.model_fields["offset_std"].default
    cells = grid.check_grid(cfg)
    assert len(cells) == 4
    for changes in cells:
        data = cfg.with_changes(**changes).data
        want = cfg.data.offset_std if data.task == "trend" else DataConfig.model_fields["offset_std"].default
        assert (data.task, data.offset_std) == (changes["data__task"], want)
