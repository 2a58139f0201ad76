"""The model families' registry (:data:`FAMILY_REGISTRY`, one :class:`FamilyInfo` each): every fact
about a family that the config, the checks, the experiments and the reports need (its keys, its
memory, its cost, its builder, which cells train their seeds as one ensemble), without torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lnbench.names.norms import GAINLESS_NORMS
from lnbench.names.options import KeyOption, joined
from lnbench.names.user_norms import norm_has_member_axis


def _rnn_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    # per layer (layer 1 reads D features, the others H); per timestep and layer: summed inputs,
    # statistics, x_hat, tanh, gradients
    L = m.num_layers
    return L * (H * H + 2 * H) + H * D + (L - 1) * H * H, L * 10 * H, 0


def _lstm_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    # per layer W_h, W_x (layer 1 reads D features, the others H), b, three norms' gains and biases;
    # per timestep and layer the 4H terms, their norms, the gates, c_t, norm_c(c_t) and their gradients
    L = m.num_layers
    return L * (4 * H * H + 20 * H) + 4 * H * D + (L - 1) * 4 * H * H, L * 40 * H, 0


def _transformer_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    d_ff = m.d_ff or 4 * H
    return (
        D * H + m.num_layers * (4 * H * H + 2 * H * d_ff) + T * H,
        m.num_layers * (12 * H + 2 * d_ff),
        m.num_layers * 3 * T * T,
    )


def _mlp_memory(H: int, D: int, T: int, m: Any) -> tuple[int, int, int]:
    # T * D inputs (one vector), L hidden layers of H; per example and layer the summed inputs,
    # statistics, x_hat, the ReLU and their gradients (spread over the T "tokens" of the input)
    L = m.num_layers
    return T * D * H + (L - 1) * H * H + L * 4 * H, max(1, L * 10 * H // T), 0


def _always(norm: str, batch_size: int) -> bool:
    return True


def _never(norm: str, batch_size: int) -> bool:
    """The MLP's seeds train one after another: Ba et al.'s 784-1000-1000-10 network is bound by
    its weights, not by the recurrence's step count, and a 20-member ensemble cost 1.8x (batch
    size 4) and 1.4x (batch size 128) a solo run per member (one thread, a busy 2-core machine,
    2026-12-04); the members are bit for bit the same either way."""
    return False


def _transformer_ensemble(norm: str, batch_size: int) -> bool:
    return batch_size <= TRANSFORMER_ENSEMBLE_MAX_BATCH and norm_has_member_axis(norm)


#: The LSTM's seeds train as one ensemble while a member's T x B x H is below this and its hidden
#: size below :data:`LSTM_ENSEMBLE_MAX_HIDDEN`; above either, one after another (docs/speed.md,
#: "The ensemble's bound": a 5-member step per seed over one seed's step, none / LN / BN, one
#: thread, was 0.38-0.49 at T B H <= 5k, 0.83-0.98 at 20-26k, 0.90-1.03 at the default 82k, and
#: 0.98-1.17 at 102k, 0.92-1.18 at 229k, 1.0-1.8 at 401-802k; at H 512 the members' weights no
#: longer share the cache).
LSTM_ENSEMBLE_MAX_TBH = 1 << 17
LSTM_ENSEMBLE_MAX_HIDDEN = 512


def _lstm_member_fits(batch_size: int, seq_len: int, hidden_size: int) -> bool:
    return seq_len * batch_size * hidden_size < LSTM_ENSEMBLE_MAX_TBH and hidden_size < LSTM_ENSEMBLE_MAX_HIDDEN


@dataclass(frozen=True)
class FamilyInfo:
    """One entry of the model-family registry (:data:`FAMILY_REGISTRY`): every fact about a family
    that the config, the checks, the experiments and the reports need, without importing torch.

    Attributes:
        label: its name in tables, legends and verdicts.
        recurrent: a recurrence over timesteps (its state is h_t; figures label it so).
        placements: the norm placements it is compared in (each its own group), or ``()``.
        options: the ``model`` keys that apply to it alone, each declared once (:class:`KeyOption`:
            type, default, bounds, allowed values, description), a key two families share by the same
            declaration (``num_layers``, like ``hidden_size``, applies to every family;
            :mod:`lnbench.config.ownership`). :attr:`keys` are their names.
        seeds_together: ``(norm, batch size) -> bool``: whether a cell's seeds train as one ensemble.
        member_fits: ``(batch size B, sequence length T, hidden size H) -> bool``: whether a member
            of that size still trains in an ensemble (where ``seeds_together`` says it does); None:
            at any size.
        memory: ``(H, D, T, model config) -> (parameters, activation values per token, attention
            values per example)`` for :func:`lnbench.config.checks.memory_needed`.
        cost: a member's relative cost per training step of one layer (the one-layer RNN's: 1), for
            scheduling (:func:`lnbench.experiments.cells.step_cost` multiplies it by ``model.num_layers``).
        builder: ``"module:Class"`` of its model, built as ``Class(model_cfg, input_size=,
            seq_len=, num_classes=)``.
        paper_gains: norm -> the initial gain of its norms in its paper, where not 1 (the
            BN-LSTM's 0.1, Cooijmans et al. 2016, section 4.2).
        saturating_units: the units its saturation probe counts (``tanh``; the LSTM's ``gate``).
        reads_vectors: it reads one feature vector per example (a task of T = 1: MNIST's ``flat``
            order), not a sequence; the other families read sequences of T >= 2
            (:func:`lnbench.config.checks.check_family_reads_task`).
        summary: what it is, in the config reference (``model.family``'s description).
    """

    label: str
    recurrent: bool
    placements: tuple[str, ...]
    options: dict[str, KeyOption]
    seeds_together: Callable[[str, int], bool]
    memory: Callable[[int, int, int, Any], tuple[int, int, int]]
    cost: float
    builder: str
    paper_gains: dict[str, float] = field(default_factory=dict)
    saturating_units: str = "tanh"  # what its saturation probe counts, as figures name it
    reads_vectors: bool = False
    summary: str = ""
    member_fits: Callable[[int, int, int], bool] | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        """The ``model`` keys that apply to it alone (its :attr:`options`' names)."""
        return tuple(self.options)


#: The model families: config name -> its entry.
FAMILY_REGISTRY: dict[str, FamilyInfo] = {}

#: The model families: config name -> label in tables, legends and verdicts.
FAMILIES: dict[str, str] = {}


def register_family(name: str, info: FamilyInfo) -> None:
    """Add a model family (a test's toy family, a user's own). The config's ``model.family``
    accepts the built-in names; a family registered later is for the library's API."""
    FAMILY_REGISTRY[name] = info
    FAMILIES[name] = info.label


def has_placements(family: str) -> bool:
    """Whether ``family`` is compared per norm placement (the RNN's joint and separate)."""
    return family in FAMILY_REGISTRY and bool(FAMILY_REGISTRY[family].placements)


def paper_gain_init(family: str, norm: str) -> float | None:
    """The initial gain of a model's norms in its paper (what ``model.norm_gain_init: null`` gives):
    0.1 for the BN-LSTM (Cooijmans et al. 2016, section 4.2), 1 otherwise (Ba et al. 2016;
    PyTorch's); None for a norm without a gain (:data:`GAINLESS_NORMS`)."""
    if norm in GAINLESS_NORMS:
        return None
    info = FAMILY_REGISTRY.get(family)
    return info.paper_gains.get(norm, 1.0) if info is not None else 1.0


#: The largest batch size at which a Transformer cell trains its seeds as one ensemble: above it a
#: step is compute, not per-op overhead, and an ensemble does not pay (docs/speed.md).
TRANSFORMER_ENSEMBLE_MAX_BATCH = 16


def seeds_train_together(
    family: str, norm: str, batch_size: int, seq_len: int | None = None, hidden_size: int | None = None
) -> bool:
    """Whether the seeds of a cell of this family, norm and batch size train as one ensemble
    (one model with a member axis): always for the RNN; for the LSTM while a member is small
    enough (:data:`LSTM_ENSEMBLE_MAX_TBH`, :data:`LSTM_ENSEMBLE_MAX_HIDDEN`; checked when
    ``seq_len`` and ``hidden_size`` are given); for the Transformer up to batch size
    :data:`TRANSFORMER_ENSEMBLE_MAX_BATCH` with a norm that has a member axis
    (:func:`norm_has_member_axis`); never for the MLP. See
    :func:`lnbench.experiments.base.ensemble_mechanism`."""
    info = FAMILY_REGISTRY[family]
    if not info.seeds_together(norm, batch_size):
        return False
    if info.member_fits is None or seq_len is None or hidden_size is None:
        return True
    return info.member_fits(batch_size, seq_len, hidden_size)


#: The ``model`` keys of the families' own, each declared once; the RNN and the LSTM share theirs.
BATCH_NORM_STATS = KeyOption(
    str,
    "pooled",
    "RNN with norm batch only: the running statistics used in eval mode. pooled: one set, "
    "updated once per training step from the mean of the timesteps' batch statistics; per_timestep: one "
    "set per timestep (Cooijmans et al. 2016). Training is the same for both.",
    choices=("pooled", "per_timestep"),
)
NORM_PLACEMENT = KeyOption(
    str,
    "joint",
    "RNN only: where the norm sits. joint: h_t = tanh(norm(W_hh h_{t-1} + W_xh x_t)) "
    "(Ba et al. eq. 4); separate: h_t = tanh(norm_h(W_hh h_{t-1}) + norm_x(W_xh x_t) + b), each term "
    "with its own gain and bias (the paper's layer-normalized LSTM, section 3.1).",
    choices=("joint", "separate"),
)
RECURRENT_INIT = KeyOption(
    str,
    "uniform",
    "RNN and LSTM: initialisation of the recurrent weights. uniform: torch.nn.RNN's and "
    "torch.nn.LSTM's U(-1/sqrt(H), 1/sqrt(H)); orthogonal (torch.nn.init.orthogonal_): the RNN's W_hh, the "
    "LSTM's whole (4H, H) W_h; identity: the RNN's W_hh = I (Le et al. 2015's IRNN), the LSTM's cell-input "
    "block of W_h = I and its three gate blocks one orthogonal (3H, H) matrix (Cooijmans et al. 2016's "
    "--init id). The RNN's W_hh is then times recurrent_gain.",
    choices=("uniform", "orthogonal", "identity"),
)
RECURRENT_GAIN = KeyOption(
    float,
    1.0,
    "RNN only: factor on W_hh's initial weights. With orthogonal, every singular value of "
    "W_hh is this gain (> 1: an expanding recurrence).",
    gt=0,
)
STATE_NOISE_STD = KeyOption(
    float,
    0.0,
    "RNN and LSTM: the initial state h_0 of every layer drawn per example from N(0, std^2) "
    "(Cooijmans et al. 2016's --noise: 0.1 on sequential MNIST, where blank first pixels otherwise keep h at "
    "exactly 0); c_0 stays 0. In training a fresh draw every step from the seed's generator; in evaluation "
    "from one fixed generator, the same noise on the same example for every norm and seed. 0: h_0 = 0.",
    ge=0,
    added=True,
)
FORGET_BIAS = KeyOption(
    float,
    1.0,
    "LSTM only: the initial value of the forget gate's slice of the bias b (the other gates' "
    "start at 0), for every norm. 1 (Gers et al. 2000; Jozefowicz et al. 2015; Cooijmans et al. 2016) keeps "
    "c_{t-1} at the start; 0 is torch.nn.LSTM's expected value.",
)
D_FF = KeyOption(
    int, None, "Transformer only: width of the feed-forward layer; null: 4 * hidden_size.", ge=1, nullable=True
)
POS_EMB = KeyOption(
    str,
    "sinusoidal",
    "Transformer only: the position encoding added after the input projection, sinusoidal "
    "(fixed; Vaswani et al. 2017, section 3.5) or learned (a (T, H) parameter).",
    choices=("sinusoidal", "learned"),
)
POS_EMB_STD = KeyOption(
    float,
    1.0,
    "Transformer with learned positions only: standard deviation of their N(0, std^2) "
    "initialisation (the seed notebook used 0.02).",
    gt=0,
)
INPUT_NORM = KeyOption(
    bool,
    True,
    "Transformer only: apply the model's norm to the input projection W_in x_t before the "
    "positions are added (the projection then has no bias); with LayerNorm the model is then invariant "
    f"to each sequence's scale. No effect with norm {joined(GAINLESS_NORMS)}.",
)


register_family(
    "rnn",
    FamilyInfo(
        "RNN",
        recurrent=True,
        placements=NORM_PLACEMENT.choices or (),
        options={
            "batch_norm_stats": BATCH_NORM_STATS,
            "norm_placement": NORM_PLACEMENT,
            "recurrent_init": RECURRENT_INIT,
            "recurrent_gain": RECURRENT_GAIN,
            "state_noise_std": STATE_NOISE_STD,
        },
        seeds_together=_always,
        memory=_rnn_memory,
        cost=1.0,
        builder="lnbench.nn.rnn:SimpleRNN",
        summary="a tanh RNN, SimpleRNN",
    ),
)
register_family(
    "lstm",
    FamilyInfo(
        "LSTM",
        recurrent=True,
        placements=(),
        options={"forget_bias": FORGET_BIAS, "recurrent_init": RECURRENT_INIT, "state_noise_std": STATE_NOISE_STD},
        seeds_together=_always,
        member_fits=_lstm_member_fits,
        memory=_lstm_memory,
        cost=2.5,  # a member's step on the fused kernel: 2-3x an RNN member's (docs/speed.md, 2026-12-03)
        builder="lnbench.nn.lstm:LSTM",
        paper_gains={"batch": 0.1},
        saturating_units="gate",
        summary="an LSTM, lnbench.nn.lstm.LSTM: with norm layer Ba et al.'s LN-LSTM, with batch Cooijmans et al.'s "
        "BN-LSTM",
    ),
)
register_family(
    "transformer",
    FamilyInfo(
        "Transformer (pre-norm)",
        recurrent=False,
        placements=(),
        options={"d_ff": D_FF, "pos_emb": POS_EMB, "pos_emb_std": POS_EMB_STD, "input_norm": INPUT_NORM},
        seeds_together=_transformer_ensemble,
        memory=_transformer_memory,
        cost=2.0,
        builder="lnbench.nn.transformer:TransformerClassifier",
        summary="a single-head pre-norm Transformer, TransformerClassifier",
    ),
)
register_family(
    "mlp",
    FamilyInfo(
        "MLP",
        recurrent=False,
        placements=(),
        options={},
        seeds_together=_never,
        memory=_mlp_memory,
        cost=1.0,
        builder="lnbench.nn.mlp:MLP",
        reads_vectors=True,
        summary="a feed-forward network, lnbench.nn.mlp.MLP: Ba et al.'s 784-H-..-H-10 permutation-invariant MNIST "
        "model, a norm on every hidden layer; it reads one vector per example, data.mnist_order flat",
    ),
)
FAMILY_NAMES = tuple(FAMILY_REGISTRY)  # the built-in families, in table order
