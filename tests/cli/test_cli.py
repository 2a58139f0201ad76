"""End to end through the Typer CLI on tiny configs (the checking commands: test_checking.py; the
commands' list and help texts: test_app.py; --print-config and --dry-run: test_launch.py)."""

import json
import math
import re
from pathlib import Path

import pytest
import torch
import yaml
from conftest import TINY_OVERRIDES, fingerprint, runner, set_args

from lnbench import experiments
from lnbench.cli.app import app
from lnbench.config import RunConfig, load_config
from lnbench.names import plural

pytestmark = pytest.mark.e2e  # trains models and writes run folders

# the tiny config but for train.epochs (each test sets its own, or takes its command's), and the RNN
# in one placement (compare.placements=null; the placements axis: tests/experiments)
TINY = set_args([*(o for o in TINY_OVERRIDES if not o.startswith("train.epochs")), "compare.placements=null"])
METRIC_KEYS = {
    "schema_version",
    "family",
    "norm",
    "batch_size",
    "seed",
    "hidden_size",
    "n_test",
    "status",
    "epochs",
    "train_loss",
    "test_loss",
    "test_acc",
    "test_acc_batch_stats",
    "test_acc_running_stats",  # BatchNorm with recomputed population statistics
    "hidden_norm_init",
    "hidden_norm",
    "grad_norm",
    "grad_norm_layer",
    "epoch_seconds",
    "diverged_at_epoch",
    "divergence_reason",
    "test_correct",
    "test_correct_batch_stats",
    "batch_norm_stats",
    "norm_placement",
    "norm_gain_init",
    "initial_gain",
    "task",
    "num_classes",
    "scale_quartile_edges",
    "hidden_norm_by_scale",
    "hidden_norm_by_scale_init",
    "scale_spearman",
    "scale_spearman_init",
    "saturation",
    "saturation_by_scale",
    "saturation_init",
    "grad_ratio",
    "grad_ratio_init",
    "n_val",  # the validation split
    "val_loss",
    "val_acc",
    "lr",
    "num_layers",
    "warnings",  # what the run noted (a gradient past 1e6)
    *(
        f"{k}_by_layer{init}"
        for k in ("hidden_norm", "scale_spearman", "saturation", "grad_ratio")
        for init in ("", "_init")
    ),
}
ROW_KEYS = {
    "trained_together",
    "diverged_at_epoch",
    "divergence_reason",
    "task",
    "num_classes",
    "batch_norm_stats",
    "norm_placement",
    "norm_gain_init",
    "initial_gain",
    "mean_train_loss",
    "family",
    "norm",
    "batch_size",
    "seed",
    "status",
    "epochs_completed",
    "final_test_acc",
    "final_test_acc_batch_stats",
    "final_train_loss",
    "final_test_loss",
    "first_epoch_at_target",
    "wall_seconds",
    "n_test",
    "warnings",
    "run_dir",
    "final_scale_spearman",
    "final_saturation",
    "final_grad_ratio",
    "n_val",  # the validation split, and the split the selections read
    "final_val_acc",
    "final_val_loss",
    "selected_on",
}
PLOTS = {"training_loss.png", "test_accuracy.png", "hidden_norm.png", "hidden_norm_mean.png", "grad_norm.png"}


def _only_run(runs):
    (run,) = list(runs.iterdir())
    return run


def test_compare_writes_children_plots_summary_and_table(tmp_path):
    result = runner.invoke(
        app, ["compare", "configs/compare.yaml", "--runs-dir", str(tmp_path), "--set", "train.epochs=2", *TINY]
    )
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path)
    assert run.name.endswith("_compare")
    assert PLOTS <= {p.name for p in run.iterdir()}
    assert all((run / p).stat().st_size > 10_000 for p in PLOTS)
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["status"] == "completed" and manifest["kind"] == "compare"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] and len(summary["rows"]) == 45 and summary["verdicts"]  # 3 x 3 x 5 seeds by default
    assert manifest["jobs"] >= 1 and summary["seeds"] == [0, 1, 2, 3, 4]
    assert [b["name"] for b in summary["baselines"]] == ["chance", "last_timestep", "whole_sequence"]
    assert all(len(b["acc_per_seed"]) == 5 and 0 <= b["mean"] <= 1 for b in summary["baselines"])
    assert "baselines on the same data" in result.output and "Baselines on the same data" in result.output
    ensemble = {
        r["family"]: json.loads((run / r["run_dir"] / "run.json").read_text())["ensemble"] for r in summary["rows"]
    }
    assert (
        ensemble["rnn"]["mechanism"] == "native"
        and ensemble["rnn"]["members"] == 5
        and ensemble["rnn"]["seeds"] == [0, 1, 2, 3, 4]
    )
    # batch size 16: a Transformer cell's seeds train as one ensemble too (sequential above 16)
    assert ensemble["transformer"]["mechanism"] == "native" and ensemble["transformer"]["members"] == 5
    assert ensemble["lstm"]["mechanism"] == "native" and ensemble["lstm"]["members"] == 5
    assert {(r["family"], r["norm"]) for r in summary["rows"]} == {
        (f, n) for f in ("rnn", "lstm", "transformer") for n in ("none", "batch", "layer")
    }
    for row in summary["rows"]:
        assert set(row) == ROW_KEYS and row["status"] == "completed"
        assert row["trained_together"] is True  # every cell above trained as one ensemble
        metrics = json.loads((run / row["run_dir"] / "metrics.json").read_text())
        assert set(metrics) == METRIC_KEYS
        assert metrics["epochs"] == [1, 2] and len(metrics["hidden_norm"][0]) == 5
        assert metrics["test_acc"][-1] == row["final_test_acc"]
        assert (metrics["test_acc_batch_stats"] is not None) == (row["norm"] == "batch")
        assert (run / row["run_dir"] / "config.yaml").exists()
    for name in ("test acc", "rnn", "Run folder"):
        assert name.lower() in result.output.lower()


