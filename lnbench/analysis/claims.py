"""``lnbench claims``: each claim about LayerNorm tested in a regime where it can show.

A claim compares two conditions (a norm, and optionally a batch size) of one model family in one
*regime*: a preset config in ``configs/claims/<regime>.yaml`` (an ordinary lnbench config: data,
model, train, seeds). The runs are paired by seed (same data, initial weights and batch order),
and the verdict is computed from the paired differences a - b over the seeds
(:func:`lnbench.analysis.stats.paired_over_seeds`), never written in:

- a *directional* claim (``direction="less"``: a below b, e.g. LayerNorm's area under the
  train-loss curve below NoNorm's) is ``held`` when the Holm-adjusted p < 0.05 (Holm over all
  directional claims of the run), the effect has the claimed sign and is at least the claim's
  ``margin``; ``not held`` when it is significant with the other sign, when it is significant
  but smaller than the margin, or when the whole 95% interval lies within the margin (the
  effect is shown to be negligible); otherwise ``inconclusive``.
- an *equivalence* claim (``direction="equal"``: a and b within ``margin``, e.g. LayerNorm's
  accuracy at batch size 1 and 64) is ``held`` when the whole 95% interval lies inside
  (-margin, +margin); ``not held`` when it lies wholly outside; otherwise ``inconclusive``.

The margins are the smallest effects the claims care about (2 accuracy points, 0.02 nats of
mean train loss, 0.1 of an absolute rank correlation); they are printed with every verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from lnbench.analysis import stats
from lnbench.config import ConfigError, RunConfig, load_config
from lnbench.config.checks import check_keys_apply, check_memory_of_families, check_seeds
from lnbench.names import family_label, norm_label
from lnbench.records.schema import SummaryRow

VERDICTS = ("held", "not held", "inconclusive")
BOUNDS = {"final_test_acc": 1.0, "abs_scale_spearman": 1.0}  # |a - b| can be at most this

#: metric -> (label, short label for tables): what each claim can measure, from a SummaryRow.
METRICS = {
    "mean_train_loss": ("mean train loss (area under the loss curve)", "mean train loss"),
    "final_test_acc": ("final test accuracy", "test acc"),
    "abs_scale_spearman": ("|Spearman correlation| of ||h_T|| with the input scale", "|rho(||h_T||, s)|"),
}


def metric_value(row: SummaryRow, metric: str) -> float | None:
    """A claim's metric of one run: a :class:`SummaryRow` field, or ``abs_scale_spearman``, the
    absolute Spearman correlation of ||h_T|| with the input scale (a state whose size falls as
    the scale grows depends on it as much as one whose size grows)."""
    if metric == "abs_scale_spearman":
        rho = row.final_scale_spearman
        return None if rho is None else abs(rho)
    return getattr(row, metric)


@dataclass(frozen=True)
class Condition:
    """One side of a claim: a norm, and a batch size (None: the regime's ``train.batch_size``)."""

    norm: str
    batch_size: int | None = None

    def label(self) -> str:
        return norm_label(self.norm) + (f" at batch size {self.batch_size}" if self.batch_size is not None else "")


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


#: The claims ``lnbench claims`` evaluates, in table order.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "rnn_faster_default",
        "LayerNorm converges faster than NoNorm",
        "default",
        "rnn",
        "mean_train_loss",
        Condition("layer"),
        Condition("none"),
        "less",
        0.02,
        "the default task, joint placement (Ba et al. eq. 4)",
    ),
    Claim(
        "rnn_separate_learns",
        "Normalizing the recurrent and input terms separately lets the RNN learn the memory task that NoNorm cannot",
        "separate_placement",
        "rnn",
        "final_test_acc",
        Condition("none"),
        Condition("layer"),
        "less",
        0.02,
        "the default task with norm(W_hh h) + norm(W_xh x), the form of the paper's LN-LSTM",
    ),
    Claim(
        "rnn_joint_does_not_learn",
        "In the joint placement LayerNorm does not let the RNN learn more than NoNorm",
        "default",
        "rnn",
        "final_test_acc",
        Condition("layer"),
        Condition("none"),
        "equal",
        0.02,
        "the default task, joint placement norm(W_hh h + W_xh x) (Ba et al. eq. 4)",
    ),
    Claim(
        "rnn_separate_ln_vs_bn",
        "In the separate placement LayerNorm is as accurate as BatchNorm",
        "separate_placement",
        "rnn",
        "final_test_acc",
        Condition("layer"),
        Condition("batch"),
        "equal",
        0.02,
        "the default task, separate placement, batch size 64",
    ),
    Claim(
        "rnn_faster_unstable",
        "LayerNorm converges faster than NoNorm",
        "unstable_recurrence",
        "rnn",
        "mean_train_loss",
        Condition("layer"),
        Condition("none"),
        "less",
        0.02,
        "an expanding recurrence: W_hh orthogonal x 3",
    ),
    Claim(
        "rnn_scale_invariant",
        "LayerNorm stabilises hidden-state dynamics against input scale",
        "large_input_scale",
        "rnn",
        "abs_scale_spearman",
        Condition("layer"),
        Condition("none"),
        "less",
        0.1,
        "input scales from 16 to 256",
    ),
    Claim(
        "rnn_ln_batch_size",
        "LayerNorm's accuracy does not depend on batch size",
        "small_batches",
        "rnn",
        "final_test_acc",
        Condition("layer", 1),
        Condition("layer", 64),
        "equal",
        0.02,
        "batch size 1 vs 64, same samples seen",
    ),
    Claim(
        "rnn_bn_batch_size_1",
        "BatchNorm degrades at batch size 1",
        "small_batches",
        "rnn",
        "final_test_acc",
        Condition("batch", 1),
        Condition("batch", 64),
        "less",
        0.02,
        "batch size 1 vs 64, same samples seen",
    ),
    Claim(
        "tf_faster",
        "LayerNorm converges faster than NoNorm",
        "default",
        "transformer",
        "mean_train_loss",
        Condition("layer"),
        Condition("none"),
        "less",
        0.02,
        "the default task and fair Transformer",
    ),
    Claim(
        "tf_scale_invariant",
        "LayerNorm stabilises hidden-state dynamics against input scale",
        "default",
        "transformer",
        "abs_scale_spearman",
        Condition("layer"),
        Condition("none"),
        "less",
        0.1,
        "input_norm on: invariant by construction (already at initialisation)",
    ),
    Claim(
        "tf_scale_invariant_prenorm_only",
        "LayerNorm stabilises hidden-state dynamics against input scale",
        "transformer_no_input_norm",
        "transformer",
        "abs_scale_spearman",
        Condition("layer"),
        Condition("none"),
        "less",
        0.1,
        "pre-norm LayerNorm only: the residual stream itself is not normalized",
    ),
    Claim(
        "tf_ln_batch_size",
        "LayerNorm's accuracy does not depend on batch size",
        "small_batches_transformer",
        "transformer",
        "final_test_acc",
        Condition("layer", 1),
        Condition("layer", 64),
        "equal",
        0.02,
        "batch size 1 vs 64, same samples seen",
    ),
    Claim(
        "tf_bn_batch_size_1",
        "BatchNorm degrades at batch size 1",
        "small_batches_transformer",
        "transformer",
        "final_test_acc",
        Condition("batch", 1),
        Condition("batch", 64),
        "less",
        0.02,
        "batch size 1 vs 64, same samples seen",
    ),
    Claim(
        "lstm_faster",
        "LayerNorm speeds up LSTM training",
        "lstm",
        "lstm",
        "mean_train_loss",
        Condition("layer"),
        Condition("none"),
        "less",
        0.02,
        "the default task and budget; the paper's LN-LSTM (Ba et al. 2016, section 3.1)",
    ),
    Claim(
        "lstm_ln_more_accurate",
        "LayerNorm improves the LSTM's accuracy on the memory task",
        "lstm",
        "lstm",
        "final_test_acc",
        Condition("none"),
        Condition("layer"),
        "less",
        0.02,
        "the default task: the class is in the trend across timesteps, not in any one of them",
    ),
    Claim(
        "lstm_ln_vs_bn",
        "In the LSTM, LayerNorm is as accurate as BatchNorm (Cooijmans et al.'s BN-LSTM)",
        "lstm",
        "lstm",
        "final_test_acc",
        Condition("layer"),
        Condition("batch"),
        "equal",
        0.02,
        "the default task at batch size 64",
    ),
    Claim(
        "lstm_ln_faster_than_bn",
        "In the LSTM, LayerNorm converges faster than BatchNorm",
        "lstm",
        "lstm",
        "mean_train_loss",
        Condition("layer"),
        Condition("batch"),
        "less",
        0.02,
        "the default task at batch size 64; Ba et al. 2016, section 6.2 (the attentive reader): LN-LSTM trained "
        "faster than BN-LSTM",
    ),
    Claim(
        "lstm_ln_batch_size",
        "LayerNorm's accuracy does not depend on batch size",
        "lstm_small_batches",
        "lstm",
        "final_test_acc",
        Condition("layer", 1),
        Condition("layer", 64),
        "equal",
        0.02,
        "batch size 1 vs 64, same samples seen",
    ),
    Claim(
        "lstm_bn_batch_size_1",
        "BatchNorm degrades at batch size 1",
        "lstm_small_batches",
        "lstm",
        "final_test_acc",
        Condition("batch", 1),
        Condition("batch", 64),
        "less",
        0.02,
        "batch size 1 vs 64, same samples seen; BatchNorm of one value is its beta (0 for the two terms)",
    ),
)
CLAIM_IDS = tuple(c.id for c in CLAIMS)


