"""The ``model`` section of the config: which model to build (:func:`lnbench.nn.models.build_model`),
with each norm kind's own keys declared in its registry entry (:attr:`lnbench.names.NormInfo.options`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from lnbench.config.identity import NORM_OPTION_DEFAULTS
from lnbench.config.sections import Family, Norm, Section
from lnbench.config.words import described, joined
from lnbench.names import FAMILY_NAMES, FAMILY_REGISTRY, GAINLESS_NORMS, NORM_REGISTRY


def _declare_norm_options(namespace: dict[str, Any]) -> None:
    """Add each norm kind's own keys (:attr:`lnbench.names.NormInfo.options`) to the class body
    ``namespace`` being defined, as fields with their type, default, bounds and description: a
    norm's option is declared once, in its registry entry, and validated here like any key."""
    for info in NORM_REGISTRY.values():
        for key, option in info.options.items():
            kind: Any = StrictBool if option.type is bool else option.type  # not 1, "yes"
            namespace["__annotations__"][key] = Literal[option.choices] if option.choices else kind
            namespace[key] = Field(
                option.default, ge=option.ge, gt=option.gt, le=option.le, description=option.description
            )


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
    d_ff: int | None = Field(
        None, ge=1, description="Transformer only: width of the feed-forward layer; null: 4 * hidden_size."
    )
    batch_norm_stats: Literal["pooled", "per_timestep"] = Field(
        "pooled",
        description="RNN with norm batch only: the running statistics used in eval mode. pooled: one set, "
        "updated once per training step from the mean of the timesteps' batch statistics; per_timestep: one "
        "set per timestep (Cooijmans et al. 2016). Training is the same for both.",
    )
    norm_placement: Literal["joint", "separate"] = Field(
        "joint",
        description="RNN only: where the norm sits. joint: h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t)) "
        "(Ba et al. eq. 4); separate: h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b), each term "
        "with its own gain and bias (the paper's layer-normalized LSTM, section 3.1).",
    )
    recurrent_init: Literal["uniform", "orthogonal", "identity"] = Field(
        "uniform",
        description="RNN and LSTM: initialisation of the recurrent weights. uniform: torch.nn.RNN's and "
        "torch.nn.LSTM's U(-1/sqrt(H), 1/sqrt(H)); orthogonal (torch.nn.init.orthogonal_): the RNN's W_hh, the "
        "LSTM's whole (4H, H) W_h; identity: the RNN's W_hh = I (Le et al. 2015's IRNN), the LSTM's cell-input "
        "block of W_h = I and its three gate blocks one orthogonal (3H, H) matrix (Cooijmans et al. 2016's "
        "--init id). The RNN's W_hh is then times recurrent_gain.",
    )
    recurrent_gain: float = Field(
        1.0,
        gt=0,
        description="RNN only: factor on W_hh's initial weights. With orthogonal, every singular value of "
        "W_hh is this gain (> 1: an expanding recurrence).",
    )
    pos_emb: Literal["sinusoidal", "learned"] = Field(
        "sinusoidal",
        description="Transformer only: the position encoding added after the input projection, sinusoidal "
        "(fixed; Vaswani et al. 2017, section 3.5) or learned (a (T, H) parameter).",
    )
    pos_emb_std: float = Field(
        1.0,
        gt=0,
        description="Transformer with learned positions only: standard deviation of their N(0, std^2) "
        "initialisation (the seed notebook used 0.02).",
    )
    forget_bias: float = Field(
        1.0,
        description="LSTM only: the initial value of the forget gate's slice of the bias b (the other gates' "
        "start at 0), for every norm. 1 (Gers et al. 2000; Jozefowicz et al. 2015; Cooijmans et al. 2016) keeps "
        "c_{t-1} at the start; 0 is torch.nn.LSTM's expected value.",
    )
    norm_eps: float = Field(
        1e-5,
        gt=0,
        description="The eps of every norm layer, added to the variance (or mean square) inside the square root, in "
        "every family and norm position, the C++ kernels and the Python path alike (a user's norm: its self.eps). "
        "TensorFlow's LayerNormBasicLSTMCell needed 1e-3 where inputs have zero variance (tensorflow#21929); "
        "at an all-zero input a norm's Jacobian is gamma/sqrt(eps).",
    )
    state_noise_std: float = Field(
        0.0,
        ge=0,
        description="RNN and LSTM: the initial state h_0 of every layer drawn per example from N(0, std^2) "
        "(Cooijmans et al. 2016's --noise: 0.1 on sequential MNIST, where blank first pixels otherwise keep h at "
        "exactly 0); c_0 stays 0. In training a fresh draw every step from the seed's generator; in evaluation "
        "from one fixed generator, the same noise on the same example for every norm and seed. 0: h_0 = 0.",
    )
    norm_gain_init: float | None = Field(
        None,
        gt=0,
        description="The initial value of every norm layer's gain gamma (the paper's g), in every family and "
        "norm position; null: each model's paper (1, and 0.1 for the BN-LSTM's gains: Cooijmans et al. 2016, "
        "section 4.2). Set it to compare norms at equal initial gains (model.norm_gain_init: 0.1). No effect with "
        f"norm {joined(GAINLESS_NORMS)} (weight norm's g starts at the rows' norms).",
    )
    # each norm kind's own keys (GroupNorm's norm_groups), declared in its registry entry
    _declare_norm_options(locals())
    input_norm: StrictBool = Field(
        True,
        description="Transformer only: apply the model's norm to the input projection W_in x_t before the "
        "positions are added (the projection then has no bias); with LayerNorm the model is then invariant "
        f"to each sequence's scale. No effect with norm {joined(GAINLESS_NORMS)}.",
    )

    def norm_option(self, key: str) -> Any:
        """The value of a norm kind's own key (``norm_option("norm_groups")``: GroupNorm's G), one of
        :attr:`lnbench.names.NormInfo.options` (fields the type checker does not see).

        Raises:
            KeyError: no norm kind declares ``key``.
        """
        if f"model.{key}" not in NORM_OPTION_DEFAULTS:
            raise KeyError(f"model.{key}: no norm kind declares it; declared: {sorted(NORM_OPTION_DEFAULTS)}")
        return getattr(self, key)