def test_compare_child_config_is_rerunnable_with_train(tmp_path):
    runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path / "a"),
            "--set",
            "train.epochs=1",
            "--set",
            "compare.families=[rnn]",
            "--set",
            "compare.norms=[layer]",
            *TINY,
        ],
    )
    child = _only_run(tmp_path / "a") / "rnn_layer_seed0"
    result = runner.invoke(app, ["train", str(child / "config.yaml"), "--runs-dir", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    again = json.loads((_only_run(tmp_path / "b") / "metrics.json").read_text())
    first = json.loads((child / "metrics.json").read_text())
    assert again["test_acc"] == first["test_acc"] and again["train_loss"] == first["train_loss"]  # bit for bit


def test_batchsize_sweep_trains_batchnorm_at_batch_size_1(tmp_path):
    args = [
        "batchsize-sweep",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "train.epochs=1",
        "--set",
        "sweep.batch_sizes=[1, 4]",
        *TINY,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path)
    assert {"accuracy_vs_batch_size.png", "train_loss_vs_batch_size.png", "summary.json"} <= {
        p.name for p in run.iterdir()
    }
    summary = json.loads((run / "summary.json").read_text())
    assert summary["kind"] == "batchsize-sweep" and summary["complete"] and summary["verdicts"]
    cells = {(r["norm"], r["batch_size"]): r for r in summary["rows"]}
    assert set(cells) == {(n, b) for n in ("none", "batch", "layer") for b in (1, 4)}
    bn1 = cells[("batch", 1)]
    assert bn1["status"] == "completed" and bn1["warnings"]
    assert all(math.isfinite(bn1[k]) for k in ("final_test_acc", "final_test_acc_batch_stats", "final_train_loss"))
    # batch statistics of one sample: x_hat = 0, every h_t = tanh(beta), one constant prediction
    # for the whole (balanced, 8 + 8) test set, so exactly half right
    assert bn1["final_test_acc_batch_stats"] == 0.5
    metrics = json.loads((run / bn1["run_dir"] / "metrics.json").read_text())
    assert all(math.isfinite(v) for v in metrics["train_loss"] + metrics["test_loss"])


def test_a_diverged_child_does_not_stop_the_comparison(tmp_path, monkeypatch):
    from lnbench.nn.models import build_model as build

    def poisoned(cfg, *a, **k):
        model = build(cfg, *a, **k)
        if cfg.norm == "batch":
            with torch.no_grad():
                model.head.bias.fill_(float("nan"))
        return model

    monkeypatch.setattr("lnbench.experiments.cells.build_model", poisoned)
    args = [
        "compare",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "train.epochs=2",
        "--set",
        "compare.families=[rnn]",
        "--set",
        "seeds=[0]",
        "--jobs",
        "1",
    ]
    result = runner.invoke(app, args + TINY)  # --jobs 1: the patched builder lives in this process
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path)
    rows = {r["norm"]: r for r in json.loads((run / "summary.json").read_text())["rows"]}
    assert rows["batch"]["status"] == "diverged" and rows["layer"]["status"] == "completed"
    assert json.loads((run / "rnn_batch_seed0" / "run.json").read_text())["status"] == "diverged"
    assert "diverged" in result.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["compare", "--set", "train.epochs=0"], "train.epochs"),
        (["compare", "--set", "model.norm=instance"], "'none', 'batch', 'layer', 'rms', 'weight' or 'group'"),
        (["compare", "--set", "train.lr=-0.1"], "train.lr"),
        (["compare", "--set", "train.bogus=1"], "train.bogus: unknown key"),
        (["compare", "missing.yaml"], "missing.yaml: cannot read config"),
        (["batchsize-sweep", "--set", "sweep.batch_sizes=[0]"], "batch_sizes"),
        (["train", "configs/train.yaml", "--set", "epochs"], "expected key=value"),
        (["batchsize-sweep", "--set", "data.n_train=100"], "sweep.batch_sizes: [128] exceed data.n_train (100)"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_run_folder(tmp_path, args, message):
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()


def test_unusable_runs_dir_exits_2_and_creates_nothing(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for runs_dir in (afile, afile / "sub"):
        result = runner.invoke(app, ["compare", "--runs-dir", str(runs_dir), "--set", "train.epochs=1"])
        assert result.exit_code == 2 and "is not a folder" in result.output
    result = runner.invoke(app, ["gradcheck", "--json", str(tmp_path)])
    assert result.exit_code == 2 and "is a folder" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_train_run_interrupted_mid_training_says_so(tmp_path, monkeypatch):
    """Ctrl-C after the first epoch: exit 130, one line naming the folder, metrics kept."""
    import lnbench.training.loop as training

    real = training.probe_members
    calls = {"n": 0}

    def evaluate_then_interrupt(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the probes before training, epoch 1, then Ctrl-C during epoch 2's evaluation
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "probe_members", evaluate_then_interrupt)
    result = runner.invoke(
        app, ["train", "configs/train.yaml", "--runs-dir", str(tmp_path), "--set", "train.epochs=3", *TINY]
    )
    assert result.exit_code == 130
    run = _only_run(tmp_path)
    assert f"run folder: {run}" in result.output and "Traceback" not in result.output
    assert result.output.rstrip().endswith("; finished epochs were kept")  # said only when some were
    assert json.loads((run / "run.json").read_text())["status"] == "interrupted"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["status"] == "interrupted" and metrics["epochs"] == [1]


def test_bad_option_type_exits_2(tmp_path):
    result = runner.invoke(app, ["compare", "--seed", "x", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--seed" in result.output
    assert not any(tmp_path.iterdir())


def test_compare_with_two_seeds_prints_and_stores_the_aggregate(tmp_path):
    args = [
        "compare",
        "--runs-dir",
        str(tmp_path),
        "--set",
        "train.epochs=1",
        "--set",
        "compare.families=[rnn]",
        "--set",
        "compare.norms=[layer]",
        "--set",
        "seeds=[0,1]",
        *TINY,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((_only_run(tmp_path) / "summary.json").read_text())
    (agg,) = summary["aggregate"]
    accs = [r["final_test_acc"] for r in summary["rows"]]
    assert agg["n_seeds"] == 2 and math.isclose(agg["mean_final_test_acc"], sum(accs) / 2)
    assert "over 2 seeds" in result.output
    assert json.loads((_only_run(tmp_path) / "run.json").read_text())["seed"] == [0, 1]


@pytest.mark.parametrize(
    "args,message",
    [(["--jobs", "0"], "--jobs: must be >= 1, got 0"), (["--seed", "4294967295"], "seeds 4294967295 .. 4294967299")],
)
def test_jobs_and_default_seeds_are_checked_before_anything_runs(tmp_path, args, message):
    result = runner.invoke(app, ["compare", *args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()
    assert (
        runner.invoke(
            app,
            [
                "train",
                "configs/train.yaml",
                "--seed",
                "4294967295",
                "--set",
                "train.epochs=1",
                *TINY,
                "--runs-dir",
                str(tmp_path / "t"),
            ],
        ).exit_code
        == 0
    )


def test_an_empty_runs_dir_and_a_missing_json_folder_are_refused(tmp_path, monkeypatch):
    """``--runs-dir ""`` is refused (exit code 2, "--runs-dir: empty") by every command instead of
    meaning the current folder, and a --json path whose folder does not exist is refused, not
    created: nothing is written in the current folder."""
    monkeypatch.chdir(tmp_path)
    for cmd in (["compare"], ["gradcheck"], ["claims"]):
        result = runner.invoke(app, [*cmd, "--runs-dir", ""])
        assert result.exit_code == 2 and "--runs-dir: empty" in result.output
    result = runner.invoke(app, ["gradcheck", "--json", str(tmp_path / "no" / "such" / "x.json")])
    assert result.exit_code == 2 and "does not exist (it is not created)" in result.output
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_importing_is_one_line_and_exit_130():
    """A Ctrl-C while the command line is still importing (SIGINT sent from the import of
    lnbench.cli.app) is one line on stderr, exit code 130, no traceback."""
    import subprocess
    import sys

    code = (
        "import builtins, os, signal\n"
        "real = builtins.__import__\n"
        "def imp(name, *a, **k):\n"
        "    if name == 'lnbench.cli.app':\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = imp\n"
        "from lnbench._entry import main\n"
        "main()\n"
    )
    r = subprocess.run([sys.executable, "-c", code, "compare"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 130 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "lnbench: interrupted: stopped by Ctrl-C while starting; nothing was written"
    ]


def test_the_console_script_is_the_guarded_entry_point():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "lnbench"]
    assert ep.value == "lnbench._entry:main"


def test_a_config_too_big_for_memory_is_refused_before_any_folder(tmp_path):
    """A config whose data or model would not fit in memory (n_train = 1e11, hidden_size 200000,
    d_ff 1e9) is refused with exit code 2 and the GiB it needs against the GiB available, before
    any run folder."""
    for cmd in (["compare"], ["train", "configs/train.yaml"], ["batchsize-sweep"]):
        result = runner.invoke(app, [*cmd, "--runs-dir", str(tmp_path / "runs"), "--set", "data.n_train=100000000000"])
        assert result.exit_code == 2 and "GiB of memory" in result.output and "GiB available" in result.output, (
            result.output
        )
    result = runner.invoke(
        app, ["train", "configs/train.yaml", "--runs-dir", str(tmp_path / "runs"), "--set", "model.hidden_size=200000"]
    )
    assert result.exit_code == 2 and "model.hidden_size 200000" in result.output
    # a compare, a sweep or a claims regime is checked for the families it trains, not model.family
    transformer = [
        ["compare", "--set", "compare.families=[transformer]"],
        ["batchsize-sweep", "--set", "sweep.family=transformer"],
        ["claims", "--only", "tf_faster"],
    ]
    for cmd in transformer:
        result = runner.invoke(app, [*cmd, "--runs-dir", str(tmp_path / "runs"), "--set", "model.d_ff=1000000000"])
        assert result.exit_code == 2 and "GiB of memory" in result.output, result.output
        assert " values, transformer, model.hidden_size 64, model.d_ff 1000000000, model.num_layers 1," in result.output
    assert not (tmp_path / "runs").exists()


def test_memory_estimate_grows_with_the_data_and_the_seeds():
    from lnbench.config.checks import memory_needed

    small, big = RunConfig(), RunConfig().with_changes(data__n_train=10_000)
    assert memory_needed(big) > 5 * memory_needed(small)
    assert memory_needed(small, members=5) > memory_needed(small, members=1)
    assert 1e6 < memory_needed(small) < 2e9  # the default config: tens of MB, not GB


@pytest.mark.parametrize(
    "command,key,owner",
    [
        ("compare", "model.norm=rms", "compare.norms"),
        ("compare", "model.family=lstm", "compare.families"),
        ("batchsize-sweep", "model.norm=batch", "sweep.norms"),
        ("batchsize-sweep", "model.family=transformer", "sweep.family"),
    ],
)
def test_a_model_key_the_experiment_sets_itself_is_refused(tmp_path, command, key, owner):
    """A model key the experiment sets in every run itself (compare's model.norm from compare.norms,
    ...) is refused in one line naming the key and the setting to use instead, exit code 2, no
    folder."""
    result = runner.invoke(app, [command, "--runs-dir", str(tmp_path / "r"), "--set", key, "--dry-run"])
    name, value = key.split("=")
    example = f"[{value}]" if owner.startswith("compare.") or owner == "sweep.norms" else value
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert f"{name}: this experiment sets it from {owner} in every run; set {owner} instead" in result.output
    assert f"remove {name} ({value}) from the config file or --set (e.g. --set {owner}={example})" in result.output
    assert not (tmp_path / "r").exists()


def test_a_config_file_that_sets_the_family_runs_under_compare_as_its_error_says(tmp_path):
    """A claims preset sets model.family (figure6.yaml: mlp), which compare sets from
    compare.families: the error names the way out, and taking it (the key removed from the file,
    compare.families set) is accepted."""
    source = Path("configs/claims/figure6.yaml").read_text()
    (tmp_path / "f6.yaml").write_text(source)
    refused = runner.invoke(app, ["compare", str(tmp_path / "f6.yaml"), "--runs-dir", str(tmp_path / "r"), "--dry-run"])
    assert refused.exit_code == 2
    assert "--set compare.families=[mlp]" in refused.output
    (tmp_path / "f6.yaml").write_text(source.replace("  family: mlp\n", ""))
    args = ["--set", "compare.families=[mlp]", "--set", "compare.norms=[none,batch]", "--dry-run"]
    accepted = runner.invoke(app, ["compare", str(tmp_path / "f6.yaml"), "--runs-dir", str(tmp_path / "r"), *args])
    assert accepted.exit_code == 0, accepted.output


def test_model_keys_that_apply_to_no_trained_family_are_refused(tmp_path):
    """A model key of a family the run does not train (model.d_ff, model.pos_emb: the Transformer's)
    is refused, exit code 2, no folder; the shipped compare.yaml, which spells out every family's
    keys at their defaults, runs RNN-only, and its children's config.yaml keep only the RNN's keys."""
    result = runner.invoke(
        app, ["train", "configs/train.yaml", "--runs-dir", str(tmp_path / "r"), "--set", "model.d_ff=8"]
    )
    assert (
        result.exit_code == 2
        and "model.d_ff: applies to the transformer only, and this run trains rnn" in result.output
    )
    result = runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path / "r"),
            "--set",
            "compare.families=[rnn]",
            "--set",
            "model.pos_emb=learned",
        ],
    )
    assert result.exit_code == 2 and "model.pos_emb: applies to the transformer only" in result.output
    assert not (tmp_path / "r").exists()
    # the shipped compare.yaml spells out both families' keys at their defaults: an RNN-only compare is fine,
    # and its children's config.yaml records only the keys the RNN used
    result = runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path / "r"),
            "--set",
            "compare.families=[rnn]",
            "--set",
            "compare.norms=[layer]",
            "--set",
            "seeds=[0]",
            "--set",
            "train.epochs=1",
            *TINY,
        ],
    )
    assert result.exit_code == 0, result.output
    child = next(_only_run(tmp_path / "r").glob("rnn_layer_seed0"))
    model = yaml.safe_load((child / "config.yaml").read_text())["model"]
    assert "pos_emb" not in model and "d_ff" not in model and model["norm_placement"] == "joint"
    assert model["num_layers"] == 1  # every family's key (stacked RNN layers)


def test_a_compare_of_stacked_rnns_and_lstms_runs_end_to_end_with_probes_per_layer(tmp_path):
    """``compare --set model.num_layers=2`` trains a 2-layer RNN (both placements) and
    LSTM per norm; each run records its layers' probes (layer 1's in the fields of before), the
    gradient norm of every layer's tensors, and draws its figures."""
    stacked = [
        "compare.families=[rnn, lstm]",
        "compare.placements=[joint, separate]",
        "compare.norms=[batch, layer]",
        "seeds=[0, 1]",
        *TINY_OVERRIDES,  # train.epochs=2
        "model.num_layers=2",
    ]
    result = runner.invoke(app, ["compare", "--runs-dir", str(tmp_path / "r"), *set_args(stacked)])
    assert result.exit_code == 0, result.output
    run = _only_run(tmp_path / "r")
    children = sorted(p for p in run.iterdir() if (p / "metrics.json").exists())
    assert len(children) == 3 * 2 * 2  # rnn joint, rnn separate, lstm x 2 norms x 2 seeds
    for child in children:
        m = json.loads((child / "metrics.json").read_text())
        assert m["status"] == "completed" and m["num_layers"] == 2
        assert yaml.safe_load((child / "config.yaml").read_text())["model"]["num_layers"] == 2
        assert [len(v) for v in m["hidden_norm_by_layer"]] == [2, 2] and len(m["hidden_norm_by_layer_init"]) == 2
        assert m["hidden_norm_by_layer"][-1][0] == m["hidden_norm"][-1]  # layer 1's in the fields of before
        assert m["grad_ratio_by_layer"][-1][0] == m["grad_ratio"][-1] and len(m["saturation_by_layer"][-1]) == 2
        assert any(k.startswith("cell_2.") for k in m["grad_norm_layer"]) and "cell_3.norm" not in str(m)
    assert PLOTS <= {p.name for p in run.iterdir()}


def test_a_compare_where_every_run_diverges_still_ends_with_tables_and_figures(tmp_path):
    """lr = 1e10: every run diverges in epoch 1, and the compare still completes with every row
    "diverged" and its 5 figures, exit code 3 (docs/cli.md: every run diverged) and a last line
    saying so; each run's progress line says "diverged at epoch 1", not "finished"; a train run
    ends "diverged", exit code 3."""
    result = runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path),
            "--set",
            "train.lr=1e10",
            "--set",
            "train.epochs=2",
            "--set",
            "seeds=[0,1]",
            *TINY,
        ],
    )
    assert result.exit_code == 3, result.output
    run = _only_run(tmp_path)
    summary = json.loads((run / "summary.json").read_text())
    lines = result.output.strip().splitlines()
    assert lines[-1] == (
        f"lnbench: error: every run ({len(summary['rows'])}) diverged at epoch 1 (the results above say why);"
        f" run folder: {run}"
    )
    progress = [line for line in lines if line.startswith("[")]
    assert progress and all("diverged at epoch 1" in line and "finished" not in line for line in progress)
    assert summary["complete"] and json.loads((run / "run.json").read_text())["status"] == "completed"
    assert {r["status"] for r in summary["rows"]} == {"diverged"} and len(summary["figures"]) == 5
    result = runner.invoke(
        app, ["train", "configs/train.yaml", "--runs-dir", str(tmp_path / "t"), "--set", "train.lr=1e10", *TINY]
    )
    assert (
        result.exit_code == 3
        and json.loads((_only_run(tmp_path / "t") / "run.json").read_text())["status"] == "diverged"
    )
    assert result.output.strip().splitlines()[-1].startswith("lnbench: error: the run diverged at epoch 1 (")


