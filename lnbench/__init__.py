"""lnbench: an experiment runner for studying Layer Normalization (Ba, Kiros, Hinton 2016).

The library is usable without the CLI; every command is a function in
:mod:`lnbench.experiments`. ``lnbench.load_model(RUN_DIR)`` rebuilds a run's
trained model from its config.yaml and weights.pt (:mod:`lnbench.training.checkpoints`).
"""

__version__ = "0.1.0"

__all__ = ["load_model"]


def __getattr__(name: str):  # torch only when asked for: `import lnbench` stays light
    if name == "load_model":
        from lnbench.training.checkpoints import load_model

        return load_model
    raise AttributeError(f"module 'lnbench' has no attribute {name!r}")
