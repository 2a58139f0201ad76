"""Issue 21 (E): ``lnbench sweep -g KEY=V1,V2`` builds the same sweep.grid as the YAML mapping."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

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
    # a value that is a list is bracketed; commas inside brackets, braces and quotes do not split
    assert parse_grid_args(["compare.norms=[none,layer],[layer]", 'name="a,b",c']) == {
        "compare.norms": [["none", "layer"], ["layer"]],
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


def test_sweep_command_with_g_resolves_and_plans_as_the_mapping(tmp_path):
    runner = CliRunner()
    common = ["sweep", "configs/sweep.yaml", "--runs-dir", str(tmp_path), "--set", "sweep.grid=null"]
    by_mapping = runner.invoke(app, [*common, "--set", MAPPING, "--print-config"])
    by_g = runner.invoke(app, [*common, *SHORT, "--print-config"])
    assert by_mapping.exit_code == by_g.exit_code == 0, by_g.output
    assert yaml.safe_load(by_g.output) == yaml.safe_load(by_mapping.output)
    assert yaml.safe_load(by_g.output)["sweep"]["grid"] == {"model.norm": ["none", "layer"], "train.lr": [0.001, 0.01]}
    plans = [runner.invoke(app, [*common, *args, "--dry-run"]).output for args in (["--set", MAPPING], SHORT)]
    assert plans[0] == plans[1] and "would start" in plans[0]
    bad = runner.invoke(app, [*common, "-g", "train.lr=[1e-3", "--dry-run"])
    assert (
        bad.exit_code == 2
        and bad.output.strip()
        == ("lnbench: error: -g train.lr: unbalanced '[' at column 1 of '[1e-3' (no closing ']')")
        and not any(tmp_path.iterdir())
    )
