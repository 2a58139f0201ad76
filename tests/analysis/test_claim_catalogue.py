"""lnbench.analysis.claim_catalogue: the shipped claims pinned, selecting claims, and a condition's
initial gain."""

import pytest
from conftest import REPO

from lnbench.analysis import claim_catalogue
from lnbench.analysis.claim_catalogue import CLAIMS, Condition, select_claims
from lnbench.config import ConfigError, RunConfig

FASTER = "LayerNorm converges faster than NoNorm"
STABLE = "LayerNorm stabilises hidden-state dynamics against input scale"
BS_FREE = "LayerNorm adds no batch-size dependence of its own (batch size 1 vs 64, net of NoNorm's)"
BN_BS1 = "BatchNorm degrades at batch size 1 beyond NoNorm's change (batch size 1 vs 64)"
SEPARATE = "Normalizing the recurrent and input terms separately lets the RNN learn the memory task that NoNorm cannot"
JOINT = "In the joint placement LayerNorm does not let the RNN learn more than NoNorm"
LN_BN = "In the separate placement LayerNorm is as accurate as BatchNorm (both gains start at 1)"
LN_BN01 = "In the separate placement LayerNorm is as accurate as BatchNorm with both gains starting at 0.1"
LSTM_LN_BN = "In the LSTM, LayerNorm is as accurate as BatchNorm, each at its paper's initial gains (LN 1, BN 0.1)"
LSTM_LN_BN01 = (
    "At equal initial gains (0.1) the LN-LSTM is as accurate as the BN-LSTM: the BN-LSTM's advantage is its gain"
)
LSTM_LN_BN1 = "At equal initial gains (1) the LN-LSTM is as accurate as the BN-LSTM"
LSTM_GAIN = "The LN-LSTM with gains starting at 0.1 is more accurate than with gains starting at 1"
LSTM_LN_BN_FAST = "In the LSTM, LayerNorm converges faster than BatchNorm"
L, N, BN = ("layer", None, None), ("none", None, None), ("batch", None, None)
L01, BN01, L1, BN1 = ("layer", None, 0.1), ("batch", None, 0.1), ("layer", None, 1.0), ("batch", None, 1.0)
L_1, L_64, BN_1, BN_64 = ("layer", 1, None), ("layer", 64, None), ("batch", 1, None), ("batch", 64, None)
NET = (("none", 1, None), ("none", 64, None))  # a difference in differences net of NoNorm's change from 64 to 1
NET_4 = (("none", 4, None), ("none", 128, None))