def select_claims(ids: Sequence[str] | None) -> list[Claim]:
    """The claims with these ids (all when None or empty), in table order.

    Raises:
        ConfigError: an unknown id, naming the allowed ones.
    """
    if not ids:
        return list(CLAIMS)
    unknown = [i for i in ids if i not in CLAIM_IDS]
    if unknown:
        raise ConfigError(f"--only: unknown claim {unknown[0]!r}; allowed: {', '.join(CLAIM_IDS)}")
    return [c for c in CLAIMS if c.id in ids]


def load_regimes(
    claims: Sequence[Claim], presets: Path, overrides: Sequence[str] = (), seed: int | None = None
) -> dict[str, RunConfig]:
    """Load the preset config of every regime the claims use (``presets/<regime>.yaml``), with
    the same ``--set`` overrides and ``--seed`` applied to each.

    Raises:
        ConfigError: a missing or invalid preset, a batch size above ``n_train``, or bad seeds.
    """
    regimes = {}
    for name in dict.fromkeys(c.regime for c in claims):
        path = presets / f"{name}.yaml"
        if not path.is_file():
            raise ConfigError(
                f"{path}: regime preset not found (claims use: {', '.join(sorted({c.regime for c in claims}))})"
            )
        cfg = load_config(path, list(overrides), seed)
        try:
            check_seeds(cfg)
            families = {c.family for c in claims if c.regime == name}
            check_keys_apply(cfg, families)
            check_memory_of_families(cfg, sorted(families))
        except ConfigError as exc:
            raise ConfigError("\n".join(f"{path}: {line}" for line in str(exc).splitlines())) from None
        if len(cfg.seed_list) < 2:
            raise ConfigError(
                f"{path}: seeds: a claim's verdict is a paired test over seeds and needs at least 2 (got {cfg.seed_list})"
            )
        for c in claims:
            for cond in (c.a, c.b):
                if c.regime == name and cond.batch_size is not None and cond.batch_size > cfg.data.n_train:
                    raise ConfigError(
                        f"{path}: claim {c.id} needs batch size {cond.batch_size} > data.n_train ({cfg.data.n_train})"
                    )
        regimes[name] = cfg
    return regimes


