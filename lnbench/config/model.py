"""The ``model`` section of the config: which model to build (:func:`lnbench.nn.models.build_model`),
with each norm kind's own keys declared in its registry entry (:attr:`lnbench.names.NormInfo.options`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from lnbench.config.identity import NORM_OPTION_DEFAULTS
from lnbench.config.options import declare as _declare
from lnbench.config.sections import Family, Norm, Section
from lnbench.config.words import described, joined
from lnbench.names import FAMILY_NAMES, FAMILY_REGISTRY, GAINLESS_NORMS, NORM_REGISTRY, KeyOption


def _family_options(*keys: str) -> dict[str, KeyOption]:
    """The families' own keys (:attr:`lnbench.names.FamilyInfo.options`): ``keys`` in that order,
    or with none given every one (the config reference's order: a new key comes after these).

    Raises:
        TypeError: two families declare one key differently."""
    every: dict[str, KeyOption] = {}
    for info in FAMILY_REGISTRY.values():
        for key, option in info.options.items():
            if every.setdefault(key, option) != option:  # two families share a key by sharing its declaration
                raise TypeError(f"model.{key}: declared differently by two families; give both the same KeyOption")
    return {key: every[key] for key in keys} if keys else every


class ModelConfig(Section):
    """Which model to build (:func:`lnbench.nn.models.build_model`)."""

    family: Family = Field(
        "rnn",
        description=f"Model family: {described([(n, FAMILY_REGISTRY[n].summary) for n in FAMILY_NAMES])}.",
    )
    norm: Norm = Field(
        "layer",
        description=f"Normalization: {described([(kind, info.summary) for kind, info in NORM_REGISTRY.items()])}; "
        "or a user's norm class 'package.module:ClassName'.",
    )
    hidden_size: int = Field(
        64,
        ge=1,
        description="Hidden size H: the RNN's state size or the Transformer's model width; the features D a "
        "norm normalizes.",
    )
    num_layers: int = Field(
        1,
        ge=1,
        description="The number of layers: the RNN's and the LSTM's stacked recurrent layers (layer l > 1 reads "
        "layer l - 1's h_1 .. h_T; every layer with its own norms and gains; the head reads the top layer's h_T), "
        "the Transformer's pre-norm blocks.",
    )
    # the families' own keys, each declared in its registry entry (FamilyInfo.options), here in the
    # config's order; the type checker sees them below
    _declare(locals(), _family_options("d_ff", "batch_norm_stats", "norm_placement", "recurrent_init"))
    _declare(locals(), _family_options("recurrent_gain", "pos_emb", "pos_emb_std", "forget_bias"))
    norm_eps: float = Field(
        1e-5,
        gt=0,
        description="The eps of every norm layer, added to the variance (or mean square) inside the square root, in "
        "every family and norm position, the C++ kernels and the Python path alike (a user's norm: its self.eps). "
        "TensorFlow's LayerNormBasicLSTMCell needed 1e-3 where inputs have zero variance (tensorflow#21929); "
        "at an all-zero input a norm's Jacobian is gamma/sqrt(eps).",
    )
    _declare(locals(), _family_options("state_noise_std"))
    norm_gain_init: float | None = Field(
        None,
        gt=0,
        description="The initial value of every norm layer's gain gamma (the paper's g), in every family and "
        "norm position; null: each model's paper (1, and 0.1 for the BN-LSTM's gains: Cooijmans et al. 2016, "
        "section 4.2). Set it to compare norms at equal initial gains (model.norm_gain_init: 0.1). No effect with "
        f"norm {joined(GAINLESS_NORMS)} (weight norm's g starts at the rows' norms).",
    )
    # each norm kind's own keys (GroupNorm's norm_groups), declared in its registry entry
    _declare(locals(), {key: option for info in NORM_REGISTRY.values() for key, option in info.options.items()})
    _declare(locals(), _family_options("input_norm"))
    _declare(locals(), _family_options())  # any other family's keys, after the built-in ones
    if TYPE_CHECKING:  # the keys declared from the registry (above) are fields the type checker does not see

        def __getattr__(self, key: str) -> Any: ...

    def norm_option(self, key: str) -> Any:
        """The value of a norm kind's own key (``norm_option("norm_groups")``: GroupNorm's G), one of
        :attr:`lnbench.names.NormInfo.options` (fields the type checker does not see).

        Raises:
            KeyError: no norm kind declares ``key``.
        """
        if f"model.{key}" not in NORM_OPTION_DEFAULTS:
            raise KeyError(f"model.{key}: no norm kind declares it; declared: {sorted(NORM_OPTION_DEFAULTS)}")
        return getattr(self, key)
