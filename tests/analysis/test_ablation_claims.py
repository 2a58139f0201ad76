"""An ablation's claims: divergence counts decided by Fisher's exact test, accuracies with a diverged seed
counted at chance, conditions that override the regime's config, and the verdicts that name the ingredient."""

from math import comb

import pytest
from conftest import REPO, runner
from scipy import stats as scipy_stats

from lnbench.analysis import ablation, stats
from lnbench.analysis.claim_catalogue import DIVERGED, Claim, Condition, Variant, select_claims
from lnbench.analysis.claims import claim_sentences, evaluate_claims
from lnbench.cli.app import app
from lnbench.config import ConfigError, RunConfig
from lnbench.experiments import claim_regimes
from lnbench.experiments.claims import CLAIMS as CLAIMS_EXPERIMENT
from lnbench.experiments.claims import ClaimsSpec, check_confirmable, claims_spec, run_by
from lnbench.records.schema import SummaryRow

PRESETS = REPO / "configs" / "claims"
NO_NOISE = Variant("no_noise", "no initial-state noise", (("model.state_noise_std", 0.0),))
RECIPE, WITHOUT = Condition("layer", gain=0.1), Condition("layer", gain=0.1, variant=NO_NOISE)
REGIMES = {"r": RunConfig().with_changes(model__family="lstm")}


def _finite_claim(b=WITHOUT):
    return Claim(
        "c_finite", "Without the noise the LN-LSTM diverges", "r", "lstm", DIVERGED, RECIPE, b, "less", 0.5,
        ingredient="the initial-state noise",
    )  # fmt: skip


def _accuracy_claim(at_chance=True, ingredient="the initial-state noise"):
    return Claim(
        "c_acc", "Without the noise the LN-LSTM is less accurate", "r", "lstm", "final_test_acc", WITHOUT, RECIPE,
        "less", 0.02, ingredient=ingredient, diverged_at_chance=at_chance,
    )  # fmt: skip


def _row(cond, seed, acc, diverged=False):
    return SummaryRow(
        family="lstm", norm=cond.norm, batch_size=64, seed=seed, status="diverged" if diverged else "completed",
        epochs_completed=1 if diverged else 4, final_test_acc=None if diverged else acc,
        final_test_acc_batch_stats=None, final_train_loss=None if diverged else 0.3, final_test_loss=None,
        mean_train_loss=None if diverged else 0.5, first_epoch_at_target=None, n_test=1000, num_classes=10,
        norm_gain_init=0.1, run_dir=f"{cond.label()}_seed{seed}",
    )  # fmt: skip


def _rows(recipe, without):
    """Rows by setting: each side's (accuracy or None for a diverged seed) per seed 0, 1, ..."""
    return {
        cond.setting("lstm", "r", REGIMES["r"]): [_row(cond, s, a or 0.0, a is None) for s, a in enumerate(accs)]
        for cond, accs in ((RECIPE, recipe), (WITHOUT, without))
    }


# ---------------------------------------------------------------- the statistics


def test_fisher_exact_less_is_scipys_one_sided_test_and_the_hypergeometric_tail():
    """The p of a's rate below b's equals scipy.stats.fisher_exact(alternative="less") on the 2x2 table, and the
    hand computation P(X <= k_a), X hypergeometric: 0 of 6 against 6 of 6 is 1 / C(12, 6); 1 of 6 against 5 of 6
    is (1 + 6 * 6) / 924; a above b has p 1."""
    assert stats.fisher_exact_less(0, 6, 6, 6) == pytest.approx(1 / comb(12, 6), rel=1e-12)
    assert stats.fisher_exact_less(1, 6, 5, 6) == pytest.approx(37 / 924, rel=1e-12)
    assert stats.fisher_exact_less(6, 6, 0, 6) == pytest.approx(1.0)
    for k_a, n_a, k_b, n_b in ((3, 5, 2, 7), (0, 3, 3, 3), (2, 8, 7, 9), (0, 6, 0, 6)):
        table = [[k_a, n_a - k_a], [k_b, n_b - k_b]]
        expected = scipy_stats.fisher_exact(table, alternative="less").pvalue
        assert stats.fisher_exact_less(k_a, n_a, k_b, n_b) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        stats.fisher_exact_less(7, 6, 0, 6)


@pytest.mark.parametrize(
    "counts,expected",
    [((56, 70, 48, 80), (0.0524, 0.3339)), ((9, 10, 3, 10), (0.1705, 0.8090)), ((6, 7, 2, 7), (0.0582, 0.8062)),
     ((5, 56, 0, 29), (-0.0381, 0.1926))],
)  # fmt: skip
def test_the_rate_difference_interval_is_newcombes_method_10(counts, expected):
    """Newcombe (1998), Table II, method 10 (the hybrid score interval from Wilson's), his examples (a) to (d)."""
    assert stats.rate_difference_interval(*counts) == pytest.approx(expected, abs=5e-5)


