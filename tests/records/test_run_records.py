"""The records a run leaves: atomic JSON that an interruption cannot cut in half,
``mark_unfinished`` that never touches a finished run, metrics of every schema version read and
turned into the same summary rows, and each summary-row number by hand."""

import errno
import json
import os
import threading

import pytest

from lnbench.records import io as records_io
from lnbench.records.io import WriteError, write_json_atomic
from lnbench.records.runs import mark_unfinished
from lnbench.records.schema import (
    SCHEMA_VERSION,
    Metrics,
    SchemaError,
    SummaryRow,
    first_epoch_at,
    read_metrics,
    summary_row,
)

# ---------------------------------------------------------------- atomic JSON


class _Interrupted:
    """A file object that takes a few bytes, then gets a Ctrl-C (KeyboardInterrupt) mid-write."""

    def __init__(self, f) -> None:
        self.f = f

    def write(self, data) -> int:
        self.f.write(bytes(data[:3]))
        raise KeyboardInterrupt

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def _interrupt_writes(monkeypatch):
    fdopen = os.fdopen
    monkeypatch.setattr(records_io.os, "fdopen", lambda fd, *a, **k: _Interrupted(fdopen(fd, *a, **k)))


def test_an_interrupted_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    write_json_atomic(path, {"status": "running", "epochs": [1, 2]})
    before = path.read_bytes()
    _interrupt_writes(monkeypatch)
    with pytest.raises(KeyboardInterrupt):  # a Ctrl-C stays a Ctrl-C, not a write error
        write_json_atomic(path, {"status": "completed", "epochs": [1, 2, 3]})
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_an_interrupted_first_write_leaves_no_file(tmp_path, monkeypatch):
    _interrupt_writes(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(tmp_path / "metrics.json", {"epochs": [1]})
    assert list(tmp_path.iterdir()) == []


def test_the_temporary_file_is_a_hidden_sibling_renamed_over_the_file(tmp_path, monkeypatch):
    """In the same folder (os.replace is atomic within one file system only), with the usual permissions."""
    replaced = []
    replace = os.replace
    monkeypatch.setattr(records_io.os, "replace", lambda src, dst: (replaced.append((src, dst)), replace(src, dst)))
    write_json_atomic(tmp_path / "summary.json", {"a": 1})
    ((src, dst),) = replaced
    src = os.fspath(src)
    assert os.path.dirname(src) == str(tmp_path) and os.path.basename(src).startswith(".summary.json.")
    assert src.endswith(".tmp") and os.fspath(dst) == str(tmp_path / "summary.json")
    plain = tmp_path / "plain"
    plain.write_text("x")  # a file made the ordinary way, under the same umask
    assert (tmp_path / "summary.json").stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_a_reader_never_sees_half_a_file(tmp_path):
    path = tmp_path / "summary.json"
    bodies = [{"k": k, "rows": list(range(k * 300))} for k in range(1, 12)]
    write_json_atomic(path, bodies[0])
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            seen.append(json.loads(path.read_text()))  # raises on half a file

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for body in bodies:
            write_json_atomic(path, body)
    finally:
        stop.set()
        reader.join()
    assert seen and all(s in bodies for s in seen)


def test_json_without_nan_and_with_numpy_values(tmp_path):
    import numpy as np

    path = tmp_path / "m.json"
    write_json_atomic(
        path,
        {
            1: np.float32(0.5),
            "b": (np.int64(3), np.bool_(True), float("-inf")),
            "c": {"d": [np.float64("nan"), 2.5, None, "x"]},
        },
    )
    assert json.loads(path.read_text()) == {"1": 0.5, "b": [3, True, None], "c": {"d": [None, 2.5, None, "x"]}}
    assert path.read_text().endswith("}\n") and '\n  "b": [\n' in path.read_text()  # indented, newline-terminated


def test_a_write_that_fails_names_the_file_and_its_folder(tmp_path):
    with pytest.raises(WriteError) as info:
        write_json_atomic(tmp_path / "gone" / "summary.json", {"a": 1})  # no such folder
    message = f"could not write summary.json in {tmp_path / 'gone'}: No such file or directory"
    assert (info.value.errno, str(info.value)) == (errno.ENOENT, message)
    assert isinstance(info.value.__cause__, FileNotFoundError)

    def fails_without_errno(f):  # and its temporary file is gone already: still this error, and no file left
        os.remove(os.readlink(f"/proc/self/fd/{f.fileno()}"))
        raise OSError("the device went away")

    with pytest.raises(WriteError) as info:
        records_io.atomic_write(tmp_path / "figure.png", fails_without_errno)
    assert (info.value.errno, info.value.strerror) == (0, "the device went away")
    assert str(info.value) == f"could not write figure.png in {tmp_path}: the device went away"
    assert list(tmp_path.iterdir()) == []


def test_text_is_written_as_utf8_and_the_path_returned(tmp_path):
    path = records_io.write_text_atomic(str(tmp_path / "report.html"), "<p>σ² ≥ 0</p>")
    assert path == tmp_path / "report.html" and path.read_bytes() == b"<p>\xcf\x83\xc2\xb2 \xe2\x89\xa5 0</p>"


# ---------------------------------------------------------------- mark_unfinished


def _run_folder(tmp_path, status, metrics_status="running", metrics=True):
    folder = tmp_path / f"run_{status}"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"status": status, "error": None, "end_time": None, "seed": 3}))
    if metrics:
        (folder / "metrics.json").write_text(json.dumps({"status": metrics_status, "epochs": [1, 2]}))
    return folder


