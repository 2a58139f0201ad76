"""lnbench: an experiment runner for studying Layer Normalization (Ba, Kiros, Hinton 2016).

The library is usable without the CLI; every command is a function in
:mod:`lnbench.experiments`.
"""

__version__ = "0.1.0"