# ---------------------------------------------------------------- divergence claims


def test_a_divergence_claim_is_decided_by_fishers_test_on_the_seeds_that_diverged():
    """6 of 6 seeds diverge without the noise, 0 of 6 with it: the effect is -1 (a fraction of the seeds), p is
    Fisher's 1/924, the interval Newcombe's; held. 0 of 6 against 0 of 6: Newcombe's interval (+-0.39) lies
    within the margin of one half: not held. 1 of 6 against 0 of 6: inconclusive (p = 0.5)."""
    ok = [0.9, 0.91, 0.92, 0.9, 0.93, 0.9]
    (held,) = evaluate_claims([_finite_claim()], _rows(ok, [None] * 6), REGIMES)
    assert held.verdict == "held" and held.effect == -1.0 and held.n_seeds == 6
    assert held.p_value == pytest.approx(1 / 924) and held.ci95 == pytest.approx(
        list(stats.rate_difference_interval(0, 6, 6, 6))
    )
    assert held.test == "Fisher's exact test, one-sided, 6 seeds each" and held.seeds_needed is None
    assert held.means == {RECIPE.label(): 0.0, WITHOUT.label(): 1.0}
    (none,) = evaluate_claims([_finite_claim()], _rows(ok, ok), REGIMES)
    assert none.verdict == "not held" and none.effect == 0.0 and "within +-50% of seeds" in none.reason
    (one,) = evaluate_claims([_finite_claim()], _rows(ok, [None, *ok[1:]]), REGIMES)
    assert one.verdict == "inconclusive" and one.p_value == pytest.approx(0.5)
    (sentence,) = claim_sentences([held])
    assert "seeds diverged" in sentence and "= -100 [-100, -45]% of seeds" in sentence
    assert f"{RECIPE.label()} 0 of 6, {WITHOUT.label()} 6 of 6" in sentence and "HELD" in sentence


def test_divergence_and_accuracy_claims_share_one_holm_family():
    """Holm runs over every directional claim, Fisher's p-values among the paired t-tests': two claims, the
    smaller p is doubled (Holm 1979)."""
    ok = [0.9, 0.91, 0.92, 0.9, 0.93, 0.9]
    finite, acc = evaluate_claims([_finite_claim(), _accuracy_claim()], _rows(ok, [None] * 6), REGIMES)
    p = sorted([finite.p_value, acc.p_value])
    assert sorted([finite.p_adjusted, acc.p_adjusted]) == pytest.approx([2 * p[0], max(2 * p[0], p[1])])


def test_a_divergence_claim_is_one_sided_without_net():
    with pytest.raises(ValueError, match="one-sided"):
        Claim("x", "t", "r", "lstm", DIVERGED, RECIPE, WITHOUT, "equal", 0.5)
    with pytest.raises(ValueError, match="accuracy claims"):
        Claim("x", "t", "r", "lstm", "mean_train_loss", RECIPE, WITHOUT, "less", 0.02, diverged_at_chance=True)


# ---------------------------------------------------------------- a diverged seed counted at chance


def test_a_diverged_seed_counts_at_chance_in_the_paired_accuracy_comparison():
    """Without the noise seeds 1 and 4 diverge: counted at chance (1/10), the paired differences are, by hand,
    [0.80-0.90, 0.10-0.91, 0.82-0.92, 0.81-0.90, 0.10-0.93, 0.79-0.90]: their mean is -2.04 / 6 = -0.34 over 6 seeds. Without
    the rule the diverged seeds leave the pairs: 4 seeds, mean -0.40 / 4 = -0.10."""
    recipe = [0.90, 0.91, 0.92, 0.90, 0.93, 0.90]
    without = [0.80, None, 0.82, 0.81, None, 0.79]
    diffs = [0.80 - 0.90, 0.10 - 0.91, 0.82 - 0.92, 0.81 - 0.90, 0.10 - 0.93, 0.79 - 0.90]
    (r,) = evaluate_claims([_accuracy_claim()], _rows(recipe, without), REGIMES)
    assert r.n_seeds == 6 and r.effect == pytest.approx(sum(diffs) / 6) and r.effect == pytest.approx(-0.34)
    assert r.means[WITHOUT.label()] == pytest.approx((0.80 + 0.82 + 0.81 + 0.79 + 0.2) / 6)
    assert r.counted_at_chance == {WITHOUT.label(): 2, RECIPE.label(): 0} and r.to_dict()["counted_at_chance"]
    assert r.p_value == pytest.approx(scipy_stats.ttest_rel([x or 0.1 for x in without], recipe).pvalue)
    (sentence,) = claim_sentences([r])
    assert f"counted at chance, 1 / the number of classes: the diverged seeds, {WITHOUT.label()} 2 of 6" in sentence
    (dropped,) = evaluate_claims([_accuracy_claim(at_chance=False)], _rows(recipe, without), REGIMES)
    assert dropped.n_seeds == 4 and dropped.effect == pytest.approx((-0.10 - 0.10 - 0.09 - 0.11) / 4)
    assert "counted_at_chance" not in dropped.to_dict()


