"""The verdicts: the sentences built on the paired comparisons of :mod:`lnbench.analysis.comparisons`,
each opening with its answer, the numbers behind it following.

A tested pair is said in words (which norm is faster or more accurate, or that they are not
distinguishable) with its effect in points (percentage points of accuracy) or nats, its 95%
interval, the test and its Holm-adjusted p-value; a divergence is said with the number of seeds
that diverged (left out of the means and tests). A ``borderline`` comparison (Holm p in
[0.01, 0.1): :func:`lnbench.analysis.stats.is_borderline`) says that another machine's rounding
can flip it, with ``seeds_to_settle``: the seeds at which the observed effect would reach Holm
p < 0.01 with 80% power.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from lnbench.analysis import stats
from lnbench.analysis.comparisons import MEMORYLESS_MARGIN, Comparison, did_not_learn, model_group, rows_by
from lnbench.analysis.metrics import METRICS
from lnbench.names import group_label, model_group_of, norm_label, norm_order, plural
from lnbench.names.tasks import DEFAULT_TASK, TASKS
from lnbench.records.schema import SummaryRow


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


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


def describe_memoryless(test: dict, task: str = DEFAULT_TASK) -> str:
    """Where a model stands against the memoryless baseline, with the effect, its interval and
    Holm p: ``above the memoryless baseline (...): it learned more than the last input``;
    ``below the memoryless baseline (...)`` (significantly) or ``within 2 points of the memoryless
    baseline (...)`` (the whole interval): ``did not learn the memory task``; otherwise ``not
    significantly above the memoryless baseline (...): not shown to learn the memory task with N
    seeds``. A borderline test (:class:`Comparison`) adds ``(borderline: Holm p between 0.01 and
    0.1, another machine's rounding can flip it; about N seeds would settle it)``. ``task``: its
    words for the memory task and the last input (:class:`lnbench.names.tasks.Task`; MNIST's
    ``more than its last row or pixel``)."""
    what, last = TASKS[task].learned_what, TASKS[task].last_input
    effect = (
        f"{_points(test['diff'])} points [unadjusted 95% CI {_points(test['ci95'][0])}, {_points(test['ci95'][1])}], "
        f"{test['test']}, Holm p = {test['p_adjusted']:.2g}"
    )
    outcome = memoryless_outcome(test)
    if outcome == "learned":
        text = f"above the memoryless baseline ({effect}): it learned more than {last}"
    elif outcome == "did not learn":
        below = test["p_adjusted"] < stats.ALPHA and test["diff"] < 0
        where = "below" if below else f"within {100 * MEMORYLESS_MARGIN:g} points of"
        text = f"{where} the memoryless baseline ({effect}): did not learn {what}"
    else:
        seeds = f" with {plural(test['n_seeds'], 'seed')}" if "n_seeds" in test else ""
        text = f"not significantly above the memoryless baseline ({effect}): not shown to learn {what}{seeds}"
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
        by_norm = {n: rs for (n,), rs in rows_by(group_rows, "norm").items()}
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
        tasks = {r.task for r in group_rows}
        task = tasks.pop() if len(tasks) == 1 else DEFAULT_TASK  # a group is one task (compare)
        if learned:
            verdicts.append(
                f"{fam}, did it learn {TASKS[task].learned_what}? {memoryless_answer(learned)}. "
                + "; ".join(f"{norm_label(n)} {describe_memoryless(t, task)}" for n, t in learned)
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
            group_cmp = [c for c in comparisons if c.holm_family == f"{group}/{metric}"]
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
    for (norm,), rs in rows_by(rows, "norm").items():
        name = norm_label(norm)
        diverged = sorted({r.batch_size for r in rs if r.status == "diverged"})
        if diverged:
            verdicts.append(
                f"{name}: diverged at batch size {', '.join(map(str, diverged))} (left out of means and tests)."
            )
        means = {
            bs: _mean([r.final_test_acc for r in cell if r.ok and r.final_test_acc is not None])  # ok implies a value
            for (bs,), cell in sorted(rows_by(rs, "batch_size").items())
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
