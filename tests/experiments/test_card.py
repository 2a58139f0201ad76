"""``lnbench card NORM``: a norm's report card (conformance, gradients, Table 1, cost).

Oracles: LayerNorm's own row of Table 1 measured in the same card and Ba et al.'s (lnbench.nn.
invariance.EXPECTED); check_norm's verdicts; gradcheck of the norm's own formula."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import REPO, runner

from lnbench.cli.app import app
from lnbench.experiments.card import CardSpec, card_markdown, measure_card
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
    [("none", "NORM: 'none' has no layer to measure (NoNorm)"), ("nosuch", "NORM: unknown norm 'nosuch'")],
)
def test_a_card_of_no_norm_is_one_line_exit_2_and_no_folder(norm, message, tmp_path):
    result = runner.invoke(app, ["card", norm, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()


@pytest.mark.e2e
def test_lnbench_card_writes_its_folder(tmp_path):
    """lnbench card rms: one folder with card.json (every section with a verdict), card.md and
    card.html, exit 0; RMSNorm conforms, and its Table 1 row is not LayerNorm's (it does not
    re-center: weight matrix re-centering is N)."""
    result = runner.invoke(app, ["card", "rms", "--runs-dir", str(tmp_path), "--draws", "2", "--repeats", "1"])
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    card = json.loads((folder / "card.json").read_text())
    assert card["norm"] == "rms" and card["label"] == "RMSNorm" and card["conformance"]["passed"]
    assert card["invariance"]["rows"]["norm"]["weight_matrix_recentering"] == "N"
    assert (folder / "card.md").read_text().startswith("# RMSNorm (`rms`): lnbench report card")
    assert "<h2>Cost</h2>" in (folder / "card.html").read_text()
    assert json.loads((folder / "run.json").read_text())["status"] == "completed"