#: id, regime, family, metric, a (norm, batch size, gain), b, direction, margin, text, net (None or its two
#: conditions): the shipped claims, in table order
SHIPPED = [
    ("rnn_faster_default", "default", "rnn", "mean_train_loss", L, N, "less", 0.02, FASTER, None),
    ("rnn_separate_learns", "separate_placement", "rnn", "final_test_acc", N, L, "less", 0.02, SEPARATE, None),
    ("rnn_joint_does_not_learn", "default", "rnn", "final_test_acc", L, N, "equal", 0.02, JOINT, None),
    ("rnn_separate_ln_vs_bn", "separate_placement", "rnn", "final_test_acc", L, BN, "equal", 0.02, LN_BN, None),
    ("rnn_separate_ln_vs_bn_gain01", "separate_placement", "rnn", "final_test_acc", L01, BN01, "equal", 0.02, LN_BN01, None),
    ("rnn_faster_unstable", "unstable_recurrence", "rnn", "mean_train_loss", L, N, "less", 0.02, FASTER, None),
    ("rnn_scale_invariant", "large_input_scale", "rnn", "abs_scale_spearman", L, N, "less", 0.1, STABLE, None),
    ("rnn_ln_batch_size", "small_batches", "rnn", "final_test_acc", L_1, L_64, "equal", 0.02, BS_FREE, NET),
    ("rnn_bn_batch_size_1", "small_batches", "rnn", "final_test_acc", BN_1, BN_64, "less", 0.02, BN_BS1, NET),
    ("tf_faster", "default", "transformer", "mean_train_loss", L, N, "less", 0.02, FASTER, None),
    ("tf_scale_invariant", "default", "transformer", "abs_scale_spearman", L, N, "less", 0.1, STABLE, None),
    ("tf_scale_invariant_prenorm_only", "transformer_no_input_norm", "transformer", "abs_scale_spearman", L, N, "less", 0.1, STABLE, None),
    ("tf_ln_batch_size", "small_batches_transformer", "transformer", "final_test_acc", L_1, L_64, "equal", 0.02, BS_FREE, NET),
    ("tf_bn_batch_size_1", "small_batches_transformer", "transformer", "final_test_acc", BN_1, BN_64, "less", 0.02, BN_BS1, NET),
    ("lstm_faster", "lstm", "lstm", "mean_train_loss", L, N, "less", 0.02, "LayerNorm speeds up LSTM training", None),
    ("lstm_ln_more_accurate", "lstm", "lstm", "final_test_acc", N, L, "less", 0.02, "LayerNorm improves the LSTM's accuracy on the memory task", None),
    ("lstm_ln_vs_bn", "lstm", "lstm", "final_test_acc", L, BN, "equal", 0.02, LSTM_LN_BN, None),
    ("lstm_ln_vs_bn_gain01", "lstm", "lstm", "final_test_acc", L01, BN01, "equal", 0.02, LSTM_LN_BN01, None),
    ("lstm_ln_vs_bn_gain1", "lstm", "lstm", "final_test_acc", L1, BN1, "equal", 0.02, LSTM_LN_BN1, None),
    ("lstm_ln_gain01_more_accurate", "lstm", "lstm", "final_test_acc", L1, L01, "less", 0.02, LSTM_GAIN, None),
    ("lstm_ln_faster_than_bn", "lstm", "lstm", "mean_train_loss", L, BN, "less", 0.02, LSTM_LN_BN_FAST, None),
    ("lstm_ln_faster_than_bn_gain01", "lstm", "lstm", "mean_train_loss", L01, BN01, "less", 0.02, LSTM_LN_BN_FAST + " at equal initial gains (0.1)", None),
    ("lstm_ln_batch_size", "lstm_small_batches", "lstm", "final_test_acc", L_1, L_64, "equal", 0.02, BS_FREE, NET),
    ("lstm_bn_batch_size_1", "lstm_small_batches", "lstm", "final_test_acc", BN_1, BN_64, "less", 0.02, BN_BS1, NET),
    ("rnn_faster_sgd", "rnn_sgd", "rnn", "mean_train_loss", L, N, "less", 0.02, FASTER + ", with SGD with momentum", None),
    ("tf_faster_sgd", "transformer_sgd", "transformer", "mean_train_loss", L, N, "less", 0.02, FASTER + ", with SGD with momentum", None),
    ("lstm_faster_sgd", "lstm_sgd", "lstm", "mean_train_loss", L, N, "less", 0.02, "LayerNorm speeds up LSTM training, with SGD with momentum", None),
    ("mlp_bn_batch_size_4", "figure6", "mlp", "final_test_acc", ("batch", 4, None), ("batch", 128, None), "less", 0.01, "BatchNorm degrades at batch size 4 beyond NoNorm's change (batch size 4 vs 128; Ba et al. Figure 6)", NET_4),
    ("mlp_ln_batch_size", "figure6", "mlp", "final_test_acc", ("layer", 4, None), ("layer", 128, None), "equal", 0.01, "LayerNorm adds no batch-size dependence of its own (batch size 4 vs 128, net of NoNorm's; Ba et al. Figure 6)", NET_4),
    ("mlp_ln_faster_than_bn_bs4", "figure6", "mlp", "mean_train_loss", ("layer", 4, None), ("batch", 4, None), "less", 0.02, "At batch size 4 LayerNorm's training loss falls faster than BatchNorm's (Ba et al. Figure 6, right)", None),
    ("mlp_ln_vs_bn_bs128", "figure6", "mlp", "final_test_acc", ("layer", 128, None), ("batch", 128, None), "equal", 0.01, "At batch size 128 LayerNorm is as accurate as BatchNorm (Ba et al. Figure 6, left)", None),
]  # fmt: skip