def test_the_command_line_starts_without_torch_scipy_or_matplotlib():
    """--help, --version and config errors answer at once (the heavy imports wait
    until a run starts). Their speed is in benchmarks/bench_startup.py; here, what is imported."""
    import subprocess
    import sys

    code = "import sys, lnbench.cli.app; print(sorted(m for m in ('torch', 'scipy', 'matplotlib', 'sklearn') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_progress_without_a_terminal_is_one_line_per_finished_run(tmp_path):
    """Piped output (no terminal) prints one line per finished run as it finishes (12 runs, the last
    at 24/24 epochs with ~0:00 remaining), all before the run folder's line."""
    result = runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path),
            "--set",
            "seeds=[0,1]",
            "--set",
            "train.epochs=2",
            "--set",
            "compare.norms=[none,layer]",
            "--jobs",
            "1",
            *TINY,
        ],
    )
    assert result.exit_code == 0
    finished = [line for line in result.output.splitlines() if " finished, test acc " in line]
    assert len(finished) == 12 and finished[-1].startswith("[24/24 epochs]") and "remaining ~0:00" in finished[-1]
    assert result.output.index(" finished, test acc ") < result.output.index("Run folder")


def test_several_config_errors_each_say_error(tmp_path):
    result = runner.invoke(
        app, ["compare", "--set", "train.epochs=0", "--set", "train.lr=-1", "--runs-dir", str(tmp_path / "r")]
    )
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 2 and all(line.startswith("lnbench: error: ") for line in lines)


