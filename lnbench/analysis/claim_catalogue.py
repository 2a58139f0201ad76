"""The claims ``lnbench claims`` tests, written once: each a :class:`Claim` of two
:class:`Condition` s of one model family in one regime, with its metric, direction and margin.

The verdict rules that read them are in :mod:`lnbench.analysis.claims`; the regimes (preset
configs) are loaded by :mod:`lnbench.experiments.claim_regimes`. A new claim is one more entry of
:data:`CLAIMS` (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lnbench.config import ConfigError
from lnbench.names import GAINLESS_NORMS, norm_label, paper_gain_init

if TYPE_CHECKING:
    from lnbench.config import RunConfig

#: the metric of a divergence claim: the fraction of a condition's seeds that diverged, tested
#: with Fisher's exact test (:func:`lnbench.analysis.stats.fisher_exact_less`)
DIVERGED = "diverged"


@dataclass(frozen=True)
class Variant:
    """A change to a regime's config that a condition trains under: other keys than its norm,
    batch size and gain, so that every variant of a regime is a cell of that one regime, paired by
    seed with the others (same data, initial weights and batch order).

    Attributes:
        name: short, unique among a regime's variants: in the setting key, the child runs' names
            and summary.json's rows (their ``variant``), e.g. ``no_clip``.
        label: what it changes, in words, in the condition's label (``without clipping``).
        overrides: ``(dotted key, value)`` pairs applied to the regime's config
            (``(("train.grad_clip", None),)``).
    """

    name: str
    label: str
    overrides: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Condition:
    """One side of a claim: a norm, a batch size (None: the regime's ``train.batch_size``), an
    initial gain of the norms (``model.norm_gain_init``; None: the regime's, by default each
    paper's), and a :class:`Variant` of the regime's config (None: the regime as it is)."""

    norm: str
    batch_size: int | None = None
    gain: float | None = None
    variant: Variant | None = None

    def label(self) -> str:
        inside = ", ".join(
            ([f"gains {self.gain:g}"] if self.gain is not None else [])
            + ([self.variant.label] if self.variant is not None else [])
        )
        return (
            norm_label(self.norm)
            + (f" ({inside})" if inside else "")
            + (f" at batch size {self.batch_size}" if self.batch_size is not None else "")
        )

    @property
    def overrides(self) -> tuple[tuple[str, Any], ...]:
        """Its variant's overrides; none without a variant."""
        return self.variant.overrides if self.variant is not None else ()

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
        variant = self.variant.name if self.variant is not None else ""
        return setting_key(
            regime_name, family, self.norm, self.batch_size_in(regime), self.gain_in(family, regime), variant
        )


def setting_key(
    regime: str, family: str, norm: str, batch_size: int, norm_gain_init: float | None, variant: str = ""
) -> tuple:
    """The key of a setting's rows: ``(regime, family, norm, batch size)``, its
    ``model.norm_gain_init`` when one is set (``(..., 64, 0.1)``), and its variant's name when it
    has one (``(..., 100, 0.1, "no_clip")``)."""
    return (
        (regime, family, norm, batch_size)
        + (() if norm_gain_init is None else (norm_gain_init,))
        + ((variant,) if variant else ())
    )


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
    #: an ablation's claim: the ingredient of the regime's recipe that b takes away or swaps, as the
    #: verdicts name it (``clipping``; :func:`lnbench.analysis.ablation.ingredient_sentences`)
    ingredient: str = ""
    #: an accuracy claim: a seed that diverged counts at chance (1 / number of classes) instead of
    #: leaving the pairs, so that a condition that diverges is not compared on its survivors alone
    diverged_at_chance: bool = False

    def __post_init__(self) -> None:
        if self.metric == DIVERGED and (self.direction != "less" or self.net is not None):
            raise ValueError(f"claim {self.id}: a divergence claim is one-sided (direction 'less') and has no net")
        if self.diverged_at_chance and self.metric != "final_test_acc":
            raise ValueError(f"claim {self.id}: diverged_at_chance is for accuracy claims, not {self.metric}")

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


@dataclass(frozen=True)
class Ingredient:
    """One ingredient of a training recipe that an ablation takes away or swaps, one at a time.

    Attributes:
        short: its part of the claims' ids (``clip``).
        name: what the verdicts call it (``clipping``).
        change: the recipe without it, in words, for the claims' text (``without clipping``,
            ``with Adam in place of RMSProp``).
        variant: the config it trains under instead (None: the recipe's, as the gain's).
        gain: the initial gain of the norms in place of the recipe's (None: the recipe's).
    """

    short: str
    name: str
    change: str
    variant: Variant | None = None
    gain: float | None = None


#: The initial gain of every norm in Cooijmans et al.'s recipe (their section 4.2), LN's too.
RECIPE_GAIN = 0.1

#: Cooijmans et al. 2016's recipe for sequential MNIST (their code: clipping at norm 1, RMSProp,
#: --init id, --noise 0.1, gains 0.1, eps 1e-5; configs/claims/lstm_recipe_rows.yaml), one
#: ingredient at a time taken away or swapped.
RECIPE_INGREDIENTS: tuple[Ingredient, ...] = (
    Ingredient(
        "noise",
        "the initial-state noise",
        "without the initial-state noise",
        Variant("no_noise", "no initial-state noise", (("model.state_noise_std", 0.0),)),
    ),
    Ingredient("clip", "clipping", "without clipping", Variant("no_clip", "no clipping", (("train.grad_clip", None),))),
    Ingredient("gain", f"initial gains {RECIPE_GAIN:g}", f"with initial gains 1 in place of {RECIPE_GAIN:g}", gain=1.0),
    Ingredient(
        "eps",
        "the initial-state noise, with eps 1e-3 in its place",
        "with eps 1e-3 in place of the initial-state noise",
        Variant(
            "eps1e-3", "eps 1e-3, no initial-state noise", (("model.norm_eps", 1e-3), ("model.state_noise_std", 0.0))
        ),
    ),
    # RMSProp's decay (train.rmsprop_alpha) is a key of RMSProp alone: Adam's variant sets it back to its default
    Ingredient(
        "rmsprop",
        "RMSProp",
        "with Adam in place of RMSProp",
        Variant("adam", "Adam", (("train.optimizer", "adam"), ("train.rmsprop_alpha", 0.99))),
    ),
)

#: the normalized LSTMs an ablation takes its ingredients from: norm, short name (in ids), model name
_ABLATED = (("layer", "ln", "LN-LSTM"), ("batch", "bn", "BN-LSTM"))


def recipe_ablation(regime: str, prefix: str, task: str) -> tuple[Claim, ...]:
    """The claims of an ablation of Cooijmans et al.'s recipe in ``regime`` (whose config is the
    full recipe), for the LN-LSTM and the BN-LSTM, with the LSTM without a norm as the reference:
    per norm and :data:`RECIPE_INGREDIENTS` entry, that the recipe without the ingredient diverges
    in more seeds (``{prefix}_{ln|bn}_{short}_finite``: Fisher's exact test, one-sided) and is less
    accurate, a diverged seed counted at chance (``..._accuracy``); and per norm that the LSTM without
    a norm, trained with the same recipe, is less accurate than the normalized one (``..._vs_none``).
    ``task``: where, in the claims' text (``MNIST by rows``)."""
    out: list[Claim] = []
    for norm, short, model in _ABLATED:
        recipe = Condition(norm, gain=RECIPE_GAIN)
        # an accuracy claim of this regime, a diverged seed at chance: the reference as it is, the others replace()d
        template = Claim(
            id=f"{prefix}_{short}_vs_none",
            text=f"Trained with the same recipe, the LSTM without a norm is less accurate than the {model} on {task} "
            "(a diverged seed counted at chance)",
            regime=regime,
            family="lstm",
            metric="final_test_acc",
            a=Condition("none"),
            b=recipe,
            direction="less",
            margin=0.02,
            why=f"Cooijmans et al.'s recipe on {task} for both (the gains and eps do not apply to NoNorm)",
            diverged_at_chance=True,
        )
        for ing in RECIPE_INGREDIENTS:
            variant = Condition(norm, gain=ing.gain or RECIPE_GAIN, variant=ing.variant)
            change = ing.change[0].upper() + ing.change[1:]
            why = f"Cooijmans et al.'s recipe on {task}, and the recipe {ing.change}: the rest held equal"
            ablated = replace(template, why=why, ingredient=ing.name)
            out += [
                replace(
                    ablated,
                    id=f"{prefix}_{short}_{ing.short}_finite",
                    text=f"{change}, the {model} diverges on {task}",
                    metric=DIVERGED,
                    a=recipe,
                    b=variant,
                    margin=0.5,
                    diverged_at_chance=False,
                ),
                replace(
                    ablated,
                    id=f"{prefix}_{short}_{ing.short}_accuracy",
                    text=f"{change}, the {model} is less accurate on {task} (a diverged seed counted at chance)",
                    a=variant,
                    b=recipe,
                ),
            ]
        out.append(template)
    return tuple(out)


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
    # Cooijmans et al.'s recipe taken apart on real MNIST, where the normalized LSTMs diverge at lnbench's
    # defaults (issue 55, C): which ingredient keeps them finite, which they need for accuracy. Run only
    # with --only (lnbench.experiments.claims.ONLY_REGIMES)
    *recipe_ablation("lstm_recipe_rows", "rows", "MNIST by rows"),
    *recipe_ablation("lstm_recipe_pixels", "pixels", "MNIST by pixels"),
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
    try:
        instances = [norm_claim(i) for i in ids if "@" in i and i.partition("@")[0] in TEMPLATE_IDS]
    except ConfigError as exc:
        raise ConfigError(f"--only: {exc}") from None
    unknown = [i for i in ids if i not in CLAIM_IDS and i not in CLAIM_REGIMES and i not in {c.id for c in instances}]
    if unknown:
        raise ConfigError(
            f"--only: unknown claim {unknown[0]!r}; allowed: {', '.join(CLAIM_IDS)}, or a regime: {', '.join(CLAIM_REGIMES)}"
            f", or a card's claim ID@NORM (lstm_faster@rms) with ID one of: {', '.join(TEMPLATE_IDS)}"
        )
    return [c for c in CLAIMS if c.id in ids or c.regime in ids] + instances


@dataclass(frozen=True)
class NormTemplate:
    """A claim of :data:`CLAIMS` about one norm (its ``subject``, e.g. ``layer``) against NoNorm
    that any norm can be tested on: :meth:`instance` puts another norm in the subject's place.

    Attributes:
        claim_id: the built-in claim (its instance for ``subject`` is that claim itself).
        subject: the norm the built-in claim is about.
        batch_statistics: the instances it applies to: True for a norm that declares
            ``uses_batch_statistics``, False for one that does not, None for every norm (decided by
            the norm's declared capabilities, never by its name).
        full: whether only ``lnbench card --full`` tests it (its regime costs minutes per seed).
    """

    claim_id: str
    subject: str
    batch_statistics: bool | None = None
    #: only in a full card (``lnbench card --full``): a claim at its regime's own, larger sizes
    full: bool = False

    def applies_to(self, uses_batch_statistics: bool) -> bool:
        return self.batch_statistics is None or self.batch_statistics == uses_batch_statistics

    def instance(self, norm: str) -> Claim:
        """The claim with ``norm`` in the subject's place: its conditions (a, b, net), its text (the
        subject's name replaced), and its id ``<claim id>@<norm>`` (the built-in claim for its subject)."""
        claim = CLAIMS_BY_ID[self.claim_id]
        if norm == self.subject:
            return claim

        def swap(cond: Condition) -> Condition:
            return replace(cond, norm=norm) if cond.norm == self.subject else cond

        return replace(
            claim,
            id=f"{claim.id}@{norm}",
            text=claim.text.replace(norm_label(self.subject), norm_label(norm)).replace(
                _PAPER_LSTM.get(self.subject, norm_label(self.subject)), f"LSTM with {norm_label(norm)}"
            ),
            a=swap(claim.a),
            b=swap(claim.b),
            net=None if claim.net is None else (swap(claim.net[0]), swap(claim.net[1])),
        )


CLAIMS_BY_ID: dict[str, Claim] = {c.id: c for c in CLAIMS}
#: the papers' names of the normalized LSTMs, as the claims' texts write them
_PAPER_LSTM = {"layer": "LN-LSTM", "batch": "BN-LSTM"}

#: The claims a norm's card tests (``lnbench card``): convergence against NoNorm in the RNN, the
#: LSTM and the Transformer; the final state's dependence on the input's scale; and, by the norm's
#: declared batch statistics, the batch-size claim net of NoNorm's change (batch size 1 vs 64).
NORM_TEMPLATES: tuple[NormTemplate, ...] = (
    NormTemplate("rnn_faster_default", "layer"),
    NormTemplate("lstm_faster", "layer"),
    NormTemplate("tf_faster", "layer"),
    NormTemplate("rnn_scale_invariant", "layer"),
    NormTemplate("tf_scale_invariant", "layer"),
    NormTemplate("rnn_ln_batch_size", "layer", batch_statistics=False),
    NormTemplate("tf_ln_batch_size", "layer", batch_statistics=False),
    NormTemplate("rnn_bn_batch_size_1", "batch", batch_statistics=True),
    NormTemplate("tf_bn_batch_size_1", "batch", batch_statistics=True),
    # --full: the LSTM's batch-size claim, Ba et al.'s Figure 6 (MNIST, batch size 4 vs 128), and
    # sequential MNIST by rows with Cooijmans et al.'s recipe (NoNorm less accurate than the norm)
    NormTemplate("lstm_ln_batch_size", "layer", batch_statistics=False, full=True),
    NormTemplate("lstm_bn_batch_size_1", "batch", batch_statistics=True, full=True),
    NormTemplate("mlp_ln_batch_size", "layer", batch_statistics=False, full=True),
    NormTemplate("mlp_bn_batch_size_4", "batch", batch_statistics=True, full=True),
    NormTemplate("rows_ln_vs_none", "layer", full=True),
)

#: the norms a card's claims are also tested on, on the same data and seeds: its reference
REFERENCE_NORMS = ("layer", "batch")


def norm_claims(norm: str, uses_batch_statistics: bool, full: bool = False) -> list[tuple[Claim, dict[str, Claim]]]:
    """The claims of :data:`NORM_TEMPLATES` that apply to ``norm`` (by its declared
    ``uses_batch_statistics``; with ``full``, the full card's too), each with the same claim for
    LayerNorm and BatchNorm (:data:`REFERENCE_NORMS`) beside it."""
    return [
        (t.instance(norm), {ref: t.instance(ref) for ref in REFERENCE_NORMS})
        for t in NORM_TEMPLATES
        if t.applies_to(uses_batch_statistics) and (full or not t.full)
    ]


TEMPLATE_IDS = tuple(t.claim_id for t in NORM_TEMPLATES)


def norm_claim(claim_id: str) -> Claim:
    """A card's claim by its id, ``<template's claim>@<norm>`` (``lstm_faster@rms``: its
    :meth:`NormTemplate.instance`), as a card's science folder records it.

    Raises:
        ConfigError: no template has that claim, or the norm is not a norm lnbench can build.
    """
    from lnbench.nn.registry import norm_kind

    base, _, norm = claim_id.partition("@")
    template = next((t for t in NORM_TEMPLATES if t.claim_id == base), None)
    if template is None:
        raise ConfigError(f"claim {claim_id!r}: no card's claim is {base!r} (allowed: {', '.join(TEMPLATE_IDS)})")
    try:
        norm_kind(norm)  # a norm lnbench cannot build is refused here, naming it
    except ValueError as exc:
        raise ConfigError(f"claim {claim_id!r}: {exc}") from None
    return template.instance(norm)