def test_condition_cells_count_the_diverged_seeds_and_average_with_them_at_chance():
    """Each condition once: k of n seeds diverged, the mean accuracy of the finished seeds and, by hand, of
    every seed with a diverged one at 1/10."""
    rows = _rows([0.9, 0.8], [None, 0.7])
    cells = ablation.condition_cells([_finite_claim(), _accuracy_claim()], rows, REGIMES)
    assert [(c["condition"], c["n_diverged"], c["n_seeds"]) for c in cells] == [
        (RECIPE.label(), 0, 2),
        (WITHOUT.label(), 1, 2),
    ]
    assert cells[1]["mean_final_test_acc"] == pytest.approx(0.7)
    assert cells[1]["mean_final_test_acc_at_chance"] == pytest.approx((0.7 + 0.1) / 2)
    assert cells[0]["mean_final_test_acc_at_chance"] == pytest.approx(0.85)


# ---------------------------------------------------------------- the verdicts name the ingredient


def _ablation_results(finite_verdicts, accuracy_verdicts):
    """Hand-made results of three ingredients' claims (clipping, the noise, RMSProp) for the LN-LSTM."""
    ok = [0.9, 0.91, 0.92]
    claims, results = [], []
    for k, name in enumerate(("clipping", "the initial-state noise", "RMSProp")):
        variant = Condition("layer", gain=0.1, variant=Variant(f"v{k}", name, (("train.grad_clip", None),)))
        for claim, verdict in (
            (Claim(f"f{k}", "t", "r", "lstm", DIVERGED, RECIPE, variant, "less", 0.5, ingredient=name), finite_verdicts[k]),
            (Claim(f"a{k}", "t", "r", "lstm", "final_test_acc", variant, RECIPE, "less", 0.02, ingredient=name,
                   diverged_at_chance=True), accuracy_verdicts[k]),
        ):  # fmt: skip
            rows = {
                c.setting("lstm", "r", REGIMES["r"]): [_row(c, s, a, c is variant and verdict == "held") for s, a in enumerate(ok)]
                for c in (RECIPE, variant)
            }  # fmt: skip
            (r,) = evaluate_claims([claim], rows, REGIMES)
            r.verdict = verdict  # the sentences read the verdicts alone
            claims.append(claim)
            results.append(r)
    return claims, results


def test_the_verdicts_name_the_one_ingredient_that_keeps_the_run_finite():
    claims, results = _ablation_results(["not held", "held", "inconclusive"], ["held", "held", "not held"])
    finite, accuracy = ablation.ingredient_sentences(claims, results)
    model = "LSTM with LayerNorm (gains 0.1) (r)"
    assert finite.startswith(
        f"{model}, what keeps it finite: of the 3 ingredients taken away or swapped one at a time, only the "
        "initial-state noise keeps it finite: LayerNorm (gains 0.1, the initial-state noise) 3 of 3 seeds diverged, "
        "the full recipe 0 of 3 (Fisher's exact test, one-sided, 3 seeds each, Holm p = "
    )
    assert (
        "Not what keeps it finite (seeds diverged without it): clipping (0 of 3). Undecided: RMSProp (0 of 3)."
        in finite
    )
    assert accuracy.startswith(f"{model}, what it needs for accuracy")
    assert "a diverged seed counted at chance" in accuracy
    needed = accuracy.split("Needed: ", 1)[1].split(". Not needed: ")[0]
    assert (
        needed.startswith("clipping (-81.0 points, Holm p = ") and "; the initial-state noise (-81.0 points" in needed
    )
    assert accuracy.split(". Not needed: ")[1].startswith("RMSProp (+0.0 points")


