"""What the command line needs of the config before the schema (pydantic) is imported: the error
a user can fix and the range of a seed. Imports nothing but the torch-free vocabulary
(:data:`lnbench.names.options.MAX_SEED`), so that ``--help`` answers at once."""

from __future__ import annotations

from lnbench.names.options import MAX_SEED  # numpy's default_rng and torch.manual_seed both take [0, 2**32)

__all__ = ["MAX_SEED", "ConfigError"]


class ConfigError(ValueError):
    """A config or override the user can fix; the message is one line naming file and key."""
