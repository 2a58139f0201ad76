"""``lnbench card NORM``: a norm's report card (conformance, gradients, Table 1, cost).

Oracles: LayerNorm's own row of Table 1 measured in the same card and Ba et al.'s (lnbench.nn.
invariance.EXPECTED); check_norm's verdicts; gradcheck of the norm's own formula."""

from __future__ import annotations

import html
import json
import shutil
import subprocess

import pytest
import torch
from conftest import REPO, runner

from lnbench.analysis.claim_catalogue import CLAIMS, NORM_TEMPLATES, norm_claims
from lnbench.cli.app import app
from lnbench.experiments.card import (
    CARD,
    CardSpec,
    add_science,
    card_markdown,
    measure_card,
    science_section,
    science_spec,
)
from lnbench.nn import Norm
from lnbench.nn.invariance import EXPECTED, TRANSFORMATIONS


class PlainLayerNorm(Norm):
    """LayerNorm's formula (Ba et al., eq. 4) in plain torch ops: a user's copy of LayerNorm."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return self.gamma * (x - mean) / (var + self.eps).sqrt() + self.beta


@pytest.fixture(autouse=True)
def _toy_norms(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "tests" / "nn"))  # toy_norms: users' wrong norms


def _card(spec: str) -> dict:
    return measure_card(CardSpec(spec, draws=2, repeats=1))


def test_a_users_copy_of_layernorm_gets_layernorms_card():
    """A norm written as LayerNorm's formula conforms, its gradients are right alone and in the
    LSTM and the Transformer, and its Table 1 row is LayerNorm's, measured in the same draws, and
    the paper's."""
    card = _card(f"{__name__}:PlainLayerNorm")
    assert card["conformance"]["passed"] and card["gradients"]["passed"]
    rows = card["invariance"]["rows"]
    assert rows["norm"] == rows["layer"]
    assert tuple(rows["layer"][name] for name, _ in TRANSFORMATIONS) == EXPECTED["layer"]
    assert "the same row as LayerNorm" in card["invariance"]["verdict"]
    assert [s["name"] for s in card["sections"]] == ["conformance", "gradients", "invariance", "cost", "science"]
    assert {c["shape"][-1] for c in card["cost"]["calls"]} == {128, 256}
    assert all(c["vs_layer_python"] > 0 for c in card["cost"]["calls"])


def test_a_norm_that_reads_row_0_fails_conformance_and_says_so_above_every_section():
    """A norm dividing by its batch's first example fails the per-example check: the card's
    conformance fails with check_norm's message, card.md says so before any section, and every
    other section is marked as measured on a norm that failed conformance."""
    card = _card("toy_norms:FirstExampleNorm")
    conf = card["conformance"]
    assert not conf["passed"]
    failed = [c for c in conf["checks"] if c["result"] == "failed"]
    assert [c["name"] for c in failed] == ["each example its own output (alone, in another batch)"]
    page = card_markdown(card)
    assert page.index("This norm failed conformance") < page.index("## Conformance")
    assert all(card[name]["caveat"] == "measured on a norm that failed conformance" for name in ("gradients", "cost"))


def test_a_wrong_backward_fails_the_gradient_section_alone_and_in_both_models():
    """LayerNorm's forward with a backward that drops the x_hat term: gradcheck fails for the norm
    alone and inside the LSTM and the Transformer (the norm's gradients reach the input)."""
    card = _card("toy_norms:WrongBackward")
    grads = card["gradients"]
    assert not grads["passed"] and grads["alone"]["result"] == "failed"
    assert [(m["family"], m["gradcheck"]) for m in grads["models"]] == [("lstm", False), ("transformer", False)]
    assert grads["verdict"].startswith("wrong: gradcheck or gradgradcheck fails the norm alone, in the LSTM")


