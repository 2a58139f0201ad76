"""The norm layers under their historical import path: ``from lnbench.nn.norms import LayerNorm``.

One file per norm: :mod:`lnbench.nn.layernorm`, :mod:`lnbench.nn.batchnorm`,
:mod:`lnbench.nn.rmsnorm`, :mod:`lnbench.nn.weightnorm`; what they share in :mod:`lnbench.nn.base`;
the norm kinds and their capabilities in :mod:`lnbench.nn.registry`.
"""

from lnbench.names import NORM_KINDS, NORM_NAMES, norm_color, norm_label
from lnbench.nn.base import Norm, SingleValueWarning
from lnbench.nn.batchnorm import BatchNorm1d, RecurrentBatchNorm1d, SingleValueBatchWarning, batch_statistics
from lnbench.nn.layernorm import LayerNorm, NormalizeAffine
from lnbench.nn.registry import NORMS, NormKind, build_norm, norm_kind
from lnbench.nn.rmsnorm import RMSNorm

__all__ = [
    "NORMS",
    "NORM_KINDS",
    "NORM_NAMES",
    "BatchNorm1d",
    "LayerNorm",
    "Norm",
    "NormKind",
    "NormalizeAffine",
    "RMSNorm",
    "RecurrentBatchNorm1d",
    "SingleValueBatchWarning",
    "SingleValueWarning",
    "batch_statistics",
    "build_norm",
    "norm_color",
    "norm_kind",
    "norm_label",
]
