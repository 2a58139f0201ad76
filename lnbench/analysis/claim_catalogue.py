"""The claims ``lnbench claims`` tests, written once: each a :class:`Claim` of two
:class:`Condition` s of one model family in one regime, with its metric, direction and margin.

The verdict rules that read them are in :mod:`lnbench.analysis.claims`; the regimes (preset
configs) are loaded by :mod:`lnbench.experiments.claim_regimes`. A new claim is one more entry of
:data:`CLAIMS` (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lnbench.config import ConfigError
from lnbench.names import GAINLESS_NORMS, norm_label, paper_gain_init

if TYPE_CHECKING:
    from lnbench.config import RunConfig


@dataclass(frozen=True)
class Condition:
    """One side of a claim: a norm, a batch size (None: the regime's ``train.batch_size``) and an
    initial gain of the norms (``model.norm_gain_init``; None: the regime's, by default each paper's)."""

    norm: str
    batch_size: int | None = None
    gain: float | None = None

    def label(self) -> str:
        return (
            norm_label(self.norm)
            + (f" (gains {self.gain:g})" if self.gain is not None else "")
            + (f" at batch size {self.batch_size}" if self.batch_size is not None else "")
        )

    def batch_size_in(self, regime: RunConfig) -> int:
        """Its batch size in ``regime``."""
        return self.batch_size if self.batch_size is not None else regime.train.batch_size

    def gain_in(self, family: str, regime: RunConfig) -> float | None:
        """Its ``model.norm_gain_init`` in ``regime``: its gain, or the regime's; None (the paper's)
        where that is the same model (a gain equal to the paper's, or a norm without a gain), so
        that the same model is trained once."""
        if self.gain is None or self.norm in GAINLESS_NORMS:
            return None if self.norm in GAINLESS_NORMS else regime.model.norm_gain_init
        if regime.model.norm_gain_init is None and self.gain == paper_gain_init(family, self.norm):
            return None
        return self.gain

    def setting(self, family: str, regime_name: str, regime: RunConfig) -> tuple:
        """The key of its rows (:func:`setting_key`)."""
        return setting_key(regime_name, family, self.norm, self.batch_size_in(regime), self.gain_in(family, regime))


def setting_key(regime: str, family: str, norm: str, batch_size: int, norm_gain_init: float | None) -> tuple:
    """The key of a setting's rows: ``(regime, family, norm, batch size)``, and its
    ``model.norm_gain_init`` when one is set (``(..., 64, 0.1)``)."""
    return (regime, family, norm, batch_size) + (() if norm_gain_init is None else (norm_gain_init,))


@dataclass(frozen=True)
class Claim:
    """A claim: ``a`` versus ``b`` on ``metric`` for ``family`` in ``regime`` (see the module
    docstring for ``direction`` and ``margin``)."""

    id: str
    text: str
    regime: str
    family: str
    metric: str
    a: Condition
    b: Condition
    direction: str  # "less" (a < b) or "equal" (|a - b| < margin)
    margin: float
    why: str = ""  # why this regime is where the claim can show
    #: a difference in differences: the effect is (a - b) - (net[0] - net[1]), seed by seed, e.g.
    #: [LN(1) - LN(64)] - [none(1) - none(64)]: what a norm adds beyond what the other conditions
    #: (the optimizer's step count) already do to every model. None: the effect is a - b.
    net: tuple[Condition, Condition] | None = None

    def sides_label(self) -> str:
        """``LayerNorm vs NoNorm``; a difference in differences
        ``(LayerNorm at batch size 1 minus at 64) vs (NoNorm at batch size 1 minus at 64)``."""
        if self.net is None:
            return f"{self.a.label()} vs {self.b.label()}"
        return f"({self.a.label()} minus {self.b.label()}) vs ({self.net[0].label()} minus {self.net[1].label()})"

    @property
    def conditions(self) -> tuple[Condition, ...]:
        """Every condition it needs trained: a, b and those of ``net``."""
        return (self.a, self.b) + (self.net or ())

    @property
    def references(self) -> tuple[Condition, ...]:
        """The conditions an accuracy is measured against (b, and net's second): at chance, nothing
        can degrade from them."""
        return (self.b,) + ((self.net[1],) if self.net else ())


#: The claims ``lnbench claims`` evaluates, in table order.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="rnn_faster_default",
        text="LayerNorm converges faster than NoNorm",
        regime="default",
        family="rnn",
        metric="mean_train_loss",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.02,
        why="the default task, joint placement (Ba et al. eq. 4)",
    ),
    Claim(
        id="rnn_separate_learns",
        text="Normalizing the recurrent and input terms separately lets the RNN learn the memory task that NoNorm cannot",
        regime="separate_placement",
        family="rnn",
        metric="final_test_acc",
        a=Condition("none"),
        b=Condition("layer"),
        direction="less",
        margin=0.02,
        why="the default task with norm(W_hh h) + norm(W_xh x), the form of the paper's LN-LSTM",
    ),
    Claim(
        id="rnn_joint_does_not_learn",
        text="In the joint placement LayerNorm does not let the RNN learn more than NoNorm",
        regime="default",
        family="rnn",
        metric="final_test_acc",
        a=Condition("layer"),
        b=Condition("none"),
        direction="equal",
        margin=0.02,
        why="the default task, joint placement norm(W_hh h + W_xh x) (Ba et al. eq. 4)",
    ),
    Claim(
        id="rnn_separate_ln_vs_bn",
        text="In the separate placement LayerNorm is as accurate as BatchNorm (both gains start at 1)",
        regime="separate_placement",
        family="rnn",
        metric="final_test_acc",
        a=Condition("layer"),
        b=Condition("batch"),
        direction="equal",
        margin=0.02,
        why="the default task, separate placement, batch size 64; equal initial gains (1, both papers')",
    ),
    Claim(
        id="rnn_separate_ln_vs_bn_gain01",
        text="In the separate placement LayerNorm is as accurate as BatchNorm with both gains starting at 0.1",
        regime="separate_placement",
        family="rnn",
        metric="final_test_acc",
        a=Condition("layer", gain=0.1),
        b=Condition("batch", gain=0.1),
        direction="equal",
        margin=0.02,
        why="the default task, separate placement, batch size 64; equal initial gains 0.1 (the BN-LSTM's)",
    ),
    Claim(
        id="rnn_faster_unstable",
        text="LayerNorm converges faster than NoNorm",
        regime="unstable_recurrence",
        family="rnn",
        metric="mean_train_loss",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.02,
        why="an expanding recurrence: W_hh orthogonal x 3",
    ),
    Claim(
        id="rnn_scale_invariant",
        text="LayerNorm stabilises hidden-state dynamics against input scale",
        regime="large_input_scale",
        family="rnn",
        metric="abs_scale_spearman",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.1,
        why="input scales from 16 to 256",
    ),
    Claim(
        id="rnn_ln_batch_size",
        text="LayerNorm adds no batch-size dependence of its own (batch size 1 vs 64, net of NoNorm's)",
        regime="small_batches",
        family="rnn",
        metric="final_test_acc",
        a=Condition("layer", 1),
        b=Condition("layer", 64),
        direction="equal",
        margin=0.02,
        why="[LN(1) - LN(64)] - [NoNorm(1) - NoNorm(64)], same samples seen; every batch size trains the same epochs, so batch size 1 takes 64x the steps of 64: NoNorm's own change, net of which LayerNorm's is measured, is the step count's",
        net=(Condition("none", 1), Condition("none", 64)),
    ),
    Claim(
        id="rnn_bn_batch_size_1",
        text="BatchNorm degrades at batch size 1 beyond NoNorm's change (batch size 1 vs 64)",
        regime="small_batches",
        family="rnn",
        metric="final_test_acc",
        a=Condition("batch", 1),
        b=Condition("batch", 64),
        direction="less",
        margin=0.02,
        why="[BN(1) - BN(64)] - [NoNorm(1) - NoNorm(64)], same samples seen; the step count's effect is NoNorm's",
        net=(Condition("none", 1), Condition("none", 64)),
    ),
    Claim(
        id="tf_faster",
        text="LayerNorm converges faster than NoNorm",
        regime="default",
        family="transformer",
        metric="mean_train_loss",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.02,
        why="the default task and fair Transformer",
    ),
    Claim(
        id="tf_scale_invariant",
        text="LayerNorm stabilises hidden-state dynamics against input scale",
        regime="default",
        family="transformer",
        metric="abs_scale_spearman",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.1,
        why="input_norm on: invariant by construction (already at initialisation)",
    ),
    Claim(
        id="tf_scale_invariant_prenorm_only",
        text="LayerNorm stabilises hidden-state dynamics against input scale",
        regime="transformer_no_input_norm",
        family="transformer",
        metric="abs_scale_spearman",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.1,
        why="pre-norm LayerNorm only: the residual stream itself is not normalized",
    ),
    Claim(
        id="tf_ln_batch_size",
        text="LayerNorm adds no batch-size dependence of its own (batch size 1 vs 64, net of NoNorm's)",
        regime="small_batches_transformer",
        family="transformer",
        metric="final_test_acc",
        a=Condition("layer", 1),
        b=Condition("layer", 64),
        direction="equal",
        margin=0.02,
        why="[LN(1) - LN(64)] - [NoNorm(1) - NoNorm(64)], same samples seen; every batch size trains the same epochs, so batch size 1 takes 64x the steps of 64: NoNorm's own change, net of which LayerNorm's is measured, is the step count's",
        net=(Condition("none", 1), Condition("none", 64)),
    ),
    Claim(
        id="tf_bn_batch_size_1",
        text="BatchNorm degrades at batch size 1 beyond NoNorm's change (batch size 1 vs 64)",
        regime="small_batches_transformer",
        family="transformer",
        metric="final_test_acc",
        a=Condition("batch", 1),
        b=Condition("batch", 64),
        direction="less",
        margin=0.02,
        why="[BN(1) - BN(64)] - [NoNorm(1) - NoNorm(64)], same samples seen; the step count's effect is NoNorm's",
        net=(Condition("none", 1), Condition("none", 64)),
    ),
    Claim(
        id="lstm_faster",
        text="LayerNorm speeds up LSTM training",
        regime="lstm",
        family="lstm",
        metric="mean_train_loss",
        a=Condition("layer"),
        b=Condition("none"),
        direction="less",
        margin=0.02,
        why="the default task and budget; the paper's LN-LSTM (Ba et al. 2016, section 3.1)",
    ),
    Claim(
        id="lstm_ln_more_accurate",
        text="LayerNorm improves the LSTM's accuracy on the memory task",
        regime="lstm",
        family="lstm",
        metric="final_test_acc",
        a=Condition("none"),
        b=Condition("layer"),
        direction="less",
        margin=0.02,
        why="the default task: the class is in the trend across timesteps, not in any one of them",
    ),
    Claim(
        id="lstm_ln_vs_bn",
        text="In the LSTM, LayerNorm is as accurate as BatchNorm, each at its paper's initial gains (LN 1, BN 0.1)",
        regime="lstm",
        family="lstm",
        metric="final_test_acc",
        a=Condition("layer"),
        b=Condition("batch"),
        direction="equal",
        margin=0.02,
        why="the default task at batch size 64; Ba et al.'s LN-LSTM (gains 1) vs Cooijmans et al.'s BN-LSTM (gains 0.1): "
        "the norm and the initial gain differ",
    ),
    Claim(
        id="lstm_ln_vs_bn_gain01",
        text="At equal initial gains (0.1) the LN-LSTM is as accurate as the BN-LSTM: the BN-LSTM's advantage is its gain",
        regime="lstm",
        family="lstm",
        metric="final_test_acc",
        a=Condition("layer", gain=0.1),
        b=Condition("batch", gain=0.1),
        direction="equal",
        margin=0.02,
        why="the default task at batch size 64; only the norm differs (every gain starts at 0.1, Cooijmans et al.'s)",
    ),
    Claim(
        id="lstm_ln_vs_bn_gain1",
        text="At equal initial gains (1) the LN-LSTM is as accurate as the BN-LSTM",
        regime="lstm",
        family="lstm",
        metric="final_test_acc",
        a=Condition("layer", gain=1.0),
        b=Condition("batch", gain=1.0),
        direction="equal",
        margin=0.02,
        why="the default task at batch size 64; only the norm differs (every gain starts at 1, Ba et al.'s)",
    ),
    Claim(
        id="lstm_ln_gain01_more_accurate",
        text="The LN-LSTM with gains starting at 0.1 is more accurate than with gains starting at 1",
        regime="lstm",
        family="lstm",
        metric="final_test_acc",
        a=Condition("layer", gain=1.0),
        b=Condition("layer", gain=0.1),
        direction="less",
        margin=0.02,
        why="the default task at batch size 64; only the initial gain differs (Cooijmans et al. section 4.2: a gain of "
        "1 saturates the tanh)",
    ),
    Claim(
        id="lstm_ln_faster_than_bn",
        text="In the LSTM, LayerNorm converges faster than BatchNorm",
        regime="lstm",
        family="lstm",
        metric="mean_train_loss",
        a=Condition("layer"),
        b=Condition("batch"),
        direction="less",
        margin=0.02,
        why="the default task at batch size 64; Ba et al. 2016, section 6.2 (the attentive reader): LN-LSTM trained "
        "faster than BN-LSTM; each at its paper's initial gains",
    ),
    Claim(
        id="lstm_ln_faster_than_bn_gain01",
        text="In the LSTM, LayerNorm converges faster than BatchNorm at equal initial gains (0.1)",
        regime="lstm",
        family="lstm",
        metric="mean_train_loss",
        a=Condition("layer", gain=0.1),
        b=Condition("batch", gain=0.1),
        direction="less",
        margin=0.02,
        why="the default task at batch size 64; only the norm differs (every gain starts at 0.1)",
    ),
    Claim(
        id="lstm_ln_batch_size",
        text="LayerNorm adds no batch-size dependence of its own (batch size 1 vs 64, net of NoNorm's)",
        regime="lstm_small_batches",
        family="lstm",
        metric="final_test_acc",
        a=Condition("layer", 1),
        b=Condition("layer", 64),
        direction="equal",
        margin=0.02,
        why="[LN(1) - LN(64)] - [NoNorm(1) - NoNorm(64)], same samples seen; every batch size trains the same epochs, so batch size 1 takes 64x the steps of 64: NoNorm's own change, net of which LayerNorm's is measured, is the step count's",
        net=(Condition("none", 1), Condition("none", 64)),
    ),
    Claim(
        id="lstm_bn_batch_size_1",
        text="BatchNorm degrades at batch size 1 beyond NoNorm's change (batch size 1 vs 64)",
        regime="lstm_small_batches",
        family="lstm",
        metric="final_test_acc",
        a=Condition("batch", 1),
        b=Condition("batch", 64),
        direction="less",
        margin=0.02,
        why="[BN(1) - BN(64)] - [NoNorm(1) - NoNorm(64)], same samples seen; the step count's effect is NoNorm's; BatchNorm of one value is its beta (0 for the two terms)",
        net=(Condition("none", 1), Condition("none", 64)),
    ),
    # the "LN speeds up training" claims again with SGD with momentum, not Adam (issue 33, D): does
    # the finding depend on the optimizer? Each regime's learning rate was chosen on the
    # validation split, the same for both norms (the regime's file says how)
    *(
        Claim(
            id=f"{short}_faster_sgd",
            text=f"{text}, with SGD with momentum",
            regime=f"{family}_sgd",
            family=family,
            metric="mean_train_loss",
            a=Condition("layer"),
            b=Condition("none"),
            direction="less",
            margin=0.02,
            why=f"{adam}'s task and model, trained with SGD (momentum 0.9) at a learning rate chosen on the validation split",
        )
        for short, family, adam, text in (
            ("rnn", "rnn", "rnn_faster_default", "LayerNorm converges faster than NoNorm"),
            ("tf", "transformer", "tf_faster", "LayerNorm converges faster than NoNorm"),
            ("lstm", "lstm", "lstm_faster", "LayerNorm speeds up LSTM training"),
        )
    ),
    # Ba et al. 2016's Figure 6 (section 6.7): permutation-invariant MNIST, a 784-1000-1000-10 MLP with the
    # norm on its hidden layers, batch size 128 against 4; each batch size at its own learning rate, chosen on
    # the validation split beforehand (configs/claims/figure6.yaml says how). The margins, 1 accuracy point,
    # were fixed before any run: near 97 % on MNIST, 2 points is the gap between a good model and a poor one.
    Claim(
        id="mlp_bn_batch_size_4",
        text="BatchNorm degrades at batch size 4 beyond NoNorm's change (batch size 4 vs 128; Ba et al. Figure 6)",
        regime="figure6",
        family="mlp",
        metric="final_test_acc",
        a=Condition("batch", 4),
        b=Condition("batch", 128),
        direction="less",
        margin=0.01,
        why="[BN(4) - BN(128)] - [NoNorm(4) - NoNorm(128)] on MNIST, same epochs; NoNorm's change is the step count's "
        "and the learning rates'; BatchNorm with the unbiased batch variance, as the paper at batch size 4",
        net=(Condition("none", 4), Condition("none", 128)),
    ),
    Claim(
        id="mlp_ln_batch_size",
        text="LayerNorm adds no batch-size dependence of its own (batch size 4 vs 128, net of NoNorm's; Ba et al. Figure 6)",
        regime="figure6",
        family="mlp",
        metric="final_test_acc",
        a=Condition("layer", 4),
        b=Condition("layer", 128),
        direction="equal",
        margin=0.01,
        why='[LN(4) - LN(128)] - [NoNorm(4) - NoNorm(128)] on MNIST, same epochs: "layer normalization is robust to '
        'the batch-sizes" (section 6.7)',
        net=(Condition("none", 4), Condition("none", 128)),
    ),
    Claim(
        id="mlp_ln_faster_than_bn_bs4",
        text="At batch size 4 LayerNorm's training loss falls faster than BatchNorm's (Ba et al. Figure 6, right)",
        regime="figure6",
        family="mlp",
        metric="mean_train_loss",
        a=Condition("layer", 4),
        b=Condition("batch", 4),
        direction="less",
        margin=0.02,
        why='MNIST at batch size 4, the mean train loss over the epochs: "exhibits a faster training convergence '
        'comparing to batch normalization" (section 6.7); both gains start at 1',
    ),
    Claim(
        id="mlp_ln_vs_bn_bs128",
        text="At batch size 128 LayerNorm is as accurate as BatchNorm (Ba et al. Figure 6, left)",
        regime="figure6",
        family="mlp",
        metric="final_test_acc",
        a=Condition("layer", 128),
        b=Condition("batch", 128),
        direction="equal",
        margin=0.01,
        why="MNIST at batch size 128, where BatchNorm's statistics are good estimates; both gains start at 1",
    ),
)
CLAIM_IDS = tuple(c.id for c in CLAIMS)


#: the regimes of the claims, each once, in table order (``--only REGIME`` selects a regime's claims)
CLAIM_REGIMES = tuple(dict.fromkeys(c.regime for c in CLAIMS))


def select_claims(ids: Sequence[str] | None) -> list[Claim]:
    """The claims with these ids or of these regimes (``figure6``: every claim of that regime; all
    when None or empty), in table order.

    Raises:
        ConfigError: an unknown id or regime, naming the allowed ones.
    """
    if not ids:
        return list(CLAIMS)
    unknown = [i for i in ids if i not in CLAIM_IDS and i not in CLAIM_REGIMES]
    if unknown:
        raise ConfigError(
            f"--only: unknown claim {unknown[0]!r}; allowed: {', '.join(CLAIM_IDS)}, or a regime: {', '.join(CLAIM_REGIMES)}"
        )
    return [c for c in CLAIMS if c.id in ids or c.regime in ids]
