"""The norms and models, written by hand: one file per norm, the C++ LayerNorm kernel, the NumPy
LayerNorm with its backward, the model families, the invariance table and the gradient checks."""
