"""report.html: written by every experiment and by `lnbench report`, checked as text and in a
real browser (headless Chromium) where one is installed."""

import base64
import errno
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import fingerprint, runner

from lnbench.cli.app import app

pytestmark = pytest.mark.e2e  # trains models and writes run folders

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_the_report_is_one_self_contained_page_with_tables_verdicts_figures_and_links(compare_run):
    html = (compare_run / "report.html").read_text()
    pngs = sorted(p.name for p in compare_run.glob("*.png"))
    assert len(pngs) == 5
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]+)"', html)
    assert sorted(alt for _, alt in images) == pngs
    assert all(base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n" for data, _ in images)
    assert "http://" not in html and "https://" not in html and "<link" not in html  # nothing from the network
    for text in (
        "over 2 seeds",
        "baselines on the same data",
        "paired comparisons",
        "Verdicts",
        "test acc mean ± sd",
        "Lines apart: the state",
        "python 3.",
        "config.yaml, as resolved",
    ):
        assert text in html, text
    summary = json.loads((compare_run / "summary.json").read_text())
    assert all(v.replace("'", "&#39;")[:60] in html for v in summary["verdicts"])
    links = re.findall(r'<a href="([^"]+)">', html)
    assert len(links) == 3 * len(summary["rows"]) and all((compare_run / link).exists() for link in links)


def test_report_command_redraws_an_interrupted_run_and_compares_folders(compare_run, tmp_path):
    for png in compare_run.glob("*.png"):
        png.unlink()
    (compare_run / "report.html").unlink()
    result = runner.invoke(app, ["report", str(compare_run)])
    assert result.exit_code == 0 and "5 figures drawn" in " ".join(result.output.split())  # a long path wraps
    assert (compare_run / "report.html").exists() and len(list(compare_run.glob("*.png"))) == 5
    inv = tmp_path / "inv"
    assert runner.invoke(app, ["invariance", "--runs-dir", str(inv)]).exit_code == 0
    (inv_run,) = list(inv.iterdir())
    assert "Table 1, measured" in (inv_run / "report.html").read_text()
    out = tmp_path / "both.html"
    result = runner.invoke(app, ["report", str(compare_run), str(inv_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "2 runs side by side" in html and 'id="overview"' in html and html.count('<section class="run"') == 2


def test_report_out_writes_only_its_page_and_reads_a_read_only_folder(compare_run, tmp_path, monkeypatch):
    """``report A B --out X`` writes X alone: nothing in A (where every write fails as on a
    read-only file system) or in B changes (SHA-256 and mtime), and no figures' folder is left
    beside X. B has lost its figures: the page draws them without putting them back into B, and
    holds each folder's five PNGs."""
    from lnbench.records import io as records_io

    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "both.html"
    shutil.copytree(compare_run, a)
    shutil.copytree(compare_run, b)
    for png in b.glob("*.png"):
        png.unlink()
    before = {a: fingerprint(a), b: fingerprint(b)}
    mkstemp = records_io.tempfile.mkstemp

    def read_only_a(*args, dir=None, **kwargs):  # every file lnbench writes starts as a temporary beside it
        if dir is not None and Path(dir).is_relative_to(a):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))
        return mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(records_io.tempfile, "mkstemp", read_only_a)
    result = runner.invoke(app, ["report", str(a), str(b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {a: fingerprint(a), b: fingerprint(b)} == before  # nothing in either folder was written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "both.html"]  # the figures' folder is gone
    html = out.read_text()
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]+)"', html)
    pngs = sorted(p.name for p in a.glob("*.png"))
    assert len(pngs) == 5 and sorted(alt for _, alt in images) == sorted(pngs * 2)  # each folder's five
    assert all(base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n" for data, _ in images)


@pytest.mark.parametrize(
    "args,message",
    [(["/no/such/run"], "not a run folder"), (["."], "not a run folder")],
)
def test_report_refuses_what_is_not_a_run_folder(args, message):
    result = runner.invoke(app, ["report", *args])
    assert result.exit_code == 2 and message in result.output


def test_report_of_several_folders_needs_an_output_file(compare_run):
    result = runner.invoke(app, ["report", str(compare_run), str(compare_run)])
    assert result.exit_code == 2 and "--out" in result.output


@pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed: apt-get install chromium (or: make test-browser)"
)
def test_the_report_renders_in_a_browser_with_every_figure_and_no_console_error(compare_run, tmp_path):
    page = f"file://{compare_run / 'report.html'}"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
    shot = tmp_path / "shot.png"
    r = subprocess.run(
        [CHROMIUM, *flags, "--window-size=1400,2400", f"--screenshot={shot}", page],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert shot.exists() and shot.stat().st_size > 50_000, r.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.std() > 0.05  # not a blank page
    dom = subprocess.run(
        [CHROMIUM, *flags, "--virtual-time-budget=5000", "--dump-dom", page],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert 'data-figures="5 figures, 0 not shown"' in dom.stdout, dom.stdout[-500:]
    assert "<table" in dom.stdout and "paired comparisons" in dom.stdout
    errors = [
        line
        for line in (r.stderr + dom.stderr).splitlines()
        if "CONSOLE" in line and ("Error" in line or "Uncaught" in line)
    ]
    assert errors == []


@pytest.mark.parametrize(
    "damage,message",
    [
        ("run.json=[1, 2, 3]", "run.json: not a JSON object (a list)"),
        ('run.json={"status": "comp', "run.json: cannot read it as JSON"),
        ("summary.json=[1, 2, 3]", "summary.json: not a JSON object (a list)"),
        ("summary.json=\xff\xfe", "summary.json: cannot read it as JSON"),
        ("child metrics.json={", "cannot read a file of this run folder (edited or damaged?): SchemaError"),
    ],
)
def test_report_on_a_damaged_folder_is_one_line_and_keeps_report_html(compare_run, tmp_path, damage, message):
    """A run.json, summary.json or child metrics.json that is not JSON, or not a JSON object: one
    line naming the file, exit code 2, no traceback, and the folder's report.html unchanged."""
    import shutil

    folder = tmp_path / compare_run.name
    shutil.copytree(compare_run, folder)
    before = (folder / "report.html").read_bytes()
    name, text = damage.split("=", 1)
    target = next(folder.glob("*/metrics.json")) if name == "child metrics.json" else folder / name
    target.write_bytes(text.encode("latin-1"))
    result = runner.invoke(app, ["report", str(folder)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert message in lines[-1] and lines[-1].startswith("lnbench: error: ") and "Traceback" not in result.output
    assert (folder / "report.html").read_bytes() == before
