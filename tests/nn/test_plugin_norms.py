"""A user's own norm without a fork: ``model.norm: "package.module:ClassName"`` (a subclass of
lnbench.nn.Norm), checked by lnbench.testing.check_norm as the built-in norms are."""

from __future__ import annotations

import json
import os
import re

import pytest
import torch
from conftest import REPO, TINY_OVERRIDES, runner, set_args

from lnbench.cli.app import app
from lnbench.config import load_config
from lnbench.nn.invariance import EXPECTED, measure
from lnbench.nn.registry import NORMS, norm_kind
from lnbench.testing import CHECKS, check_norm, norm_checks

SCALE = "toy_norms:ScaleNorm"  # tests/nn/toy_norms.py, on sys.path as this test's folder


BUILT_IN_LAYERS = [
    (kind, layer)
    for kind, entry in NORMS.items()
    for layer in dict.fromkeys((entry.layer, entry.recurrent_layer))
    if layer is not None
]


@pytest.mark.parametrize(("kind", "cls"), BUILT_IN_LAYERS, ids=[cls.__name__ for _, cls in BUILT_IN_LAYERS])
def test_every_built_in_layer_passes_check_norm_with_its_table_1_row(kind, cls):
    """Every layer class of the norm registry (the recurrent BatchNorm, called once per timestep,
    too) passes every check its declared capabilities call for, and measures its kind's row of
    Table 1 (oracle: Ba et al. Table 1; RMSNorm: Zhang & Sennrich; GroupNorm: derived). A norm with
    batch statistics skips exactly the two per-example checks."""
    report = check_norm(cls)
    assert report["ok"] and report["failed"] == {}
    assert tuple(report["invariance"].values()) == EXPECTED[kind]
    per_example = {c.name for c in CHECKS if "uses_batch_statistics" in c.requires}
    assert set(report["skipped"]) == (per_example if cls.uses_batch_statistics else set())
    assert len(report["passed"]) == len(CHECKS) + 1 - len(report["skipped"])  # + the Table 1 row


def test_the_registry_test_covers_every_layer_class():
    """The parametrization above is read off the registry: LayerNorm, BatchNorm1d and its recurrent
    form RecurrentBatchNorm1d, RMSNorm and GroupNorm (none and weight have no layer)."""
    names = {cls.__name__ for _, cls in BUILT_IN_LAYERS}
    assert {"LayerNorm", "BatchNorm1d", "RecurrentBatchNorm1d", "RMSNorm", "GroupNorm"} <= names


def test_a_wrong_backward_and_a_non_norm_are_refused():
    import toy_norms

    with pytest.raises(AssertionError, match="WrongBackward: gradcheck failed"):
        check_norm(toy_norms.WrongBackward)
    with pytest.raises(TypeError, match="'NotANorm' is not a subclass of lnbench.nn.Norm"):
        check_norm(toy_norms.NotANorm)


def test_members_that_see_each_other_are_refused():
    """A norm whose statistics run over the member axis too: member s is not its own model."""
    import toy_norms

    class Pooled(toy_norms.ScaleNorm):
        def forward(self, x):
            return self.gamma * x / (x.norm() + self.eps)

    with pytest.raises(AssertionError, match="member 0 is not its own model"):
        check_norm(Pooled)


def test_a_users_norm_in_a_config_is_built_by_the_registry():
    cfg = load_config(None, [f"model.norm={SCALE}"])
    kind = norm_kind(cfg.model.norm)
    assert kind.label == "ScaleNorm" and kind.normalizes_activations and not kind.has_beta
    layer = kind.build(8, cfg.model)
    torch.testing.assert_close(layer(torch.ones(2, 8)), torch.ones(2, 8), rtol=1e-5, atol=1e-5)  # sqrt(D) x / ||x||


FORWARD = "forward: the input's shape and dtype, finite, the input unchanged, no state on its class"
GRADCHECK = "gradcheck, gradgradcheck (float64)"
TABLE_1 = "its row of Ba et al.'s Table 1, measured"
ALL_BUT_CAPABILITIES = {c.name for c in CHECKS[1:]} | {TABLE_1}
CHECK_HINT = "(every check: lnbench gradcheck --norm toy_norms:{name}; to train it unchecked: --no-check)"


