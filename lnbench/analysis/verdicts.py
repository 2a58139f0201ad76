"""Comparisons and the sentences built on them, computed from summary rows with :mod:`lnbench.analysis.stats`.

Within one experiment the runs being compared share the test set, the data, the seed and the
initial weights, so they are compared *pairwise*:

- one seed: an exact McNemar test on the per-example results (``test_correct``);
- several seeds: a paired t-test over the seeds and a t interval of the mean paired difference
  (a sign test when every seed gives the same difference).

Every test of one family of comparisons (all pairs of norms of one model family for one metric
in ``compare``; all comparisons of one sweep) is corrected with Holm-Bonferroni; a comparison is
``significant`` when its adjusted p-value is below :data:`lnbench.analysis.stats.ALPHA`. A seed on which
either run diverged is left out of that pair (see :mod:`lnbench.records.schema`), and the sentence says
how many seeds diverged. Effects are reported in points (percentage points of accuracy) or nats,
with their 95% interval.

A comparison is ``borderline`` when its Holm p-value is in [0.01, 0.1) (:func:`lnbench.analysis.stats.is_borderline`):
the decision would differ at alpha 0.01 or 0.1, and per-seed numbers are bit-exact only on the same kind of
CPU, so another machine's rounding can flip it. Its sentence says so, with ``seeds_to_settle``: the seeds at
which the observed effect would reach Holm p < 0.01 with 80% power.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from math import nan

from lnbench.analysis import stats
from lnbench.analysis.metrics import METRICS
from lnbench.names import group_label, model_group_of, norm_label, norm_order, plural
from lnbench.records.schema import SummaryRow


@dataclass
class Comparison:
    """One tested pair, as written to ``summary.json`` ``comparisons``.

    ``mean_diff`` is a minus b (accuracy: a fraction, 0.02 = 2 points; loss: nats); ``ci95`` its
    95% interval; ``p_adjusted`` the Holm-adjusted p-value within ``family``. ``condition_a`` /
    ``condition_b`` say what else differs when the norms are the same (a batch size, an
    evaluation mode). ``borderline``: ``0.01 <= p_adjusted < 0.1`` (:func:`lnbench.analysis.stats.is_borderline`);
    ``seeds_to_settle``: for a borderline t-test, the seeds at which the observed effect would come out
    at Holm p < 0.01 with 80% power (:func:`seeds_to_settle`), None when not borderline, not more
    than ``n_seeds`` or not computable (one seed, McNemar).
    """

    family: str
    norm_a: str
    norm_b: str
    metric: str
    mean_diff: float
    ci95: tuple[float, float]
    p_value: float
    p_adjusted: float
    test: str
    n_seeds: int
    significant: bool
    condition_a: str = ""
    condition_b: str = ""
    borderline: bool = False
    seeds_to_settle: int | None = None
    alpha: float = stats.ALPHA  # the level of ``significant`` (a confirm stage's: 0.04)
    #: a confirmed compare (``--confirm``): "pilot" (decided on the pilot's seeds), "confirm" (on
    #: fresh seeds alone), "not decidable"; "" without --confirm
    stage: str = ""
    pilot: dict | None = None  # a confirmed compare: the pilot's test of this pair (seeds, effect, p, Holm p)
    plan: dict | None = None  # a confirmed compare: the plan (action, seeds, level, why, fresh seeds)
    seeds: list[int] | None = None  # the seeds the test read (a confirmed compare)

    def to_dict(self) -> dict:
        """As summary.json holds it; the confirm stage's keys (alpha, stage, pilot, plan, seeds)
        only in a confirmed compare."""
        out = asdict(self)
        out["ci95"] = list(self.ci95)
        if not self.stage:
            for key in ("alpha", "stage", "pilot", "plan", "seeds"):
                del out[key]
        return out


Pair = tuple[SummaryRow, SummaryRow]


def paired_test(pairs: Sequence[Pair], metric: str) -> stats.PairedResult | None:
    """Test a paired difference over ``pairs`` (one per seed; diverged seeds already dropped).

    ``final_test_acc`` with one pair: exact McNemar on ``test_correct``. ``batch_stats_vs_eval``:
    the same row's ``test_correct_batch_stats`` against its ``test_correct``. Any metric with
    >= 2 pairs: :func:`lnbench.analysis.stats.paired_over_seeds` of :func:`seed_values`,
    accuracies with their resolution 1 / n_test. None when nothing can be tested (no
    pair, or one pair of a metric without per-example results).
    """
    if not pairs:
        return None
    if len(pairs) == 1:
        a, b = pairs[0]
        if metric == "batch_stats_vs_eval":
            if a.test_correct and a.test_correct_batch_stats is not None:
                return stats.mcnemar_exact(a.test_correct_batch_stats, a.test_correct)
            return None
        if (
            metric == "final_test_acc"
            and a.test_correct
            and b.test_correct
            and len(a.test_correct) == len(b.test_correct)
        ):
            return stats.mcnemar_exact(a.test_correct, b.test_correct)
        return None
    return stats.paired_over_seeds(*seed_values(pairs, metric))


def seed_values(pairs: Sequence[Pair], metric: str) -> tuple[list[float], list[float], float | None]:
    """What :func:`paired_test` compares over >= 1 seeds: a's and b's value of ``metric`` per pair
    (``batch_stats_vs_eval``: the row's batch-statistics accuracy and its eval-mode accuracy; a
    missing value as NaN) and the resolution the sd is floored at (an accuracy: 1 / n_test; a
    loss, or an older file without n_test: None)."""
    if metric == "batch_stats_vs_eval":
        a = [r.final_test_acc_batch_stats for r, _ in pairs]
        b = [r.final_test_acc for r, _ in pairs]
        resolution: float | None = 1 / pairs[0][0].n_test
    else:
        a = [getattr(r, metric) for r, _ in pairs]
        b = [getattr(r, metric) for _, r in pairs]
        n_test = pairs[0][0].n_test  # 0: an older file without it
        resolution = 1 / n_test if metric == "final_test_acc" and n_test else None  # accuracy steps
    return [nan if x is None else x for x in a], [nan if x is None else x for x in b], resolution


def pair_spec(pairs: Sequence[Pair], metric: str, **fields: str) -> dict:
    """The ``dict`` :func:`holm_family` takes beside a :func:`paired_test` of ``pairs``: ``metric``,
    ``n_seeds``, ``paired_sd`` (the sd that test uses, :func:`lnbench.analysis.stats.paired_sd`;
    None for one pair) and ``fields`` (norm_a, norm_b, condition_a, condition_b)."""
    sd = stats.paired_sd(*seed_values(pairs, metric)) if len(pairs) >= 2 else None
    return {**fields, "metric": metric, "n_seeds": len(pairs), "paired_sd": sd}


def _has(r: SummaryRow, metric: str) -> bool:
    if metric == "batch_stats_vs_eval":
        return r.final_test_acc_batch_stats is not None
    return getattr(r, metric) is not None


def pair_by_seed(rows_a: Iterable[SummaryRow], rows_b: Iterable[SummaryRow], metric: str) -> list[Pair]:
    """Rows of two conditions matched by seed, keeping the seeds where both finished (neither
    diverged) with a value of ``metric``; the seeds stay paired."""
    b_by_seed = {r.seed: r for r in rows_b}
    return [
        (a, b)
        for a in rows_a
        if (b := b_by_seed.get(a.seed)) is not None and a.ok and b.ok and _has(a, metric) and _has(b, metric)
    ]


def holm_family(
    family: str, tests: list[tuple[dict, stats.PairedResult]], alpha: float = stats.ALPHA
) -> list[Comparison]:
    """Holm-correct one family of tests, significant at ``alpha``; each ``dict`` holds norm_a,
    norm_b, metric, n_seeds, conditions and (:func:`pair_spec`) ``paired_sd``, without which
    ``seeds_to_settle`` is None."""
    adjusted = stats.holm([t.p_value for _, t in tests])
    return [
        Comparison(
            family=family,
            metric=spec["metric"],
            norm_a=spec["norm_a"],
            norm_b=spec["norm_b"],
            condition_a=spec.get("condition_a", ""),
            condition_b=spec.get("condition_b", ""),
            mean_diff=t.mean_diff,
            ci95=(t.ci95[0], t.ci95[1]),
            p_value=t.p_value,
            p_adjusted=p_adj,
            test=t.test,
            n_seeds=spec["n_seeds"],
            significant=p_adj < alpha,
            borderline=stats.is_borderline(p_adj),
            seeds_to_settle=seeds_to_settle(t, p_adj, spec["n_seeds"], spec.get("paired_sd")),
            alpha=alpha,
        )
        for (spec, t), p_adj in zip(tests, adjusted)
    ]


def seeds_to_settle(t: stats.PairedResult, p_adjusted: float, n_seeds: int, sd: float | None) -> int | None:
    """For a borderline comparison (:func:`lnbench.analysis.stats.is_borderline`) over >= 2 seeds: the
    seeds at which a paired t-test of its observed effect ``t.mean_diff`` with ``sd`` (the test's
    :func:`lnbench.analysis.stats.paired_sd`) has 80% power at the raw level
    ``0.01 * p_value / p_adjusted``, the level that gives Holm p < 0.01 with this family's multiplier.
    None when not borderline, one seed (McNemar), no sd, or the number is not above ``n_seeds``
    (or beyond :func:`lnbench.analysis.stats.seeds_for_power`'s reach)."""
    if not stats.is_borderline(p_adjusted) or n_seeds < 2 or sd is None or t.p_value <= 0:
        return None
    alpha = stats.BORDERLINE_ALPHAS[0] * t.p_value / p_adjusted
    n = stats.seeds_for_power(t.mean_diff, sd, alpha=alpha)
    return n if n is not None and n > n_seeds else None


def _group(rows: Iterable[SummaryRow], *keys: str) -> dict[tuple, list[SummaryRow]]:
    out: dict[tuple, list[SummaryRow]] = defaultdict(list)
    for r in rows:
        out[tuple(getattr(r, k) for k in keys)].append(r)
    return out


def model_group(row: SummaryRow) -> str:
    """:func:`lnbench.names.model_group_of` a row: family, RNN placement, a set initial gain."""
    return model_group_of(row.family, row.norm_placement, row.norm_gain_init)


def compare_comparisons(rows: Sequence[SummaryRow]) -> list[Comparison]:
    """Every pair of norms of each model group (:func:`model_group`), for ``final_test_acc`` and
    ``mean_train_loss``; Holm within each (model group, metric)."""
    out: list[Comparison] = []
    by_group: dict[str, list[SummaryRow]] = {}
    for r in rows:
        by_group.setdefault(model_group(r), []).append(r)
    for group, group_rows in by_group.items():
        by_norm = {n: rs for (n,), rs in _group(group_rows, "norm").items()}
        norms = list(by_norm)
        for metric in ("final_test_acc", "mean_train_loss"):
            tests = []
            for i, a in enumerate(norms):
                for b in norms[i + 1 :]:
                    pairs = pair_by_seed(by_norm[a], by_norm[b], metric)
                    result = paired_test(pairs, metric)
                    if result is not None:
                        tests.append((pair_spec(pairs, metric, norm_a=a, norm_b=b), result))
            out += holm_family(f"{group}/{metric}", tests)
    return out


def sweep_comparisons(rows: Sequence[SummaryRow], reference_batch_size: int) -> list[Comparison]:
    """All comparisons of a batch-size sweep, one Holm family:

    - each norm against NoNorm at the same batch size (final test accuracy);
    - each norm at each batch size against the same norm at ``reference_batch_size``;
    - BatchNorm's batch-statistics accuracy against its eval-mode (running statistics) accuracy.
    """
    cell = {k: v for k, v in _group(rows, "norm", "batch_size").items()}
    norms = list(dict.fromkeys(r.norm for r in rows))
    sizes = sorted({r.batch_size for r in rows})
    tests = []

    def add(rows_a, rows_b, metric, norm_a, norm_b, cond_a, cond_b):
        pairs = pair_by_seed(rows_a, rows_b, metric)
        result = paired_test(pairs, metric)
        if result is not None:
            spec = pair_spec(pairs, metric, norm_a=norm_a, norm_b=norm_b, condition_a=cond_a, condition_b=cond_b)
            tests.append((spec, result))

    for norm in norms:
        for bs in sizes:
            here = cell.get((norm, bs), [])
            if norm != "none" and ("none", bs) in cell:
                add(here, cell[("none", bs)], "final_test_acc", norm, "none", f"batch size {bs}", f"batch size {bs}")
            if bs != reference_batch_size and (norm, reference_batch_size) in cell:
                add(
                    here,
                    cell[(norm, reference_batch_size)],
                    "final_test_acc",
                    norm,
                    norm,
                    f"batch size {bs}",
                    f"batch size {reference_batch_size}",
                )
            if any(r.final_test_acc_batch_stats is not None for r in here):
                add(
                    here,
                    here,
                    "batch_stats_vs_eval",
                    norm,
                    norm,
                    f"batch size {bs}, batch statistics",
                    f"batch size {bs}, running statistics",
                )
    return holm_family("sweep", tests)


# ---- sentences ---------------------------------------------------------------------------


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def memoryless_rows(baselines: Sequence[dict] | None) -> list[SummaryRow]:
    """The memoryless baseline (a linear readout of x_T alone, :mod:`lnbench.training.baselines`)
    as one row per seed, so that a model's rows can be paired with it like any other condition."""
    by = {b["name"]: b for b in baselines or []}
    base = by.get("last_timestep")
    if base is None:
        return []
    correct = base.get("correct_per_seed") or [None] * len(base["seeds"])
    return [
        SummaryRow(
            family="baseline", norm="memoryless", batch_size=0, seed=seed, status="completed",
            epochs_completed=0, final_test_acc=acc, final_test_acc_batch_stats=None, final_train_loss=None,
            final_test_loss=None, mean_train_loss=None, first_epoch_at_target=None, n_test=base["n_test"],
            test_correct=c,
        )
        for seed, acc, c in zip(base["seeds"], base["acc_per_seed"], correct)
    ]  # fmt: skip


def memoryless_tests(rows: Sequence[SummaryRow], baselines: Sequence[dict] | None) -> dict[tuple[str, str], dict]:
    """Did each (model group, norm) learn more than a memoryless model? Its final test accuracy
    minus the memoryless baseline's, paired on the same seeds' test sets (a paired t-test over
    seeds; McNemar on the test examples for one seed), Holm over all the groups' tests.

    Returns:
        ``{(group, norm): {"diff", "ci95", "p_value", "p_adjusted", "test", "n_seeds", "learned",
        "did_not_learn", "borderline", "seeds_to_settle"}}``: ``learned`` when the Holm-adjusted
        test is significant and the model is above the baseline; ``did_not_learn``
        (:func:`did_not_learn`) only when the data show it; neither: not shown either way.
        ``borderline`` and ``seeds_to_settle`` as in :class:`Comparison`. Groups with no finished
        run or no baseline are left out.
    """
    base = memoryless_rows(baselines)
    tests = []
    for (group, norm), rs in _by_group_norm(rows).items():
        pairs = pair_by_seed(rs, base, "final_test_acc")
        result = paired_test(pairs, "final_test_acc")
        if result is not None:
            tests.append((pair_spec(pairs, "final_test_acc", norm_a=norm, norm_b="memoryless"), result, group))
    comparisons = holm_family("memoryless", [(spec, r) for spec, r, _ in tests])
    return {
        (group, c.norm_a): {
            "diff": c.mean_diff, "ci95": list(c.ci95), "p_value": c.p_value, "p_adjusted": c.p_adjusted,
            "test": c.test, "n_seeds": c.n_seeds, "learned": c.significant and c.mean_diff > 0,
            "did_not_learn": did_not_learn(c.mean_diff, c.ci95, c.p_adjusted),
            "borderline": c.borderline, "seeds_to_settle": c.seeds_to_settle,
        }
        for (_, _, group), c in zip(tests, comparisons)
    }  # fmt: skip


#: The equivalence margin of "did not learn": a model whose whole unadjusted 95% interval of the
#: difference from the memoryless baseline lies within +-2 points of it did no better than forgetting.
MEMORYLESS_MARGIN = 0.02


def did_not_learn(diff: float, ci95: Sequence[float], p_adjusted: float) -> bool:
    """Whether the data show that a model did not learn the memory task: significantly below the
    memoryless baseline (Holm p < :data:`lnbench.analysis.stats.ALPHA`, ``diff < 0``), or the whole
    unadjusted 95% interval of ``diff`` within +-:data:`MEMORYLESS_MARGIN` of it. A test that is
    merely not significant shows neither (80.5% against a 67% baseline, +13.2 [+0.6, +25.8],
    Holm p = 0.18: not shown to learn, not "did not learn"). Significantly above it is never "did
    not learn", however small the gain: that model learned (a little) more than the last input."""
    if p_adjusted < stats.ALPHA and diff != 0:
        return diff < 0
    return -MEMORYLESS_MARGIN < ci95[0] <= ci95[1] < MEMORYLESS_MARGIN


def _by_group_norm(rows: Iterable[SummaryRow]) -> dict[tuple[str, str], list[SummaryRow]]:
    out: dict[tuple[str, str], list[SummaryRow]] = {}
    for r in rows:
        out.setdefault((model_group(r), r.norm), []).append(r)
    return out


_BORDERLINE = f"Holm p between {stats.BORDERLINE_ALPHAS[0]:g} and {stats.BORDERLINE_ALPHAS[1]:g}"


def _settle(seeds: int | None) -> str:
    return f"; about {seeds} seeds would settle it" if seeds else ""


def memoryless_outcome(test: dict) -> str:
    """The answer of one memoryless test: ``learned`` (significantly above the memoryless baseline),
    ``did not learn`` (significantly below it, or the whole interval within 2 points of it) or
    ``not shown`` (neither)."""
    if test["learned"]:
        return "learned"
    stored = test.get("did_not_learn")  # computed only when the record does not hold it
    if stored if stored is not None else did_not_learn(test["diff"], test["ci95"], test["p_adjusted"]):
        return "did not learn"
    return "not shown"


def _borderline_mark(test: dict) -> str:
    return " (borderline)" if test.get("borderline", stats.is_borderline(test["p_adjusted"])) else ""


def _listed(items: Sequence[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def memoryless_answer(learned: Sequence[tuple[str, dict]]) -> str:
    """The first sentence's answer for several norms: ``LayerNorm learned it; NoNorm did not; BatchNorm
    not shown with 3 seeds``, norms with the same outcome named together, a borderline test marked."""
    words = {"learned": "learned it", "did not learn": "did not", "not shown": "not shown"}
    by_outcome: dict[str, list[str]] = {}
    for norm, test in learned:
        by_outcome.setdefault(memoryless_outcome(test), []).append(norm_label(norm) + _borderline_mark(test))
    parts = []
    for outcome, norms in by_outcome.items():
        text = f"{_listed(norms)} {words[outcome]}"
        if outcome == "not shown":
            seeds = {t["n_seeds"] for n, t in learned if "n_seeds" in t and memoryless_outcome(t) == outcome}
            text += f" with {plural(seeds.pop(), 'seed')}" if len(seeds) == 1 else ""
        parts.append(text)
    return "; ".join(parts)


def describe_memoryless(test: dict) -> str:
    """Where a model stands against the memoryless baseline, with the effect, its interval and
    Holm p: ``above the memoryless baseline (...): it learned more than the last input``;
    ``below the memoryless baseline (...)`` (significantly) or ``within 2 points of the memoryless
    baseline (...)`` (the whole interval): ``did not learn the memory task``; otherwise ``not
    significantly above the memoryless baseline (...): not shown to learn the memory task with N
    seeds``. A borderline test (:class:`Comparison`) adds ``(borderline: Holm p between 0.01 and
    0.1, another machine's rounding can flip it; about N seeds would settle it)``."""
    effect = (
        f"{_points(test['diff'])} points [unadjusted 95% CI {_points(test['ci95'][0])}, {_points(test['ci95'][1])}], "
        f"{test['test']}, Holm p = {test['p_adjusted']:.2g}"
    )
    outcome = memoryless_outcome(test)
    if outcome == "learned":
        text = f"above the memoryless baseline ({effect}): it learned more than the last input"
    elif outcome == "did not learn":
        below = test["p_adjusted"] < stats.ALPHA and test["diff"] < 0
        where = "below" if below else f"within {100 * MEMORYLESS_MARGIN:g} points of"
        text = f"{where} the memoryless baseline ({effect}): did not learn the memory task"
    else:
        seeds = f" with {plural(test['n_seeds'], 'seed')}" if "n_seeds" in test else ""
        text = f"not significantly above the memoryless baseline ({effect}): not shown to learn the memory task{seeds}"
    if test.get("borderline", stats.is_borderline(test["p_adjusted"])):
        text += (
            f" (borderline: {_BORDERLINE}, another machine's rounding can flip it"
            f"{_settle(test.get('seeds_to_settle'))})"
        )
    return text


def _initial_gain(rows: Sequence[SummaryRow]) -> float | None:
    """The initial gain the rows' norm started at, when they agree (None for a norm without one)."""
    gains = {r.initial_gain for r in rows}
    return gains.pop() if len(gains) == 1 else None


def _unequal_gains(c: Comparison, gains: dict[str, float]) -> str:
    """`` At unequal initial gains (BatchNorm 0.1, LayerNorm 1).`` for a pair whose norms started at
    different gains (so the comparison is not of the norms alone), else empty."""
    a, b = gains.get(c.norm_a), gains.get(c.norm_b)
    if a is None or b is None or a == b:
        return ""
    return f" At unequal initial gains ({norm_label(c.norm_a)} {a:g}, {norm_label(c.norm_b)} {b:g})."


def describe_in_words(c: Comparison) -> str:
    """One tested pair as a sentence that says which is faster or more accurate (or that they
    are not distinguishable), with the effect of the first named minus the second, its interval,
    the test and the Holm-adjusted p-value; a borderline one (:class:`Comparison`) adds
    ``Borderline (Holm p between 0.01 and 0.1): another machine's rounding can flip it; about N
    seeds would settle it.``"""
    a, b = norm_label(c.norm_a), norm_label(c.norm_b)
    diff, lo, hi = c.mean_diff, c.ci95[0], c.ci95[1]
    first_better = diff < 0 if c.metric == "mean_train_loss" else diff > 0
    if c.significant and not first_better:  # name the better one first, the numbers follow the sentence
        a, b, diff, lo, hi = b, a, -diff, -hi, -lo
    if c.metric == "mean_train_loss":
        size = f"mean train loss {diff:+.3f} nats [unadjusted 95% CI {lo:+.3f}, {hi:+.3f}]"
        claim = f"{a}'s train loss fell faster than {b}'s"
        alike = f"{a} and {b} are not distinguishable in training speed with {c.n_seeds} seeds"
    else:
        size = f"final test accuracy {_points(diff)} points [unadjusted 95% CI {_points(lo)}, {_points(hi)}]"
        claim = f"{a} is more accurate than {b}"
        alike = f"{a} and {b} are not distinguishable in accuracy with {c.n_seeds} seeds"
    numbers = f"{size}, {c.test}, Holm p = {c.p_adjusted:.2g}"
    text = f"{claim if c.significant else alike} ({numbers})."
    if c.borderline:
        text += f" Borderline ({_BORDERLINE}): another machine's rounding can flip it{_settle(c.seeds_to_settle)}."
    return text


def comparisons_answer(comparisons: Sequence[Comparison], gains: dict[str, float] | None = None) -> str:
    """The first sentence's answer for one family of tested pairs: the winners of the significant
    pairs, each with the norms it beat (``BatchNorm is more accurate than NoNorm and LayerNorm``,
    ``LayerNorm's train loss fell faster than NoNorm's``), then the pairs no test told apart
    (``NoNorm vs LayerNorm not distinguishable with 3 seeds``, or ``no tested pair is
    distinguishable with 3 seeds``); a borderline pair, and a pair whose norms started at different
    initial ``gains`` (norm -> gain), is marked."""
    loss = bool(comparisons) and comparisons[0].metric == "mean_train_loss"
    beaten: dict[str, list[str]] = {}
    alike: list[str] = []
    for c in comparisons:
        a, b = norm_label(c.norm_a), norm_label(c.norm_b)
        marks = ["borderline"] if c.borderline else []
        marks += ["unequal initial gains"] if _unequal_gains(c, gains or {}) else []
        mark = f" ({', '.join(marks)})" if marks else ""
        if c.significant:
            first_better = c.mean_diff < 0 if loss else c.mean_diff > 0
            winner, loser = (a, b) if first_better else (b, a)
            beaten.setdefault(winner, []).append(f"{loser}'s{mark}" if loss else f"{loser}{mark}")
        else:
            alike.append(f"{a} vs {b}{mark}")
    parts = [
        f"{w}'s train loss fell faster than {_listed(ls)}" if loss else f"{w} is more accurate than {_listed(ls)}"
        for w, ls in beaten.items()
    ]
    if alike:
        seeds = {c.n_seeds for c in comparisons if not c.significant}
        with_seeds = f" with {plural(seeds.pop(), 'seed')}" if len(seeds) == 1 else ""
        if not beaten and len(alike) > 1:
            parts.append(f"no tested pair is distinguishable{with_seeds}")
        else:
            parts.append(f"{_listed(alike)} not distinguishable{with_seeds}")
    return "; ".join(parts)


def same_runs_across_groups(rows: Sequence[SummaryRow], copied: Iterable[str] = ()) -> list[str]:
    """A line for each norm of a family whose runs are the same in several of its groups (norm
    placements, initial gains), seed for seed (the final test accuracy and the mean training loss
    equal): with no norm there is nothing to place, and without a gain nothing for
    ``norm_gain_init`` to start, so the groups build one network from one initialization, and its
    rows are one run shown in each group, not a replicate. Found from the rows, not assumed;
    ``copied``: the runs (``run_dir``) copied from an identical run instead of trained
    (:func:`lnbench.experiments.base.copy_sources`): when every group but one is copies, the line
    says the network was trained once."""
    copied = set(copied)
    cells: dict[tuple, dict[tuple, dict[int, tuple]]] = defaultdict(lambda: defaultdict(dict))
    names: dict[tuple, dict[tuple, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in rows:
        if r.ok:
            where = (r.norm_placement, r.norm_gain_init)
            cells[(r.family, r.norm)][where][r.seed] = (r.final_test_acc, r.mean_train_loss)
            names[(r.family, r.norm)][where].add(r.run_dir)
    lines = []
    for (family, norm), by_group in cells.items():
        alike: list[tuple[dict, list[tuple]]] = []  # runs -> the groups that gave them
        for where, runs in by_group.items():
            same = next((groups for seen, groups in alike if seen == runs), None)
            if same is None:
                alike.append((runs, [where]))
            else:
                same.append(where)
        for runs, groups in alike:
            if len(groups) < 2:
                continue
            placed = len({p for p, _ in groups}) > 1
            gained = len({g for _, g in groups}) > 1
            across = " and ".join(["in every placement"] * placed + ["at every initial gain"] * gained)
            why = " and ".join(["with nothing to place"] * placed + ["without a gain"] * gained)
            once = sum(names[(family, norm)][w] <= copied for w in groups) == len(groups) - 1
            shown = " and ".join(group_label(model_group_of(family, p, g)) for p, g in groups)
            lines.append(
                f"{shown}: {norm_label(norm)} gives the same runs {across}, seed for seed "
                f"({plural(len(runs), 'seed')}): {why} it is one network, "
                f"{'trained once and ' if once else ''}shown in each group, not a replicate."
            )
    return lines


def compare_verdicts(
    rows: Sequence[SummaryRow],
    comparisons: Sequence[Comparison],
    epochs: int,
    target_acc: float,
    memoryless: dict[tuple[str, str], dict] | None = None,
    copied: Iterable[str] = (),
) -> list[str]:
    """The verdicts of ``compare``, per model group (family, and the RNN's norm placement):
    divergences, whether each norm learned more than the memoryless baseline (``memoryless``,
    :func:`memoryless_tests`), reaching ``target_acc`` (k/n seeds, median and range of the first
    epoch), and per metric the answer (:func:`comparisons_answer`), the means, then each tested pair
    in words (faster / more accurate) with its effect, interval and Holm-adjusted p-value. Each
    sentence's first clause is its answer; the numbers behind it follow."""
    verdicts = []
    memoryless = memoryless or {}
    n_seeds = len({r.seed for r in rows})
    by_group: dict[str, list[SummaryRow]] = {}
    for r in rows:
        by_group.setdefault(model_group(r), []).append(r)
    for group, group_rows in by_group.items():
        fam = group_label(group)
        by_norm = {n: rs for (n,), rs in _group(group_rows, "norm").items()}
        for norm, rs in by_norm.items():
            k = sum(r.status == "diverged" for r in rs)
            if k:
                verdicts.append(
                    f"{fam}: {norm_label(norm)} diverged in {k} of {plural(len(rs), 'seed')}; "
                    "a diverged seed has no final accuracy and is left out of means and tests."
                )
        gains = {n: g for n, rs in by_norm.items() if (g := _initial_gain(rs)) is not None}
        if len(set(gains.values())) > 1:
            verdicts.append(
                f"{fam}: the norms start at different initial gains ("
                + ", ".join(f"{norm_label(n)} {g:g}" for n, g in gains.items())
                + ", each its paper's), so a difference between them is also a difference of initial gains; "
                "--set model.norm_gain_init=G (or compare.norm_gain_inits) starts every norm's gain at G."
            )
        learned = [(norm, memoryless[(group, norm)]) for norm in by_norm if (group, norm) in memoryless]
        if learned:
            verdicts.append(
                f"{fam}, did it learn the memory task? {memoryless_answer(learned)}. "
                + "; ".join(f"{norm_label(n)} {describe_memoryless(t)}" for n, t in learned)
                + "."
            )
        reach = []
        for norm, rs in by_norm.items():
            summary = stats.summarize_first_epochs([r.first_epoch_at_target for r in rs])
            reach.append(f"{norm_label(norm)} {stats.describe_first_epochs(summary)}")
        split = {r.selected_on for rs in by_norm.values() for r in rs}
        on = "validation" if split == {"val"} else "test" if split == {"test"} else "validation (else test)"
        verdicts.append(
            f"{fam}, first epoch at {target_acc:.0%} {on} accuracy within {plural(epochs, 'epoch')}: "
            + "; ".join(reach)
            + "."
        )
        for metric in ("final_test_acc", "mean_train_loss"):
            means = {n: [v for r in rs if r.ok and (v := getattr(r, metric)) is not None] for n, rs in by_norm.items()}
            fmt = (lambda x: f"{x:.1%}") if metric == "final_test_acc" else (lambda x: f"{x:.3f} nats")
            fewer = lambda v: f" ({plural(len(v), 'seed')})" if len(v) != n_seeds else ""  # noqa: E731  diverged seeds
            shown = ", ".join(f"{norm_label(n)} {fmt(_mean(v))}{fewer(v)}" for n, v in means.items() if v)
            over = f"mean over {n_seeds} seeds" if n_seeds > 1 else "one seed"
            group_cmp = [c for c in comparisons if c.family == f"{group}/{metric}"]
            if not shown:
                ended = sorted({r.status for rs in by_norm.values() for r in rs if not r.ok})
                how = " or ".join("failed (see run.json)" if e == "failed" else e for e in ended) or "stopped"
                verdicts.append(f"{fam}, {METRICS[metric].label}: every run {how}, so there is nothing to compare.")
                continue
            if group_cmp:
                line = f"{fam}, {METRICS[metric].label}: {comparisons_answer(group_cmp, gains)}. {over.capitalize()}: {shown}."
                line += f" Holm over {plural(len(group_cmp), 'comparison')}: " + " ".join(
                    describe_in_words(c) + _unequal_gains(c, gains) for c in group_cmp
                )
            elif len(means) > 1:
                why = (
                    "one seed has no paired test for a loss curve"
                    if metric == "mean_train_loss"
                    else "no pair of finished runs"
                )
                line = f"{fam}, {METRICS[metric].label}: not tested ({why}). {over.capitalize()}: {shown}."
            else:
                line = f"{fam}, {METRICS[metric].label} ({over}): {shown}."
            verdicts.append(line)
    verdicts += same_runs_across_groups(rows, copied)
    if rows and n_seeds == 1:
        verdicts.append(
            "One seed: the tests above cover the test-set sampling only, not the seed-to-seed variation; "
            "set seeds to 5 or more (e.g. --set seeds=[0,1,2,3,4]) before trusting a ranking."
        )
    return verdicts


def sweep_verdicts(
    rows: Sequence[SummaryRow], comparisons: Sequence[Comparison], reference_batch_size: int
) -> list[str]:
    """The verdicts of the batch-size sweep, per norm: divergences; then, answer first, the batch
    sizes where it differs from NoNorm, from its own accuracy at ``reference_batch_size``, and
    (BatchNorm) between batch and running statistics, all Holm-corrected over the sweep (or that no
    tested difference is significant), followed by its accuracy range across batch sizes."""
    verdicts = []
    total = len(comparisons)
    n_seeds = len({r.seed for r in rows})
    over = f"mean over {n_seeds} seeds" if n_seeds > 1 else "one seed"
    for (norm,), rs in _group(rows, "norm").items():
        name = norm_label(norm)
        diverged = sorted({r.batch_size for r in rs if r.status == "diverged"})
        if diverged:
            verdicts.append(
                f"{name}: diverged at batch size {', '.join(map(str, diverged))} (left out of means and tests)."
            )
        means = {
            bs: _mean([r.final_test_acc for r in cell if r.ok and r.final_test_acc is not None])  # ok implies a value
            for (bs,), cell in sorted(_group(rs, "batch_size").items())
            if any(r.ok for r in cell)
        }
        if not means:
            verdicts.append(
                f"{name}: no finished run at any batch size, so no norm is compared with it and it is compared with nothing."
            )
            continue
        if len(means) == 1:
            ((bs, acc),) = means.items()
            accuracy = f"final test accuracy {acc:.1%} at batch size {bs} ({over})"
        else:
            accuracy = f"final test accuracy {min(means.values()):.1%} to {max(means.values()):.1%} across batch sizes ({over})"
        mine = [c for c in comparisons if c.norm_a == norm]
        groups = [
            (
                "below NoNorm",
                lambda c: c.norm_b == "none" != c.norm_a and c.metric == "final_test_acc" and c.mean_diff < 0,
            ),
            (
                "above NoNorm",
                lambda c: c.norm_b == "none" != c.norm_a and c.metric == "final_test_acc" and c.mean_diff > 0,
            ),
            (
                f"below its batch size {reference_batch_size}",
                lambda c: c.norm_b == c.norm_a and c.metric == "final_test_acc" and c.mean_diff < 0,
            ),
            (
                f"above its batch size {reference_batch_size}",
                lambda c: c.norm_b == c.norm_a and c.metric == "final_test_acc" and c.mean_diff > 0,
            ),
            ("batch statistics minus running statistics differs from 0", lambda c: c.metric == "batch_stats_vs_eval"),
        ]
        parts = []
        for what, select in groups:
            hits = [c for c in mine if c.significant and select(c)]
            if hits:
                parts.append(
                    f"{what} at batch size "
                    + ", ".join(
                        f"{c.condition_a.split(',')[0].removeprefix('batch size ')} ({_points(c.mean_diff)} points)"
                        for c in hits
                    )
                )
        if not parts and mine:
            tested = norm_order(c.norm_b for c in mine)
            parts.append(
                f"no tested difference (vs {', '.join(norm_label(n) if n != norm else 'its own batch sizes' for n in tested)}) is significant"
            )
        verdicts.append(f"{name}: {'; '.join([*parts, accuracy])}.")  # the answer first, then the range
    if comparisons:
        tests = sorted({c.test.split(" (")[0] for c in comparisons})
        verdicts.append(
            f"Significance: {', '.join(tests)}, Holm-Bonferroni over all {total} comparisons of this sweep at {stats.ALPHA:.0%}; "
            "the effects with 95% intervals are in summary.json (comparisons)."
        )
    if rows and n_seeds == 1:
        verdicts.append(
            "One seed: the tests cover the test-set sampling only, not the seed-to-seed variation; set seeds to 5 or more."
        )
    return verdicts


def baseline_verdicts(baselines: Sequence[dict] | None, target_acc: float) -> list[str]:
    """One sentence on the baselines (:mod:`lnbench.training.baselines`): what a memoryless and a linear
    readout reach on this data, and whether the target needs memory at all."""
    if not baselines:
        return []
    by = {b["name"]: b for b in baselines}
    over = f"mean over {plural(len(by['chance']['seeds']), 'seed')}"
    shown = "; ".join(f"{b['label']} {b['mean']:.1%}" for b in baselines)
    line = f"Baselines on the same data ({over}, n_test = {by['chance']['n_test']}): {shown}."
    last = by.get("last_timestep")
    if last is not None:
        if max(last["acc_per_seed"]) >= target_acc:
            line += (
                f" The {target_acc:.0%} target does not need memory: a linear readout of the last timestep alone "
                f"reaches it on {sum(a >= target_acc for a in last['acc_per_seed'])} of {len(last['acc_per_seed'])} seeds."
            )
        else:
            line += f" A memoryless readout stays below the {target_acc:.0%} target on every seed."
    return [line]
