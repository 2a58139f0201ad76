"""The vocabulary's registries (lnbench.names): norms that installed packages register."""

from importlib.metadata import EntryPoint

import pytest

from lnbench import names


def test_an_entry_point_named_like_a_built_in_norm_is_left_out_with_a_warning(monkeypatch):
    """An installed package's ``lnbench.norms`` entry point ``layer`` does not replace LayerNorm: it
    is left out, and a UserWarning names the entry point, its package and the built-in; one with a
    name of its own is listed. Oracle: the two entry points given to importlib.metadata."""
    points = [
        EntryPoint("layer", "mynorms.ln:MyLayerNorm", names.NORM_ENTRY_POINTS),
        EntryPoint("scale", "mynorms.scale:ScaleNorm", names.NORM_ENTRY_POINTS),
    ]
    monkeypatch.setattr(
        "importlib.metadata.entry_points", lambda group: points if group == names.NORM_ENTRY_POINTS else []
    )
    with pytest.warns(UserWarning, match=r"'layer' of package mynorms\.ln .*is the built-in LayerNorm") as record:
        found = names.entry_point_norms()
    assert found == {"scale": "mynorms.scale:ScaleNorm"}
    assert len(record) == 1
    assert names.norm_label("layer") == "LayerNorm"
