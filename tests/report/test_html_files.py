"""report.html as files: links that resolve from any folder name,
concurrent writers, and the provenance of a checkout with uncommitted changes. Run folders made
by hand, nothing trained."""

import json
import re
from concurrent.futures import ThreadPoolExecutor
from html import unescape
from pathlib import Path
from urllib.parse import urljoin, urlparse
from urllib.request import url2pathname

import pytest

from lnbench.report.html import write_report

CHILD_FILES = ("config.yaml", "metrics.json", "run.json")


def _run_folder(path: Path, children: list[str], **manifest) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text(
        json.dumps({"kind": "compare", "name": path.name, "status": "completed", **manifest})
    )
    (path / "config.yaml").write_text("seed: 0\n")
    for name in children:
        (path / name).mkdir()
        for f in CHILD_FILES:
            (path / name / f).write_text(json.dumps({"status": "completed"}) if f.endswith("json") else "seed: 0\n")
    return path


def _targets(page: Path) -> list[Path]:
    """Where a browser takes each link of ``page``: the href resolved against the page's URL
    (RFC 3986, ``urljoin``), fragment dropped, percent-decoded back to a path."""
    hrefs = [h.replace("&amp;", "&") for h in re.findall(r'<a href="([^"]+)">', page.read_text())]
    return [Path(url2pathname(urlparse(urljoin(page.resolve().as_uri(), h)).path)) for h in hrefs]


CHILDREN = ["rnn #1 layer", "rnn 100% & none"]


@pytest.mark.parametrize("folder", ["runs #2/exp one", "plain/exp"])
def test_links_to_child_files_resolve_under_folders_with_a_hash_or_a_space(tmp_path, folder):
    run = _run_folder(tmp_path / folder, CHILDREN)
    targets = _targets(write_report([run]))
    assert sorted(targets) == sorted(run / child / f for child in CHILDREN for f in CHILD_FILES)
    assert all(t.is_file() for t in targets)


def test_links_of_a_side_by_side_page_elsewhere_resolve(tmp_path):
    runs = [_run_folder(tmp_path / "runs #2" / name, CHILDREN) for name in ("a b", "c#d")]
    (tmp_path / "pages # here").mkdir()
    page = write_report(runs, out=tmp_path / "pages # here" / "side by side.html")
    targets = _targets(page)
    assert sorted(targets) == sorted(r / child / f for r in runs for child in CHILDREN for f in CHILD_FILES)


def test_forty_concurrent_writers_of_one_report_all_succeed(tmp_path):
    """Forty concurrent writers of one report.html all succeed: each writes through its own
    temporary name (with one fixed ``report.html.tmp`` some writers would lose theirs)."""
    run = _run_folder(tmp_path / "exp", CHILDREN)
    with ThreadPoolExecutor(40) as pool:
        pages = list(pool.map(lambda _: write_report([run]), range(40)))
    assert pages == [run / "report.html"] * 40
    assert sorted(p.name for p in run.iterdir() if p.is_file()) == ["config.yaml", "report.html", "run.json"]
    assert (run / "report.html").read_text().rstrip().endswith("</html>")


def test_the_page_says_when_the_checkout_had_uncommitted_changes(tmp_path):
    dirty = {"git_commit": "0123456789abcdef", "git_dirty": True, "git_diff_sha256": "f" * 64}
    run = _run_folder(tmp_path / "exp", [], **dirty, git_changed_files=["a.py", "b.py"])
    html = write_report([run]).read_text()
    assert "0123456789abcdef with uncommitted changes (2 files, diff sha256 ffffffffffff...)" in html
    clean = _run_folder(tmp_path / "clean", [], git_commit="0123456789abcdef", git_dirty=False)
    assert "uncommitted" not in write_report([clean]).read_text()
    side_by_side = write_report([run, clean], out=tmp_path / "both.html").read_text()  # the overview table
    assert "<td>0123456789 (dirty)</td><td>0123456789</td>" in side_by_side


def test_a_sweeps_batch_size_figure_gets_the_sweep_caption_not_the_batchsize_sweeps(tmp_path):
    """accuracy_vs_batch_size.png is captioned by the kind of its folder: a sweep's with the sweep
    caption (``accuracy_vs_*.png``), a batchsize-sweep's with its own (log2 axis, BatchNorm with
    batch statistics dashed); the oracle is lnbench.report.figures.CAPTIONS."""
    from lnbench.experiments import report
    from lnbench.report.figures import CAPTIONS

    for kind, want in (
        ("sweep", CAPTIONS["accuracy_vs_*.png"]),
        ("batchsize-sweep", CAPTIONS["accuracy_vs_batch_size.png"]),
    ):
        folder = tmp_path / kind
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({"kind": kind, "status": "completed"}))
        (folder / "summary.json").write_text(json.dumps({"kind": kind, "complete": True, "rows": []}))
        (folder / "accuracy_vs_batch_size.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        html = unescape(report([folder]).read_text())
        captions = re.findall(r"<figcaption><b>accuracy_vs_batch_size.png</b>: (.*?)</figcaption>", html)
        assert captions == [want], kind


def test_html_special_text_in_a_run_comes_out_escaped(tmp_path):
    """A command, an error, a config and a verdict holding <, > and & are shown as text, never as
    markup: each comes out HTML-escaped (``&lt;``, ``&#34;``, ``&amp;``), as Jinja's autoescape writes it."""
    evil = '<script>alert("x")</script> & <b>bold</b>'
    run = _run_folder(tmp_path / "run", [], command=["lnbench", "train", evil], error=evil, status="failed")
    (run / "config.yaml").write_text(f"name: '{evil}'\n")
    (run / "summary.json").write_text(json.dumps({"kind": "compare", "verdicts": [evil], "rows": []}))
    html = write_report([run]).read_text()
    assert "<script>alert" not in html and "<b>bold</b>" not in html
    escaped = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
    assert html.count(escaped) >= 3, html  # the command, the error, the config (and the verdict, when shown)