def test_resume_after_ctrl_c_keeps_finished_cells_and_ends_as_one_run_would(tmp_path):
    """Ctrl-C in the third cell of a compare, then --resume with the folder's config: the folder
    ends completed, its rows equal an uninterrupted compare's (the oracle), the interrupted cell's
    partial runs are kept aside, and a changed key is refused naming both values."""
    from lnbench.config import load_config

    base = [*TINY_OVERRIDES, "data.seq_len=4", "seeds=[0,1]", "compare.norms=[none,layer]"]  # on 4 timesteps
    cfg = load_config("configs/compare.yaml", base)
    whole = experiments.compare(cfg, runs_dir=tmp_path / "whole", jobs=1)
    seen = []

    def stop_in_the_third_cell(label, epoch, epochs, acc=None):
        seen.append(label)
        if len({s.rsplit("_seed", 1)[0] for s in seen}) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        experiments.compare(cfg, runs_dir=tmp_path / "cut", on_epoch=stop_in_the_third_cell, jobs=1)
    (cut,) = list((tmp_path / "cut").iterdir())
    assert json.loads((cut / "run.json").read_text())["status"] == "interrupted"
    result = runner.invoke(app, ["compare", str(cut / "config.yaml"), "--resume", str(cut), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((cut / "run.json").read_text())
    assert manifest["status"] == "completed" and manifest["resumed"][0]["status"] == "interrupted"
    assert manifest["resumed"][0]["cells_kept"] >= 1
    keys = ("family", "norm", "seed", "status", "final_test_acc", "final_train_loss", "mean_train_loss")
    resumed_rows = [{k: r[k] for k in keys} for r in json.loads((cut / "summary.json").read_text())["rows"]]
    assert resumed_rows == [{k: getattr(r, k) for k in keys} for r in whole.rows]
    assert list(cut.glob("*.attempt1"))  # the interrupted cell's partial runs, kept aside
    changed = runner.invoke(app, ["compare", str(cut / "config.yaml"), "--resume", str(cut), "--set", "train.epochs=3"])
    assert changed.exit_code == 2 and "train.epochs: 2 in the folder, 3 now" in changed.output


def test_resuming_a_finished_experiment_says_so_and_writes_nothing(tmp_path):
    """A resume of a folder whose every cell finished has nothing to run (the pool gets zero jobs):
    it says so in one line and writes nothing (every file the same bytes and mtime; run.json keeps
    its wall time and command line, and no "resumed" entry)."""
    result = runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path),
            "--set",
            "seeds=[0,1]",
            "--set",
            "compare.norms=[none]",
            "--set",
            "train.epochs=1",
            "--jobs",
            "2",
            *TINY,
        ],
    )
    assert result.exit_code == 0
    run = _only_run(tmp_path)
    before = fingerprint(run)
    again = runner.invoke(app, ["compare", str(run / "config.yaml"), "--resume", str(run), "--jobs", "2"])
    assert again.exit_code == 0, again.output
    # three cells: the RNN's, the LSTM's and the Transformer's seeds, each one ensemble (batch size 16)
    assert again.output.strip().splitlines() == [
        f"Nothing to do: {run} is completed (3 cells, every run finished); lnbench show {run} prints its results"
    ]
    assert fingerprint(run) == before  # every file byte for byte, none rewritten
    assert "resumed" not in json.loads((run / "run.json").read_text())


