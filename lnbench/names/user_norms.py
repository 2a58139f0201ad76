"""A user's own norm: a class named ``"package.module:ClassName"`` in a config, or an installed
package's entry point in the group ``lnbench.norms``; and what a norm kind, built-in or a user's,
declares of its member axis.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

from lnbench.names.norms import NORM_NAMES, NORM_REGISTRY

#: A user's own norm in a config: ``"package.module:ClassName"``, a subclass of lnbench.nn.Norm
PLUGIN_NORM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")


#: The entry-point group under which an installed package names its norms (docs/extending.md)
NORM_ENTRY_POINTS = "lnbench.norms"


def entry_point_norms() -> dict[str, str]:
    """The norms installed packages register: entry-point name -> ``"module:attribute"``
    (``importlib.metadata``; nothing is imported).

    Warns:
        UserWarning: for an entry point named like a built-in norm (``layer``), which is left out
            (the built-in keeps its name); the warning names the package and the built-in.
    """
    from importlib.metadata import entry_points

    found = {}
    for ep in entry_points(group=NORM_ENTRY_POINTS):
        if ep.name in NORM_NAMES:
            package = ep.dist.name if ep.dist is not None else ep.value.partition(":")[0]
            warnings.warn(
                f"the {NORM_ENTRY_POINTS} entry point {ep.name!r} of package {package} ({ep.value}) is ignored: "
                f"{ep.name!r} is the built-in {NORM_NAMES[ep.name][0]}; register it under another name",
                UserWarning,
                stacklevel=2,
            )
            continue
        found[ep.name] = ep.value
    return found


def is_plugin_norm(kind: str) -> bool:
    """Whether ``kind`` names a user's own norm class (``"package.module:ClassName"``, or the
    name of an installed package's entry point in the group ``lnbench.norms``)."""
    return bool(PLUGIN_NORM.match(kind)) or kind in entry_point_norms()


def _plugin_class(kind: str) -> Any:
    """A user's norm class (``"package.module:ClassName"`` or an entry point), imported to read
    its declared capabilities; None when it cannot be imported (the experiments' checks then say
    so in one line: :func:`lnbench.nn.registry.plugin_norm`). Imports the user's module, never lnbench's."""
    import pkgutil

    try:
        return pkgutil.resolve_name(entry_point_norms().get(kind, kind))
    except AttributeError:  # the module has no such name
        return None
    except Exception:  # any import failure (a SyntaxError too): plugin_norm says it in one line
        return None


def norm_has_member_axis(kind: str) -> bool:
    """Whether the layers of norm ``kind`` take a seed ensemble's member axis in every family
    (:attr:`NormInfo.has_member_axis`; a user's norm: its class's ``has_member_axis``,
    :class:`lnbench.nn.base.Norm`'s True unless it says otherwise)."""
    if kind in NORM_REGISTRY:
        return NORM_REGISTRY[kind].has_member_axis
    return is_plugin_norm(kind) and bool(getattr(_plugin_class(kind), "has_member_axis", False))