#: the ablation of Cooijmans et al.'s recipe on MNIST by rows: id, metric, a (norm, batch size, gain, and the
#: variant's name if any), b, margin, ingredient, diverged_at_chance, text; every claim direction "less", no net
ABLATION_ROWS = [
    ('rows_ln_noise_finite', 'diverged', ('layer', None, 0.1), ('layer', None, 0.1, 'no_noise'), 0.5, 'the initial-state noise', False, 'Without the initial-state noise, the LN-LSTM diverges on MNIST by rows'),
    ('rows_ln_noise_accuracy', 'final_test_acc', ('layer', None, 0.1, 'no_noise'), ('layer', None, 0.1), 0.02, 'the initial-state noise', True, 'Without the initial-state noise, the LN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_ln_clip_finite', 'diverged', ('layer', None, 0.1), ('layer', None, 0.1, 'no_clip'), 0.5, 'clipping', False, 'Without clipping, the LN-LSTM diverges on MNIST by rows'),
    ('rows_ln_clip_accuracy', 'final_test_acc', ('layer', None, 0.1, 'no_clip'), ('layer', None, 0.1), 0.02, 'clipping', True, 'Without clipping, the LN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_ln_gain_finite', 'diverged', ('layer', None, 0.1), ('layer', None, 1.0), 0.5, 'initial gains 0.1', False, 'With initial gains 1 in place of 0.1, the LN-LSTM diverges on MNIST by rows'),
    ('rows_ln_gain_accuracy', 'final_test_acc', ('layer', None, 1.0), ('layer', None, 0.1), 0.02, 'initial gains 0.1', True, 'With initial gains 1 in place of 0.1, the LN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_ln_eps_finite', 'diverged', ('layer', None, 0.1), ('layer', None, 0.1, 'eps1e-3'), 0.5, 'the initial-state noise, with eps 1e-3 in its place', False, 'With eps 1e-3 in place of the initial-state noise, the LN-LSTM diverges on MNIST by rows'),
    ('rows_ln_eps_accuracy', 'final_test_acc', ('layer', None, 0.1, 'eps1e-3'), ('layer', None, 0.1), 0.02, 'the initial-state noise, with eps 1e-3 in its place', True, 'With eps 1e-3 in place of the initial-state noise, the LN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_ln_rmsprop_finite', 'diverged', ('layer', None, 0.1), ('layer', None, 0.1, 'adam'), 0.5, 'RMSProp', False, 'With Adam in place of RMSProp, the LN-LSTM diverges on MNIST by rows'),
    ('rows_ln_rmsprop_accuracy', 'final_test_acc', ('layer', None, 0.1, 'adam'), ('layer', None, 0.1), 0.02, 'RMSProp', True, 'With Adam in place of RMSProp, the LN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_ln_vs_none', 'final_test_acc', ('none', None, None), ('layer', None, 0.1), 0.02, '', True, 'Trained with the same recipe, the LSTM without a norm is less accurate than the LN-LSTM on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_bn_noise_finite', 'diverged', ('batch', None, 0.1), ('batch', None, 0.1, 'no_noise'), 0.5, 'the initial-state noise', False, 'Without the initial-state noise, the BN-LSTM diverges on MNIST by rows'),
    ('rows_bn_noise_accuracy', 'final_test_acc', ('batch', None, 0.1, 'no_noise'), ('batch', None, 0.1), 0.02, 'the initial-state noise', True, 'Without the initial-state noise, the BN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_bn_clip_finite', 'diverged', ('batch', None, 0.1), ('batch', None, 0.1, 'no_clip'), 0.5, 'clipping', False, 'Without clipping, the BN-LSTM diverges on MNIST by rows'),
    ('rows_bn_clip_accuracy', 'final_test_acc', ('batch', None, 0.1, 'no_clip'), ('batch', None, 0.1), 0.02, 'clipping', True, 'Without clipping, the BN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_bn_gain_finite', 'diverged', ('batch', None, 0.1), ('batch', None, 1.0), 0.5, 'initial gains 0.1', False, 'With initial gains 1 in place of 0.1, the BN-LSTM diverges on MNIST by rows'),
    ('rows_bn_gain_accuracy', 'final_test_acc', ('batch', None, 1.0), ('batch', None, 0.1), 0.02, 'initial gains 0.1', True, 'With initial gains 1 in place of 0.1, the BN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_bn_eps_finite', 'diverged', ('batch', None, 0.1), ('batch', None, 0.1, 'eps1e-3'), 0.5, 'the initial-state noise, with eps 1e-3 in its place', False, 'With eps 1e-3 in place of the initial-state noise, the BN-LSTM diverges on MNIST by rows'),
    ('rows_bn_eps_accuracy', 'final_test_acc', ('batch', None, 0.1, 'eps1e-3'), ('batch', None, 0.1), 0.02, 'the initial-state noise, with eps 1e-3 in its place', True, 'With eps 1e-3 in place of the initial-state noise, the BN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_bn_rmsprop_finite', 'diverged', ('batch', None, 0.1), ('batch', None, 0.1, 'adam'), 0.5, 'RMSProp', False, 'With Adam in place of RMSProp, the BN-LSTM diverges on MNIST by rows'),
    ('rows_bn_rmsprop_accuracy', 'final_test_acc', ('batch', None, 0.1, 'adam'), ('batch', None, 0.1), 0.02, 'RMSProp', True, 'With Adam in place of RMSProp, the BN-LSTM is less accurate on MNIST by rows (a diverged seed counted at chance)'),
    ('rows_bn_vs_none', 'final_test_acc', ('none', None, None), ('batch', None, 0.1), 0.02, '', True, 'Trained with the same recipe, the LSTM without a norm is less accurate than the BN-LSTM on MNIST by rows (a diverged seed counted at chance)'),
]  # fmt: skip
ABLATION = ("lstm_recipe_rows", "lstm_recipe_pixels")


def _setting(c):
    return (c.norm, c.batch_size, c.gain) + ((c.variant.name,) if c.variant is not None else ())


