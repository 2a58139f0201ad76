"""What the command line needs of the config before the schema (pydantic) is imported: the error
a user can fix and the range of a seed. Imports nothing, so that ``--help`` answers at once."""

from __future__ import annotations


class ConfigError(ValueError):
    """A config or override the user can fix; the message is one line naming file and key."""


MAX_SEED = 2**32 - 1  # numpy's default_rng and torch.manual_seed both take [0, 2**32)
