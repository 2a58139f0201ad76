"""What a person reads: user text printed as given (no emoji codes), and by default the table over
seeds and the verdicts, every run's table and the paired comparisons behind --verbose / show --all."""

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
    return experiments.compare(cfg, tmp_path_factory.mktemp("runs")).path


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
