"""The norms and models, written by hand: one file per norm, the C++ LayerNorm kernel, the NumPy
LayerNorm with its backward, the model families, the invariance table and the gradient checks."""

from lnbench.nn.base import Norm  # the base class of every norm, a user's own too (lnbench.testing.check_norm)

__all__ = ["Norm"]
