"""lnbench.records.schema: metrics of every schema version read and turned into the same summary
rows, and each summary-row number by hand (the atomic JSON: test_io.py; mark_unfinished:
test_runs.py)."""

import dataclasses
import json

import pytest

from lnbench.records.schema import (
    SCHEMA_VERSION,
    Metrics,
    SchemaError,
    SummaryRow,
    first_epoch_at,
    read_metrics,
    summary_row,
)

# ---------------------------------------------------------------- metrics of every schema version

V1 = {  # lnbench before per-example results: no schema_version, no test_correct, no probes
    "family": "rnn",
    "norm": "batch",
    "batch_size": 16,
    "seed": 2,
    "hidden_size": 8,
    "n_test": 4,
    "status": "completed",
    "epochs": [1, 2, 3],
    "train_loss": [0.9, 0.6, 0.3],
    "test_loss": [0.8, 0.7, 0.5],
    "test_acc": [0.5, 0.75, 1.0],
    "test_acc_batch_stats": [0.25, 0.5, 0.75],
    "hidden_norm_init": [1.0, 2.0],
    "hidden_norm": [[1.0, 2.0]] * 3,
    "grad_norm": {"head.weight": [0.1, 0.2, 0.3]},
    "epoch_seconds": [0.1, 0.1, 0.1],
    "diverged_at_epoch": None,
}
V2 = {
    **V1,
    "schema_version": 2,
    "test_correct": [1, 1, 1, 1],
    "test_correct_batch_stats": [1, 0, 1, 1],
    "divergence_reason": None,
    "batch_norm_stats": "pooled",
}


@pytest.mark.parametrize("body", [V1, V2, {**V2, "schema_version": SCHEMA_VERSION, "scale_spearman": [0.1, 0.2, 0.3]}])
def test_metrics_of_every_schema_version_are_read_and_summarized(tmp_path, body):
    (tmp_path / "metrics.json").write_text(json.dumps({**body, "a_field_from_the_future": 1}))
    m = read_metrics(tmp_path)  # a run folder, or the file itself
    assert m == read_metrics(tmp_path / "metrics.json")
    assert (m.norm, m.batch_size, m.seed, m.epochs, m.test_acc) == ("batch", 16, 2, [1, 2, 3], [0.5, 0.75, 1.0])
    r = summary_row(m, target_acc=0.75, run_dir="batch_seed2", wall_seconds=1.5)
    assert (r.final_test_acc, r.final_test_acc_batch_stats, r.final_train_loss, r.final_test_loss) == (
        1.0,
        0.75,
        0.3,
        0.5,
    )
    assert r.mean_train_loss == pytest.approx(0.6) and r.first_epoch_at_target == 2 and r.ok
    assert (r.epochs_completed, r.n_test, r.run_dir, r.wall_seconds) == (3, 4, "batch_seed2", 1.5)
    if "schema_version" in body:
        assert r.test_correct == [1, 1, 1, 1] and r.test_correct_batch_stats == [1, 0, 1, 1]
        assert r.batch_norm_stats == "pooled"
    else:  # version 1: no per-example results, so no one-seed McNemar, but every mean and test over seeds
        assert r.test_correct is None and r.batch_norm_stats is None and m.schema_version == 1
    probe = r.final_scale_spearman
    assert probe == (0.3 if "scale_spearman" in body else None)