@pytest.mark.parametrize(
    ("norm", "message"),
    [
        ("none", "NORM: 'none' has no layer to measure (NoNorm)"),
        ("weight", "NORM: 'weight' normalizes the weights, not a layer's activations"),
        ("nosuch", "NORM: unknown norm 'nosuch'"),
    ],
)
def test_a_card_of_no_norm_is_one_line_exit_2_and_no_folder(norm, message, tmp_path):
    result = runner.invoke(app, ["card", norm, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


@pytest.mark.e2e
def test_lnbench_card_writes_its_folder(tmp_path):
    """lnbench card rms --no-science: one folder with card.json (every section with a verdict), card.md and
    card.html, exit 0; RMSNorm conforms, and its Table 1 row is not LayerNorm's (it does not
    re-center: weight matrix re-centering is N)."""
    result = runner.invoke(
        app, ["card", "rms", "--runs-dir", str(tmp_path), "--draws", "2", "--repeats", "1", "--no-science"]
    )
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    card = json.loads((folder / "card.json").read_text())
    assert card["norm"] == "rms" and card["label"] == "RMSNorm" and card["conformance"]["passed"]
    assert card["invariance"]["rows"]["norm"]["weight_matrix_recentering"] == "N"
    assert (folder / "card.md").read_text().startswith("# RMSNorm (`rms`): lnbench report card")
    assert "<h2>Cost</h2>" in (folder / "card.html").read_text()
    assert json.loads((folder / "run.json").read_text())["status"] == "completed"


def test_each_template_is_a_claim_about_its_subject():
    """A template's built-in claim names its subject in a condition (else putting another norm in its
    place would change nothing), and its instance for the subject is the built-in claim itself."""
    by_id = {c.id: c for c in CLAIMS}
    for t in NORM_TEMPLATES:
        claim = by_id[t.claim_id]
        assert t.subject in (claim.a.norm, claim.b.norm), t.claim_id
        assert t.instance(t.subject) is claim


def test_a_norms_claims_swap_only_the_subject_and_follow_its_batch_statistics():
    """RMSNorm (no batch statistics): the five claims for every norm and LayerNorm's two batch-size
    claims, each with rms where the built-in claim had layer and every other condition as it was
    (NoNorm stays the baseline, the net conditions stay NoNorm's); a norm with batch statistics gets
    BatchNorm's batch-size claims instead."""
    rms = norm_claims("rms", uses_batch_statistics=False)
    assert [c.id for c, _ in rms] == [
        "rnn_faster_default@rms",
        "lstm_faster@rms",
        "tf_faster@rms",
        "rnn_scale_invariant@rms",
        "tf_scale_invariant@rms",
        "rnn_ln_batch_size@rms",
        "tf_ln_batch_size@rms",
    ]
    by_id = {c.id: c for c in CLAIMS}
    for claim, refs in rms:
        built_in = by_id[claim.id.partition("@")[0]]
        assert refs["layer"] is built_in and refs["batch"].id == f"{built_in.id}@batch"
        for mine, theirs in ((claim.a, built_in.a), (claim.b, built_in.b)):
            assert mine.norm == ("rms" if theirs.norm == "layer" else theirs.norm)
            assert (mine.batch_size, mine.gain) == (theirs.batch_size, theirs.gain)
        assert claim.net == built_in.net  # NoNorm's change: no layer in it
        assert "RMSNorm" in claim.text and "LayerNorm" not in claim.text
    batch = [c.id for c, _ in norm_claims("groupnorm_like", uses_batch_statistics=True)]
    assert batch[-2:] == ["rnn_bn_batch_size_1@groupnorm_like", "tf_bn_batch_size_1@groupnorm_like"]


def test_the_science_spec_trains_the_norm_and_its_references_on_the_same_seeds():
    """science_spec: every claim of the norm and of LayerNorm and BatchNorm once, each regime with
    seeds 0 .. N-1; fewer than 2 seeds is refused (a paired test needs two)."""
    spec, pairs = science_spec("rms", seeds=2)
    ids = [c.id for c in spec.selected]
    assert len(ids) == len(set(ids)) == 3 * len(pairs)
    assert all(list(cfg.seeds) == [0, 1] for cfg in spec.regimes.values())
    with pytest.raises(Exception, match="at least 2 seeds"):
        science_spec("rms", seeds=1)


def test_the_science_section_reads_each_claims_verdict_and_its_references():
    """From a claims summary: the norm's verdict, effect, interval and seeds per claim, LayerNorm's
    and BatchNorm's verdict beside it, counts in the section's verdict, and the card's pages."""
    pairs = norm_claims("rms", uses_batch_statistics=False)[:2]
    (a, refs_a), (b, refs_b) = pairs
    summary = {
        "claims": [
            {"id": a.id, "verdict": "held", "effect": 0.5, "ci95": [0.25, 0.75], "n_seeds": 3},
            {"id": refs_a["layer"].id, "verdict": "held"},
            {"id": refs_a["batch"].id, "verdict": "not held"},
            {"id": b.id, "verdict": "inconclusive", "effect": -0.01, "ci95": [-0.05, 0.03], "n_seeds": 3},
            {"id": refs_b["layer"].id, "verdict": "held"},
        ]
    }
    section = science_section(pairs, summary, "science_folder")
    rows = [(c["verdict"], c["reference"]["layer"], c["reference"]["batch"]) for c in section["claims"]]
    assert rows == [("held", "held", "not held"), ("inconclusive", "held", "not run")]
    assert section["verdict"].startswith("1 of 2 claims held (0 not held, 1 inconclusive; 3 seeds, Holm over")
    assert section["verdict"].endswith("the same verdict as LayerNorm's on 1 of 2")
    assert section["holm_family"] == 5 and section["folder"] == "science_folder"


def test_the_science_section_is_written_into_the_cards_pages(tmp_path):
    """add_science: card.json's science section and its summary sentence replaced, and card.md and
    card.html written again with the claims' table (the norm's verdict, LayerNorm's beside it)."""
    (tmp_path / "card.json").write_text(json.dumps(_card("rms")))
    pairs = norm_claims("rms", uses_batch_statistics=False)[:1]
    summary = {"claims": [{"id": pairs[0][0].id, "verdict": "held", "effect": 0.5, "ci95": [0.2, 0.8], "n_seeds": 3}]}
    card = add_science(tmp_path, science_section(pairs, summary, "science"))
    assert card["science"]["claims"][0]["verdict"] == "held"
    assert [s for s in card["summary"] if s.startswith("Science")] == [f"Science: {card['science']['verdict']}."]
    assert json.loads((tmp_path / "card.json").read_text())["science"]["folder"] == "science"
    md = (tmp_path / "card.md").read_text()
    assert (
        f"| {pairs[0][0].text} (rnn_faster_default) | held | +0.5 [+0.2, +0.8] (mean_train_loss) | 3 | not run | not run |"
        in md
    )
    assert pairs[0][0].text in (tmp_path / "card.html").read_text()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (make test-browser installs it)")
def test_card_html_renders_in_a_browser_with_every_section_and_no_console_error(tmp_path):
    """card.html in headless Chromium: a page that is not blank, every section's heading and table
    in its DOM, and no console error."""
    (tmp_path / "card.json").write_text(json.dumps(_card("rms")))
    CARD.figures(tmp_path)
    page = f"file://{tmp_path / 'card.html'}"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
    shot = tmp_path / "shot.png"
    run = [CHROMIUM, *flags, "--window-size=1100,2400"]
    r = subprocess.run([*run, f"--screenshot={shot}", page], capture_output=True, text=True, timeout=600)
    from matplotlib.image import imread

    assert shot.exists() and imread(shot).std() > 0.05, r.stderr[-2000:]  # not a blank page
    dom = subprocess.run([*run, "--dump-dom", page], capture_output=True, text=True, timeout=600)
    for title in ("Conformance", "Gradients", "Invariances (Ba et al.'s Table 1)", "Cost", "Science", "Summary"):
        assert f"<h2>{html.escape(title, quote=False)}</h2>" in dom.stdout, title
    assert dom.stdout.count("<table") == 4  # the science section has no table before it is trained
    errors = [
        line
        for line in (r.stderr + dom.stderr).splitlines()
        if "CONSOLE" in line and ("Error" in line or "Uncaught" in line)
    ]
    assert errors == []


def test_a_full_card_adds_the_lstms_batch_size_claim_figure_6_and_mnist_by_rows():
    """--full: for a norm without batch statistics the LSTM's and the MLP's (Figure 6, batch size 4
    vs 128) LayerNorm batch-size claims and MNIST by rows with the recipe (NoNorm less accurate than
    the LSTM with the norm, its gains at the recipe's 0.1), after the default card's claims."""
    default = [c.id for c, _ in norm_claims("rms", uses_batch_statistics=False)]
    full = norm_claims("rms", uses_batch_statistics=False, full=True)
    assert [c.id for c, _ in full] == [
        *default,
        "lstm_ln_batch_size@rms",
        "mlp_ln_batch_size@rms",
        "rows_ln_vs_none@rms",
    ]
    rows, refs = full[-1]
    assert (rows.a.norm, rows.b.norm, rows.b.gain) == ("none", "rms", 0.1)
    assert "than the LSTM with RMSNorm on MNIST by rows" in rows.text and refs["layer"].id == "rows_ln_vs_none"
    batch = [c.id for c, _ in norm_claims("b", uses_batch_statistics=True, full=True)][-3:]
    assert batch == ["lstm_bn_batch_size_1@b", "mlp_bn_batch_size_4@b", "rows_ln_vs_none@b"]


@pytest.mark.parametrize(
    ("make", "extra", "message"),
    [
        (lambda d: None, [], "not a card folder (lnbench card NORM) or its science folder"),
        (
            lambda d: (d / "card.json").write_text(json.dumps({"science": {"folder": None}})),
            [],
            "this card has no science folder (made with --no-science)",
        ),
        (lambda d: None, ["--no-science"], "--reference and --no-science: give one of them"),
    ],
)
def test_a_reference_that_is_not_an_earlier_cards_science_is_one_line_exit_2(tmp_path, make, extra, message):
    """--reference DIR: a folder that is not a card (or a claims run), a card made with
    --no-science, or --reference with --no-science: one line naming it, exit code 2, nothing written."""
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    make(earlier)
    args = ["card", "rms", "--reference", str(earlier), "--runs-dir", str(tmp_path / "runs"), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


def test_a_cards_science_folder_resumes_as_a_claims_run_with_its_norms_claims(tmp_path):
    """lnbench claims --resume of a card's science folder (a claims run inside the card's folder):
    not refused as a child of the card, and its recorded claims (``lstm_faster@rms``, ...) read back
    as the card's claims, the norm in the subject's place; a card's claim of a norm lnbench cannot
    build is one line naming it."""
    from lnbench.experiments.claim_resume import resumed_spec
    from lnbench.experiments.claims import CLAIMS as CLAIMS_EXPERIMENT

    spec, pairs = science_spec("rms", seeds=2)
    card = tmp_path / "card_rms"
    science = card / "science"
    science.mkdir(parents=True)
    (card / "run.json").write_text(json.dumps({"kind": CARD.kind, "status": "completed"}))
    (science / "run.json").write_text(json.dumps({"kind": CLAIMS_EXPERIMENT.kind, "status": "completed"}))
    (science / "summary.json").write_text(json.dumps({"kind": CLAIMS_EXPERIMENT.kind, "rows": []}))
    yaml_text = CLAIMS_EXPERIMENT.config_yaml(spec)
    (science / "config.yaml").write_text(yaml_text)
    resumed = resumed_spec(science)
    assert sorted(c.id for c in resumed.selected) == sorted(c.id for c in spec.selected)
    mine = {c.id: c for c in resumed.selected}["lstm_faster@rms"]
    assert (mine.a.norm, mine.b.norm) == ("rms", "none")
    (science / "config.yaml").write_text(yaml_text.replace("lstm_faster@rms", "lstm_faster@nosuchnorm"))
    with pytest.raises(Exception, match="lstm_faster@nosuchnorm"):
        resumed_spec(science)
    (science / "summary.json").unlink()  # a child run of the card, not an experiment: resume the card
    with pytest.raises(Exception, match="a run of the card experiment"):
        resumed_spec(science)
