"""The optimizer, schedule and validation keys are refused where they do not
apply (one line naming the key and the allowed values; exit code 2 and no run folder from the
command line), recorded in config.yaml, and can be swept."""

from __future__ import annotations

import pytest
from conftest import runner

from lnbench.analysis.grid import check_grid
from lnbench.cli.app import app
from lnbench.config import ConfigError, load_config

REFUSED = [
    (["train.momentum=0.9"], "train.momentum: applies to optimizer sgd or rmsprop only, and optimizer is adam"),
    (["train.optimizer=adamw", "train.nesterov=true"], "train.nesterov: applies to optimizer sgd only"),
    (["train.optimizer=sgd", "train.nesterov=true"], "train.nesterov: needs momentum > 0"),
    (
        ["train.lr_schedule=cosine", "train.lr_step_epochs=5"],
        "train.lr_step_epochs: applies to lr_schedule step only, and lr_schedule is cosine",
    ),
    (["train.lr_gamma=0.5"], "train.lr_gamma: applies to lr_schedule step only, and lr_schedule is constant"),
    (["train.warmup_epochs=2"], "train.warmup_epochs: applies to lr_schedule warmup_cosine only"),
    (["train.lr_schedule=step"], "train.lr_step_epochs: lr_schedule step needs it"),
    (["train.lr_schedule=warmup_cosine"], "train.warmup_epochs: lr_schedule warmup_cosine needs it"),
    (
        ["train.lr_schedule=warmup_cosine", "train.warmup_epochs=50"],
        "train.warmup_epochs: 50, but epochs is 50; it must be < epochs",
    ),
    (["train.optimizer=lion"], "train.optimizer: Input should be 'adam', 'adamw', 'sgd' or 'rmsprop'"),
    (["train.lr_schedule=linear"], "'constant', 'cosine', 'step' or 'warmup_cosine'"),
    (["train.optimizer=sgd", "train.momentum=1"], "train.momentum: Input should be less than 1"),
    (["train.weight_decay=-1"], "train.weight_decay: Input should be greater than or equal to 0"),
    (["data.n_train=100", "data.n_val=100"], "data.n_val: 100, but n_train is 100; it must leave training data"),
    (
        ["data.n_train=100", "data.n_val=50", "train.batch_size=64"],
        "train.batch_size (64) must be <= data.n_train - data.n_val (100 - 50 = 50, the training sequences)",
    ),
]


@pytest.mark.parametrize("overrides,message", REFUSED)
def test_a_key_where_it_does_not_apply_is_one_line_naming_it(overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config(None, overrides)
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("overrides,message", REFUSED[:3] + REFUSED[-2:])
def test_the_command_line_refuses_them_with_exit_2_and_no_run_folder(tmp_path, overrides, message):
    sets = [a for o in overrides for a in ("--set", o)]
    result = runner.invoke(app, ["train", "configs/train.yaml", *sets, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "runs").exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lnbench: error: ") and message in lines[0], result.output
    assert "Traceback" not in result.output


def test_the_keys_that_apply_are_accepted_and_recorded():
    cfg = load_config(
        None,
        [
            "train.optimizer=sgd",
            "train.momentum=0.9",
            "train.nesterov=true",
            "train.weight_decay=1e-4",
            "train.lr_schedule=step",
            "train.lr_step_epochs=10",
            "train.lr_gamma=0.5",
            "data.n_val=100",
        ],
    )
    text = cfg.to_yaml(model_family_only=True)
    for line in ("optimizer: sgd", "momentum: 0.9", "nesterov: true", "lr_step_epochs: 10", "n_val: 100"):
        assert line in text
    assert load_config(None, ["train.optimizer=rmsprop", "train.momentum=0.5"]).train.momentum == 0.5
    # the defaults written out in full (a run's config.yaml, --resume) are read back as they are
    assert type(cfg).model_validate(cfg.model_dump()) == cfg
    default = load_config(None)
    assert (default.train.optimizer, default.train.lr_schedule, default.train.weight_decay, default.data.n_val) == (
        "adam",
        "constant",
        0.0,
        0,
    )


def test_the_optimizer_is_a_sweep_axis_and_an_impossible_cell_is_named():
    cfg = load_config(None, ["sweep.grid={train.optimizer: [adam, sgd], train.lr_schedule: [constant, cosine]}"])
    cells = check_grid(cfg)
    assert [(c["train__optimizer"], c["train__lr_schedule"]) for c in cells] == [
        ("adam", "constant"),
        ("adam", "cosine"),
        ("sgd", "constant"),
        ("sgd", "cosine"),
    ]
    assert cfg.with_changes(**cells[3]).train.optimizer == "sgd"
    bad = load_config(None, ["train.optimizer=sgd", "train.momentum=0.9", "sweep.grid={train.optimizer: [sgd, adam]}"])
    with pytest.raises(ConfigError) as err:
        check_grid(bad)
    assert "sweep.grid: train.optimizer: value 'adam': momentum: applies to optimizer sgd or rmsprop only" in str(
        err.value
    )


def test_sweep_g_takes_the_optimizer(tmp_path):
    """``lnbench sweep -g train.optimizer=adam,sgd`` plans one cell per optimizer (dry run)."""
    result = runner.invoke(
        app, ["sweep", "-g", "train.optimizer=adam,sgd", "--dry-run", "--runs-dir", str(tmp_path / "runs")]
    )
    assert result.exit_code == 0, result.output
    assert "optimizer-adam" in result.output and "optimizer-sgd" in result.output
