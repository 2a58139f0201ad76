"""The registry of norm kinds: for each kind of :data:`lnbench.names.NORM_REGISTRY`, its layer and
what it can do. The models ask it (and the layers' own class attributes, :class:`lnbench.nn.base.Norm`)
instead of testing a norm's name, so a new norm is one file in ``lnbench/nn/`` plus its entry in
:data:`lnbench.names.NORM_REGISTRY` (and a ``model`` key in the schema if it has an option of its
own); :data:`NORMS` is built from those entries.

Capabilities of a kind (:class:`NormKind`; all but ``reparametrizes_weights`` read off its layer class):

=========================  ====  =====  =====  ===  ======  =====
capability                 none  batch  layer  rms  weight  group
=========================  ====  =====  =====  ===  ======  =====
normalizes_activations           x      x      x            x
has_beta                         x      x                   x
uses_batch_statistics            x
takes_timestep (in an RNN)       x
grouped_as_layer                 x      x      x            x
reparametrizes_weights                                x
has_member_axis            x     x      x      x            x
=========================  ====  =====  =====  ===  ======  =====

Each layer reads its own options from the model config (:meth:`lnbench.nn.base.Norm.from_config`:
BatchNorm's ``batch_norm_stats``, GroupNorm's ``norm_groups``); :meth:`NormKind.build` passes the
config through, so the factory knows no norm's options.
"""

from __future__ import annotations