def test_mark_unfinished_records_a_run_that_died_running(tmp_path):
    folder = _run_folder(tmp_path, "running")
    assert mark_unfinished(folder, "failed", "its worker died") is True
    manifest = json.loads((folder / "run.json").read_text())
    assert (manifest["status"], manifest["error"], manifest["seed"]) == ("failed", "its worker died", 3)
    assert manifest["end_time"] and manifest["end_time"].endswith("+00:00")
    assert json.loads((folder / "metrics.json").read_text()) == {"status": "failed", "epochs": [1, 2]}


@pytest.mark.parametrize("status", ["completed", "diverged", "failed", "interrupted"])
def test_mark_unfinished_never_touches_a_finished_run(tmp_path, status):
    folder = _run_folder(tmp_path, status, metrics_status="running")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert mark_unfinished(folder, "failed", "it did not finish") is False
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files


def test_mark_unfinished_keeps_a_metrics_status_that_is_not_running(tmp_path):
    folder = _run_folder(tmp_path, "running", metrics_status="diverged")
    metrics = (folder / "metrics.json").read_bytes()
    assert mark_unfinished(folder, "interrupted", "stopped") is True
    assert (folder / "metrics.json").read_bytes() == metrics
    assert json.loads((folder / "run.json").read_text())["status"] == "interrupted"


def test_mark_unfinished_without_metrics_or_with_unreadable_files(tmp_path):
    no_metrics = _run_folder(tmp_path, "running", metrics=False)
    assert mark_unfinished(no_metrics, "failed", "x") is True
    assert [p.name for p in no_metrics.iterdir()] == ["run.json"]
    (tmp_path / "b").mkdir()
    bad_metrics = _run_folder(tmp_path / "b", "running")
    (bad_metrics / "metrics.json").write_text("{half")
    assert mark_unfinished(bad_metrics, "failed", "x") is True and (bad_metrics / "metrics.json").read_text() == "{half"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert mark_unfinished(empty, "failed", "x") is False and list(empty.iterdir()) == []
    (empty / "run.json").write_text("not json")
    assert mark_unfinished(empty, "failed", "x") is False and (empty / "run.json").read_text() == "not json"


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
