"""lnbench.records.io: atomic JSON that an interruption cannot cut in half, and a failed write named in
one line."""

import errno
import json
import os
import threading

import pytest

from lnbench.records import io as records_io
from lnbench.records.io import WriteError, write_json_atomic


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


def test_write_json_atomic_replaces_and_writes_nan_as_null(tmp_path):
    f = tmp_path / "m.json"
    write_json_atomic(f, {"a": 1})
    write_json_atomic(f, {"a": [1.5, float("nan"), float("inf")]})
    assert json.loads(f.read_text()) == {"a": [1.5, None, None]}
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]  # no temporary file left
