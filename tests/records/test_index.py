"""lnbench.records.index, the run index (lnbench ls, lnbench show) on folders made here by hand (on the
folders the commands wrote: test_tidy.py)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import runner

from lnbench.cli.app import app

pytestmark = pytest.mark.e2e  # lnbench ls on run folders


def test_a_start_time_without_utc_offset_is_read_as_utc_and_ls_lists_every_folder(tmp_path):
    """A run.json start_time without a UTC offset is read as UTC, beside ones with offsets: the
    index lists the three folders newest first by their UTC instants (converted by hand), and
    ``lnbench ls`` lists all three in that order."""
    from datetime import datetime, timezone

    from lnbench.experiments.registry import index

    starts = {"naive": "2026-12-01T10:00:00", "utc": "2026-12-01T09:30:00+00:00", "paris": "2026-12-01T11:00:00+02:00"}
    for name, start in starts.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text(
            json.dumps({"kind": "train", "status": "completed", "start_time": start})
        )
    entries = index(tmp_path)
    assert [e.path.name for e in entries] == ["naive", "utc", "paris"]  # 10:00, 09:30 and 09:00 UTC
    assert [e.start for e in entries] == [
        datetime(2026, 12, 1, h, m, tzinfo=timezone.utc) for h, m in ((10, 0), (9, 30), (9, 0))
    ]
    result = runner.invoke(app, ["ls", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())  # a table or, on a narrow terminal, blocks: in this order either way
    at = [out.index(f"2026-12-01 {t}") for t in ("10:00", "09:30", "09:00")]
    names = [re.search(rf"\b{n}\b", out).start() for n in ("naive", "utc", "paris")]  # not tmp_path's _utc_
    assert at == sorted(at) and names == sorted(names)


def test_a_headline_off_the_default_task_names_the_task(tmp_path):
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.records.folder import RunFolder
    from lnbench.records.index import headline_of

    def headline(kind, summary, metrics=None):
        folder = tmp_path / kind
        folder.mkdir(exist_ok=True)
        if metrics is not None:
            (folder / "metrics.json").write_text(json.dumps(metrics))
        return headline_of(EXPERIMENTS[kind], RunFolder(folder), summary)

    rows = [{"task": "adding", "final_test_acc": 0.9, "run_dir": "x"}]
    agg = [{"family": "lstm", "norm": "layer", "mean_final_test_acc": 0.958}]
    assert headline("compare", {"aggregate": agg, "rows": rows}) == "best lstm layer: 0.958 on adding"
    assert headline("compare", {"aggregate": agg, "rows": [{**rows[0], "task": "trend"}]}) == "best lstm layer: 0.958"
    claims = {"claims": [{"verdict": "held"}], "tasks": ["trend", "digits"]}
    assert headline("claims", claims) == "1 held on trend, digits"
    assert headline("train", None, {"test_acc": [0.5], "task": "digits"}) == "test acc 0.500 on digits"
    assert headline("train", None, {"test_acc": [0.5]}) == "test acc 0.500"


def test_a_diverged_train_headline_says_the_epoch_and_the_last_accuracy_it_recorded(tmp_path):
    """``lnbench ls`` of a train run that diverged: ``diverged at epoch N`` (metrics.json's
    ``diverged_at_epoch``), then the last test accuracy it recorded if it recorded one."""
    from lnbench.experiments.registry import EXPERIMENTS
    from lnbench.records.folder import RunFolder
    from lnbench.records.index import headline_of

    (tmp_path / "metrics.json").write_text(json.dumps({"status": "diverged", "diverged_at_epoch": 1, "test_acc": []}))
    assert headline_of(EXPERIMENTS["train"], RunFolder(tmp_path), None) == "diverged at epoch 1"
    metrics = {"status": "diverged", "diverged_at_epoch": 3, "test_acc": [0.4, 0.512], "task": "adding"}
    (tmp_path / "metrics.json").write_text(json.dumps(metrics))
    assert (
        headline_of(EXPERIMENTS["train"], RunFolder(tmp_path), None) == "diverged at epoch 3, test acc 0.512 on adding"
    )
