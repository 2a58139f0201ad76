"""What a person reads after a run and with lnbench show (lnbench.cli.results): user text printed as
given (no emoji codes), and by default the table over seeds and the verdicts, every run's table and
the paired comparisons behind --verbose / show --all (lnbench ls: test_folders.py)."""

import os
import subprocess
import sys

import pytest
from conftest import TINY_OVERRIDES

from lnbench import experiments
from lnbench.config import load_config


def _lnbench(*args: str, columns: int = 100) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "lnbench", *args], capture_output=True, text=True, timeout=600, env=env
    )


def test_a_config_file_name_with_an_emoji_code_is_printed_as_given(tmp_path):
    """``:x:`` is rich's code for an emoji: the error names the file ``:x:.yaml`` character for character."""
    r = _lnbench("compare", str(tmp_path / ":x:.yaml"), "--runs-dir", str(tmp_path))
    assert r.returncode == 2
    assert f"{tmp_path}/:x:.yaml" in r.stderr and "\u274c" not in r.stderr, r.stderr


@pytest.fixture(scope="module")
def compare_folder(tmp_path_factory):
    cfg = load_config(None, [*TINY_OVERRIDES, "seeds=[0,1]", "compare.families=[lstm]", "compare.norms=[none,layer]"])
    return experiments.compare(cfg, runs_dir=tmp_path_factory.mktemp("runs")).path


@pytest.mark.e2e
def test_show_prints_the_table_over_seeds_and_the_verdicts_and_show_all_adds_every_run_and_the_comparisons(
    compare_folder,
):
    """The oracle is the tables' titles: ``over 2 seeds`` in both; the run table's title (``lnbench
    compare``) and ``paired comparisons`` only with --all, and a line naming what was left out without."""
    plain = _lnbench("show", str(compare_folder))
    full = _lnbench("show", "--all", str(compare_folder))
    assert plain.returncode == full.returncode == 0, plain.stderr + full.stderr
    assert "over 2 seeds" in plain.stdout and "over 2 seeds" in full.stdout
    assert "paired comparisons" in full.stdout and "lnbench compare:" in full.stdout
    assert "lnbench compare:" not in plain.stdout
    assert "Not printed: every run's table and the paired comparisons (--verbose" in plain.stdout
    verdicts = [line for line in plain.stdout.splitlines() if line.startswith(("- ", "  "))]
    assert verdicts and max(len(line) for line in verdicts) <= 100  # wrapped under their dash


@pytest.mark.e2e
def test_a_diverged_run_is_printed_with_its_epoch_and_cause_after_the_run_and_by_show(tmp_path):
    """A run that diverges (SGD at lr 1e30) prints one line ``<run> diverged at epoch <e>: <cause>``
    after training and in ``lnbench show``; the oracle is the run's metrics.json (``diverged_at_epoch``,
    ``divergence_reason``), which summary.json's row repeats. A summary.json without the row's two
    fields (an older version's) is read from the run's metrics.json."""
    import json

    from conftest import set_args

    from lnbench.records.folder import RunFolder

    overrides = [*TINY_OVERRIDES, "train.optimizer=sgd", "train.lr=1e30"]
    r = _lnbench("train", "configs/train.yaml", "--runs-dir", str(tmp_path), *set_args(overrides))
    assert r.returncode == 3, r.stderr  # docs/cli.md: its only run diverged
    (folder,) = tmp_path.iterdir()
    metrics = RunFolder(folder).raw_metrics() or {}
    assert metrics["status"] == "diverged" and metrics["divergence_reason"]
    line = f"{RunFolder(folder).name} diverged at epoch {metrics['diverged_at_epoch']}: {metrics['divergence_reason']}"
    assert line in r.stdout.splitlines(), r.stdout
    summary = json.loads((folder / "summary.json").read_text())
    (row,) = summary["rows"]
    assert (row["diverged_at_epoch"], row["divergence_reason"]) == (
        metrics["diverged_at_epoch"],
        metrics["divergence_reason"],
    )
    assert line in _lnbench("show", str(folder)).stdout.splitlines()
    for key in ("diverged_at_epoch", "divergence_reason"):
        row.pop(key)
    (folder / "summary.json").write_text(json.dumps(summary))
    assert line in _lnbench("show", str(folder)).stdout.splitlines()


def test_a_compare_names_each_diverged_child_once_and_no_finished_one(tmp_path):
    """:func:`lnbench.report.notes.divergences` over a compare's rows: one line per diverged row, named by
    its child folder, with the row's epoch and cause (oracle: the rows as written); a completed row
    gives none."""
    from lnbench.records.schema import SummaryRow
    from lnbench.report.notes import divergences

    def row(name: str, status: str, epoch=None, reason=None) -> SummaryRow:
        (tmp_path / name).mkdir()
        return SummaryRow(
            family="rnn", norm="layer", batch_size=16, seed=0, status=status, epochs_completed=0,
            final_test_acc=None, final_test_acc_batch_stats=None, final_train_loss=None, final_test_loss=None,
            mean_train_loss=None, first_epoch_at_target=None, n_test=16, run_dir=name,
            diverged_at_epoch=epoch, divergence_reason=reason,
        )  # fmt: skip

    rows = [row("rnn_layer_seed0", "diverged", 3, "the loss is nan"), row("rnn_none_seed0", "completed")]
    assert divergences(tmp_path, rows) == ["rnn_layer_seed0 diverged at epoch 3: the loss is nan"]
