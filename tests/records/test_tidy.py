"""Reading run folders: tidy DataFrames (lnbench.records.tidy: lnbench.load, lnbench export) and
the run index (lnbench ls, lnbench show) on the same folders (the index on folders made by hand:
test_index.py).

The oracle is the folders' own files: every runs row equals its summary.json row, every epochs
row the epoch's values in metrics.json, every hidden_norm row the curve's value; the CSV and
Parquet files read back equal the DataFrames; ls and show say what run.json, summary.json and
the printed tables of the run say.

``mixed_runs``: a runs folder holding a tiny compare and a tiny claims run (completed, as the
commands wrote them), a train run whose metrics.json is of schema version 1, an interrupted
compare (a copy of the first, stopped with 3 runs finished), a half-written folder (no
run.json) and a gradcheck folder.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, TINY_OVERRIDES, fingerprint, runner

import lnbench
from lnbench.cli.app import app
from lnbench.records.tidy import PER_EPOCH, flat

pytestmark = pytest.mark.e2e
OVERRIDES = [
    *TINY_OVERRIDES,
    "seeds=[0, 1]",
    "compare.families=[rnn, transformer]",
    "compare.norms=[none, layer]",
    "compare.placements=null",
]


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory) -> dict:
    from lnbench.config import load_config
    from lnbench.experiments import claims, claims_spec, gradcheck, train

    runs = tmp_path_factory.mktemp("mixed") / "runs"
    out = {"runs": runs}
    args = ["compare", str(REPO / "configs/compare.yaml"), "--runs-dir", str(runs), "-j", "1"]
    result = runner.invoke(app, [*args, *[x for o in OVERRIDES for x in ("--set", o)]])
    assert result.exit_code == 0, result.output
    out["compare_output"] = result.output  # what the run printed
    (out["compare"],) = runs.iterdir()
    spec = claims_spec(["rnn_faster_default"], REPO / "configs/claims", [*TINY_OVERRIDES, "seeds=[0, 1]"])
    out["claims"] = claims(spec.selected, spec.regimes, runs_dir=runs).path
    out["train"] = train(load_config(None, [*TINY_OVERRIDES, "name=old"]), runs).path
    metrics = json.loads((out["train"] / "metrics.json").read_text())
    for key in ("test_correct", "test_correct_batch_stats", "hidden_norm_by_scale", "scale_spearman", "saturation"):
        metrics.pop(key, None)  # what a version-1 file did not have
    metrics["schema_version"] = 1
    (out["train"] / "metrics.json").write_text(json.dumps(metrics))
    stopped = runs / (out["compare"].name + "_stopped")
    shutil.copytree(out["compare"], stopped)
    manifest = json.loads((stopped / "run.json").read_text())
    manifest.update(status="interrupted", name="stopped", start_time="2001-01-01T00:00:00+00:00")
    (stopped / "run.json").write_text(json.dumps(manifest))
    summary = json.loads((stopped / "summary.json").read_text())
    summary = {"kind": "compare", "complete": False, "baselines": summary["baselines"], "rows": summary["rows"][:3]}
    (stopped / "summary.json").write_text(json.dumps(summary))
    out["stopped"] = stopped
    half = runs / "20000101T000000_000000Z_half"
    half.mkdir()
    (half / "config.yaml").write_text("seed: 0\n")
    out["half"] = half
    out["gradcheck"] = gradcheck("float64", (2, 3, 4), 0, runs)[1].parent
    return out


def _same(a, b) -> bool:
    missing = lambda v: v is None or (isinstance(v, float) and math.isnan(v))  # noqa: E731
    return (missing(a) and missing(b)) or a == b


@pytest.fixture(scope="module")
def tables(mixed_runs):
    return lnbench.load(mixed_runs["compare"], mixed_runs["claims"])


def test_runs_rows_are_the_summary_rows(mixed_runs, tables):
    for name in ("compare", "claims"):
        summary = json.loads((mixed_runs[name] / "summary.json").read_text())
        runs = tables.runs[tables.runs.experiment == mixed_runs[name].name]
        assert list(runs.run) == [r["run_dir"] for r in summary["rows"]]
        for row, (_, got) in zip(summary["rows"], runs.iterrows()):
            row = {**row, "warnings": "; ".join(row["warnings"])}
            wrong = {k: (v, got[k]) for k, v in flat(row).items() if not _same(v, got[k])}
            assert not wrong, (row["run_dir"], wrong)
            config = flat(yaml.safe_load((mixed_runs[name] / row["run_dir"] / "config.yaml").read_text()))
            assert got["model.norm"] == config["model.norm"] == row["norm"]
            assert got["train.lr"] == config["train.lr"] and got["data.n_test"] == row["n_test"]
    assert set(tables.runs.kind) == {"compare", "claims"}
    assert set(tables.runs[tables.runs.kind == "claims"].regime) == {"default"}


def test_epochs_and_curves_are_the_metrics(mixed_runs, tables):
    for run_dir in ("rnn_layer_seed1", "transformer_none_seed0"):
        m = json.loads((mixed_runs["compare"] / run_dir / "metrics.json").read_text())
        rows = tables.epochs[(tables.epochs.experiment == mixed_runs["compare"].name) & (tables.epochs.run == run_dir)]
        assert list(rows.epoch) == m["epochs"] == [1, 2]
        for key in PER_EPOCH:
            assert all(_same(a, b) for a, b in zip(rows[key], m[key] or [None] * 2)), key
        assert (
            list(rows["saturation_by_scale.q2"]) == [None if s is None else s[1] for s in m["saturation_by_scale"]]
            or m["saturation_by_scale"][0] is None
        )
        assert set(rows.norm) == {m["norm"]} and set(rows.seed) == {m["seed"]}
        curves = tables.hidden_norm[
            (tables.hidden_norm.run == run_dir) & (tables.hidden_norm.experiment == mixed_runs["compare"].name)
        ]
        T = len(m["hidden_norm_init"])
        assert len(curves) == (1 + len(m["epochs"])) * 5 * T  # epochs 0..E x (all, q1..q4) x T
        last = curves[(curves.epoch == 2) & (curves.quartile == "all")].sort_values("timestep")
        assert list(last.hidden_norm) == m["hidden_norm"][1]
        q3 = curves[(curves.epoch == 0) & (curves.quartile == "q3")].sort_values("timestep")
        assert all(_same(a, b) for a, b in zip(q3.hidden_norm, m["hidden_norm_by_scale_init"][2]))
        grads = tables.grad_norm_layer[
            (tables.grad_norm_layer.run == run_dir) & (tables.grad_norm_layer.experiment == mixed_runs["compare"].name)
        ]
        assert len(grads) == 2 * len(m["grad_norm_layer"])
        for layer, series in m["grad_norm_layer"].items():
            assert list(grads[grads.layer == layer].sort_values("epoch").grad_norm_layer) == series


def test_comparisons_claims_and_aggregate_are_the_summary(mixed_runs, tables):
    summary = json.loads((mixed_runs["compare"] / "summary.json").read_text())
    got = tables.comparisons[tables.comparisons.experiment == mixed_runs["compare"].name]
    assert len(got) == len(summary["comparisons"])
    for c, (_, row) in zip(summary["comparisons"], got.iterrows()):
        assert (row["norm_a"], row["norm_b"], row["mean_diff"]) == (c["norm_a"], c["norm_b"], c["mean_diff"])
        assert (row["ci95.low"], row["ci95.high"]) == tuple(c["ci95"])
    assert len(tables.aggregate[tables.aggregate.experiment == mixed_runs["compare"].name]) == len(summary["aggregate"])
    claims = json.loads((mixed_runs["claims"] / "summary.json").read_text())["claims"]
    assert list(tables.claims.id) == [c["id"] for c in claims]
    assert list(tables.claims.verdict) == [c["verdict"] for c in claims]
    assert tables.claims.runs.iloc[0] == claims[0]["runs"]  # a list, as summary.json holds it
    assert set(tables.baselines[tables.baselines.experiment == mixed_runs["claims"].name].regime) == {"default"}


def test_a_runs_folder_of_mixed_folders_loads(mixed_runs):
    """The runs folder: old schema, interrupted and half-written folders load; a gradcheck has no runs."""
    t = lnbench.load(mixed_runs["runs"])
    by_experiment = t.runs.groupby("experiment").size().to_dict()
    assert by_experiment[mixed_runs["train"].name] == 1
    assert by_experiment[mixed_runs["stopped"].name] == by_experiment[mixed_runs["compare"].name] == 8
    assert mixed_runs["half"].name not in by_experiment and mixed_runs["gradcheck"].name not in by_experiment
    old = t.epochs[t.epochs.experiment == mixed_runs["train"].name]
    assert list(old.epoch) == [1, 2] and old.scale_spearman.isna().all()  # version 1: no probes


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_the_same_tables(mixed_runs, tables, tmp_path, fmt):
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["export", str(mixed_runs["compare"]), str(mixed_runs["claims"]), "--format", fmt, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    for name, frame in tables.items():
        back = pd.read_csv(out / f"{name}.csv") if fmt == "csv" else pd.read_parquet(out / f"{name}.parquet")
        assert list(back.columns) == list(frame.columns) and len(back) == len(frame), name
        for col in ("final_test_acc", "test_acc", "hidden_norm", "mean_diff", "verdict"):
            if col in frame:
                assert all(_same(a, b) for a, b in zip(back[col], frame[col])), (name, col)
    # a list in a cell (a baseline's correct_per_seed) is a list in memory and its JSON text in the file
    lists = [(name, col) for name, f in tables.items() for col in f.columns if isinstance(f[col].iloc[0], list)]
    assert ("baselines", "correct_per_seed") in lists or any(n == "baselines" for n, _ in lists)
    for name, col in lists:
        back = pd.read_csv(out / f"{name}.csv") if fmt == "csv" else pd.read_parquet(out / f"{name}.parquet")
        assert [json.loads(v) for v in back[col]] == list(tables[name][col]), (name, col)


def test_export_refuses_in_one_line(mixed_runs, tmp_path, monkeypatch):
    result = runner.invoke(app, ["export", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "nope" in result.output and len(result.output.strip().splitlines()) == 1
    result = runner.invoke(app, ["export", str(mixed_runs["compare"]), "--format", "xlsx", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "csv, parquet" in result.output
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    result = runner.invoke(app, ["export", str(mixed_runs["compare"]), "--format", "parquet", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "pip install 'lnbench[parquet]'" in result.output


@pytest.mark.parametrize("out_exists", [False, True])
def test_export_on_a_full_disk_is_one_line_and_leaves_no_file_of_it(mixed_runs, tmp_path, monkeypatch, out_exists):
    """A disk that fills while hidden_norm.csv is written: one line naming the file and the folder,
    exit code 1, and no file of this export left (no cut-short CSV, no temporary): an earlier
    export's folder is as it was (SHA-256 and mtime), a new one is not created."""
    out = tmp_path / "out"
    if out_exists:  # an earlier export stays as it was
        out.mkdir()
        (out / "runs.csv").write_text("experiment,run\nearlier,export\n")
    before = fingerprint(out) if out_exists else None
    to_csv = pd.DataFrame.to_csv

    def full(frame, path_or_buf=None, *args, **kwargs):
        if "timestep" in frame.columns:  # the hidden_norm table, the largest: the disk fills
            f = open(path_or_buf, "wb") if isinstance(path_or_buf, (str, Path)) else path_or_buf
            f.write(b"experiment,run,fam")
            f.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return to_csv(frame, path_or_buf, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    result = runner.invoke(app, ["export", str(mixed_runs["compare"]), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"lnbench: error: could not write hidden_norm.csv in {out}: No space left on device"
    ]
    assert fingerprint(out) == before if out_exists else not out.exists()  # no file, no temporary, no folder


def test_export_to_a_read_only_place_is_one_line(mixed_runs, tmp_path, monkeypatch):
    """An --out folder that cannot be created (mkdir raising EROFS) is one line naming it and its
    parent, exit code 1, and nothing written there."""
    place = tmp_path / "read-only"
    place.mkdir()
    mkdir = Path.mkdir

    def read_only(path, *args, **kwargs):
        if place in path.parents:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return mkdir(path, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", read_only)
    result = runner.invoke(app, ["export", str(mixed_runs["compare"]), "--out", str(place / "out")])
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"lnbench: error: could not write out in {place}: Read-only file system"
    ]
    assert list(place.iterdir()) == []


def test_ls_lists_every_folder_newest_first_with_its_result(mixed_runs):
    from lnbench.experiments.registry import index

    runs = mixed_runs
    entries = index(runs["runs"])
    order = [runs[k].name for k in ("gradcheck", "train", "claims", "compare", "stopped", "half")]
    assert [e.path.name for e in entries] == order
    e = {k: entries[order.index(runs[k].name)] for k in ("gradcheck", "train", "claims", "compare", "stopped", "half")}
    summary = json.loads((runs["compare"] / "summary.json").read_text())
    best = max(summary["aggregate"], key=lambda a: a["mean_final_test_acc"])
    assert (
        e["compare"].headline.endswith(f": {best['mean_final_test_acc']:.3f}") and best["norm"] in e["compare"].headline
    )
    assert (e["compare"].kind, e["compare"].status, e["compare"].seeds) == ("compare", "completed", [0, 1])
    verdicts = [c["verdict"] for c in json.loads((runs["claims"] / "summary.json").read_text())["claims"]]
    assert e["claims"].headline == f"1 {verdicts[0]}"
    acc = json.loads((runs["train"] / "metrics.json").read_text())["test_acc"][-1]
    assert e["train"].headline == f"test acc {acc:.3f}" and e["train"].notes == ["older schema 1"]
    rows = summary["rows"][:3]
    best_run = max(rows, key=lambda r: r["final_test_acc"])
    assert e["stopped"].status == "interrupted" and e["stopped"].notes == ["partial: 3 runs finished"]
    assert e["stopped"].headline == f"best run {best_run['run_dir']}: {best_run['final_test_acc']:.3f}"
    assert e["half"].status == "?" and e["half"].notes[0] == "no readable run.json (half written?)"
    checks = json.loads((runs["gradcheck"] / "gradcheck.json").read_text())["checks"]
    assert e["gradcheck"].headline == f"{sum(c['passed'] for c in checks)}/{len(checks)} passed"
    assert [x.path.name for x in index(runs["runs"], kind="compare")] == [runs["compare"].name, runs["stopped"].name]
    assert [x.path.name for x in index(runs["runs"], status="interrupted")] == [runs["stopped"].name]


def test_ls_command(mixed_runs, monkeypatch):
    result = runner.invoke(app, ["ls", str(mixed_runs["runs"]), "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "6 run folders, 4 older not shown" in " ".join(result.output.split())  # a long path wraps
    assert mixed_runs["gradcheck"].name in result.output and mixed_runs["claims"].name not in result.output
    # a console wide enough for the whole result column (narrower, ls ends it with an ellipsis), so
    # that the test passes at any terminal width
    from lnbench.cli.console import console

    monkeypatch.setattr(console, "width", 250)
    result = runner.invoke(app, ["ls", str(mixed_runs["runs"]), "--status", "interrupted"])
    assert "partial: 3 runs finished" in result.output and mixed_runs["compare"].name + " " not in result.output
    for bad in (["--kind", "comparison"], ["--status", "done"]):
        result = runner.invoke(app, ["ls", str(mixed_runs["runs"]), *bad])
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1 and "allowed:" in result.output


def test_show_prints_what_the_run_printed(mixed_runs):
    """From the first table on, lnbench show prints what lnbench compare printed by default (baselines,
    the aggregate table, verdicts, the folder and its report)."""
    result = runner.invoke(app, ["show", str(mixed_runs["compare"])])
    assert result.exit_code == 0, result.output
    printed = mixed_runs["compare_output"]
    title = "baselines on the same data"  # the first table both print by default (the per-run table: --all)
    assert result.output[result.output.index(title) :] == printed[printed.index(title) :]
    stopped = runner.invoke(app, ["show", str(mixed_runs["stopped"])])
    assert stopped.exit_code == 0 and "note: partial: 3 runs had finished" in stopped.output
    assert "(status: interrupted)" in stopped.output
    old = runner.invoke(app, ["show", str(mixed_runs["train"])])
    assert old.exit_code == 0 and "lnbench train: old" in old.output
    half = runner.invoke(app, ["show", str(mixed_runs["half"])])
    assert half.exit_code == 2 and "not a run folder" in half.output and len(half.output.strip().splitlines()) == 1


def _readme_seaborn_block() -> str:
    import re

    block = next(b for b in re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S) if "sns." in b)
    assert len(block.strip().splitlines()) == 5
    return block


def _readme_curves(block: str) -> list[str]:
    """The columns the README's lineplot draws one curve per combination of (hue, style, ...)."""
    import re

    call = re.search(r"sns\.lineplot\((.*)\)", block).group(1)
    return [v for k, v in re.findall(r'\b(hue|style|units|size)="([^"]+)"', call)]


def _run_readme_block(block: str, folder: Path, tmp_path, monkeypatch) -> dict:
    import re

    import matplotlib.pyplot as plt

    code = re.sub(r'lnbench\.load\("[^"]*"\)', f"lnbench.load({str(folder)!r})", block)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    plt.close("all")  # seaborn draws on the current axes: a fresh figure, as in a new session
    exec(code, namespace)
    assert (tmp_path / "test_accuracy_seaborn.png").stat().st_size > 10_000
    return namespace


def test_the_readme_seaborn_example_redraws_the_accuracy_curves(mixed_runs, tmp_path, monkeypatch):
    """The README's five lines run on a compare folder and plot its mean test accuracy per epoch."""
    pytest.importorskip("seaborn")
    block = _readme_seaborn_block()
    lines = _run_readme_block(block, mixed_runs["compare"], tmp_path, monkeypatch)["ax"].get_lines()
    t = lnbench.load(mixed_runs["compare"])
    means = t.epochs.groupby([*_readme_curves(block), "epoch"]).test_acc.mean()
    drawn = sorted(tuple(line.get_ydata()) for line in lines if len(line.get_ydata()) == 2)
    assert drawn == sorted(tuple(means[key]) for key in {key[:-1] for key in means.index})


@pytest.fixture(scope="module")
def both_placements(tmp_path_factory) -> Path:
    """A tiny compare of the RNN in both placements, 3 seeds, exported to CSV: the curves' data."""
    runs = tmp_path_factory.mktemp("placements")
    args = ["compare", "--runs-dir", str(runs / "runs"), "-j", "1"]
    sets = [*TINY_OVERRIDES, "seeds=[0, 1, 2]", "compare.families=[rnn]", "compare.norms=[none, batch]"]
    result = runner.invoke(app, [*args, *[x for o in sets for x in ("--set", o)]])
    assert result.exit_code == 0, result.output
    (folder,) = (runs / "runs").iterdir()
    exported = runner.invoke(app, ["export", str(folder), "--out", str(runs / "csv")])
    assert exported.exit_code == 0, exported.output
    return folder


def test_each_readme_curve_is_one_model_over_its_seeds(both_placements):
    """The README's grouping draws one curve per model: the RNN's joint and separate runs are two
    models ("RNN (joint)", "RNN (separate)"), and each curve's band is over its 3 seeds, one row
    per seed (grouping by norm and family alone would merge 6 rows as if they were 6 seeds)."""
    epochs = pd.read_csv(both_placements.parent.parent / "csv" / "epochs.csv")
    assert set(epochs.norm_placement) == {"joint", "separate"}
    curves = epochs.groupby([*_readme_curves(_readme_seaborn_block()), "epoch"])
    assert curves.ngroups == 2 * 2 * 2  # (joint, separate) x (none, batch) x 2 epochs
    for _, rows in curves:
        assert sorted(rows.seed) == [0, 1, 2]  # one row per seed: a band over the model's seeds
        assert len(rows.groupby(["family", "norm_placement", "norm_gain_init", "norm"], dropna=False)) == 1
    assert sorted(set(epochs.model)) == ["RNN (joint)", "RNN (separate)"]


def test_the_readme_seaborn_example_draws_one_curve_per_model(both_placements, tmp_path, monkeypatch):
    pytest.importorskip("seaborn")
    block = _readme_seaborn_block()
    lines = _run_readme_block(block, both_placements, tmp_path, monkeypatch)["ax"].get_lines()
    epochs = lnbench.load(both_placements).epochs
    means = epochs.groupby(["family", "norm_placement", "norm", "epoch"]).test_acc.mean()  # per model and norm
    drawn = sorted(tuple(line.get_ydata()) for line in lines if len(line.get_ydata()) == 2)
    assert drawn == sorted(tuple(means[key]) for key in {key[:-1] for key in means.index})


def test_export_of_a_folder_without_runs_and_show_of_a_damaged_summary_are_one_line(mixed_runs, tmp_path):
    """``export`` of a folder that holds no runs and ``show`` of a folder whose summary.json is not
    JSON: each one line, exit code 2; the export writes nothing."""

    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["export", str(empty), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "neither a run folder" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    folder = tmp_path / "damaged"
    shutil.copytree(mixed_runs["compare"], folder)
    (folder / "summary.json").write_text('{"rows": [')
    result = runner.invoke(app, ["show", str(folder)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "summary.json: cannot read it as JSON" in result.output


def test_the_claims_table_has_each_claims_task_and_the_na_cells(tmp_path):
    import json

    import lnbench

    folder = tmp_path / "20261202T000000_000000Z_claims"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"kind": "claims", "status": "completed", "name": "claims"}))
    claims = [
        {"id": "a", "regime": "default", "verdict": "held"},
        {"id": "a", "regime": "default@adding", "verdict": "not held"},
    ]
    by_task = [{"id": "s", "claim": "scale", "family": "rnn", "metric": "abs_scale_spearman", "tasks": {"trend": {"verdict": "held"}, "adding": {"verdict": "n/a", "reason": "no scale"}}}]  # fmt: skip
    summary = {"kind": "claims", "complete": True, "rows": [], "claims": claims, "claims_by_task": by_task}
    (folder / "summary.json").write_text(json.dumps(summary))
    table = lnbench.load(folder)["claims"]
    got = sorted(zip(table["id"], table["task"], table["verdict"], strict=True))
    assert got == [("a", "adding", "not held"), ("a", "trend", "held"), ("s", "adding", "n/a")]
