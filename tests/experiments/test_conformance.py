"""One suite of checks over every registered experiment (scikit-learn's ``check_estimator`` idea).

For each kind that trains, at tiny sizes: the plan (what ``--dry-run`` shows) is exactly the
children trained, in order; summary.json (complete) and report.html are written; ``lnbench
report`` redraws the same figure files (into another folder too, leaving the run folder as it
is); resuming the finished folder runs nothing and writes nothing; a bad config is exit code 2
with no folder. The checking kinds (invariance, gradcheck: no cells, their work is
``Experiment.compute``) go through the same driver: their folder holds run.json, the report,
summary.json with the headline and report.html; a failed check fails the folder with its
message, a Ctrl-C leaves it interrupted, bad arguments leave none, ``--json`` writes only its
file; they are not resumed (no config), and a folder of the older layout (no summary.json) is
still read. A new experiment kind gets these checks by registering.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, TINY_OVERRIDES, fingerprint, runner, set_args

from lnbench.cli.app import app
from lnbench.config import ConfigError, load_config
from lnbench.experiments import driver, redraw
from lnbench.experiments.checks import GradcheckSpec, InvarianceSpec
from lnbench.experiments.claims import claims_spec
from lnbench.experiments.registry import EXPERIMENTS
from lnbench.names import TASK_NAMES, TASKS

pytestmark = pytest.mark.e2e
SEEDS = "seeds=[0,1]"
PNG_END = b"IEND\xaeB`\x82"  # the last chunk of every complete PNG


def tiny(task: str = "trend") -> list[str]:
    """TINY_OVERRIDES for ``task``: without the keys it does not have (digits' T comes from its order)."""
    images = ("data.seq_len", "data.features")  # digits' and MNIST's T and D come from their order
    keys = {"trend": (), "adding": ("data.features",), "digits": images, "mnist": images}[task]
    return [o for o in TINY_OVERRIDES if o.split("=")[0] not in keys] + (
        [] if task == "trend" else [f"data.task={task}"]
    )


#: per trained kind: (how to build its spec on a task, the CLI arguments of the same experiment)
TRAINED = {
    "train": (lambda task: load_config(None, tiny(task)), ["train", str(REPO / "configs/train.yaml")]),
    "compare": (
        lambda task: load_config(None, [*tiny(task), SEEDS, "compare.norms=[none,layer]"]),
        ["compare", "--set", "compare.norms=[none,layer]"],
    ),
    "batchsize-sweep": (
        lambda task: load_config(None, [*tiny(task), SEEDS, "sweep.norms=[none,batch]", "sweep.batch_sizes=[8,16]"]),
        ["batchsize-sweep", "--set", "sweep.norms=[none,batch]", "--set", "sweep.batch_sizes=[8,16]"],
    ),
    "sweep": (
        lambda task: load_config(
            None, [*tiny(task), SEEDS, "sweep.grid={model.norm: [none, layer], train.lr: [0.01]}"]
        ),
        ["sweep", "--set", "sweep.grid={model.norm: [none, layer], train.lr: [0.01]}"],
    ),
    "claims": (  # the claims' regimes are trend's; --task gives each the task's data
        lambda task: claims_spec(
            ["rnn_faster_default"], REPO / "configs/claims", [*TINY_OVERRIDES, SEEDS], tasks=[task]
        ),
        ["claims", "--presets", str(REPO / "configs/claims"), "--only", "rnn_faster_default"],
    ),
}
#: every kind on every task (the three tasks run in every experiment kind)
CASES = [(kind, task) for kind in sorted(TRAINED) for task in TASK_NAMES]


#: per checking kind: (its function's arguments for a quick run, the spec of the same run, the
#: report's list of items, the key that makes one good, the headline's word)
CHECKED = {
    "invariance": ({"draws": 1}, InvarianceSpec(draws=1), "cells", "agrees", "agree"),
    "gradcheck": ({}, GradcheckSpec(), "checks", "passed", "passed"),
}
#: the keys of each report's items that name one and say whether it is good
ITEM_KEYS = {"invariance": ("method", "transformation", "agrees"), "gradcheck": ("group", "name", "passed")}
#: the keys of each report, as lnbench wrote them before it ran through the driver
REPORT_KEYS = {
    "invariance": ["agrees", "cells", "draws", "eps", "seed"],
    "gradcheck": ["checks", "dtype", "passed", "seed", "shape"],
}


#: the kinds whose conformance is tested in a file of their own
ELSEWHERE = {"card": "tests/experiments/test_card.py"}


def test_every_registered_experiment_is_checked_here():
    assert set(EXPERIMENTS) == set(TRAINED) | set(CHECKED) | set(ELSEWHERE)
    assert all((Path(__file__).parents[2] / path).is_file() for path in ELSEWHERE.values())


@pytest.fixture(scope="module", params=CASES, ids=[f"{k}-{t}" for k, t in CASES])
def finished(request, tmp_path_factory):
    """A tiny finished experiment of each trained kind on each task: (kind, spec, plan, result)."""
    kind, task = request.param
    exp, spec = EXPERIMENTS[kind], TRAINED[kind][0](task)
    plan = driver.prepare(exp, spec)
    runs = tmp_path_factory.mktemp(f"{kind}-{task}")
    if kind == "train":
        from lnbench.experiments import train

        result = train(spec, runs)
    else:
        result = driver.run(exp, spec, runs_dir=runs)
    return kind, spec, plan, result


def test_the_plan_is_the_children_trained(finished):
    kind, _, plan, result = finished
    planned = [c.name for cell in plan for c in cell.cfgs]
    if kind == "train":  # its one child is the run folder itself, timestamped: <time>_<name>
        assert len(result.rows) == 1 and result.rows[0].run_dir.endswith("_" + planned[0])
        planned = [result.rows[0].run_dir]
    assert [r.run_dir for r in result.rows] == planned
    assert [(r.family, r.norm, r.batch_size, r.seed) for r in result.rows] == [
        (c.model.family, c.model.norm, c.train.batch_size, c.seed) for cell in plan for c in cell.cfgs
    ]
    tasks = [c.data.task for cell in plan for c in cell.cfgs]
    assert [(r.task, r.num_classes) for r in result.rows] == [
        (t, TASKS[t].shape(c.data)[2]) for t, c in zip(tasks, [c for cell in plan for c in cell.cfgs])
    ]
    if kind != "train":  # a train run is its one child
        assert all((result.path / name / "metrics.json").is_file() for name in planned)


def test_summary_and_report_are_written(finished):
    kind, _, _, result = finished
    summary = json.loads((result.path / "summary.json").read_text())
    assert summary["kind"] == kind and summary["complete"] is True
    rows = summary["rows"]
    scale = all(TASKS[r["task"]].has_scale for r in rows)
    assert ("hidden_norm.png" in summary["figures"]) == (scale and kind in ("train", "compare")), summary["figures"]
    assert [r["run_dir"] for r in summary["rows"]] == [r.run_dir for r in result.rows]
    html = (result.path / "report.html").read_text()
    assert "<table" in html and all("data:image/png;base64" in html for _ in summary["figures"])


def test_report_redraws_the_same_figures(finished):
    _, _, _, result = finished
    summary = json.loads((result.path / "summary.json").read_text())
    assert summary["figures"], "every trained kind draws at least one figure"
    for name in summary["figures"]:
        (result.path / name).unlink()
    assert redraw(result.path) == summary["figures"]
    assert all((result.path / name).stat().st_size > 1000 for name in summary["figures"])


def test_figures_redrawn_elsewhere_leave_the_folder_as_it_is(finished, tmp_path):
    """Figures redrawn into another folder (as ``lnbench report A B --out X`` does) are the folder's
    figures, written there as whole PNGs; nothing in the run folder changes (SHA-256 and mtime)."""
    _, _, _, result = finished
    names = json.loads((result.path / "summary.json").read_text())["figures"]
    before = fingerprint(result.path)
    assert redraw(result.path, tmp_path) == names
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert all((tmp_path / name).read_bytes().endswith(PNG_END) for name in names)
    assert fingerprint(result.path) == before


def test_resuming_a_finished_folder_runs_nothing_and_writes_nothing(finished):
    """A resume of a finished folder of every kind plans no cell, trains nothing (its progress
    calls report every cell done) and writes nothing (every file the same bytes and mtime: run.json
    keeps its wall time and command); it returns the same folder, completed, with the same rows."""
    kind, spec, _, result = finished
    exp = EXPERIMENTS[kind]
    plan = driver.prepare(exp, spec, resume=result.path)
    assert driver.cells_to_run(plan, result.path, exp) == []
    assert driver.finished(plan, result.path, exp)
    before, rows = fingerprint(result.path), json.loads((result.path / "summary.json").read_text())["rows"]
    epochs = []
    if kind == "train":  # a train run is its own folder, resumed in place
        from lnbench.experiments import train

        again = train(spec, result.path.parent, lambda *a, **k: epochs.append(a), resume=result.path)
        assert sorted(p.name for p in result.path.parent.iterdir()) == [result.path.name]
    else:
        again = driver.run(
            exp, spec, runs_dir=result.path.parent, on_epoch=lambda *a, **k: epochs.append(a), resume=result.path
        )
    assert again.path == result.path and again.status == "completed"
    assert [(r.run_dir, r.final_test_acc) for r in again.rows] == [(r["run_dir"], r["final_test_acc"]) for r in rows]
    assert all(done == total for _, done, total, *_ in epochs)  # progress accounted for, nothing trained
    assert fingerprint(result.path) == before  # every file, byte for byte (and not rewritten)


@pytest.mark.parametrize("kind", sorted(TRAINED))
def test_a_bad_config_is_exit_2_and_no_folder(kind, tmp_path):
    args = [
        *TRAINED[kind][1],
        "--runs-dir",
        str(tmp_path / "runs"),
        *set_args(TINY_OVERRIDES),
        "--set",
        "data.n_train=-1",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "data.n_train" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("kind", sorted(set(TRAINED) - {"train"}))
def test_dry_run_refuses_what_the_run_refuses(kind, tmp_path):
    """``--dry-run`` runs the run's own checks: ``--jobs 0`` is refused (exit code 2, "--jobs: must
    be >= 1") as the run refuses it, ``--jobs 1`` is shown, and neither writes a folder."""
    args = [*TRAINED[kind][1], "--runs-dir", str(tmp_path), *set_args([*TINY_OVERRIDES, SEEDS])]
    refused = runner.invoke(app, [*args, "--jobs", "0", "--dry-run"])
    assert refused.exit_code == 2 and "--jobs: must be >= 1" in refused.output
    shown = runner.invoke(app, [*args, "--jobs", "1", "--dry-run"])
    assert shown.exit_code == 0, shown.output
    assert list(tmp_path.iterdir()) == []


def test_dry_run_with_resume_lists_only_what_would_run(finished, tmp_path):
    kind, _, plan, result = finished
    if kind != "compare":
        pytest.skip("one kind is enough for the CLI side; the plan side is checked for every kind above")
    args = [kind, str(result.path / "config.yaml"), "--jobs", "1", "--dry-run"]  # the folder's own config
    full = runner.invoke(app, [*args, "--runs-dir", str(tmp_path)])
    resumed = runner.invoke(app, [*args, "--runs-dir", str(tmp_path), "--resume", str(result.path)])
    n = sum(len(cell.cfgs) for cell in plan)
    assert f"would start {n} runs" in full.output
    assert "would start no run" in resumed.output and f"{len(plan)} cells of" in resumed.output


def _best_value(kind: str, summary: dict) -> float | None:
    """The headline's number from summary.json's own data: a train run's final test accuracy; the
    best mean over seeds of an aggregate entry (a sweep's cells); none for claims (counts)."""
    if kind == "train":
        return summary["rows"][0]["final_test_acc"]
    if kind == "claims":
        return None
    entries = summary.get("aggregate") or summary["cells"]
    return max(e["mean_final_test_acc"] for e in entries if e["mean_final_test_acc"] is not None)  # not all diverged


def test_ls_show_and_export_read_the_folder_it_wrote(finished, tmp_path):
    """A registered kind is never "unknown kind" in ``lnbench ls``; its headline is the
    one it wrote into summary.json; ``show`` prints its tables; ``export`` gives one row per run."""
    from lnbench.cli.folders import ls_table
    from lnbench.experiments.registry import index

    kind, _, _, result = finished
    summary = json.loads((result.path / "summary.json").read_text())
    headline = summary["headline"]
    assert headline["value"] == _best_value(kind, summary)
    if kind == "claims":
        assert headline["label"] == f"1 {summary['claims'][0]['verdict']}"
    (entry,) = index(result.path)
    assert (entry.kind, entry.status, entry.notes) == (kind, "completed", [])
    assert entry.headline == headline["text"] and entry.headline
    listed = runner.invoke(app, ["ls", str(result.path.parent)])
    assert listed.exit_code == 0 and kind in listed.output and "unknown" not in listed.output, listed.output
    assert [str(c) for c in ls_table([entry], "ls", 200).columns[6].cells] == [headline["text"]]  # the result
    shown = runner.invoke(app, ["show", "--all", str(result.path)])  # every table (plain show: the brief ones)
    titles = [t.title for t in EXPERIMENTS[kind].tables(result.path, summary) if t.title]
    assert shown.exit_code == 0 and titles, shown.output
    assert all(title.split(":")[0] in shown.output for title in titles) and "Traceback" not in shown.output
    exported = runner.invoke(app, ["export", str(result.path), "--out", str(tmp_path / "out")])
    assert exported.exit_code == 0, exported.output
    runs = (tmp_path / "out" / "runs.csv").read_text().splitlines()[1:]
    assert [line.split(",")[1] for line in runs] == [r.run_dir for r in result.rows]  # experiment, run, ...


def test_every_drawn_figure_has_its_own_caption(finished):
    """Figures are records of their kind (file, draw function, caption); report.html
    shows each drawn figure with its kind's caption (a sweep's accuracy_vs_batch_size.png is not
    the batch-size sweep's)."""
    from html import unescape

    from lnbench.report import figures

    kind, _, _, result = finished
    exp = EXPERIMENTS[kind]
    names = json.loads((result.path / "summary.json").read_text())["figures"]
    html = unescape((result.path / "report.html").read_text())
    for name in names:
        (record,) = [r for r in exp.figure_records if r.names(name)]
        module = __import__(record.function.__module__, fromlist=[record.draw])
        assert record.caption and getattr(module, record.draw) is record.function, name
        assert record.function.__module__.startswith(figures.__name__ + "."), name  # in its group's module
        assert f"<b>{name}</b>: {record.caption}</figcaption>" in html, name
    assert len({exp.caption(n) for n in names}) == len({r.file for r in exp.figure_records if any(map(r.names, names))})


@pytest.fixture(scope="module", params=sorted(CHECKED))
def checked(request, tmp_path_factory):
    """A finished folder of each checking kind, written by its function: (kind, items returned, folder)."""
    from lnbench import experiments

    kind = request.param
    items, path = getattr(experiments, kind)(runs_dir=tmp_path_factory.mktemp(kind), **CHECKED[kind][0])
    assert path is not None and path.name == f"{kind}.json"
    return kind, items, path.parent


def _named(kind: str, items: list) -> list[tuple]:
    """Each item of a report (a dict) or returned (a Cell, a Check) by its name and whether it is good."""
    return [tuple(i[k] if isinstance(i, dict) else getattr(i, k) for k in ITEM_KEYS[kind]) for i in items]


def _counted(kind: str, report: dict) -> str:
    """The headline of a report, counted here from its items: ``30/30 agree``."""
    _, _, items, good, word = CHECKED[kind]
    return f"{sum(bool(i[good]) for i in report[items])}/{len(report[items])} {word}"


def test_a_checking_folder_holds_what_every_kinds_does(checked):
    """invariance and gradcheck through the driver write run.json, their report, report.html and
    summary.json with the headline, as every kind's folder holds; no cells, so no jobs or launcher."""
    kind, items, folder = checked
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["run.json", f"{kind}.json", "summary.json", "report.html"]
    )
    manifest = json.loads((folder / "run.json").read_text())
    assert (manifest["kind"], manifest["status"], manifest["error"], manifest["seed"]) == (kind, "completed", None, 0)
    assert "jobs" not in manifest and "launcher" not in manifest  # no cells ran anywhere
    report = json.loads((folder / f"{kind}.json").read_text())
    assert sorted(report) == REPORT_KEYS[kind]  # the report as before
    _, _, key, good, _ = CHECKED[kind]
    assert _named(kind, report[key]) == _named(kind, items) and all(i[good] for i in report[key])
    if kind == "invariance":  # Ba et al.'s Table 1 (3 rows), RMSNorm's and GroupNorm's, x 6 transformations
        assert len({c["method"] for c in report["cells"]}) == 5 and len(report["cells"]) == 30
    text = _counted(kind, report)
    assert text == ("30/30 agree" if kind == "invariance" else f"{len(items)}/{len(items)} passed")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary == {
        "kind": kind,
        "complete": True,
        "rows": [],
        "headline": {"label": text, "value": None, "text": text},
        "figures": [],
    }
    (table,) = EXPERIMENTS[kind].tables(folder, summary)
    rows = len(report["checks"]) if kind == "gradcheck" else len({c["method"] for c in report["cells"]})
    assert table.row_count == rows  # invariance: one row per method, as Table 1
    html = (folder / "report.html").read_text()
    assert "<table" in html and str(table.title).split(":")[0] in html


def test_ls_show_export_and_report_read_a_checking_folder(checked, tmp_path):
    from lnbench.experiments.registry import index

    kind, _, folder = checked
    text = json.loads((folder / "summary.json").read_text())["headline"]["text"]
    (entry,) = index(folder)
    assert (entry.kind, entry.status, entry.notes, entry.headline) == (kind, "completed", [], text)
    _reads_like_any_folder(folder, text, tmp_path)


def _reads_like_any_folder(folder: Path, text: str, out: Path) -> None:
    """``ls`` shows its headline ``text``, ``show`` its table, ``export`` no runs (it trains none),
    ``report`` redraws no figure and writes its report.html again with its table."""
    listed = runner.invoke(app, ["ls", str(folder)])
    assert listed.exit_code == 0 and text in listed.output and "unknown" not in listed.output, listed.output
    shown = runner.invoke(app, ["show", str(folder)])
    title = str(EXPERIMENTS[json.loads((folder / "run.json").read_text())["kind"]].tables(folder, {})[0].title)
    assert shown.exit_code == 0 and title.split(":")[0] in shown.output and "Traceback" not in shown.output
    exported = runner.invoke(app, ["export", str(folder), "--out", str(out / "out")])
    assert exported.exit_code == 0, exported.output
    assert (out / "out" / "runs.csv").read_text().splitlines()[1:] == []  # it trains nothing
    (folder / "report.html").unlink()
    reported = runner.invoke(app, ["report", str(folder)])
    assert reported.exit_code == 0 and "0 figures drawn" in reported.output, reported.output
    assert redraw(folder) == [] and "<table" in (folder / "report.html").read_text()


@pytest.mark.parametrize("kind", sorted(CHECKED))
def test_a_folder_of_the_older_layout_is_still_read(kind, tmp_path):
    """A checking folder written before it ran through the driver (``_write_report`` and
    ``driver.write_html``: run.json, the report, report.html, no summary.json): ``lnbench ls``
    computes its headline from the report, and show, export and report read it as before."""
    from lnbench import experiments
    from lnbench.experiments.registry import index
    from lnbench.records.runs import Run

    _, path = getattr(experiments, kind)(runs_dir=None, json_path=tmp_path / "report.json", **CHECKED[kind][0])
    report = json.loads(path.read_text())
    with Run(tmp_path / "runs", kind, None, report["seed"], kind) as run:  # as _write_report did
        run.write_json(f"{kind}.json", report)
    driver.write_html(EXPERIMENTS[kind], run.path)
    assert sorted(p.name for p in run.path.iterdir()) == sorted(["run.json", f"{kind}.json", "report.html"])
    (entry,) = index(run.path)
    assert (entry.kind, entry.status, entry.notes, entry.headline) == (kind, "completed", [], _counted(kind, report))
    _reads_like_any_folder(run.path, _counted(kind, report), tmp_path)
    assert not (run.path / "summary.json").exists()  # reading it wrote none


def _planted_failure(kind: str, monkeypatch) -> dict:
    """The arguments of a run with one planted wrong norm: invariance with a layer norm that does
    not re-center (weight-matrix re-centering changes it); gradcheck with a user's norm whose
    backward drops a term (tests/nn/toy_norms.py's WrongBackward)."""
    if kind == "invariance":
        import torch

        from lnbench.nn.invariance import EPS, METHODS

        def no_centering(W, X):
            a = X @ W.T
            return a / torch.sqrt((a * a).mean(dim=1, keepdim=True) + EPS), float(a.square().mean(dim=1).min())

        return {"draws": 1, "methods": {**METHODS, "layer": ("layer norm", no_centering)}}
    monkeypatch.syspath_prepend(str(REPO / "tests" / "nn"))
    import toy_norms

    from lnbench.testing import norm_checks

    return {"extra": norm_checks(toy_norms.WrongBackward)}


@pytest.mark.parametrize("kind", sorted(CHECKED))
def test_a_failed_check_fails_the_folder_with_its_message(kind, tmp_path, monkeypatch):
    from lnbench import experiments

    items, path = getattr(experiments, kind)(runs_dir=tmp_path, **_planted_failure(kind, monkeypatch))
    folder = path.parent
    manifest = json.loads((folder / "run.json").read_text())
    report = json.loads(path.read_text())
    expected = {
        "invariance": "cells disagree with the expected table: layer/weight_matrix_recentering",
        "gradcheck": "checks failed: WrongBackward: gradcheck, gradgradcheck (float64)",
    }[kind]
    assert (manifest["status"], manifest["error"]) == ("failed", expected)
    _, _, key, good, word = CHECKED[kind]
    assert [i[good] for i in report[key]].count(False) == 1 == [getattr(i, good) for i in items].count(False)
    text = _counted(kind, report)
    assert text == ("29/30 agree" if kind == "invariance" else f"{len(items) - 1}/{len(items)} passed")
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is True and summary["headline"]["text"] == text
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize("kind", sorted(CHECKED))
def test_ctrl_c_during_a_check_leaves_an_interrupted_folder(kind, tmp_path, monkeypatch):
    """A Ctrl-C while invariance or gradcheck runs its check: one line naming the folder it
    started, exit code 130, and that folder's run.json and summary.json say it was interrupted."""
    import lnbench.nn.gradient_checks
    import lnbench.nn.invariance

    module, name = {
        "invariance": (lnbench.nn.invariance, "measure"),
        "gradcheck": (lnbench.nn.gradient_checks, "run_checks"),
    }[kind]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, name, interrupted)
    result = runner.invoke(app, [kind, "--runs-dir", str(tmp_path)])
    (folder,) = tmp_path.iterdir()
    assert result.exit_code == 130, result.output
    assert (
        result.output.strip() == f"lnbench: interrupted: stopped by Ctrl-C; run folder: {folder} (status: interrupted)"
    )
    manifest = json.loads((folder / "run.json").read_text())
    assert (manifest["status"], manifest["error"]) == ("interrupted", "interrupted by the user (KeyboardInterrupt)")
    assert json.loads((folder / "summary.json").read_text()) == {
        "kind": kind,
        "complete": False,
        "baselines": None,
        "rows": [],
    }
    assert not (folder / f"{kind}.json").exists() and not (folder / "report.html").exists()


