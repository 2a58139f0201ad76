"""A norm with an option of its own takes 2 files, its layer's module in
``lnbench/nn/`` and its entry (with the option, :class:`lnbench.names.NormOption`) in
``lnbench/names/norms.py``; the config schema, its checks, config.yaml and the run identity follow from
the entry. Tested literally: a copy of the package with exactly those two edits, used in a fresh
interpreter (the schema is built at import)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lnbench

LAYER = '''
"""A toy norm with an option of its own: LayerNorm whose output is scaled by model.norm_scale."""

from lnbench.nn.layernorm import LayerNorm


class ScaledLayerNorm(LayerNorm):
    def __init__(self, features, eps=1e-5, members=None, scale=2.0):
        super().__init__(features, eps=eps, members=members)
        self.scale = scale

    @classmethod
    def from_config(cls, features, model_cfg, members=None, seq_len=None):
        return cls(features, members=members, scale=model_cfg.norm_option("norm_scale"))

    def forward(self, x):
        return self.scale * super().forward(x)
'''

ENTRY = """
NORM_REGISTRY["scaled"] = NormInfo(
    "ScaledLayerNorm",
    "tab:olive",
    "LayerNorm times model.norm_scale, a toy",
    layer="lnbench.nn.scaled:ScaledLayerNorm",
    options={"norm_scale": NormOption(float, 2.0, "With norm scaled only: the output's factor.", gt=0, le=10)},
)
NORM_NAMES = {kind: (info.label, info.color) for kind, info in NORM_REGISTRY.items()}
NORM_KINDS = tuple(NORM_NAMES)
"""

PROBE = """
import json, sys
import torch
from lnbench.config import ConfigError, load_config
from lnbench.config.checks import check_norm_options
from lnbench.config.identity import ADDED_KEYS
from lnbench.config.model import ModelConfig
from lnbench.config.schema import CompareConfig
from lnbench.nn.models import build_model

out = {"field": ModelConfig.model_fields["norm_scale"].description, "added": ADDED_KEYS.get("model.norm_scale")}
out["listed"] = [CompareConfig.model_fields["norms"].description, ModelConfig.model_fields["norm"].description]
cfg = load_config(None, ["model.norm=scaled", "model.norm_scale=3", "model.family=transformer"])
model = build_model(cfg.model, input_size=8, seq_len=20)
norm = next(m for m in model.modules() if type(m).__name__ == "ScaledLayerNorm")
x = torch.randn(4, 8, cfg.model.hidden_size)
out["ratio"] = float((norm(x) / torch.nn.functional.layer_norm(x, (x.shape[-1],))).mean())
out["yaml_scaled"] = "norm_scale" in cfg.to_yaml(True)
out["yaml_layer"] = "norm_scale" in load_config(None, ["model.norm=layer"]).to_yaml(True)
for bad in (["model.norm=scaled", "model.norm_scale=0"], ["model.norm=layer", "model.norm_scale=3"]):
    try:
        check_norm_options([load_config(None, bad)])
        out.setdefault("errors", []).append(None)
    except ConfigError as exc:
        out.setdefault("errors", []).append(str(exc))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("two_files")
    package = Path(lnbench.__file__).parent
    shutil.copytree(package, root / "lnbench", ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    (root / "lnbench" / "nn" / "scaled.py").write_text(textwrap.dedent(LAYER))  # file 1: the layer
    names = root / "lnbench" / "names" / "norms.py"
    text = names.read_text()
    at = text.index("#: The norm kinds: config name -> (label, plot colour).")
    names.write_text(text[:at] + ENTRY.lstrip() + "\n" + text[at:])  # file 2: its registry entry
    env = {**os.environ, "PYTHONPATH": str(root), "LNBENCH_KERNELS": "0"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300, cwd=root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_entry_declares_the_key_in_the_schema(probed):
    assert probed["field"] == "With norm scaled only: the output's factor."
    assert probed["added"] == 2.0  # a folder written before the key existed keeps its identity


def test_the_layer_reads_its_option_from_the_config(probed):
    assert probed["ratio"] == pytest.approx(3.0, rel=1e-6)  # model.norm_scale=3, not the default 2


def test_the_option_is_a_key_of_its_norm_alone(probed):
    assert probed["yaml_scaled"] and not probed["yaml_layer"]
    bound, foreign = probed["errors"]
    assert bound is not None and "norm_scale" in bound and "greater than 0" in bound
    assert foreign == "model.norm_scale: applies to ScaledLayerNorm only, and this run trains LayerNorm; remove it"


def test_the_norm_is_in_every_list_of_norms(probed):
    """The descriptions that list the norms are written from the registry (a hand-written list drifts)."""
    compare_norms, model_norm = probed["listed"]
    assert "weight, group, scaled, or a user's norm class" in compare_norms
    assert "or scaled (LayerNorm times model.norm_scale, a toy); or a user's norm class" in model_norm
