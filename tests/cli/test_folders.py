"""The commands that read run folders (lnbench.cli.folders): what lnbench ls prints at a given width."""

import os
import subprocess
import sys


def _lnbench(*args: str, columns: int = 100) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "lnbench", *args], capture_output=True, text=True, timeout=600, env=env
    )


def test_ls_at_120_columns_is_one_line_per_folder_with_the_result_cut_to_fit(tmp_path):
    """``lnbench ls`` at 120 columns (COLUMNS): the title, the header and its rule, then one line per
    folder, none longer than 120 characters, with the whole folder name, kind, status and start (the
    oracle: the run.json files written here); a result that does not fit is cut with an ellipsis, and
    a folder's notes follow its result in parentheses. At 60 columns it falls back to a layout that
    wraps, every folder name whole."""
    import json

    folders = {
        "20261204T144826_656880Z_compare": ("compare", "completed", "best layer: 0.958", True),
        "20261204T144827_656880Z_batchsize_sweep": ("batchsize-sweep", "interrupted", "best run rnn_layer_bs4_seed0: "
                                                    "0.958 on trend, adding, digits, mnist", False),
        "20261204T144829_656880Z_train_rnn_layer": ("train", "completed", "test acc 0.500", True),
    }  # fmt: skip
    for name, (kind, status, headline, complete) in folders.items():
        (tmp_path / name).mkdir()
        manifest = {"kind": kind, "status": status, "start_time": "2026-12-04T14:48:26+00:00", "seed": [0, 1, 2, 3, 4]}
        (tmp_path / name / "run.json").write_text(json.dumps(manifest))
        summary = {"complete": complete, "rows": [{}] * 3, "headline": {"label": "", "value": None, "text": headline}}
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "20261204T144829_656880Z_train_rnn_layer" / "metrics.json").write_text("{}")
    r = _lnbench("ls", str(tmp_path), columns=120)
    lines = r.stdout.rstrip("\n").splitlines()
    assert r.returncode == 0 and len(lines) == 3 + len(folders), r.stdout
    assert max(len(line.rstrip()) for line in lines) <= 120
    for name, (kind, status, headline, _) in folders.items():
        (line,) = [line for line in lines if name in line]
        assert line.split()[:5] == [name, kind, status, "2026-12-04", "14:48"]
        assert " 0-4 " in line
    (sweep,) = [line for line in lines if "batchsize_sweep" in line]
    cut = sweep.rstrip()[sweep.index("best run") :]
    assert len(sweep.rstrip()) == 120 and cut.endswith("\u2026") and len(cut) >= 16
    assert folders["20261204T144827_656880Z_batchsize_sweep"][2].startswith(cut[:-1])
    (compare,) = [line for line in lines if "_compare" in line]
    assert compare.rstrip().endswith(" best layer: 0.958")  # it fits: whole
    narrow = _lnbench("ls", str(tmp_path), columns=60)
    assert narrow.returncode == 0 and all(name in narrow.stdout for name in folders)
    assert len(narrow.stdout.splitlines()) > 3 + len(folders)
    assert "(partial: 3 runs finished)" in " ".join(narrow.stdout.split())
