"""``lnbench.experiments.confirm``: the two-stage ``--confirm`` workflow as a function, the one the
CLI runs step by step. Oracle: ``lnbench compare --confirm`` on the same tiny config, whose
summary.json the function's equals but for timings and the folder's name."""

from __future__ import annotations

import json
import re

import pytest
from conftest import TINY_OVERRIDES, runner, tiny_args

from lnbench.cli.app import app
from lnbench.config import ConfigError, load_config
from lnbench.experiments import confirm

SEEDS = "seeds=[0,1,2]"
#: one model group: the pilot's two comparisons are open, and the confirm stage trains fresh seeds
NORMS = ("compare.norms=[none,layer]", "compare.families=[rnn]", "compare.placements=null")
TIMING = re.compile(r"seconds|wall|elapsed|started|finished|created|path", re.I)


def _comparable(value):
    """A summary.json body without timings, times and paths (they differ between two runs)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if not TIMING.search(k)}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[dict, dict, object]:
    cli_runs, api_runs = tmp_path_factory.mktemp("cli"), tmp_path_factory.mktemp("api")
    result = runner.invoke(
        app,
        ["compare", *tiny_args(SEEDS, *NORMS), "--confirm", "--max-seeds", "20", "--runs-dir", str(cli_runs)],
    )
    assert result.exit_code == 0, result.output
    (cli_folder,) = cli_runs.iterdir()
    cfg = load_config("configs/compare.yaml", [*TINY_OVERRIDES, SEEDS, *NORMS])
    stage, outcome = confirm("compare", cfg, max_seeds=20, runs_dir=api_runs)
    cli = json.loads((cli_folder / "summary.json").read_text())
    api = json.loads((outcome.path / "summary.json").read_text())
    return cli, api, stage


def test_the_function_and_the_command_write_the_same_summary(both):
    cli, api, stage = both
    assert "confirm" in api and api["complete"]
    fresh = stage.record["fresh_seeds"]["rnn-joint"]["none"]
    assert fresh == list(range(3, 3 + len(fresh))) and len(fresh) >= 2  # after the pilot's 0-2
    assert {r["seed"] for r in api["rows"]} == {0, 1, 2, *fresh}
    assert _comparable(api) == _comparable(cli)


def test_the_function_pins_its_plan_and_keeps_the_pilot(both):
    _, _, stage = both
    assert json.loads((stage.folder / "confirm.json").read_text()) == stage.record
    pilot = json.loads((stage.folder / "pilot_summary.json").read_text())
    assert pilot["complete"] and "confirm" not in pilot
    assert {r["seed"] for r in pilot["rows"]} == {0, 1, 2}
    fresh = stage.record["fresh_seeds"]["rnn-joint"]
    assert fresh["layer"] == fresh["none"]  # both norms of the group on the same fresh seeds


def test_a_folder_pinned_to_another_plan_is_refused(both):
    _, _, stage = both
    cfg = load_config("configs/compare.yaml", [*TINY_OVERRIDES, SEEDS, *NORMS])
    with pytest.raises(ConfigError, match="planned with --max-seeds 20"):
        confirm("compare", cfg, max_seeds=5, resume=stage.folder)


def test_a_one_seed_pilot_is_refused_before_anything_is_written(tmp_path):
    cfg = load_config("configs/compare.yaml", [*TINY_OVERRIDES, "seeds=[0]"])
    with pytest.raises(ConfigError, match="at least 2 seeds"):
        confirm("compare", cfg, runs_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


ONE_BATCH = ["train.batch_size=64", "data.n_train=64", "data.n_test=32", "data.seq_len=4", "data.features=64"]


def test_the_claims_confirm_of_the_function_and_of_the_command_agree(tmp_path):
    """The same for claims: ``lnbench claims --only rnn_faster_default --confirm`` and
    ``confirm("claims", claims_spec(...))`` write the same summary.json, both stages recorded."""
    from lnbench.experiments import claims_spec

    overrides = [*TINY_OVERRIDES, *ONE_BATCH]
    args = ["claims", "--only", "rnn_faster_default", *tiny_args(*ONE_BATCH), "--confirm", "--max-seeds", "20"]
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "cli")])
    assert result.exit_code == 0, result.output
    (cli_folder,) = (tmp_path / "cli").iterdir()
    spec = claims_spec(["rnn_faster_default"], "configs/claims", overrides)
    stage, outcome = confirm("claims", spec, max_seeds=20, runs_dir=tmp_path / "api")
    cli = json.loads((cli_folder / "summary.json").read_text())
    api = json.loads((outcome.path / "summary.json").read_text())
    fresh = stage.record["fresh_seeds"]["default"]  # the pilot's seeds are 0-4
    assert fresh == list(range(5, 5 + len(fresh))) and len(fresh) >= 2
    assert api["confirm"]["max_seeds"] == 20 and [c["stage"] for c in api["claims"]] == [
        c["stage"] for c in cli["claims"]
    ]
    assert _comparable(api) == _comparable(cli)