@pytest.mark.parametrize(
    "text,message",
    [
        (json.dumps({**V2, "schema_version": SCHEMA_VERSION + 1}), f"schema_version {SCHEMA_VERSION + 1} is newer"),
        (json.dumps({**V2, "schema_version": "2"}), "schema_version '2' is newer than this lnbench reads"),
        (json.dumps([1, 2]), "expected a JSON object"),
        ("{half", "cannot read metrics"),
    ],
)
def test_metrics_this_version_cannot_read_are_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "metrics.json"
    path.write_text(text)
    with pytest.raises(SchemaError) as err:
        read_metrics(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(SchemaError, match="cannot read metrics"):
        read_metrics(tmp_path / "missing")


def test_a_metrics_body_round_trips_through_to_dict():
    m = Metrics(norm="rms", epochs=[1], test_acc=[0.5], test_correct=[1, 0])
    assert Metrics.from_dict(m.to_dict()) == m and m.to_dict()["schema_version"] == SCHEMA_VERSION
    with pytest.raises(SchemaError, match="^x.json: expected a JSON object$"):
        Metrics.from_dict("nope", "x.json")


# ---------------------------------------------------------------- summary rows by hand


def test_first_epoch_at_is_one_based_and_counts_an_exact_hit():
    assert first_epoch_at([0.5, 0.9, 0.95], 0.9) == 2 and first_epoch_at([0.95], 0.9) == 1
    assert first_epoch_at([None, 0.89999], 0.9) is None and first_epoch_at([], 0.9) is None
    assert first_epoch_at([0.95, 0.5], 0.9) == 1  # reaching it counts even if it drops later


def test_the_mean_train_loss_is_over_finite_epochs_and_a_diverged_run_has_no_final_values():
    m = Metrics(
        status="diverged",
        epochs=[1, 2, 3],
        train_loss=[0.9, 0.5, float("nan")],
        test_loss=[0.8, 0.6, 0.7],
        test_acc=[0.5, 0.92, 0.6],
        test_acc_batch_stats=[0.1, 0.2, 0.3],
        test_correct=[1, 0],
        test_correct_batch_stats=[0, 0],
        scale_spearman=[0.3, 0.2, 0.1],
        saturation=[0.01, 0.02, 0.03],
        grad_ratio=[1.0, 2.0, 3.0],
        n_test=2,
    )
    r = summary_row(m, 0.9, warnings=["w"])
    assert (r.final_test_acc, r.final_test_acc_batch_stats, r.final_train_loss, r.final_test_loss) == (None,) * 4
    assert (r.final_scale_spearman, r.final_saturation, r.final_grad_ratio) == (None, None, None)
    assert r.mean_train_loss is None and r.test_correct is None and r.test_correct_batch_stats is None
    assert r.first_epoch_at_target == 2 and r.epochs_completed == 3 and not r.ok  # its earlier epochs count
    assert r.warnings == ["w"] and r.status == "diverged"
    m.status = "completed"
    r = summary_row(m, 0.9)
    assert r.mean_train_loss == pytest.approx(0.7)  # (0.9 + 0.5) / 2: the NaN epoch left out
    assert (r.final_scale_spearman, r.final_saturation, r.final_grad_ratio) == (0.1, 0.03, 3.0)
    assert r.test_correct == [1, 0] and r.test_correct_batch_stats == [0, 0] and r.warnings == [] and r.ok
    m.train_loss = [float("inf"), None]
    assert summary_row(m, 0.9).mean_train_loss is None  # no finite epoch: no area under the curve
    m.test_acc = []
    assert summary_row(m, 0.9).final_test_acc is None and not summary_row(m, 0.9).ok


def test_a_summary_row_writes_everything_but_the_per_example_results():
    r = summary_row(Metrics(epochs=[1], test_acc=[0.5], train_loss=[0.7], test_loss=[0.6], test_correct=[1, 0]), 0.9)
    out = r.to_dict()
    assert "test_correct" not in out and "test_correct_batch_stats" not in out
    assert out["final_test_acc"] == 0.5 and r.test_correct == [1, 0]
    assert set(out) == {f for f in SummaryRow.__dataclass_fields__} - {"test_correct", "test_correct_batch_stats"}


def test_a_summary_row_dict_is_dataclasses_asdict_without_the_per_example_results():
    """Oracle: ``dataclasses.asdict`` minus the two per-example lists; the lists it holds are
    copies, so changing the dict leaves the row alone."""
    m = Metrics(epochs=[1], test_acc=[0.5], train_loss=[0.7], test_loss=[0.6], test_correct=[1, 0])
    r = summary_row(m, 0.9)
    r.warnings, r.test_correct_batch_stats = ["w"], [0, 1]
    expected = dataclasses.asdict(r)
    del expected["test_correct"], expected["test_correct_batch_stats"]
    out = r.to_dict()
    assert out == expected and list(out) == list(expected)
    out["warnings"].append("x")
    assert r.warnings == ["w"]


def test_every_field_of_a_summary_row_and_the_defaults():
    m = Metrics(
        family="transformer",
        norm="rms",
        batch_size=8,
        seed=5,
        hidden_size=16,
        n_test=2,
        task="digits",
        num_classes=10,
        batch_norm_stats="per_timestep",
        norm_placement="separate",
        norm_gain_init=0.5,
        initial_gain=0.5,
        status="completed",
        epochs=[1, 2],
        train_loss=[0.75, 0.25],
        test_loss=[0.625, 0.375],
        test_acc=[0.5, 1.0],
        test_acc_batch_stats=[0.25, 0.75],
        test_correct=[1, 1],
        test_correct_batch_stats=[0, 1],
        scale_spearman=[0.5, 0.125],
        saturation=[0.0625, 0.03125],
        grad_ratio=[2.0, 4.0],
    )
    r = summary_row(m, 0.9, run_dir="rms_seed5", wall_seconds=3.5, warnings=["w"], trained_together=True)
    assert r.to_dict() == {
        "family": "transformer",
        "norm": "rms",
        "batch_size": 8,
        "seed": 5,
        "status": "completed",
        "epochs_completed": 2,
        "final_test_acc": 1.0,
        "final_test_acc_batch_stats": 0.75,
        "final_train_loss": 0.25,
        "final_test_loss": 0.375,
        "mean_train_loss": 0.5,
        "first_epoch_at_target": 2,
        "n_test": 2,
        "batch_norm_stats": "per_timestep",
        "norm_placement": "separate",
        "norm_gain_init": 0.5,
        "initial_gain": 0.5,
        "task": "digits",
        "num_classes": 10,
        "n_val": 0,
        "final_val_acc": None,
        "final_val_loss": None,
        "selected_on": "test",
        "final_scale_spearman": 0.125,
        "final_saturation": 0.03125,
        "final_grad_ratio": 4.0,
        "wall_seconds": 3.5,
        "trained_together": True,
        "warnings": ["w"],
        "run_dir": "rms_seed5",
        "diverged_at_epoch": None,
        "divergence_reason": None,
    }
    assert (r.test_correct, r.test_correct_batch_stats) == ([1, 1], [0, 1])
    # a diverged run keeps its epoch and cause (and a completed run's stale ones are not copied)
    m.status, m.diverged_at_epoch, m.divergence_reason = "diverged", 3, "the loss is nan"
    assert (summary_row(m, 0.9).diverged_at_epoch, summary_row(m, 0.9).divergence_reason) == (3, "the loss is nan")
    plain = summary_row(Metrics(), 0.9)  # nothing trained yet, nothing given
    assert (plain.run_dir, plain.wall_seconds, plain.warnings, plain.epochs_completed) == ("", None, [], 0)
    assert plain.trained_together is None
    assert (plain.final_test_acc, plain.mean_train_loss, plain.first_epoch_at_target) == (None, None, None)


def test_a_body_read_without_a_file_name_is_called_metrics_json():
    with pytest.raises(SchemaError) as err:
        Metrics.from_dict([1])
    assert str(err.value) == "metrics.json: expected a JSON object"
    with pytest.raises(SchemaError) as err:
        Metrics.from_dict({"schema_version": SCHEMA_VERSION + 1})
    assert (
        str(err.value)
        == f"metrics.json: schema_version {SCHEMA_VERSION + 1} is newer than this lnbench reads ({SCHEMA_VERSION})"
    )
    assert Metrics.from_dict({"schema_version": SCHEMA_VERSION, "norm": "none"}) == Metrics(norm="none")