def regimes_yaml(regimes: dict[str, RunConfig]) -> str:
    """The config.yaml of a claims run: every regime's resolved config under its name."""
    return "".join(
        f"# regime: {name}\n{name}:\n" + "".join(f"  {line}\n" for line in cfg.to_yaml().splitlines())
        for name, cfg in regimes.items()
    )


def cells_needed(claims: Sequence[Claim], regimes: dict[str, RunConfig]) -> list[tuple[str, dict]]:
    """Every (regime, changes) setting the claims need, each once: ``changes`` are
    ``section__key`` values (family, norm, batch size) for :meth:`RunConfig.with_changes`."""
    out: dict[tuple, tuple[str, dict]] = {}
    for c in claims:
        for cond in (c.a, c.b):
            bs = cond.batch_size if cond.batch_size is not None else regimes[c.regime].train.batch_size
            key = (c.regime, c.family, cond.norm, bs)
            out.setdefault(
                key, (c.regime, {"model__family": c.family, "model__norm": cond.norm, "train__batch_size": bs})
            )
    return list(out.values())


def setting_name(regime: str, changes: dict) -> str:
    """The child-run name prefix of a setting: ``unstable_recurrence_rnn_layer_bs64``."""
    return f"{regime}_{changes['model__family']}_{changes['model__norm']}_bs{changes['train__batch_size']}"