@pytest.mark.parametrize("kind", sorted(CHECKED))
def test_json_writes_only_its_file_and_bad_arguments_nothing(kind, tmp_path):
    from lnbench import experiments

    run = getattr(experiments, kind)
    items, path = run(runs_dir=tmp_path / "runs", json_path=tmp_path / "report.json", **CHECKED[kind][0])
    assert path == tmp_path / "report.json" and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    assert _named(kind, json.loads(path.read_text())[CHECKED[kind][2]]) == _named(kind, items)
    assert run(runs_dir=None, **CHECKED[kind][0])[1] is None and sorted(p.name for p in tmp_path.iterdir()) == [
        "report.json"
    ]
    bad, message = {
        "invariance": ({"draws": 0}, "draws: must be >= 1, got 0"),
        "gradcheck": ({"dtype": "int8"}, "dtype: 'int8' is not supported"),
    }[kind]
    with pytest.raises(ConfigError, match=message):
        run(runs_dir=tmp_path / "runs", **bad)
    option = {"invariance": ["--norm", "nosuch:X"], "gradcheck": ["--dtype", "int8"]}[kind]
    refused = runner.invoke(app, [kind, *option, "--runs-dir", str(tmp_path / "runs")])
    assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1, refused.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no runs folder, no run folder


