"""``lnbench sweep -g KEY=V1,V2`` builds the same sweep.grid as the YAML mapping."""

from __future__ import annotations

import pytest
import yaml
from conftest import runner

from lnbench.cli.app import app
from lnbench.config import ConfigError, load_config
from lnbench.config.grid_args import parse_grid_args, with_grid

MAPPING = "sweep.grid={model.norm: [none, layer], train.lr: [1e-3, 1e-2]}"
SHORT = ["-g", "model.norm=none,layer", "-g", "train.lr=1e-3,1e-2"]


def test_short_grid_equals_the_mapping():
    assert parse_grid_args(["model.norm=none,layer", "train.lr=1e-3,1e-2"]) == load_config(None, [MAPPING]).sweep.grid
    assert parse_grid_args(["data.seq_len=10, 20", "train.grad_clip=null,1"]) == {
        "data.seq_len": [10, 20],
        "train.grad_clip": [None, 1],
    }
    # commas inside brackets, braces and quotes do not split
    assert parse_grid_args(["model.norm=[none,layer],[layer]", 'name="a,b",c']) == {
        "model.norm": [["none", "layer"], ["layer"]],
        "name": ["a,b", "c"],
    }
    assert parse_grid_args(["seed=010"]) == {"seed": [10]}  # YAML 1.2: not octal


@pytest.mark.parametrize(
    "item, message",
    [
        ("train.lr=[1e-3,1e-2", "-g train.lr: unbalanced '[' at column 1 of '[1e-3,1e-2' (no closing ']')"),
        ("compare.norms=[none,layer]],[x]", "-g compare.norms: unbalanced ']' at column 13 of '[none,layer]],[x]'"),
        ("x={a: [1, 2}", "-g x: unbalanced '}' at column 10 of '{a: [1, 2}' (the '[' at column 5 is still open)"),
        ('name="abc,d', "-g name: the quote \" at column 1 of '\"abc,d' is never closed"),
        ("train.lr", "-g 'train.lr': expected KEY=V1,V2,..., e.g. -g train.lr=1e-3,1e-2"),
        ("train.lr=", "-g train.lr: no values; e.g. -g train.lr=V1,V2"),
        # YAML's flow list keeps [1e-3,] as one value: a trailing comma is refused, not a one-value grid
        (
            "train.lr=1e-3,",
            "-g train.lr: an empty value after the comma at column 5 of '1e-3,'; e.g. -g train.lr=V1,V2",
        ),
        (
            "train.lr=1e-3, ",
            "-g train.lr: an empty value after the comma at column 5 of '1e-3, '; e.g. -g train.lr=V1,V2",
        ),
        (
            "train.lr=,1e-3",
            "-g train.lr: an empty value before the comma at column 1 of ',1e-3'; e.g. -g train.lr=V1,V2",
        ),
        (
            "train.lr=1e-3,,1e-2",
            "-g train.lr: an empty value after the comma at column 5 of '1e-3,,1e-2'; e.g. -g train.lr=V1,V2",
        ),
    ],
)
def test_a_bad_grid_says_where(item, message):
    with pytest.raises(ConfigError) as err:
        parse_grid_args([item])
    assert str(err.value) == message


def test_a_key_given_twice_is_refused():
    with pytest.raises(ConfigError, match="-g train.lr: given twice"):
        parse_grid_args(["train.lr=1e-3", "train.lr=1e-2"])


def test_merge_rule_with_a_grid_in_the_config():
    """-g replaces a key's values in its place; a new key goes after the others."""
    cfg = load_config(None, ["sweep.grid={train.lr: [1e-3], model.norm: [none, layer], data.seq_len: [5]}"])
    merged = with_grid(cfg, {"model.norm": ["layer"], "train.epochs": [1, 2]}, "x")
    assert list(merged.sweep.grid.items()) == [
        ("train.lr", [0.001]),
        ("model.norm", ["layer"]),
        ("data.seq_len", [5]),
        ("train.epochs", [1, 2]),
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["-g", "train.lr=1e-3,"], "-g train.lr: an empty value after the comma at column 5 of '1e-3,'"),
        (["-g", "train.lr=,1e-3"], "-g train.lr: an empty value before the comma at column 1 of ',1e-3'"),
        # docs/cli.md's example: compare.norms is no key a sweep varies (no data/model/train key takes a list)
        (
            ["-g", "compare.norms=[none,layer],[layer]"],
            "-g compare.norms: not a key a sweep can vary; sweep.grid takes data.*, model.*, train.* keys (section.key)",
        ),
    ],
)
def test_sweep_command_refuses_an_empty_value_or_a_key_it_cannot_vary(tmp_path, args, message):
    result = runner.invoke(app, ["sweep", *args, "--dry-run", "--runs-dir", str(tmp_path / "runs")])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"lnbench: error: {message}"), (
        result.output
    )
    assert not (tmp_path / "runs").exists()


