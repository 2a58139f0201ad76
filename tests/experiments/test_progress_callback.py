"""The notebook's progress callback: ``on_epoch(label, epoch, epochs, acc)`` as documented in
lnbench.experiments, and ``status`` only for a callback that takes it."""

from conftest import TINY_OVERRIDES

from lnbench import experiments
from lnbench.config import load_config
from lnbench.experiments import cells
from lnbench.experiments.base import epoch_callback


def test_a_callback_of_the_documented_signature_gets_four_arguments_and_no_status():
    """The documented ``(label, epoch, epochs, acc)``: a kept or failed run, and one without an
    accuracy, reach it as four positional arguments (acc None when there is none); a callback
    that takes ``status`` (by name or ``**kwargs``) gets it as well. Oracle: the calls recorded."""
    seen: list[tuple] = []

    def documented(label, epoch, epochs, acc):
        seen.append((label, epoch, epochs, acc))

    def with_status(label, epoch, epochs, acc=None, status=None):
        seen.append((label, epoch, epochs, acc, status))

    def with_kwargs(label, epoch, epochs, acc=None, **kwargs):
        seen.append((label, epoch, epochs, acc, kwargs))

    for callback in (documented, with_status, with_kwargs):
        report = epoch_callback(callback)
        report("a", 3, 3, 0.5, status="kept")
        report("b", 3, 3, status="failed")
        report("c", 3, 3)
    assert seen == [
        ("a", 3, 3, 0.5),
        ("b", 3, 3, None),
        ("c", 3, 3, None),
        ("a", 3, 3, 0.5, "kept"),
        ("b", 3, 3, None, "failed"),
        ("c", 3, 3, None, None),
        ("a", 3, 3, 0.5, {"status": "kept"}),
        ("b", 3, 3, None, {"status": "failed"}),
        ("c", 3, 3, None, {}),
    ]
    assert epoch_callback(None) is None


def test_a_failed_cell_reaches_a_documented_callback_without_a_type_error(tmp_path, monkeypatch):
    """A compare whose only cell raises: the experiment ends ``failed`` (not with a TypeError from
    the callback) and the documented ``on_epoch(label, epoch, epochs, acc)`` is told that run's
    epochs are accounted for, with no accuracy. Oracle: the one recorded call, (label, 2, 2, None)."""

    def broken(cell, progress):
        raise RuntimeError("no cell today")

    monkeypatch.setattr(cells, "run_cell_job", broken)
    calls: list[tuple] = []

    def on_epoch(label, epoch, epochs, acc):
        calls.append((label, epoch, epochs, acc))

    cfg = load_config(None, [*TINY_OVERRIDES, "compare.families=[rnn]", "compare.norms=[none]", "seeds=[0]"])
    result = experiments.compare(cfg, runs_dir=tmp_path, on_epoch=on_epoch)
    assert result.status == "failed"
    assert [c[1:] for c in calls] == [(2, 2, None)]