def test_the_shipped_claims_are_pinned():
    """A changed claim (its conditions, gains, net, metric, direction, margin or words) must be a reviewed change of this table."""
    got = [
        (c.id, c.regime, c.family, c.metric, _setting(c.a), _setting(c.b), c.direction, c.margin, c.text)
        + (None if c.net is None else tuple(_setting(x) for x in c.net),)
        for c in CLAIMS
        if c.regime not in ABLATION
    ]
    assert got == SHIPPED
    assert claim_catalogue.CLAIM_IDS[: len(SHIPPED)] == tuple(e[0] for e in SHIPPED)


def test_the_recipe_ablation_claims_are_pinned():
    """The ablation's claims, after the others: the rows regime's as this table says (22: per norm five
    ingredients, each a divergence and an accuracy claim, and the reference), the pixels regime's the same with
    its regime, ids and task."""

    def pinned(c):
        assert (c.family, c.direction, c.net) == ("lstm", "less", None)
        return (c.id, c.metric, _setting(c.a), _setting(c.b), c.margin, c.ingredient, c.diverged_at_chance, c.text)

    rows = [pinned(c) for c in CLAIMS if c.regime == "lstm_recipe_rows"]
    pixels = [pinned(c) for c in CLAIMS if c.regime == "lstm_recipe_pixels"]
    assert rows == ABLATION_ROWS
    moved = [
        (e[0].replace("rows_", "pixels_", 1), *e[1:7], e[7].replace("by rows", "by pixels")) for e in ABLATION_ROWS
    ]
    assert pixels == moved
    assert claim_catalogue.CLAIM_IDS[len(SHIPPED) :] == tuple(e[0] for e in rows + pixels)
    for c in CLAIMS:
        assert (REPO / "configs" / "claims" / f"{c.regime}.yaml").is_file(), c.regime  # every regime has its preset


def test_select_claims_keeps_the_table_order():
    assert [c.id for c in select_claims(["tf_faster", "rnn_faster_default"])] == ["rnn_faster_default", "tf_faster"]
    assert select_claims([]) == list(CLAIMS)
    with pytest.raises(ConfigError, match="--only: unknown claim 'x'"):
        select_claims(["tf_faster", "x"])


def test_a_conditions_gain_is_none_where_it_is_the_papers_model():
    paper = RunConfig()  # model.norm_gain_init null: each paper's gains
    assert paper.model.norm_gain_init is None
    assert Condition("layer", gain=1.0).gain_in("rnn", paper) is None  # Ba et al.'s 1: the paper's model
    assert Condition("batch", gain=0.1).gain_in("lstm", paper) is None  # Cooijmans et al.'s 0.1
    assert Condition("batch", gain=1.0).gain_in("lstm", paper) == 1.0
    assert Condition("layer", gain=0.1).gain_in("lstm", paper) == 0.1
    assert Condition("none", gain=0.1).gain_in("rnn", paper) is None  # no gain to set
    assert Condition("layer").gain_in("rnn", paper) is None
    set_half = RunConfig().with_changes(model__norm_gain_init=0.5)  # a regime that sets a gain: not the paper's
    assert Condition("layer").gain_in("rnn", set_half) == 0.5
    assert Condition("layer", gain=1.0).gain_in("rnn", set_half) == 1.0
    assert Condition("none").gain_in("rnn", set_half) is None
    assert Condition("batch", gain=0.1).setting("lstm", "lstm", paper) == ("lstm", "lstm", "batch", 64)
    assert Condition("layer", gain=0.1).setting("lstm", "lstm", paper) == ("lstm", "lstm", "layer", 64, 0.1)


def test_select_claims_rejects_an_unknown_id():
    assert [c.id for c in select_claims(None)] == [c.id for c in CLAIMS]
    with pytest.raises(ConfigError, match="unknown claim 'nope'; allowed: rnn_faster_default"):
        select_claims(["nope"])


def test_a_cards_claim_is_selected_by_its_id_with_the_norm_in_the_subjects_place():
    """``--only lstm_faster@rms``: the card's claim (lstm_faster with RMSNorm where it has
    LayerNorm), beside the built-in claims named; an id whose claim is no card's is refused, naming
    the card's claims."""
    from lnbench.analysis.claim_catalogue import TEMPLATE_IDS, select_claims

    chosen = select_claims(["rnn_faster_default", "lstm_faster@rms"])
    assert [c.id for c in chosen] == ["rnn_faster_default", "lstm_faster@rms"]
    assert (chosen[1].a.norm, chosen[1].b.norm, chosen[1].regime) == ("rms", "none", "lstm")
    with pytest.raises(
        ConfigError,
        match=r"unknown claim 'rnn_separate_learns@rms'.*a card's claim ID@NORM .* one of: rnn_faster_default",
    ):
        select_claims(["rnn_separate_learns@rms"])
    assert "lstm_faster" in TEMPLATE_IDS
