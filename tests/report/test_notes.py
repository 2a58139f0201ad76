"""What happened to the runs beyond their numbers (lnbench.report.notes): every note names its run,
an explanation several runs share is written once, and report.html holds the same lines as the
console (the oracle: notes and rows written by hand)."""

from __future__ import annotations

import json

from lnbench.records.schema import NOTE_WHY, SummaryRow
from lnbench.report.notes import notes, run_notes, split_note

WHY = "without train.grad_clip (which bounds it), SGD takes such a step in full (lr times the gradient)"


def _row(tmp_path, name: str, status: str = "completed", warnings=(), epoch=None, reason=None) -> SummaryRow:
    (tmp_path / name).mkdir()
    (tmp_path / name / "run.json").write_text(json.dumps({"name": name, "status": status}))
    return SummaryRow(
        family="rnn", norm="layer", batch_size=16, seed=0, status=status, epochs_completed=0,
        final_test_acc=None, final_test_acc_batch_stats=None, final_train_loss=None, final_test_loss=None,
        mean_train_loss=None, first_epoch_at_target=None, n_test=16, run_dir=name, warnings=list(warnings),
        diverged_at_epoch=epoch, divergence_reason=reason,
    )  # fmt: skip


def _fact(tensor: str, norm: float) -> str:
    return f"the gradient of {tensor} reached an L2 norm of {norm:.3g} in epoch 1, step 3 (above 1e+06)"


def test_a_note_splits_into_its_fact_and_its_explanation():
    assert split_note(_fact("cell.bias", 3.2e7) + NOTE_WHY + WHY) == (_fact("cell.bias", 3.2e7), WHY)
    assert split_note("no explanation here") == ("no explanation here", "")


def test_notes_name_their_run_and_a_shared_explanation_is_written_once(tmp_path):
    rows = [
        _row(tmp_path, f"rnn_layer_seed{s}", warnings=[_fact("cell.bias", 10.0**7 * (s + 1)) + NOTE_WHY + WHY])
        for s in range(3)
    ]
    rows.append(_row(tmp_path, "rnn_none_seed0"))
    assert notes(tmp_path, rows) == [
        f"note: rnn_layer_seed0: {_fact('cell.bias', 1e7)}",
        f"note: rnn_layer_seed1: {_fact('cell.bias', 2e7)}",
        f"note: rnn_layer_seed2: {_fact('cell.bias', 3e7)}",
        f"  (3 notes above) {WHY}",
    ]
    (one,) = notes(tmp_path, rows[:1])
    assert one == f"note: rnn_layer_seed0: {_fact('cell.bias', 1e7)}{NOTE_WHY}{WHY}"


def test_report_html_lists_each_runs_note_and_divergence(tmp_path):
    from lnbench.report.html import write_report

    exp = tmp_path / "exp"
    exp.mkdir()
    rows = [
        _row(exp, "rnn_layer_seed0", warnings=[_fact("cell.bias", 1e7) + NOTE_WHY + WHY]),
        _row(exp, "rnn_none_seed0", "diverged", epoch=2, reason="the loss of a mini-batch became nan"),
    ]
    (exp / "run.json").write_text(json.dumps({"name": "exp", "kind": "compare", "status": "completed"}))
    (exp / "summary.json").write_text(json.dumps({"complete": True, "rows": [r.to_dict() for r in rows]}))
    page = write_report([exp]).read_text()
    expected = run_notes(exp, rows)
    assert expected[-1] == "rnn_none_seed0 diverged at epoch 2: the loss of a mini-batch became nan"
    assert "<h3>Notes</h3>" in page
    for line in expected:
        assert f"<li>{line}</li>" in page