import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from lnbench.config import ModelConfig
from lnbench.names import (
    NORM_KINDS,
    NORM_REGISTRY,
    entry_point_norms,
    is_plugin_norm,
    norm_color,
    norm_label,
    paper_gain_init,
)
from lnbench.nn.base import Norm


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
        member_axis: for a kind without a layer, whether its model has a seed ensemble's member
            axis in every family (weight norm's Linear layers have none in a Transformer); a
            layer says it itself (``has_member_axis``). Default: True.

    Raises:
        ValueError: in :meth:`build`, from the layer (``features < 1``, a bad ``batch_norm_stats``,
            ``norm_groups`` not dividing D).
    """

    kind: str
    layer: type[Norm] | None
    recurrent_layer: type[Norm] | None = None
    reparametrizes_weights: bool = False
    member_axis: bool = True

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

    @property
    def has_member_axis(self) -> bool:
        """Its layers take a seed ensemble's leading member axis in every family (a Transformer
        cell's seeds train as one ensemble only then; :func:`lnbench.names.norm_has_member_axis`)."""
        return self.layer.has_member_axis if self.layer is not None else self.member_axis

    def build(
        self,
        features: int,
        model_cfg: ModelConfig,
        members: int | None = None,
        recurrent: bool = False,
        *,
        seq_len: int | None = None,
    ) -> nn.Module:
        """The layer for ``features`` D (``nn.Identity`` where this kind has none), built by its
        class from the model config (:meth:`lnbench.nn.base.Norm.from_config`: each norm reads
        its own keys), its ``eps`` the model's ``norm_eps``, with every entry of gamma at the model's
        initial gain (:func:`initial_gain`).

        Args:
            features: D, the normalized last axis.
            model_cfg: the model's :class:`lnbench.config.ModelConfig` (its family, its gain, the
                norm's options).
            members: S for a seed ensemble (parameters ``(S, 1, D)``). Default: None.
            recurrent: inside a recurrence (see ``recurrent_layer``). Default: False.
            seq_len: T of the data, for a layer with state per timestep (BatchNorm's
                ``per_timestep`` running statistics). Default: None.

        Raises:
            ValueError: from the layer, for a bad option (one line naming the key).
        """
        layer = self.layer_class(recurrent)
        if layer is None:
            return nn.Identity()
        built = layer.from_config(features, model_cfg, members=members, seq_len=seq_len)
        built.eps = model_cfg.norm_eps  # every layer's, read where it normalizes (and by the C++ kernels)
        gain = initial_gain(model_cfg, self.kind)
        if gain is not None and gain != 1.0:
            with torch.no_grad():
                built.gamma.fill_(gain)
        return built


def initial_gain(model_cfg: ModelConfig, kind: str | None = None) -> float | None:
    """The value every norm gain of this model starts at: ``model.norm_gain_init``, or its paper's
    when null (1; the BN-LSTM's 0.1: :func:`lnbench.names.paper_gain_init`); None for a norm without
    a gain on activations (none, weight). ``kind``: the norm (default: ``model_cfg.norm``).
    Recorded in metrics.json (``initial_gain``) so a table can say which gains were compared."""
    kind = model_cfg.norm if kind is None else kind
    if not norm_kind(kind).normalizes_activations:
        return None
    if model_cfg.norm_gain_init is not None:
        return model_cfg.norm_gain_init
    return paper_gain_init(model_cfg.family, kind)


def _load(path: str | None) -> type[Norm] | None:
    """The class ``"module:Class"`` names (a built-in norm's, :data:`lnbench.names.NORM_REGISTRY`)."""
    if path is None:
        return None
    return pkgutil.resolve_name(path)


#: The one registry of norm kinds, built from :data:`lnbench.names.NORM_REGISTRY` (names, colours,
#: the torch-free facts); config, models, plots and tables read it. In the order of
#: :data:`lnbench.names.NORM_KINDS`.
NORMS: dict[str, NormKind] = {
    kind: NormKind(
        kind,
        _load(info.layer),
        _load(info.recurrent_layer),
        reparametrizes_weights=info.reparametrizes_weights,
        member_axis=info.has_member_axis,
    )
    for kind, info in NORM_REGISTRY.items()
}
for _kind, _entry in NORMS.items():  # the torch-free facts of lnbench/names/norms.py are what the classes say
    _info = NORM_REGISTRY[_kind]
    assert _entry.has_member_axis == _info.has_member_axis, f"{_kind}: has_member_axis disagrees with its layer"
    assert _entry.uses_batch_statistics == _info.uses_batch_statistics, f"{_kind}: uses_batch_statistics disagrees"
    assert _entry.normalizes_activations == _info.has_gain, f"{_kind}: has_gain disagrees with its layer"


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


def _path_hint(module: str) -> str:
    """Where a module that is not importable is in the current folder: how to make it importable.
    ``python -m lnbench`` searches the current folder (Python puts it first on ``sys.path``); the
    ``lnbench`` console script does not, as no installed command does."""
    top = module.partition(".")[0]
    here = Path.cwd()
    if str(here) in sys.path or "" in sys.path or not ((here / f"{top}.py").is_file() or (here / top).is_dir()):
        return ""
    return (
        f"; {top} is in the current folder, which the lnbench command does not search (python -m lnbench does): "
        f"run PYTHONPATH=. lnbench ..., or pip install -e the package that holds it"
    )


def plugin_norm(spec: str) -> NormKind:
    """The norm kind of a user's own class, ``"package.module:ClassName"`` or an installed
    package's entry point in the group ``lnbench.norms`` (``scalenorm``): a subclass of
    :class:`lnbench.nn.base.Norm` whose class attributes declare its capabilities (``has_beta``,
    ``uses_batch_statistics``, ``takes_timestep``, ``grouped_as_layer``); it is placed wherever
    the built-in norms are, on the Python path (the fused kernel covers the built-in classes only).
    ``lnbench.testing.check_norm`` runs the checks a built-in norm passes.

    Raises:
        ValueError: the module cannot be imported (whatever it raised on import: an ImportError, a
            SyntaxError, an error in its code), has no such class, or the class is not a Norm (one
            line naming ``spec`` and the error).
    """
    if spec in _PLUGINS:
        return _PLUGINS[spec]
    module, _, name = entry_point_norms().get(spec, spec).partition(":")
    try:
        imported = pkgutil.resolve_name(f"{module}:")  # the module itself: its own import errors propagate
    except ImportError as exc:
        hint = _path_hint(module) if isinstance(exc, ModuleNotFoundError) else ""
        raise ValueError(f"norm {spec!r}: cannot import {module} ({' '.join(str(exc).split())}){hint}") from None
    except Exception as exc:  # the user's module is broken (a SyntaxError, an error at import): one line too
        error = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ValueError(f"norm {spec!r}: cannot import {module} ({error})") from None
    cls = getattr(imported, name, None)
    if cls is None:
        raise ValueError(f"norm {spec!r}: {module} has no {name}")
    if not (isinstance(cls, type) and issubclass(cls, Norm)):
        raise ValueError(f"norm {spec!r}: {name} is not a subclass of lnbench.nn.Norm")
    entry = NormKind(spec, cls)
    _PLUGINS[spec] = entry
    return entry


def build_norm(
    kind: str,
    features: int,
    model_cfg: ModelConfig | None = None,
    members: int | None = None,
    recurrent: bool = False,
    *,
    seq_len: int | None = None,
) -> nn.Module:
    """Return the normalization layer for ``kind`` (:meth:`NormKind.build`; ``none`` and ``weight``:
    the identity).

    Args:
        kind: one of :data:`lnbench.names.NORM_KINDS`, or a user's ``"package.module:ClassName"``.
        features: the size of the normalized last axis.
        model_cfg: the model's options (the norm's own keys, the gain); None: the schema's defaults.
        members, recurrent, seq_len: see :meth:`NormKind.build`.

    Raises:
        ValueError: for any other ``kind``, naming the allowed kinds; from the layer for bad options.
    """
    entry = norm_kind(kind)
    return entry.build(features, ModelConfig() if model_cfg is None else model_cfg, members, recurrent, seq_len=seq_len)
