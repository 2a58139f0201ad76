"""lnbench: an experiment runner for studying Layer Normalization (Ba, Kiros, Hinton 2016).

The library is usable without the CLI; every command is a function in
:mod:`lnbench.experiments`. ``lnbench.load(RUN_DIR, ...)`` reads run folders into pandas
DataFrames (:mod:`lnbench.records.tidy`); ``lnbench.load_model(RUN_DIR)`` rebuilds a run's
trained model from its config.yaml and weights.pt (:mod:`lnbench.training.checkpoints`).
"""

__version__ = "0.1.0"

__all__ = ["load", "load_model"]


def __getattr__(name: str):  # pandas and torch only when asked for: `import lnbench` stays light
    if name == "load":
        from lnbench.records.tidy import load

        return load
    if name == "load_model":
        from lnbench.training.checkpoints import load_model

        return load_model
    raise AttributeError(f"module 'lnbench' has no attribute {name!r}")