def test_resume_reruns_a_cell_whose_runs_were_made_under_another_config(tmp_path):
    """A child whose config_hash does not match the resolved child config is not kept."""
    result = runner.invoke(
        app,
        [
            "compare",
            "--runs-dir",
            str(tmp_path),
            "--set",
            "seeds=[0,1]",
            "--set",
            "compare.norms=[none,layer]",
            "--set",
            "compare.families=[rnn]",
            "--set",
            "train.epochs=1",
            "--jobs",
            "1",
            *TINY,
        ],
    )
    assert result.exit_code == 0
    run = _only_run(tmp_path)
    manifest_path = run / "rnn_layer_seed1" / "run.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["config_hash"] = "0" * 16
    manifest_path.write_text(json.dumps(manifest))
    again = runner.invoke(app, ["compare", str(run / "config.yaml"), "--resume", str(run), "--jobs", "1"])
    assert again.exit_code == 0, again.output
    assert json.loads((run / "run.json").read_text())["resumed"][0]["cells_kept"] == 1  # rnn_none kept, rnn_layer rerun
    assert (run / "rnn_layer_seed1.attempt1").exists() and (run / "rnn_layer_seed0.attempt1").exists()
    assert json.loads((run / "rnn_layer_seed1" / "run.json").read_text())["config_hash"] != "0" * 16