def test_the_dry_run_says_the_grid_is_the_configs_merged_with_g(tmp_path):
    """README's `-g train.lr=1e-3,1e-2 -g model.norm=none,layer` on configs/sweep.yaml (whose grid is
    model.norm x data.seq_len) is 12 cells, not the 4 of --set "sweep.grid={...}": the plan says why."""
    args = ["sweep", "-g", "train.lr=1e-3,1e-2", "-g", "model.norm=none,layer", "--set", "seeds=[0]", "--dry-run"]
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "sweep.grid: the grid of configs/sweep.yaml (with --set) merged with -g, 12 cells: "
        "model.norm [none, layer] (-g, replacing [none, batch, layer]); "
        "data.seq_len [10, 20, 40] (configs/sweep.yaml (with --set)); train.lr [0.001, 0.01] (-g, added)"
    )
    assert "12 runs, 120 epochs in all" in result.output
    alone = runner.invoke(app, [*args, "--set", "sweep.grid=null", "--runs-dir", str(tmp_path)])
    assert alone.output.splitlines()[0].startswith(
        "sweep.grid: from -g (configs/sweep.yaml (with --set) has none), 4 cells: "
    )
    assert "4 runs, 40 epochs in all" in alone.output


def test_sweep_command_with_g_resolves_and_plans_as_the_mapping(tmp_path):
    common = ["sweep", "configs/sweep.yaml", "--runs-dir", str(tmp_path)]
    without = ["--set", "sweep.grid=null"]  # the file's grid off, for -g alone (--set takes a key once)
    by_mapping = runner.invoke(app, [*common, "--set", MAPPING, "--print-config"])
    by_g = runner.invoke(app, [*common, *without, *SHORT, "--print-config"])
    assert by_mapping.exit_code == by_g.exit_code == 0, by_g.output
    assert yaml.safe_load(by_g.output) == yaml.safe_load(by_mapping.output)
    assert yaml.safe_load(by_g.output)["sweep"]["grid"] == {"model.norm": ["none", "layer"], "train.lr": [0.001, 0.01]}
    plans = [
        runner.invoke(app, [*common, *args, "--dry-run"]).output for args in (["--set", MAPPING], [*without, *SHORT])
    ]
    assert plans[1].startswith("sweep.grid: from -g")  # the line that says where the grid came from
    assert plans[0] == plans[1].split("\n", 1)[1] and "would start" in plans[0]
    bad = runner.invoke(app, [*common, "-g", "train.lr=[1e-3", "--dry-run"])
    assert (
        bad.exit_code == 2
        and bad.output.strip()
        == ("lnbench: error: -g train.lr: unbalanced '[' at column 1 of '[1e-3' (no closing ']')")
        and not any(tmp_path.iterdir())
    )


@pytest.mark.parametrize(
    "extra, source",
    [([], "configs/sweep.yaml (with -g)"), (["--set", "seeds=[0]"], "configs/sweep.yaml (with --set, -g)")],
)
def test_a_grid_value_g_gave_that_the_checks_refuse_names_g_as_its_source(tmp_path, extra, source):
    """A value from -g that the schema refuses is one line naming its source (the config file
    "with -g", or "with --set, -g"), the key and the value, exit code 2, no folder."""
    args = ["sweep", "-g", "train.epochs=0,1", *extra, "--dry-run", "--runs-dir", str(tmp_path / "runs")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"lnbench: error: {source}: sweep.grid: train.epochs: value 0: Input should be greater than or equal to 1"
    )
    assert not (tmp_path / "runs").exists()


def test_the_grid_line_spells_each_value_as_yaml_and_reads_back_as_the_grid():
    """The dry run's "which key came from where" line spells values as YAML (``[none, layer]``,
    ``null``, ``true``; a string YAML would read as something else quoted, ``'1e-3'``), never
    Python's ``['none', None, True]``. Oracle: each value list in the line, read back with YAML
    1.2, is the grid's own list."""
    from lnbench.config import yaml12
    from lnbench.config.grid_args import grid_origins

    before = {"model.norm": ["none", "batch"]}
    given = {"model.norm": ["none", "layer"], "train.grad_clip": [None, 1.0], "name": ["1e-3", "a, b", True]}
    line = grid_origins(before, given, "c.yaml")
    assert line == (
        "sweep.grid: the grid of c.yaml merged with -g, 12 cells: model.norm [none, layer] (-g, replacing "
        "[none, batch]); train.grad_clip [null, 1.0] (-g, added); name ['1e-3', 'a, b', true] (-g, added)"
    )
    for key, values in given.items():
        shown = line.split(f" {key} ", 1)[1].split(" (-g")[0]
        assert yaml12.load(shown) == values, key