@pytest.mark.parametrize(
    ("norm", "message", "extra"),
    [
        ("no_such_module:Norm", "model.norm: norm 'no_such_module:Norm': cannot import no_such_module", []),
        ("toy_norms:Missing", "model.norm: norm 'toy_norms:Missing': toy_norms has no Missing", []),
        (
            "toy_norms:NotANorm",
            "model.norm: norm 'toy_norms:NotANorm': NotANorm is not a subclass of lnbench.nn.Norm",
            [],
        ),
        (
            "toy_norms:RaisingNorm",
            f"model.norm: 'toy_norms:RaisingNorm' fails the check {FORWARD!r}: RaisingNorm: raised RuntimeError: "
            f"RaisingNorm: planted failure {CHECK_HINT.format(name='RaisingNorm')}",
            [],
        ),
        (
            "toy_norms:RaisingNorm",  # unchecked, it still fails in the model before any folder
            "model.norm: 'toy_norms:RaisingNorm' fails in a rnn of hidden size 8, on a batch of shape (2, 5, 8): "
            "RuntimeError: RaisingNorm: planted failure",
            ["--no-check"],
        ),
        (
            "toy_norms:InPlaceNorm",  # unchecked, its model's backward pass fails before any folder
            "model.norm: 'toy_norms:InPlaceNorm' fails in a rnn of hidden size 8, on a batch of shape (2, 5, 8): "
            "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace",
            ["--no-check"],
        ),
        (
            "toy_norms:WrongShapeNorm",
            "model.norm: 'toy_norms:WrongShapeNorm' fails in a rnn of hidden size 8, on a batch of shape (2, 5, 8): "
            "ValueError: maps (2, 8) to (2,); a norm's output has its input's shape",
            ["--no-check"],
        ),
        ("toy_norms:BrokenInitNorm", "TypeError: full() missing 1 required positional arguments", []),
        (
            "layer2",
            "model.norm: Input should be 'none', 'batch', 'layer', 'rms', 'weight' or 'group', or a norm class",
            [],
        ),
    ],
)
def test_a_bad_plugin_is_one_line_exit_2_and_no_folder(norm, message, extra, tmp_path):
    """A user's norm that cannot be imported, is not a Norm, fails a check, or (unchecked) fails
    in its model is refused before any folder: one line naming it, exit code 2."""
    args = [
        "train",
        str(REPO / "configs/train.yaml"),
        "--runs-dir",
        str(tmp_path / "runs"),
        *set_args(TINY_OVERRIDES),
        "--set",
        f"model.norm={norm}",
        *extra,
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.e2e
def test_a_users_norm_trains_in_a_compare_against_layernorm(tmp_path):
    args = ["compare", "--runs-dir", str(tmp_path), "--jobs", "1", *set_args([*TINY_OVERRIDES, "seeds=[0,1]"])]
    args += ["--set", f'compare.norms=[none, layer, "{SCALE}"]', "--set", "compare.families=[rnn, transformer]"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    rows = [r for r in summary["rows"] if r["norm"] == SCALE]
    assert len(rows) == 6 and all(r["status"] == "completed" for r in rows)  # RNN x 2 placements + Transformer, 2 seeds
    assert "ScaleNorm" in (folder / "report.html").read_text()
    assert json.loads((folder / "run.json").read_text())["norm_check"] == {SCALE: "passed"}  # checked before training
    checked = [json.loads(p.read_text()).get("norm_check") for p in folder.glob("*/run.json")]
    assert sorted(map(str, checked)) == ["None"] * 12 + ["passed"] * 6  # its runs only


def _flat(text: str) -> str:
    """The output's words on one line, without the colour codes a terminal gets."""
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())


def test_gradcheck_and_invariance_take_a_users_norm(tmp_path, monkeypatch):
    """``gradcheck --norm`` adds the norm's checks to the report (a wrong backward fails, exit 1;
    ScaleNorm passes, exit 0); ``invariance --norm`` adds its measured row (oracle: x / ||x|| is
    invariant to re-scaling the weights, not to re-centering the data). Read from the JSON reports
    and from a console of fixed width, whatever the terminal."""
    from lnbench.cli.console import console

    monkeypatch.setattr(console, "width", 250)  # the table's labels and the last line stay whole
    bad = runner.invoke(app, ["gradcheck", "--norm", "toy_norms:WrongBackward", "--json", str(tmp_path / "bad.json")])
    assert bad.exit_code == 1, bad.output
    rows = {c["name"]: c for c in json.loads((tmp_path / "bad.json").read_text())["checks"]}
    assert rows["WrongBackward: gradcheck, gradgradcheck (float64)"]["detail"].startswith(
        "WrongBackward: gradcheck failed"
    )
    good = runner.invoke(app, ["gradcheck", "--norm", SCALE, "--json", str(tmp_path / "good.json")])
    assert good.exit_code == 0, good.output
    rows = {c["name"]: c for c in json.loads((tmp_path / "good.json").read_text())["checks"]}
    assert rows["ScaleNorm: members=3: each member its own model"]["passed"]
    table = runner.invoke(app, ["invariance", "--norm", SCALE, "--draws", "2", "--runs-dir", str(tmp_path)])
    assert table.exit_code == 0, table.output
    flat = _flat(table.output)
    assert "ScaleNorm (yours" in flat and "1 norm of yours measured, not checked" in flat
    report = json.loads(next(tmp_path.glob("*_invariance/invariance.json")).read_text())
    row = {c["transformation"]: c["measured"] for c in report["cells"] if c["method"] == SCALE}
    assert row["weight_matrix_rescaling"] == "I" and row["dataset_recentering"] == "N"  # x / ||x||
    missing = runner.invoke(app, ["invariance", "--norm", "nosuch:X", "--runs-dir", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "cannot import nosuch" in missing.output and not (tmp_path / "none").exists()


def test_gradcheck_keeps_every_result_when_a_users_norm_raises(tmp_path):
    """``gradcheck --norm`` on a norm that divides its input in place (autograd raises in gradcheck):
    exit 1, no traceback, and the report holds the LayerNorm checks, all passed, and every one of
    the norm's checks, the two it fails naming the error on one line."""
    result = runner.invoke(app, ["gradcheck", "--norm", "toy_norms:InPlaceNorm", "--json", str(tmp_path / "g.json")])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    checks = json.loads((tmp_path / "g.json").read_text())["checks"]
    ours = [c for c in checks if c["group"] != "user norm"]
    assert len(ours) == 25 and all(c["passed"] for c in ours)
    users = {c["name"]: c for c in checks if c["group"] == "user norm"}
    assert list(users) == [f"InPlaceNorm: {c.name}" for c in CHECKS]
    failed = {name: c["detail"] for name, c in users.items() if not c["passed"]}
    assert failed == {
        f"InPlaceNorm: {FORWARD}": "InPlaceNorm: changes its input in place (the caller's tensor, which autograd may need)",
        f"InPlaceNorm: {GRADCHECK}": "InPlaceNorm: raised RuntimeError: a leaf Variable that requires grad is being "
        "used in an in-place operation.",
    }


@pytest.mark.parametrize(
    ("norm", "why"),
    [
        ("NaNNorm", "NaNNorm: 2048 of 2048 outputs are NaN or inf"),
        ("WrongShapeNorm", "WrongShapeNorm: maps (64, 32) to (64,); a norm's output has its input's shape"),
        ("RaisingNorm", "RaisingNorm: raised RuntimeError: RaisingNorm: planted failure"),
        ("BrokenInitNorm", "BrokenInitNorm: raised TypeError: full() missing"),
    ],
)
def test_invariance_does_not_measure_a_norm_that_cannot_be_measured(norm, why, tmp_path):
    """``invariance --norm`` on a norm whose output is NaN or not its input's shape, or that raises:
    the built-in rows are measured and agree, the norm's row is not measured, one line says why,
    exit 1, no traceback."""
    path = tmp_path / "inv.json"
    result = runner.invoke(app, ["invariance", "--norm", f"toy_norms:{norm}", "--draws", "1", "--json", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert f"--norm toy_norms:{norm}: not measured: {why}" in _flat(result.output)
    cells = json.loads(path.read_text())["cells"]
    assert len(cells) == 30 and all(c["agrees"] for c in cells)  # the five built-in rows only


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("from lnbench.nn import Norm\nclass Bad(Norm)\n    pass\n", "SyntaxError: expected ':'"),
        ("raise RuntimeError('at import')\n", "RuntimeError: at import"),
    ],
    ids=["syntax-error", "raises-on-import"],
)
def test_a_norm_module_that_fails_to_import_is_one_line_exit_2(source, error, tmp_path, monkeypatch):
    """A user's norm module with a SyntaxError, or one that raises on import, is one line naming the
    module and the error, exit 2, no traceback and no folder, in train, compare --dry-run (a
    Transformer cell small enough to ask the class for its member axis) and gradcheck --norm."""
    module = f"broken_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    runs = tmp_path / "runs"
    spec = f"{module}:Bad"
    commands = [
        ["train", str(REPO / "configs/train.yaml"), *set_args(TINY_OVERRIDES), "--set", f"model.norm={spec}"],
        ["compare", "--dry-run", *set_args(TINY_OVERRIDES), "--set", f'compare.norms=[layer, "{spec}"]']
        + ["--set", "compare.families=[transformer]"],
        ["gradcheck", "--norm", spec],
    ]
    for args in commands:
        result = runner.invoke(app, [*args, "--runs-dir", str(runs)])
        assert result.exit_code == 2 and "Traceback" not in result.output, (args[0], result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and f"norm '{spec}': cannot import {module} ({error}" in lines[0], (args[0], lines)
        assert not runs.exists()


@pytest.mark.e2e
def test_a_cell_that_fails_says_failed_in_its_progress_line_not_finished(tmp_path):
    """A cell whose runs fail is reported "failed" in the progress log, never "finished", and the
    other cells still finish."""
    args = ["compare", "--runs-dir", str(tmp_path), "--jobs", "1", *set_args([*TINY_OVERRIDES, "seeds=[0]"])]
    args += [
        "--set",
        'compare.norms=[none, "toy_norms:RaisesWhenTrainedNorm"]',
        "--set",
        "compare.families=[transformer]",
        "--no-check",  # checked, it is refused before training: its gradients cannot be computed
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    lines = [ln for ln in result.output.splitlines() if ln.startswith("[")]
    assert any("RaisesWhenTrainedNorm" in ln and " failed;" in ln for ln in lines), lines
    assert not any("RaisesWhenTrainedNorm" in ln and " finished" in ln for ln in lines), lines
    assert any("none" in ln.lower() and " finished, test acc" in ln for ln in lines), lines


def test_a_norm_that_hides_its_batch_statistics_is_refused():
    """A norm over the batch axis that declares uses_batch_statistics = False fails the
    per-example check (it would be trusted at batch size 1); declaring it passes."""
    import toy_norms

    with pytest.raises(AssertionError, match="SecretBatchNorm: declares uses_batch_statistics = False, but an example"):
        check_norm(toy_norms.SecretBatchNorm)
    honest = type("HonestBatchNorm", (toy_norms.SecretBatchNorm,), {"uses_batch_statistics": True})
    assert check_norm(honest)["capabilities"]["uses_batch_statistics"] is True
    checks = {c.name: c for c in norm_checks(toy_norms.SecretBatchNorm)}
    failed = checks["SecretBatchNorm: each example its own output (alone, in another batch)"]
    assert not failed.passed and "its statistics reach across examples" in failed.detail


def test_a_norm_that_reads_its_batchs_first_example_is_refused():
    """Each example divided by the RMS of the batch's first example: example 0's output changes
    when it is not first in its batch (oracle: its output alone, and in another batch, must equal
    its output in its own batch to 1e-10); the other checks pass."""
    import toy_norms

    report = check_norm(toy_norms.FirstExampleNorm, on_fail="return")
    assert list(report["failed"]) == ["each example its own output (alone, in another batch)"]
    assert (
        "FirstExampleNorm: declares uses_batch_statistics = False, but an example"
        in report["failed"]["each example its own output (alone, in another batch)"]
    )
    with pytest.raises(AssertionError, match="FirstExampleNorm: declares uses_batch_statistics = False"):
        check_norm(toy_norms.FirstExampleNorm)


def test_a_norm_that_keeps_its_first_batchs_statistics_is_refused():
    """A norm that caches its first batch's RMS and divides later batches by it: the same batch,
    normalized after two others, gives another output than on a fresh layer (the oracle)."""
    import toy_norms

    report = check_norm(toy_norms.CachedRMSNorm, on_fail="return")
    assert list(report["failed"]) == ["no state: the same output after other batches, and in eval mode"]
    assert "its output depends on the batches it saw before" in next(iter(report["failed"].values()))


def test_a_nan_output_is_reported_as_a_nan_not_as_a_wrong_gradient():
    """A forward that returns NaN (0 / 0) fails the forward check saying its outputs are NaN, its
    gradient check says the gradients could not be checked (not "gradcheck failed"), and its
    Table 1 row is not a measurement (every cell would otherwise read I: max(0.0, nan) is 0.0)."""
    import toy_norms

    report = check_norm(toy_norms.NaNNorm, on_fail="return")
    failed = report["failed"]
    assert (
        "NaNNorm: 30 of 30 outputs are NaN or inf"
        in failed["forward: the input's shape and dtype, finite, the input unchanged, no state on its class"]
    )
    assert failed["gradcheck, gradgradcheck (float64)"] == (
        "NaNNorm: its output is NaN or inf, so its gradients cannot be checked"
    )
    assert (
        "NaNNorm: its output is NaN or inf under weight_matrix_rescaling"
        in failed["its row of Ba et al.'s Table 1, measured"]
    )
    assert report["invariance"] == {}


def test_a_nan_in_the_invariance_measurement_is_a_disagreement():
    """A method whose output is NaN: each cell's change is NaN, read ``?``, and does not agree
    (a user's norm otherwise agrees whatever it measures: there is no expected row for it)."""
    cells = measure(
        draws=2, methods={"mine": ("mine", lambda W, X: (torch.full((X.shape[0], W.shape[0]), torch.nan), 1.0))}
    )
    assert len(cells) == 6
    assert all(c.measured == "?" and not c.agrees and c.max_change != c.max_change for c in cells)  # NaN != NaN


@pytest.mark.parametrize(
    ("name", "failed", "message"),
    [
        ("InPlaceNorm", {FORWARD, GRADCHECK}, "InPlaceNorm: raised RuntimeError: a leaf Variable that requires grad"),
        ("RaisingNorm", ALL_BUT_CAPABILITIES, "RaisingNorm: raised RuntimeError: RaisingNorm: planted failure"),
        ("BrokenInitNorm", ALL_BUT_CAPABILITIES, "BrokenInitNorm: raised TypeError: full() missing"),
    ],
)
def test_a_norm_that_raises_fails_the_check_it_raised_in_and_the_others_still_run(name, failed, message):
    """A norm that raises (an in-place division of its input under autograd, a forward that raises,
    an __init__ that raises) fails each check it raises in, the error named in one line, and every
    other check still runs; check_norm raises AssertionError naming the check, not the norm's error."""
    import toy_norms

    cls = getattr(toy_norms, name)
    report = check_norm(cls, on_fail="return")
    assert set(report["failed"]) == failed
    assert set(report["passed"]) == ({c.name for c in CHECKS} | {TABLE_1}) - failed
    assert message in report["failed"][GRADCHECK]
    assert all("\n" not in m for m in report["failed"].values())
    rows = norm_checks(cls)  # lnbench gradcheck --norm's rows: every check, no Table 1 row
    assert [r.name for r in rows] == [f"{name}: {c.name}" for c in CHECKS]
    assert {r.name for r in rows if not r.passed} == {f"{name}: {n}" for n in failed - {TABLE_1}}
    with pytest.raises(AssertionError, match=f"\\[check {FORWARD!r}"):
        check_norm(cls)


def test_an_in_place_norm_is_named_for_changing_its_input():
    """RMSNorm written as ``y = x; y /= rms`` divides the caller's tensor: the forward check says so."""
    import toy_norms

    report = check_norm(toy_norms.InPlaceNorm, on_fail="return")
    assert report["failed"][
        "forward: the input's shape and dtype, finite, the input unchanged, no state on its class"
    ] == ("InPlaceNorm: changes its input in place (the caller's tensor, which autograd may need)")


def test_a_wrong_shape_is_refused():
    """A norm that sums over its features maps (B, D) to (B,): the forward check and the Table 1
    measurement name both shapes."""
    import toy_norms

    report = check_norm(toy_norms.WrongShapeNorm, on_fail="return")
    assert report["failed"][
        "forward: the input's shape and dtype, finite, the input unchanged, no state on its class"
    ] == ("WrongShapeNorm: maps (5, 6) to (5,); a norm's output has its input's shape")
    assert report["failed"]["its row of Ba et al.'s Table 1, measured"] == (
        "WrongShapeNorm: maps (64, 32) to (64,); a norm's output has its input's shape"
    )


def test_the_checks_follow_the_declared_capabilities():
    """A norm that declares has_member_axis = False (and refuses members) is not built with
    members=3: it passes, the members check skipped with the reason; one with batch statistics
    skips the per-example and no-state checks."""
    import toy_norms

    report = check_norm(toy_norms.MemberlessNorm)
    assert report["ok"] and report["skipped"] == {
        "members=3: each member its own model": "declares has_member_axis = False"
    }
    assert not any("members=3" in r.name for r in norm_checks(toy_norms.MemberlessNorm))
    honest = type("HonestBatchNorm", (toy_norms.SecretBatchNorm,), {"uses_batch_statistics": True})
    assert set(check_norm(honest)["skipped"].values()) == {"declares uses_batch_statistics = True"}


PARAMETERS = "every parameter changes the output (gamma and beta applied)"
NO_STATE = "no state: the same output after other batches, and in eval mode"


def test_a_norm_that_never_applies_its_gain_and_bias_is_refused():
    """LayerNorm that returns x_hat and never applies gamma and beta: moving either parameter
    leaves the output as it was (the oracle: a used parameter moves it), so that check fails and
    names both; every other check passes (its forward and gradients are x_hat's)."""
    import toy_norms

    report = check_norm(toy_norms.UngainedNorm, on_fail="return")
    assert list(report["failed"]) == [PARAMETERS]
    assert report["failed"][PARAMETERS].startswith("UngainedNorm: its parameters gamma, beta never change its output")
    half = type(
        "GainOnly",
        (toy_norms.UngainedNorm,),
        {"forward": lambda self, x: self.gamma * super(type(self), self).forward(x)},
    )
    assert "its parameter beta never changes" not in str(check_norm(half, on_fail="return")["failed"])
    assert check_norm(half, on_fail="return")["failed"][PARAMETERS].startswith("GainOnly: its parameter beta never")


def test_a_norm_that_caches_its_first_eval_batch_is_refused():
    """ScaleNorm in training mode that divides every eval batch by the norm of its first eval
    batch: eval mode, called on two other batches first, gives another output than training on
    the checked batch (the oracle: a stateless norm gives the same)."""
    import toy_norms

    report = check_norm(toy_norms.FirstEvalBatchNorm, on_fail="return")
    assert list(report["failed"]) == [NO_STATE]
    assert "in eval mode, after two other batches, it gives another output than training" in report["failed"][NO_STATE]


def test_a_norm_that_keeps_the_first_batch_ever_on_its_class_is_refused():
    """A norm that stores the RMS of the first batch any of its layers saw on its class, and
    divides every later batch of every layer by it: every output-based check passes (each layer
    agrees with every other), but calling it writes an attribute on the class, which the forward
    check names."""
    import toy_norms

    cls = toy_norms.class_cache_norm()
    report = check_norm(cls, on_fail="return")
    assert list(report["failed"]) == [FORWARD]
    assert report["failed"][FORWARD].startswith(
        "ClassCacheNorm: calling it writes ClassCacheNorm.first_rms on its class"
    )


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("BareAssertNorm", "AssertionError (an assert without a message) at toy_norms.py:"),
        ("MessageAssertNorm", "AssertionError: want a 2-D input at toy_norms.py:"),
    ],
)
def test_an_assert_in_a_users_forward_is_its_error_not_the_checks_message(name, shown):
    """A failing ``assert`` in the norm's own forward (every (B, T, D) call fails it) is an error
    the norm raised, as a RuntimeError would be: each check it fails in says "raised
    AssertionError", with the assert's message if it has one and its file and line (the oracle:
    the line of the assert in toy_norms.py); never an empty message, nor the assert's message
    shown as if the check had written it. The same in ``lnbench gradcheck --norm``'s rows."""
    import inspect

    import toy_norms

    cls = getattr(toy_norms, name)
    source, first = inspect.getsourcelines(cls.forward)
    line = first + next(k for k, text in enumerate(source) if text.strip().startswith("assert "))
    report = check_norm(cls, on_fail="return")
    assert FORWARD in report["failed"] and GRADCHECK in report["failed"]
    for text in report["failed"].values():
        assert text == f"{name}: raised {shown}{line}", text
    rows = [r for r in norm_checks(cls) if not r.passed]
    assert rows and all(r.detail == f"{name}: raised {shown}{line}" for r in rows)


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("WrongBackward", GRADCHECK),
        ("FirstExampleNorm", "each example its own output (alone, in another batch)"),
        ("CachedRMSNorm", NO_STATE),
        ("FirstEvalBatchNorm", NO_STATE),
        ("InPlaceNorm", FORWARD),
        ("NaNNorm", FORWARD),
        ("UngainedNorm", PARAMETERS),
    ],
)
def test_train_refuses_a_users_norm_that_fails_a_check(name, check, tmp_path):
    """lnbench train checks a user's norm before any folder: a norm that fails a check of
    lnbench.testing.CHECKS is one line naming the check, its message (the one check_norm gives)
    and the command that shows every check, exit code 2, and no run folder."""
    import toy_norms

    args = ["train", str(REPO / "configs/train.yaml"), "--runs-dir", str(tmp_path / "runs"), *set_args(TINY_OVERRIDES)]
    result = runner.invoke(app, [*args, "--set", f"model.norm=toy_norms:{name}"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    want = check_norm(getattr(toy_norms, name), on_fail="return")["failed"][check]
    assert f"model.norm: 'toy_norms:{name}' fails the check {check!r}: {want} {CHECK_HINT.format(name=name)}" in line
    assert not (tmp_path / "runs").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["compare", "sweep"])
def test_compare_and_sweep_refuse_a_users_norm_that_fails_a_check_and_train_it_with_no_check(kind, tmp_path):
    """compare and sweep check each user's norm as train does (exit 2, nothing written); with
    --no-check they train it, and the experiment's run.json and each of its runs' run.json say
    it was not checked; a norm that passes is recorded as passed."""
    tiny = set_args([*TINY_OVERRIDES, "train.epochs=1", "seeds=[0]"])
    norms = '[layer, "toy_norms:WrongBackward", "toy_norms:ScaleNorm"]'
    grid = ["--set", f"compare.norms={norms}", "--set", "compare.families=[rnn]"]
    if kind == "sweep":
        grid = ["--set", f"sweep.grid={{model.norm: {norms}}}"]
    args = [kind, str(REPO / f"configs/{kind}.yaml"), "--runs-dir", str(tmp_path / "runs"), *tiny, *grid]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "'toy_norms:WrongBackward' fails the check" in refused.output, refused.output
    assert not (tmp_path / "runs").exists()
    result = runner.invoke(app, [*args, "--no-check"])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "runs").iterdir()
    top = json.loads((folder / "run.json").read_text())
    unchecked = "not checked (--no-check)"
    assert top["norm_check"] == {"toy_norms:ScaleNorm": unchecked, "toy_norms:WrongBackward": unchecked}
    children = {p.name: json.loads((p / "run.json").read_text()) for p in folder.iterdir() if (p / "run.json").exists()}
    assert len(children) == (6 if kind == "compare" else 3)  # compare: the RNN's two norm placements
    for name, manifest in children.items():
        assert manifest.get("norm_check") == (None if "layer" in name.lower() else unchecked), name


@pytest.mark.e2e
def test_a_norm_module_in_the_current_folder_imports_with_python_m_and_the_console_script_says_how(tmp_path):
    """Python puts the current folder on sys.path for ``python -m lnbench`` and not for the installed
    ``lnbench`` command: there, a norm module in the current folder is one line saying so and how to
    make it importable (PYTHONPATH=. or pip install -e), exit 2; with ``python -m`` the same
    norm is found (its missing class is the error)."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "herenorm.py").write_text("from lnbench.nn import Norm\n")
    args = ["train", str(REPO / "configs/train.yaml"), "--dry-run", "--set", "model.norm=herenorm:Missing"]
    script = Path(sys.executable).with_name("lnbench")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    console = subprocess.run([str(script), *args], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert console.returncode == 2, console.stderr + console.stdout
    (line,) = (console.stdout + console.stderr).strip().splitlines()
    assert "cannot import herenorm (No module named 'herenorm'); herenorm is in the current folder" in line
    assert "PYTHONPATH=. lnbench" in line and "pip install -e" in line
    module = subprocess.run(
        [sys.executable, "-m", "lnbench", *args], cwd=tmp_path, capture_output=True, text=True, env=env
    )
    assert module.returncode == 2 and "herenorm has no Missing" in module.stdout + module.stderr


DTYPES = ".to(float32 / float64 / cpu), train and eval"


def test_a_norm_that_turns_float32_into_float64_fails_the_dtype_check():
    """A float32 input must give a float32 output (a float32 model stays float32): a norm that
    returns float64 for any input is right in float64 and fails on float32 (the oracle: the
    dtypes named in the message)."""
    import toy_norms

    report = check_norm(toy_norms.UpcastNorm, on_fail="return")
    assert report["failed"] == {
        DTYPES: "UpcastNorm: a torch.float32 input gave a torch.float64 output after .to(torch.float32)"
    }