@dataclass
class ClaimResult:
    """One evaluated claim, as written to ``summary.json`` ``claims``."""

    id: str
    claim: str
    regime: str
    family: str
    metric: str
    a: str
    b: str
    direction: str
    margin: float
    effect: float | None  # mean over seeds of a - b (accuracy: a fraction)
    ci95: list[float] | None
    p_value: float | None
    p_adjusted: float | None
    test: str
    n_seeds: int
    mean_a: float | None
    mean_b: float | None
    verdict: str
    reason: str
    runs: list[str] = field(default_factory=list)
    why: str = ""  # why the claim is tested in this regime
    seeds_needed: int | None = None  # inconclusive: seeds that would decide it (:func:`seeds_needed`)

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


def seeds_needed(claim: Claim, effect: float, a: Sequence[float | None], b: Sequence[float | None]) -> int | None:
    """How many seeds would decide an inconclusive claim, if the paired differences a - b (the
    claim's metric of a and of b, seed by seed) keep the mean ``effect`` and the spread (sample sd)
    observed now:

    - a directional claim: the seeds at which a paired t-test (two-sided, alpha 0.05) of that
      effect has 80 % power (:func:`lnbench.analysis.stats.seeds_for_power`);
    - an equivalence claim: the seeds at which the 95 % interval fits inside the margin
      (:func:`lnbench.analysis.stats.seeds_for_interval`).

    None when no number of seeds would (no spread, no effect, an effect past the margin of an
    equivalence claim), more than 1000 are needed, or a value is None (NaN, as in paired_over_seeds). Differences equal up to round-off have no
    spread: judged as :func:`lnbench.analysis.stats.paired_over_seeds` judges them (a spread of at
    most 1e-6 of the data's largest magnitude), which tested them with a sign test, not a t-test.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.size < 2:
        return None
    d = xa - xb
    spread = np.ptp(d) > stats._EQUAL_RTOL * max(np.abs(xa).max(), np.abs(xb).max())
    sd = float(d.std(ddof=1)) if spread else 0.0
    if claim.direction == "equal":
        return stats.seeds_for_interval(effect, sd, claim.margin)
    return stats.seeds_for_power(effect, sd)


def _verdict(claim: Claim, effect: float, ci: Sequence[float], p_adj: float | None) -> tuple[str, str]:
    lo, hi, m = ci[0], ci[1], claim.margin
    band = "+-" + format_amount(claim.metric, m, signed=False)
    if claim.direction == "equal":
        if -m < lo and hi < m:
            return "held", f"the 95% interval lies within {band}"
        if lo >= m or hi <= -m:
            return "not held", f"the 95% interval lies outside {band}"
        return "inconclusive", f"the 95% interval reaches past {band}"
    significant = p_adj is not None and p_adj < stats.ALPHA
    if significant and effect <= -m:
        return "held", f"Holm p < {stats.ALPHA:g}, a below b by at least {band[2:]}"
    if significant and effect < 0:
        return "not held", f"Holm p < {stats.ALPHA:g} but the effect is smaller than {band[2:]}: negligible"
    if significant and effect > 0:
        return "not held", f"Holm p < {stats.ALPHA:g}, a above b: the opposite"
    if -m < lo and hi < m:
        return "not held", f"no effect: the 95% interval lies within {band}"
    return "inconclusive", "not significant, and the interval does not rule out an effect"


def evaluate_claims(
    claims: Sequence[Claim],
    rows_by_setting: dict[tuple, list[SummaryRow]],
    regimes: dict[str, RunConfig],
    chance: dict[str, float] | None = None,
) -> list[ClaimResult]:
    """Test every claim on its rows (paired by seed, diverged seeds dropped) and give verdicts.

    An accuracy claim whose reference condition b is within the margin of chance is
    ``inconclusive`` whatever the test says: nothing can degrade from chance, and two models at
    chance are "equal" for no reason that concerns the claim.

    Args:
        claims: the claims.
        rows_by_setting: ``(regime, family, norm, batch_size)`` -> the rows of its seeds.
        regimes: the regime configs (for the default batch size).
        chance: regime -> chance accuracy on its test sets (the ``chance`` baseline); None: not checked.

    Returns:
        One :class:`ClaimResult` per claim, in order; Holm over the directional claims' p-values.
    """
    tested: list[tuple[Claim, list, stats.PairedResult | None, str, list[str]]] = []
    for c in claims:
        bs = lambda cond: cond.batch_size if cond.batch_size is not None else regimes[c.regime].train.batch_size  # noqa: E731
        rows_a = rows_by_setting.get((c.regime, c.family, c.a.norm, bs(c.a)), [])
        rows_b = rows_by_setting.get((c.regime, c.family, c.b.norm, bs(c.b)), [])
        b_by_seed = {r.seed: r for r in rows_b}
        pairs = [
            (a, b)
            for a in rows_a
            if (b := b_by_seed.get(a.seed)) is not None
            and a.ok
            and b.ok
            and metric_value(a, c.metric) is not None
            and metric_value(b, c.metric) is not None
        ]
        runs = [r.run_dir for r in (*rows_a, *rows_b)]
        result, why = None, ""
        if len(pairs) < 2:
            diverged = sum(r.status == "diverged" for r in (*rows_a, *rows_b))
            undefined = sum(r.ok and metric_value(r, c.metric) is None for r in (*rows_a, *rows_b))
            why = f"{len(pairs)} of {len(rows_a)} seeds have a value for both runs" + (
                f" ({diverged} runs diverged)" if diverged else ""
            )
            if undefined:
                why += f" ({undefined} finished runs have no {c.metric}" + (
                    ": the correlation is undefined when ||h_T|| or the scales are all equal, or n_test < 3)"
                    if c.metric == "abs_scale_spearman"
                    else ")"
                )
            why += "; a paired test needs 2"
        else:
            resolution = 1 / pairs[0][0].n_test if c.metric == "final_test_acc" else None
            result = stats.paired_over_seeds(
                [metric_value(a, c.metric) for a, _ in pairs], [metric_value(b, c.metric) for _, b in pairs], resolution
            )
            bound = BOUNDS.get(c.metric)  # a difference of accuracies (correlations) lies in [-1, 1] ([-2, 2])
            if bound is not None:
                result = replace(result, ci95=(max(-bound, result.ci95[0]), min(bound, result.ci95[1])))
        tested.append((c, pairs, result, why, runs))
    directional = {k: r.p_value for k, (c, _, r, _, _) in enumerate(tested) if r is not None and c.direction == "less"}
    adjusted = dict(zip(directional, stats.holm(list(directional.values()))))
    out = []
    for k, (c, pairs, r, why, runs) in enumerate(tested):
        mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
        mean_b = mean([metric_value(b, c.metric) for _, b in pairs])
        level = None if chance is None or c.metric != "final_test_acc" else chance.get(c.regime)
        if r is None:
            verdict, reason = "inconclusive", why
        elif level is not None and mean_b is not None and mean_b < level + c.margin:
            verdict, reason = (
                "inconclusive",
                f"{c.b.label()} is at chance ({mean_b:.1%}) in this regime: the claim cannot show",
            )
        else:
            verdict, reason = _verdict(c, r.mean_diff, r.ci95, adjusted.get(k))
        needed = None
        if r is not None and verdict == "inconclusive" and not reason.endswith("the claim cannot show"):
            xa, xb = [metric_value(a, c.metric) for a, _ in pairs], [metric_value(b, c.metric) for _, b in pairs]
            needed = seeds_needed(c, r.mean_diff, xa, xb)
        out.append(
            ClaimResult(
                id=c.id,
                claim=c.text,
                regime=c.regime,
                family=c.family,
                metric=c.metric,
                a=c.a.label(),
                b=c.b.label(),
                direction=c.direction,
                margin=c.margin,
                effect=None if r is None else r.mean_diff,
                ci95=None if r is None else list(r.ci95),
                p_value=None if r is None else r.p_value,
                p_adjusted=adjusted.get(k),
                test="" if r is None else r.test,
                n_seeds=len(pairs),
                mean_a=mean([metric_value(a, c.metric) for a, _ in pairs]),
                mean_b=mean_b,
                verdict=verdict,
                reason=reason,
                runs=runs,
                why=c.why,
                seeds_needed=needed,
            )
        )
    return out


def _units(metric: str) -> tuple[float, int, str]:
    """(scale, decimals, unit suffix) to show an amount of ``metric``."""
    if metric == "final_test_acc":
        return 100, 1, " points"
    if metric == "mean_train_loss":
        return 1, 3, " nats"
    return 1, 2, ""


def format_amount(metric: str, x: float, signed: bool = True) -> str:
    """An amount of ``metric`` in its display units: ``+1.5 points``, ``0.020 nats``."""
    scale, digits, unit = _units(metric)
    return f"{scale * x:{'+' if signed else ''}.{digits}f}{unit}"


def format_level(metric: str, x: float) -> str:
    """A value (not a difference) of ``metric``: ``93.6%``, ``0.264 nats``, ``0.06``."""
    return f"{x:.1%}" if metric == "final_test_acc" else format_amount(metric, x, signed=False)


def format_effect(r: ClaimResult) -> str:
    """``-0.083 [-0.101, -0.065] nats`` or ``+1.5 [-0.5, +3.5] points``."""
    if r.effect is None:
        return "-"
    assert r.ci95 is not None  # a tested claim (effect set) has its interval
    scale, digits, unit = _units(r.metric)
    f = lambda x: f"{scale * x:+.{digits}f}"  # noqa: E731
    return f"{f(r.effect)} [{f(r.ci95[0])}, {f(r.ci95[1])}]{unit}"


def claim_sentences(results: Sequence[ClaimResult]) -> list[str]:
    """One sentence per claim: claim, regime, effect with its interval, verdict and why."""
    out = []
    for r in results:
        if r.effect is None:
            out.append(
                f"{family_label(r.family)}, {r.claim} ({r.regime}): not tested ({r.reason}): {r.verdict.upper()}."
            )
            continue
        # a tested claim (an effect) has its p-value and >= 2 seeds with values
        assert r.p_value is not None
        assert r.mean_a is not None
        assert r.mean_b is not None
        p = f", p = {r.p_value:.2g}" + (f", Holm p = {r.p_adjusted:.2g}" if r.p_adjusted is not None else "")
        more = ""
        if r.verdict == "inconclusive" and r.seeds_needed is not None:
            what = "an effect this size at 80% power" if r.direction == "less" else "an interval inside the margin"
            more = (
                f" About {r.seeds_needed} seeds would decide it ({what}, from the observed sd of the paired "
                f"differences): lnbench claims --only {r.id} --num-seeds {r.seeds_needed}."
            )
        out.append(
            f"{family_label(r.family)}, {r.claim} ({r.regime}): {METRICS[r.metric][0]}, {r.a} minus {r.b} = {format_effect(r)}"
            f"{p}, {r.n_seeds} seeds ({r.a} {format_level(r.metric, r.mean_a)}, {r.b} {format_level(r.metric, r.mean_b)}):"
            f" {r.verdict.upper()} ({r.reason}).{more}"
        )
    return out