def test_a_checking_folder_is_not_resumed(checked):
    """The checks have no --resume: a check runs in one go, from no config (its folder has no
    config.yaml). ``driver.run`` with ``resume`` refuses in one line and leaves the folder as it is."""
    kind, _, folder = checked
    before = fingerprint(folder)
    with pytest.raises(ConfigError) as refused:
        driver.run(EXPERIMENTS[kind], CHECKED[kind][1], runs_dir=folder.parent, resume=folder)
    assert str(refused.value) == f"--resume {folder}: a {kind} run is not resumed (it has no config); run it again"
    assert fingerprint(folder) == before and list(folder.parent.iterdir()) == [folder]


def test_a_new_kind_registered_is_known_to_ls_and_says_its_own_headline(tmp_path, monkeypatch):
    """``lnbench ls`` asks the registry for a folder's kind, so a kind registered at runtime is
    known: it reads the headline the kind wrote, and for a folder without one (written by an older
    version) asks the kind to compute it from the folder's files."""
    from lnbench.experiments.base import Experiment
    from lnbench.experiments.registry import index
    from lnbench.records.index import make_headline

    class Toy(Experiment):
        kind = "toy"

        def headline(self, folder, summary):
            return make_headline("computed", len(summary.get("rows") or []) / 4)

    for name, body in (("written", {"headline": make_headline("written", 0.5)}), ("old", {"rows": [{}]})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(json.dumps({"kind": "toy", "status": "completed"}))
        (tmp_path / name / "summary.json").write_text(json.dumps({"kind": "toy", "complete": True, **body}))
    assert {e.path.name: e.notes for e in index(tmp_path)} == {
        "written": ["unknown kind 'toy' (a newer lnbench?)"],
        "old": ["unknown kind 'toy' (a newer lnbench?)"],
    }
    assert {e.path.name: e.headline for e in index(tmp_path)} == {"written": "written: 0.500", "old": ""}
    monkeypatch.setitem(EXPERIMENTS, "toy", Toy())
    entries = {e.path.name: e for e in index(tmp_path)}
    assert {k: (e.notes, e.headline) for k, e in entries.items()} == {
        "written": ([], "written: 0.500"),
        "old": ([], "computed: 0.250"),
    }