def test_resume_with_the_folder_alone_takes_its_config_and_says_what_it_keeps(tmp_path):
    """``--resume DIR`` alone takes the folder's config.yaml (no config argument needed) and says
    how many cells it keeps and how many it runs."""
    args = ["compare", "--runs-dir", str(tmp_path), "--jobs", "1", *TINY, "--set", "train.epochs=1"]
    args += ["--set", "compare.families=[rnn]", "--set", "compare.norms=[none,layer]", "--set", "seeds=[0,1]"]
    assert runner.invoke(app, args).exit_code == 0
    run = _only_run(tmp_path)
    cells = {d.name.rsplit("_seed", 1)[0] for d in run.iterdir() if d.is_dir()}  # an RNN cell: both seeds
    child = sorted(run.glob("*layer_seed0"))[0] / "run.json"
    child.write_text(json.dumps({**json.loads(child.read_text()), "status": "interrupted"}))
    again = runner.invoke(app, ["compare", "--resume", str(run), "--jobs", "1"])
    assert again.exit_code == 0, again.output
    assert f"Resuming {run}: {plural(len(cells) - 1, 'cell')} kept, 1 to run" in again.output
    assert json.loads((run / "run.json").read_text())["resumed"][0]["cells_kept"] == len(cells) - 1
    missing = runner.invoke(app, ["compare", "--resume", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "not an experiment folder (no config.yaml)" in missing.output


def test_a_plain_claims_run_leaves_the_lstm_claims_out_and_all_or_only_runs_them(tmp_path):
    """The LSTM's claims (~17 min) stay out of the default run, like the LSTM out of the
    default compare; --all runs every claim but the ablation's (run only by --only its regime), --only a
    named one, and the two together are refused."""
    from lnbench.analysis.claim_catalogue import CLAIMS
    from lnbench.experiments.claims import ONLY_REGIMES, claims_spec

    presets = Path("configs/claims")
    only = {c.id: c.regime for c in CLAIMS if c.regime in ONLY_REGIMES}  # the recipe's ablation, 22 claims a regime
    assert len(only) == 44
    lstm = [c.id for c in CLAIMS if c.family == "lstm" and c.id not in only]
    assert len(lstm) == 11
    sgd = [c.id for c in CLAIMS if c.regime in ("rnn_sgd", "transformer_sgd", "lstm_sgd")]  # opt-in too
    assert sgd == ["rnn_faster_sgd", "tf_faster_sgd", "lstm_faster_sgd"]
    figure6 = [c.id for c in CLAIMS if c.regime == "figure6"]  # ~10 min of MNIST: opt-in too
    assert len(figure6) == 4
    lstm_sgd = lstm + sgd + figure6
    plain = [c.id for c in claims_spec(None, presets).selected]
    assert plain == [c.id for c in CLAIMS if c.id not in [*lstm_sgd, *only]] and len(plain) == len(CLAIMS) - 17 - 44
    assert [c.id for c in claims_spec(None, presets, everything=True).selected] == [
        c.id for c in CLAIMS if c.id not in only
    ]
    assert [c.id for c in claims_spec(["lstm_faster"], presets).selected] == ["lstm_faster"]
    assert (
        "lstm" not in claims_spec(None, presets).regimes and "lstm" in claims_spec([], presets, everything=True).regimes
    )

    result = runner.invoke(app, ["claims", "--all", "--only", "lstm_faster", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--all and --only" in result.output
    assert not any(tmp_path.iterdir())
    from lnbench.cli.bodies import claims_list_table

    table = claims_list_table(list(CLAIMS))
    run_column = dict(zip(table.columns[0]._cells, table.columns[-1]._cells))
    assert run_column == {
        c.id: f"--only {only[c.id]}" if c.id in only else "--all" if c.id in lstm_sgd else "default" for c in CLAIMS
    }


def test_num_seeds_trains_that_many_seeds_from_seed(tmp_path):
    """`claims --seed 5 --num-seeds 10` (the confirmatory run an inconclusive verdict suggests, on
    fresh seeds) failed: --seed then replaced the seeds list with [5]."""

    def seeds(*args: str) -> list[int]:
        result = runner.invoke(
            app, ["claims", "--only", "rnn_faster_default", *args, "--dry-run", "--runs-dir", str(tmp_path)]
        )
        assert result.exit_code == 0, result.output
        return sorted({int(m) for m in re.findall(r"default_rnn_none_bs64_seed(\d+)", result.output)})

    assert seeds("--seed", "5", "--num-seeds", "10") == list(range(5, 15))
    assert seeds("--num-seeds", "3") == [0, 1, 2]
    assert seeds("--seed", "7") == [7, 8, 9, 10, 11]  # the preset's 5 seeds from --seed
    # --num-seeds with --set seeds is refused (not one of them dropped), and a range past the largest
    # seed names the last seed: each one line
    for args, message in [
        (["--num-seeds", "3", "--set", "seeds=[7,9]"], "--num-seeds and --set seeds/seed: give one"),
        (["--num-seeds", "5", "--seed", "4294967295"], "the last seed, 4294967299, exceeds 4294967295"),
    ]:
        result = runner.invoke(app, ["claims", *args, "--dry-run", "--runs-dir", str(tmp_path)])
        (line,) = result.output.strip().splitlines()
        assert result.exit_code == 2 and line.startswith("lnbench: error: ") and message in line
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["sweep", "batchsize-sweep"])
def test_resuming_a_folder_of_another_kind_names_the_kind(tmp_path, command):
    """``sweep --resume <compare folder>`` (or batchsize-sweep's) is one line naming the folder's
    kind and the command that resumes it, exit code 2."""
    folder = tmp_path / "20260101T000000_000000Z_compare"
    folder.mkdir()
    (folder / "config.yaml").write_text(Path("configs/compare.yaml").read_text())
    (folder / "run.json").write_text(json.dumps({"kind": "compare", "status": "interrupted"}))
    result = runner.invoke(app, [command, "--resume", str(folder)])
    assert result.exit_code == 2 and result.output.strip().splitlines() == [
        f"lnbench: error: --resume {folder}: a 'compare' folder, not '{command}'; resume it with lnbench compare"
    ]


def test_claims_only_figure6_with_a_task_is_one_line_and_no_folder(tmp_path):
    """``lnbench claims --only figure6 --tasks trend`` (a task the regime does not run on: it holds
    flat MNIST itself) is one line naming the regime and its task, exit 2, and no run folder."""
    args = ["claims", "--only", "figure6", "--tasks", "trend", "--dry-run", "--runs-dir", str(tmp_path / "r")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "--tasks trend: the figure6 regime (--only) runs on its own data only, the mnist task as" in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("command", [["compare"], ["train", "configs/train.yaml"], ["sweep"], ["claims"]])
def test_a_key_set_twice_on_the_command_line_is_one_line_naming_it(tmp_path, command):
    """``--set K=a --set K=b`` (spaces around the key too) is refused, exit 2, one line naming the key and
    both items, no folder: the last would win unseen. load_config itself layers overrides in order
    (the last wins), as a program that builds its overrides in layers needs."""
    args = [
        *command,
        "--set",
        "train.epochs=3",
        "-s",
        " train.epochs =4",
        "--dry-run",
        "--runs-dir",
        str(tmp_path / "r"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "lnbench: error: --set train.epochs: given twice (train.epochs=3 and train.epochs =4); give it once"
    ]
    assert not (tmp_path / "r").exists()
    assert load_config(None, ["train.epochs=3", "train.epochs=4"]).train.epochs == 4
