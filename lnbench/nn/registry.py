"""The registry of norm kinds: for each kind of :data:`lnbench.names.NORM_KINDS`, its layer and what
it can do. The models ask it (and the layers' own class attributes, :class:`lnbench.nn.base.Norm`)
instead of testing a norm's name, so a new norm is one file in ``lnbench/nn/`` plus one line in
:data:`NORMS`.

Capabilities of a kind (:class:`NormKind`; all but ``reparametrizes_weights`` read off its layer class):

=========================  ====  =====  =====  ===  ======
capability                 none  batch  layer  rms  weight
=========================  ====  =====  =====  ===  ======
normalizes_activations           x      x      x
has_beta                         x      x
uses_batch_statistics            x
takes_timestep (in an RNN)       x
grouped_as_layer                 x      x      x
reparametrizes_weights                                x
=========================  ====  =====  =====  ===  ======
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import torch
from torch import nn

from lnbench.names import NORM_KINDS, entry_point_norms, is_plugin_norm, norm_color, norm_label
from lnbench.nn.base import Norm
from lnbench.nn.batchnorm import BatchNorm1d, RecurrentBatchNorm1d
from lnbench.nn.layernorm import LayerNorm
from lnbench.nn.rmsnorm import RMSNorm


@dataclass(frozen=True)
class NormKind:
    """One norm kind: its config name, its layer classes and its capabilities.

    Args:
        kind: the config name (a key of :data:`lnbench.names.NORM_NAMES`).
        layer: the :class:`lnbench.nn.base.Norm` placed on summed inputs and activations; None:
            the identity there (``none``, and ``weight``, which normalizes weights instead).
        recurrent_layer: the layer used inside a recurrence, when it differs from ``layer``
            (BatchNorm: :class:`lnbench.nn.batchnorm.RecurrentBatchNorm1d`). Default: None.
        reparametrizes_weights: the model builds its weight-normalized layers
            (:mod:`lnbench.nn.weightnorm`) instead of normalizing activations. Default: False.

    Raises:
        ValueError: in :meth:`build`, from the layer (``features < 1``, a bad ``batch_norm_stats``).
    """

    kind: str
    layer: type[Norm] | None
    recurrent_layer: type[Norm] | None = None
    reparametrizes_weights: bool = False

    @property
    def label(self) -> str:
        """Its name in tables and legends (``"LayerNorm"``; a user's norm: its class name)."""
        return norm_label(self.kind)

    @property
    def color(self) -> str:
        """Its plot colour, one per norm in every figure."""
        return norm_color(self.kind) or "tab:red"

    def layer_class(self, recurrent: bool = False) -> type[Norm] | None:
        """The layer class on activations, or inside a recurrence; None for the identity."""
        return (self.recurrent_layer or self.layer) if recurrent else self.layer

    @property
    def normalizes_activations(self) -> bool:
        """A layer sits at the norm positions (False: they are the identity)."""
        return self.layer is not None

    @property
    def has_beta(self) -> bool:
        """The layer adds a learned bias beta (so the layer before it needs none)."""
        return self.layer is not None and self.layer.has_beta

    @property
    def uses_batch_statistics(self) -> bool:
        """Statistics over the batch: training and eval differ; running statistics."""
        return self.layer is not None and self.layer.uses_batch_statistics

    @property
    def takes_timestep(self) -> bool:
        """Inside a recurrence, called as ``norm(a, t)`` and told when a sequence ends."""
        layer = self.layer_class(recurrent=True)
        return layer is not None and layer.takes_timestep

    @property
    def grouped_as_layer(self) -> bool:
        """The layer's parameters are one layer in the per-layer gradient norms."""
        return self.layer is not None and self.layer.grouped_as_layer

    def build(
        self,
        features: int,
        members: int | None = None,
        recurrent: bool = False,
        seq_len: int | None = None,
        batch_norm_stats: str = "pooled",
        gain_init: float = 1.0,
    ) -> nn.Module:
        """The layer for ``features`` D (``nn.Identity`` where this kind has none).

        Args:
            features: D, the normalized last axis.
            members: S for a seed ensemble (parameters ``(S, 1, D)``). Default: None.
            recurrent: inside a recurrence (see ``recurrent_layer``). Default: False.
            seq_len, batch_norm_stats: the model's options, for a layer that needs them
                (:meth:`lnbench.nn.base.Norm.from_options`).
            gain_init: the initial value of every entry of gamma (``model.norm_gain_init``; the
                models resolve its null to their paper's value). Default: 1.0, PyTorch's.
        """
        layer = self.layer_class(recurrent)
        if layer is None:
            return nn.Identity()
        built = layer.from_options(features, members=members, seq_len=seq_len, batch_norm_stats=batch_norm_stats)
        if gain_init != 1.0:
            with torch.no_grad():
                built.gamma.fill_(gain_init)
        return built


#: The one registry of norm kinds (names and colours: :mod:`lnbench.names`); config, models,
#: plots and tables read it. In the order of :data:`lnbench.names.NORM_KINDS`.
NORMS: dict[str, NormKind] = {
    entry.kind: entry
    for entry in (
        NormKind("none", None),
        NormKind("batch", BatchNorm1d, recurrent_layer=RecurrentBatchNorm1d),
        NormKind("layer", LayerNorm),
        NormKind("rms", RMSNorm),
        NormKind("weight", None, reparametrizes_weights=True),
    )
}
assert tuple(NORMS) == NORM_KINDS, "one registry line per kind of lnbench.names.NORM_KINDS, in its order"


def norm_kind(kind: str) -> NormKind:
    """The registry entry of ``kind``.

    Raises:
        ValueError: for a kind not in :data:`NORMS`, naming the allowed kinds.
    """
    if kind in NORMS:
        return NORMS[kind]
    if is_plugin_norm(kind):
        return plugin_norm(kind)
    raise ValueError(f"unknown norm {kind!r}; allowed: {', '.join(NORM_KINDS)}, or 'package.module:ClassName'")


_PLUGINS: dict[str, NormKind] = {}


def plugin_norm(spec: str) -> NormKind:
    """The norm kind of a user's own class, ``"package.module:ClassName"`` or an installed
    package's entry point in the group ``lnbench.norms`` (``scalenorm``): a subclass of
    :class:`lnbench.nn.base.Norm` whose class attributes declare its capabilities (``has_beta``,
    ``uses_batch_statistics``, ``takes_timestep``, ``grouped_as_layer``); it is placed wherever
    the built-in norms are, on the Python path (the fused kernel covers the built-in classes only).
    ``lnbench.testing.check_norm`` runs the checks a built-in norm passes.

    Raises:
        ValueError: the module cannot be imported, has no such class, or the class is not a Norm
            (one line naming ``spec``).
    """
    if spec in _PLUGINS:
        return _PLUGINS[spec]
    module, _, name = entry_point_norms().get(spec, spec).partition(":")
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise ValueError(f"norm {spec!r}: cannot import {module} ({exc})") from None
    except AttributeError:
        raise ValueError(f"norm {spec!r}: {module} has no {name}") from None
    if not (isinstance(cls, type) and issubclass(cls, Norm)):
        raise ValueError(f"norm {spec!r}: {name} is not a subclass of lnbench.nn.Norm")
    entry = NormKind(spec, cls)
    _PLUGINS[spec] = entry
    return entry


def build_norm(
    kind: str,
    features: int,
    members: int | None = None,
    recurrent: bool = False,
    seq_len: int | None = None,
    batch_norm_stats: str = "pooled",
) -> nn.Module:
    """Return the normalization layer for ``kind`` (:meth:`NormKind.build`; ``none`` and ``weight``:
    the identity).

    Args:
        kind: one of :data:`lnbench.names.NORM_KINDS`.
        features: the size of the normalized last axis.
        members, recurrent, seq_len, batch_norm_stats: see :meth:`NormKind.build`.

    Raises:
        ValueError: for any other ``kind``, naming the allowed kinds; from the layer for bad options.
    """
    return norm_kind(kind).build(features, members, recurrent, seq_len, batch_norm_stats)
