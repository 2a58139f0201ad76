"""Figures are records: a figure is one ``@figure`` function in
its group's module of lnbench/report/figures/, declared with its record (file, caption, group, when it applies); the
groups' drawing, the kinds' ``figure_records`` and report.html's captions all come from it."""

import json
import re
from html import unescape

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

from lnbench.experiments.registry import EXPERIMENTS
from lnbench.report import figures

TOY_CAPTION = "A toy figure: one red square (registered by a test)."


def _square(color: str) -> Figure:
    return Figure(figsize=(1, 1), facecolor=color)  # 120 x 120 pixels at figures.save's 120 dpi


def test_a_group_draws_its_figures_in_order_when_they_apply(tmp_path, monkeypatch):
    monkeypatch.setattr(figures.registry, "FIGURES", {})
    figures.figure("b.png", group="toy", caption="B.")(lambda data: _square("blue"))
    figures.figure("never.png", group="toy", caption="N.", when=lambda data: data["many"])(lambda data: 1 / 0)
    figures.figure("each_*.png", group="toy", caption="E.")(lambda data: ((p, _square("red")) for p in data["parts"]))
    assert figures.draw("toy", {"many": False, "parts": ["x", "lr"]}, tmp_path) == [
        "b.png",
        "each_x.png",
        "each_lr.png",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "each_lr.png", "each_x.png"]
    assert (imread(tmp_path / "b.png")[..., :3] == [0, 0, 1]).all()
    assert (imread(tmp_path / "each_lr.png")[..., :3] == [1, 0, 0]).all()
    assert [(r.file, r.caption) for r in figures.records("toy")] == [
        ("b.png", "B."),
        ("never.png", "N."),
        ("each_*.png", "E."),
    ]
    assert figures.records("other") == () and figures.draw("other", {}, tmp_path) == []
    with pytest.raises(ValueError, match="figure b.png is already a figure of the group 'toy'"):
        figures.figure("b.png", group="toy", caption="again")(lambda data: _square("red"))


def test_each_kind_reads_its_groups_records():
    groups = {kind: exp.figure_group for kind, exp in EXPERIMENTS.items()}
    assert groups == {
        "train": "run",
        "compare": "run",
        "batchsize-sweep": "batchsize-sweep",
        "sweep": "sweep",
        "claims": "claims",
        "invariance": None,
        "gradcheck": None,
        "card": None,
    }
    files = {kind: [r.file for r in exp.figure_records] for kind, exp in EXPERIMENTS.items()}
    run = ["training_loss.png", "test_accuracy.png", "hidden_norm.png", "hidden_norm_mean.png", "grad_norm.png"]
    assert files["train"] == files["compare"] == run
    assert files["batchsize-sweep"] == ["accuracy_vs_batch_size.png", "train_loss_vs_batch_size.png"]
    assert files["sweep"] == ["accuracy_vs_*.png"] and files["claims"] == [
        "claims_by_task.png",
        "claims.png",
        "figure6.png",
    ]
    assert files["invariance"] == files["gradcheck"] == []
    assert EXPERIMENTS["sweep"].caption("accuracy_vs_lr.png") == figures.CAPTIONS["accuracy_vs_*.png"]
    assert EXPERIMENTS["sweep"].caption("grad_norm.png") == ""  # a run figure, not the sweep's


@pytest.mark.e2e
def test_a_figure_registered_in_one_place_is_drawn_and_captioned_by_a_compare_folder(
    compare_run, tmp_path, monkeypatch
):
    """The "1 file" claim: a toy figure registered into the run group at runtime (nothing else
    changed: no kind, no caption table) is drawn by ``lnbench report``'s redraw of a compare
    folder, from the folder's runs, and shown in report.html with its caption, after the run's own
    figures, which are drawn as before; once removed, the folder draws what it drew."""
    from lnbench.experiments.registry import redraw, report

    for folder in ("before", "after", "undone"):
        (tmp_path / folder).mkdir()
    before = redraw(compare_run, tmp_path / "before")
    monkeypatch.setitem(figures.FIGURES, "run", list(figures.FIGURES["run"]))  # the test's own copy: undone after
    seen = []

    @figures.figure("toy.png", group="run", caption=TOY_CAPTION)
    def toy(run: figures.RunData) -> Figure:
        seen.append((sorted(m.norm for m in run.metrics), run.target_acc, run.memoryless is not None))
        return _square("red")

    into = tmp_path / "after"
    drawn = redraw(compare_run, into)
    assert drawn == [*before, "toy.png"]
    rows = json.loads((compare_run / "summary.json").read_text())["rows"]
    assert len(rows) == 2 * 2 * len({(r["family"], r["norm_placement"]) for r in rows})  # 2 norms x 2 seeds per group
    assert seen == [(sorted(r["norm"] for r in rows), 0.9, True)]  # from every run, with the baseline
    pixels = imread(into / "toy.png")
    assert pixels.shape == (120, 120, 4) and (pixels[..., :3] == [1, 0, 0]).all()
    for name in before:  # the run's own figures unchanged
        assert np.array_equal(imread(into / name), imread(tmp_path / "before" / name)), name
    html = unescape(report([compare_run], out=tmp_path / "report.html", figures={compare_run: into}).read_text())
    shown = re.findall(r"<figcaption><b>(.*?)</b>: (.*?)</figcaption>", html)
    compare = EXPERIMENTS["compare"]
    assert shown == [*((n, compare.caption(n)) for n in before), ("toy.png", TOY_CAPTION)]
    assert EXPERIMENTS["train"].caption("toy.png") == TOY_CAPTION  # train draws the run group too
    assert EXPERIMENTS["batchsize-sweep"].caption("toy.png") == ""  # not its group's
    monkeypatch.undo()
    assert redraw(compare_run, tmp_path / "undone") == before and compare.caption("toy.png") == ""