def test_the_verdicts_say_when_several_or_no_ingredient_keeps_it_finite():
    claims, results = _ablation_results(["held", "held", "not held"], ["inconclusive"] * 3)
    finite, accuracy = ablation.ingredient_sentences(claims, results)
    assert (
        "each of clipping; the initial-state noise keeps it finite (seeds diverged without it: clipping 3 of 3, Holm p"
        in finite
    )
    assert "Needed: none shown. Undecided: clipping" in accuracy
    claims, results = _ablation_results(["not held"] * 3, ["not held"] * 3)
    finite, _ = ablation.ingredient_sentences(claims, results)
    assert "no ingredient taken away alone is shown to keep it finite (the full recipe: 0 of 3 diverged)" in finite
    assert ablation.ingredient_sentences([c for c in claims if False], results) == []


# ---------------------------------------------------------------- the regime: its cells, selection and checks


def test_a_conditions_overrides_reach_its_cells_resolved_config(tmp_path):
    """The rows regime's cells: each variant's overrides in its runs' resolved config, the rest the recipe's
    (configs/claims/lstm_recipe_rows.yaml); each variant a cell of the one regime, named and annotated apart."""
    spec = claims_spec(["lstm_recipe_rows"], PRESETS)
    cells = CLAIMS_EXPERIMENT.plan(spec, tmp_path)
    by_name = {c.cfgs[0].name.removesuffix("_seed0"): c.cfgs[0] for c in cells if c.cfgs[0].seed == 0}
    base = "lstm_recipe_rows_lstm_layer_gain0.1"
    recipe = by_name[f"{base}_bs100"]
    assert (recipe.train.grad_clip, recipe.model.state_noise_std, recipe.model.norm_eps) == (1.0, 0.1, 1e-5)
    assert (recipe.train.optimizer, recipe.train.rmsprop_alpha, recipe.model.norm_gain_init) == ("rmsprop", 0.5, 0.1)
    assert recipe.model.recurrent_init == "identity" and recipe.data.mnist_order == "rows"
    assert by_name[f"{base}_no_clip_bs100"].train.grad_clip is None
    assert by_name[f"{base}_no_noise_bs100"].model.state_noise_std == 0.0
    eps = by_name[f"{base}_eps1e-3_bs100"].model
    assert (eps.norm_eps, eps.state_noise_std) == (1e-3, 0.0)
    adam = by_name[f"{base}_adam_bs100"].train
    assert (adam.optimizer, adam.rmsprop_alpha, adam.grad_clip) == ("adam", 0.99, 1.0)
    assert by_name["lstm_recipe_rows_lstm_layer_bs100"].model.norm_gain_init is None  # LN's gain 1, its paper's
    assert by_name["lstm_recipe_rows_lstm_batch_gain1_bs100"].model.norm_gain_init == 1.0
    assert by_name["lstm_recipe_rows_lstm_none_bs100"].train.grad_clip == 1.0
    assert len(cells) == 13 * 6  # 13 settings, their seeds one after another
    rows = [{} for cell in cells for _ in cell.cfgs]
    CLAIMS_EXPERIMENT.annotate_rows(spec, cells, rows)
    names = [c.cfgs[0].name for c in cells]
    assert rows[names.index(f"{base}_no_clip_bs100_seed0")] == {"regime": "lstm_recipe_rows", "variant": "no_clip"}
    assert rows[names.index(f"{base}_bs100_seed0")] == {"regime": "lstm_recipe_rows"}


def test_the_analysis_keys_each_variants_rows_apart(tmp_path):
    """Rows of the plan's cells (no training): the variant that diverged is counted in its own claims, cells
    and aggregate entry, not in the recipe's of the same norm, batch size and gain."""
    spec = claims_spec(["rows_ln_noise_finite", "rows_ln_noise_accuracy"], PRESETS)
    cells = CLAIMS_EXPERIMENT.plan(spec, tmp_path)
    rows = []
    for cell in cells:
        for cfg in cell.cfgs:
            diverged = cfg.model.state_noise_std == 0.0
            row = _row(Condition(cfg.model.norm), cfg.seed, 0.9 + 0.01 * cfg.seed, diverged)
            row.batch_size = cfg.train.batch_size
            rows.append(row)
    out = CLAIMS_EXPERIMENT.analyse(spec, cells, rows, {"lstm_recipe_rows": [{"name": "chance", "mean": 0.11}]})
    finite, accuracy = out["claims"]
    assert finite["verdict"] == "held" and finite["p_value"] == pytest.approx(1 / 924)
    assert (
        accuracy["verdict"] == "held"
        and accuracy["counted_at_chance"]["LayerNorm (gains 0.1, no initial-state noise)"] == 6
    )
    assert [(c["condition"], c["n_diverged"]) for c in out["cells"]] == [
        ("LayerNorm (gains 0.1)", 0),
        ("LayerNorm (gains 0.1, no initial-state noise)", 6),
    ]
    assert [(e.get("variant"), e["n_diverged"]) for e in out["aggregate"]] == [(None, 0), ("no_noise", 6)]
    assert any("only the initial-state noise keeps it finite" in v for v in out["verdicts"])


