"""Paired comparisons, computed from summary rows with :mod:`lnbench.analysis.stats`: the comparison
records (:class:`Comparison`), the paired tests and the Holm families they are corrected in.

Within one experiment the runs being compared share the test set, the data, the seed and the
initial weights, so they are compared *pairwise*:

- one seed: an exact McNemar test on the per-example results (``test_correct``);
- several seeds: a paired t-test over the seeds and a t interval of the mean paired difference
  (a sign test when every seed gives the same difference).

Every test of one family of comparisons (all pairs of norms of one model family for one metric
in ``compare``; all comparisons of one sweep) is corrected with Holm-Bonferroni; a comparison is
``significant`` when its adjusted p-value is below :data:`lnbench.analysis.stats.ALPHA`. A seed on which
either run diverged is left out of that pair (see :mod:`lnbench.records.schema`). Effects are in
the metric's units (a fraction of accuracy, nats), with their 95% interval.

A comparison is ``borderline`` when its Holm p-value is in [0.01, 0.1) (:func:`lnbench.analysis.stats.is_borderline`):
the decision would differ at alpha 0.01 or 0.1, and per-seed numbers are bit-exact only on the same kind of
CPU, so another machine's rounding can flip it. ``seeds_to_settle`` says at how many seeds the
observed effect would reach Holm p < 0.01 with 80% power. :mod:`lnbench.analysis.verdicts` puts
the comparisons into words.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from math import nan

from lnbench.analysis import stats
from lnbench.names import model_group_of
from lnbench.records.schema import SummaryRow

#: A :class:`Comparison`'s attribute -> its key in summary.json, where the two differ. The stored
#: key keeps its name ("family", the Holm family) so that the run folders of earlier versions read
#: the same and new ones are written as before: :meth:`Comparison.to_dict` and
#: :meth:`Comparison.from_dict` both read this one map.
STORED_KEYS = {"holm_family": "family"}


@dataclass
class Comparison:
    """One tested pair, as written to ``summary.json`` ``comparisons``.

    ``holm_family`` names the Holm family the pair was corrected in (a model group and metric,
    ``"rnn-joint/final_test_acc"``; ``"sweep"``; ``"memoryless"``), stored as ``family``
    (:data:`STORED_KEYS`). ``mean_diff`` is a minus b (accuracy: a fraction, 0.02 = 2 points; loss:
    nats); ``ci95`` its 95% interval; ``p_adjusted`` the Holm-adjusted p-value within
    ``holm_family``. ``condition_a`` / ``condition_b`` say what else differs when the norms are the
    same (a batch size, an evaluation mode). ``borderline``: ``0.01 <= p_adjusted < 0.1`` (:func:`lnbench.analysis.stats.is_borderline`);
    ``seeds_to_settle``: for a borderline t-test, the seeds at which the observed effect would come out
    at Holm p < 0.01 with 80% power (:func:`seeds_to_settle`), None when not borderline, not more
    than ``n_seeds`` or not computable (one seed, McNemar).
    """

    holm_family: str
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
        """As summary.json holds it (its keys named by :data:`STORED_KEYS`); the confirm stage's
        keys (alpha, stage, pilot, plan, seeds) only in a confirmed compare."""
        out = {STORED_KEYS.get(key, key): value for key, value in asdict(self).items()}
        out["ci95"] = list(self.ci95)
        if not self.stage:
            for key in ("alpha", "stage", "pilot", "plan", "seeds"):
                del out[key]
        return out

    @classmethod
    def from_dict(cls, stored: dict) -> Comparison:
        """A comparison as summary.json holds it (:meth:`to_dict`, this version's or an earlier one's)."""
        attribute = {key: name for name, key in STORED_KEYS.items()}
        values = {attribute.get(key, key): value for key, value in stored.items()}
        return cls(**{**values, "ci95": tuple(stored["ci95"])})


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
    name: str, tests: list[tuple[dict, stats.PairedResult]], alpha: float = stats.ALPHA
) -> list[Comparison]:
    """Holm-correct one family of tests, named ``name`` (each comparison's
    :attr:`Comparison.holm_family`), significant at ``alpha``; each ``dict`` holds norm_a, norm_b,
    metric, n_seeds, conditions and (:func:`pair_spec`) ``paired_sd``, without which
    ``seeds_to_settle`` is None."""
    adjusted = stats.holm([t.p_value for _, t in tests])
    return [
        Comparison(
            holm_family=name,
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


def rows_by(rows: Iterable[SummaryRow], *keys: str) -> dict[tuple, list[SummaryRow]]:
    """The rows by their values of ``keys``, in the order first seen (``rows_by(rows, "norm")``:
    ``{("none",): [...], ("layer",): [...]}``)."""
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
        by_norm = {n: rs for (n,), rs in rows_by(group_rows, "norm").items()}
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
    cell = {k: v for k, v in rows_by(rows, "norm", "batch_size").items()}
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
