"""A model family's key of its own takes 2 files: its declaration in the family's registry entry
(:attr:`lnbench.names.FamilyInfo.options`, a :class:`lnbench.names.KeyOption`) in
``lnbench/names/families.py``, and its use in the family's module in ``lnbench/nn/``. The config
schema (type, default, bounds, description), its one validation, the check that refuses it for
another family, config.yaml, the run identity and the config reference follow from the entry.
Tested literally: a copy of the package with exactly those two edits, used in a fresh interpreter
(the schema is built at import). The oracle: the toy key divides the Transformer's logits, so
the logits at 2 are half those at 1 on the same weights."""

from __future__ import annotations

import pytest
from conftest import insert_at, package_copy, probe_copy

DOC = "Transformer only: the divisor of the logits, a toy."
OPTION = f', "logit_temperature": KeyOption(float, 1.0, "{DOC}", gt=0, le=10, added=True)'
USE = "        logits = logits / self.cfg.logit_temperature\n"

PROBE = """
import json, torch
from lnbench.config import load_config
from lnbench.config.checks import check_keys_apply
from lnbench.config.identity import ADDED_KEYS
from lnbench.config.model import ModelConfig
from lnbench.nn.models import build_model

out = {"field": ModelConfig.model_fields["logit_temperature"].description,
       "added": ADDED_KEYS.get("model.logit_temperature")}
x = torch.randn(3, 20, 8, generator=torch.Generator().manual_seed(0))
logits = []
for value in ("1", "2"):
    cfg = load_config(None, ["model.family=transformer", f"model.logit_temperature={value}"])
    torch.manual_seed(0)
    logits.append(build_model(cfg.model, input_size=8, seq_len=20)(x))
out["ratio"] = (logits[1] / logits[0]).tolist()
out["yaml_transformer"] = "logit_temperature" in cfg.to_yaml(True)
out["yaml_rnn"] = "logit_temperature" in load_config(None, ["model.family=rnn"]).to_yaml(True)
out["errors"] = refusals(
    lambda: check_keys_apply(load_config(None, ["model.logit_temperature=0"]), ["transformer"]),
    lambda: check_keys_apply(load_config(None, ["model.logit_temperature=2"]), ["rnn"]),
)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict:
    root = package_copy(tmp_path_factory.mktemp("family_key_two_files"), "docs")
    families = root / "lnbench" / "names" / "families.py"  # file 1: the key in the family's entry
    insert_at(families, '"input_norm": INPUT_NORM', OPTION, after=True)
    transformer = root / "lnbench" / "nn" / "transformer.py"  # file 2: the family's module reads it
    insert_at(transformer, "        if return_hidden:\n            return logits, z\n", USE)
    return probe_copy(root, PROBE, "config-reference.md")


def test_the_entry_declares_the_key_in_the_schema_and_the_reference(probed):
    assert probed["field"] == DOC
    assert probed["added"] == 1.0  # a folder written before the key existed keeps its identity
    (row,) = [line for line in probed["reference"].splitlines() if "`model.logit_temperature`" in line]
    assert DOC in row and "`1.0`" in row


def test_the_model_reads_its_validated_value(probed):
    assert probed["ratio"] == [[pytest.approx(0.5, rel=1e-5)] * 2] * 3


def test_the_key_is_validated_once_and_belongs_to_its_family_alone(probed):
    assert probed["yaml_transformer"] and not probed["yaml_rnn"]
    bound, foreign = probed["errors"]
    assert bound is not None and "model.logit_temperature" in bound and "greater than 0" in bound
    assert foreign == "model.logit_temperature: applies to the transformer only, and this run trains rnn; remove it"


def test_the_declarations_leave_the_schema_nothing_but_fields():
    """Declaring the registry's keys in the class body leaves no helper behind as a private
    attribute of the model (pydantic keeps one for every ``_name`` in the body): a config must
    pickle, as the worker processes receive it (oracle: a pickle round trip equals the config)."""
    import pickle

    from lnbench.config import load_config
    from lnbench.config.model import ModelConfig

    assert ModelConfig.__private_attributes__ == {}
    cfg = load_config(None, ["model.family=transformer", "model.norm=group"])
    assert pickle.loads(pickle.dumps(cfg)) == cfg