def test_the_ablation_runs_by_only_not_by_all_nor_by_default():
    """--all and a plain run select no claim of the ablation's regimes; --only a regime selects its 22."""
    assert not any(c.regime.startswith("lstm_recipe") for c in claims_spec(None, PRESETS, everything=True).selected)
    assert not any(c.regime.startswith("lstm_recipe") for c in claims_spec(None, PRESETS).selected)
    only = claims_spec(["lstm_recipe_rows"], PRESETS).selected
    assert len(only) == 22 and {run_by(c) for c in only} == {"--only lstm_recipe_rows"}
    assert run_by(select_claims(["rnn_faster_default"])[0]) == "default"
    assert run_by(select_claims(["lstm_faster"])[0]) == "--all"
    with pytest.raises(
        ConfigError, match="--confirm: rows_ln_noise_finite, rows_ln_noise_accuracy, rows_ln_clip_finite ..."
    ):
        check_confirmable(ClaimsSpec(only, {}))
    check_confirmable(ClaimsSpec(select_claims(["rnn_faster_default"]), {}))


def test_a_regime_of_its_own_data_refuses_a_task(tmp_path):
    result = runner.invoke(
        app, ["claims", "--only", "lstm_recipe_rows", "--task", "adding", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "the lstm_recipe_rows regime (--only) runs on its own data only" in result.output


def test_a_condition_that_cannot_train_in_the_regime_is_one_line_naming_file_claim_and_key(tmp_path):
    """A preset whose RMSProp has momentum: Adam's variant cannot take it (a key of SGD and RMSProp only): one
    line, exit 2, naming the file, the claim and the key; nothing written. A variant of a key the config does not
    have is refused by name."""
    text = (
        (PRESETS / "lstm_recipe_rows.yaml")
        .read_text()
        .replace("  rmsprop_alpha: 0.5\n", "  rmsprop_alpha: 0.5\n  momentum: 0.9\n")
    )
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "lstm_recipe_rows.yaml").write_text(text)
    args = ["claims", "--presets", str(tmp_path / "presets"), "--only", "rows_ln_rmsprop_finite"]
    result = runner.invoke(app, [*args, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "Traceback" not in result.output and not (tmp_path / "runs").exists()
    (line,) = [x for x in result.output.splitlines() if x.strip()]
    assert "lstm_recipe_rows.yaml: claim rows_ln_rmsprop_finite (LayerNorm (gains 0.1, Adam)): train" in line
    assert "momentum" in line
    typo = Condition("layer", variant=Variant("typo", "a typo", (("train.grad_clipp", None),)))
    claim = Claim("t", "t", "r", "lstm", DIVERGED, RECIPE, typo, "less", 0.5)
    with pytest.raises(ConfigError, match=r"^here: claim t sets train.grad_clipp, which is not a config key$"):
        claim_regimes.check_conditions([claim], REGIMES["r"], "here")


def test_an_ingredient_whose_variant_is_significantly_more_accurate_is_named_so():
    """Adam in place of RMSProp 5 points more accurate in every seed: the accuracy claim is not held (Holm p <
    0.05, the opposite), and the sentence says the recipe does better without it, with the +5.0 points."""
    adam = Condition("layer", gain=0.1, variant=Variant("adam", "Adam", (("train.optimizer", "adam"),)))
    claim = Claim("a", "t", "r", "lstm", "final_test_acc", adam, RECIPE, "less", 0.02, ingredient="RMSProp")
    recipe = [0.60, 0.62, 0.58, 0.61, 0.59, 0.63]
    rows = {
        c.setting("lstm", "r", REGIMES["r"]): [_row(c, s, a + shift, False) for s, a in enumerate(recipe)]
        for c, shift in ((RECIPE, 0.0), (adam, 0.05))
    }
    (r,) = evaluate_claims([claim], rows, REGIMES)
    assert r.verdict == "not held" and r.effect == pytest.approx(0.05) and r.p_adjusted < 0.05
    (sentence,) = ablation.ingredient_sentences([claim], [r])
    assert sentence.endswith(
        f"Needed: none shown. Better without it (its variant more accurate): RMSProp (+5.0 points, Holm p = {r.p_adjusted:.2g})."
    )
