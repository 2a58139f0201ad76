"""``lnbench card NORM``: a norm's report card, one run folder with one page.

Any normalization layer, built in (``rms``, ``group``, ...) or a user's (``package.module:Class``
or an entry point), is put through what lnbench measures without training
(:mod:`lnbench.experiments.card_sections`): conformance (:func:`lnbench.testing.check_norm`),
its gradients alone and inside an LSTM and a Transformer, its row of Ba et al.'s Table 1 beside
LayerNorm's and BatchNorm's, and its cost as ratios to LayerNorm's. A norm that fails conformance
still gets every other section, each marked as measured on a norm that failed conformance.

Its science section trains the claims that take any norm
(:data:`lnbench.analysis.claim_catalogue.NORM_TEMPLATES`: convergence against NoNorm in the RNN, the
LSTM and the Transformer, the final state against the input's scale, the batch-size claim its
declared batch statistics select) with the norm, and the same claims with LayerNorm and BatchNorm,
on the same data and seeds: one ``lnbench claims`` run (:func:`science_spec`) in a ``science``
folder inside the card's, its verdicts, effects and intervals in the card (:func:`science_section`).

The folder holds ``card.json`` (for machines), ``card.md`` (for a README or a paper's appendix),
``card.html`` (the page), report.html and the science folder.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from lnbench.config import ConfigError
from lnbench.experiments.base import Computed
from lnbench.experiments.checks import Checking
from lnbench.names import family_label, norm_slug, plural
from lnbench.records.folder import RunFolder
from lnbench.records.index import make_headline
from lnbench.records.io import write_text_atomic

#: the sections of a card with a verdict each, in the page's order
SECTIONS = ("conformance", "gradients", "invariance", "cost")
TITLES = {
    "conformance": "Conformance",
    "gradients": "Gradients",
    "invariance": "Invariances (Ba et al.'s Table 1)",
    "cost": "Cost",
    "science": "Science",
}
NOT_TRAINED = (
    "not measured (--no-science): the claims that take any norm were not trained; lnbench card NORM trains them "
    "beside NoNorm, LayerNorm and BatchNorm"
)
#: the seeds of the science section's claims by default (each claim's regime, its data and budget)
SCIENCE_SEEDS = 3
#: seconds per unit of :func:`lnbench.experiments.cells.cost` on 2 idle cores, measured: ``lnbench
#: card rms``'s science section, 77746 units, trained in 166 s (its 3:06 less its other sections')
SECONDS_PER_COST = 166 / 77746


def science_seconds(cells: list) -> float:
    """A rough estimate of the seconds ``cells`` train in on 2 idle cores: their training steps
    (:func:`lnbench.experiments.cells.cost`) at the rate of a measured card (:data:`SECONDS_PER_COST`;
    the cost model does not see sequence length or width, so a regime unlike the default card's,
    MNIST's, can be off by a factor of a few)."""
    from lnbench.experiments.cells import cost

    return SECONDS_PER_COST * sum(cost(c) for c in cells)


@dataclass
class CardSpec:
    """What ``lnbench card`` measures: the norm as given (``model.norm``'s syntax), ``draws`` of
    Table 1's measurement and ``repeats`` of each timing."""

    norm: str
    draws: int = 3
    repeats: int = 15


def norm_class(spec: str) -> type:
    """The layer class of ``spec`` (:func:`lnbench.nn.registry.norm_kind`).

    Raises:
        ConfigError: an unknown or unimportable norm, or ``none`` (no layer to measure), one line.
    """
    from lnbench.nn.registry import norm_kind

    try:
        kind = norm_kind(spec)
    except ValueError as exc:
        raise ConfigError(f"NORM: {exc}") from None
    if kind.reparametrizes_weights:
        raise ConfigError(
            f"NORM: {spec!r} normalizes the weights, not a layer's activations, so it has no layer to check or "
            "time (its Table 1 row: lnbench invariance; it trains in lnbench compare); give a norm layer, e.g. "
            "layer, rms or a class"
        )
    if kind.layer is None:
        raise ConfigError(f"NORM: {spec!r} has no layer to measure (NoNorm); give a norm, e.g. layer, rms or a class")
    return kind.layer


class Card(Checking):
    kind = "card"
    holds = ("card.json", "card.md", "card.html")
    items, good, word = "sections", "passed", "passed"

    @property
    def report(self) -> str:
        return "card.json"

    def check(self, spec: CardSpec) -> None:
        norm_class(spec.norm)
        if spec.draws < 1 or spec.repeats < 1:
            raise ConfigError(f"--draws, --repeats: must be >= 1, got {spec.draws}, {spec.repeats}")

    def name(self, spec: CardSpec) -> str:
        return f"card_{norm_slug(spec.norm)}"

    def seeds(self, spec: CardSpec) -> int:
        return 0

    def compute(self, spec: CardSpec) -> Computed:
        """Measure every section (:mod:`lnbench.experiments.card_sections`): ``card.json``. The
        folder is completed whatever the verdicts: a card reports a failure, it does not refuse."""
        card = measure_card(spec)
        return Computed({"card.json": card}, None, card["sections"])

    def headline(self, folder: RunFolder, summary: dict) -> dict | None:
        card = folder.json("card.json")
        if card is None:
            return None
        return make_headline(f"{card['label']}: {card['conformance']['verdict']}")

    def table(self, report: dict) -> Table:
        table = Table(title=f"lnbench card: {report['label']} ({report['norm']})", title_justify="left")
        table.add_column("section")
        table.add_column("verdict", overflow="fold")
        for name in (*SECTIONS, "science"):
            table.add_row(TITLES[name], escape(report[name]["verdict"]))
        return table

    def science_table(self, report: dict) -> Table:
        """The science section's claims, one line each at 100 columns (the claim's id; its text is in
        card.md and card.html), with LayerNorm's and BatchNorm's verdict beside it."""
        header, rows = _section_tables(report)["science"]
        table = Table(title="science", title_justify="left")
        for h in ["claim", *header[1:]]:
            table.add_column(h, overflow="fold")
        for claim, row in zip(report["science"]["claims"], rows):
            table.add_row(*(escape(str(c)) for c in [claim["id"].partition("@")[0], *row[1:]]))
        return table

    def figures(self, path: Path, into: Path | None = None) -> list[str]:
        """Write the card's pages, ``card.md`` and ``card.html``, from its ``card.json``."""
        card = RunFolder(path).json("card.json")
        if card is None:
            return []
        into = path if into is None else into
        write_text_atomic(into / "card.md", card_markdown(card))
        write_text_atomic(into / "card.html", card_html(card))
        return []


CARD = Card()


def measure_card(spec: CardSpec) -> dict[str, Any]:
    """The card of ``spec.norm`` as ``card.json``'s body: ``norm``, ``label``, a section per
    :data:`SECTIONS` and ``science`` (each with ``verdict`` and ``passed``), ``sections`` (the
    verdicts in order) and ``summary`` (one sentence per section)."""
    from lnbench.experiments import card_sections as measured
    from lnbench.nn.registry import norm_kind

    cls = norm_class(spec.norm)
    conformance = measured.conformance(cls)
    card: dict[str, Any] = {
        "norm": spec.norm,
        "label": norm_kind(spec.norm).label,
        "conformance": conformance,
        "gradients": measured.gradients(spec.norm, cls, conformance),
        "invariance": measured.invariance(spec.norm, cls, spec.draws),
        "cost": measured.cost(spec.norm, cls, spec.repeats),
        "science": {"passed": None, "verdict": NOT_TRAINED, "claims": [], "folder": None},
    }
    caveat = "" if conformance["passed"] else " (measured on a norm that failed conformance)"
    for name in SECTIONS[1:]:
        card[name]["caveat"] = caveat.strip(" ()")
    card["sections"] = [
        {"name": name, "verdict": card[name]["verdict"], "passed": card[name]["passed"]}
        for name in (*SECTIONS, "science")
    ]
    card["summary"] = [
        f"{TITLES[name]}: {card[name]['verdict']}{caveat if name != 'conformance' else ''}." for name in SECTIONS
    ]
    return card


def _md_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c) for c in row) + " |" for row in rows),
    ]


def _effect(claim: dict[str, Any]) -> str:
    """A claim's effect (a - b, net of the net conditions) and interval, with its metric (accuracy in
    points)."""
    if claim["effect"] is None:
        return "-"
    scale = 100 if claim["metric"].endswith("acc") else 1
    bounds = claim["interval"]
    interval = f" [{bounds[0] * scale:+.3g}, {bounds[1] * scale:+.3g}]" if bounds else ""
    unit = "accuracy points" if scale == 100 else claim["metric"]
    return f"{claim['effect'] * scale:+.3g}{interval} ({unit})"


def _passed(ok: bool) -> str:
    return "passed" if ok else "failed"


def _section_tables(card: dict[str, Any]) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """Each section's table (header, rows), the same in card.md and card.html."""
    conf, grads, inv, cost = (card[n] for n in SECTIONS)
    transformations = list(next(iter(inv["rows"].values())).keys()) if inv["rows"] else []
    labels = {"norm": card["label"], "layer": "LayerNorm", "batch": "BatchNorm"}
    return {
        "conformance": (["check", "result", "why"], [[c["name"], c["result"], c["detail"]] for c in conf["checks"]]),
        "gradients": (
            ["where", "gradcheck", "gradgradcheck"],
            [["the norm alone (float64)", grads["alone"]["result"], grads["alone"]["result"]]]
            + [
                [
                    f"in a {family_label(m['family'])} (input {tuple(m['shape'])}, {m['parameters']} norm parameters)",
                    _passed(m["gradcheck"]),
                    _passed(m["gradgradcheck"]),
                ]
                for m in grads["models"]
            ],
        ),
        "invariance": (
            ["", *(t.replace("_", " ") for t in transformations)],
            [[labels.get(m, m), *(row[t] for t in transformations)] for m, row in inv["rows"].items()],
        ),
        "science": (
            ["claim", "verdict", "effect [95% interval]", "seeds", "LayerNorm", "BatchNorm"],
            [
                [
                    f"{c['claim']} ({c['id'].partition('@')[0]})",
                    c["verdict"],
                    _effect(c),
                    c["seeds"],
                    c["reference"]["layer"],
                    c["reference"]["batch"],
                ]
                for c in card["science"].get("claims", [])
            ],
        ),
        "cost": (
            ["what", "time", "vs LayerNorm (C++ kernel)", "vs LayerNorm (Python path)"],
            [
                [
                    f"one call {tuple(c['shape'])}, forward + backward",
                    f"{c['microseconds']:g} us",
                    f"{c['vs_layer_kernel']:.2f}x",
                    f"{c['vs_layer_python']:.2f}x",
                ]
                for c in cost["calls"]
            ]
            + [
                [
                    f"one Adam step of a {family_label(s['family'])}",
                    f"{s['milliseconds']:g} ms",
                    f"{s['vs_layer']:.2f}x (LayerNorm as training runs it)",
                    "",
                ]
                for s in cost["steps"]
            ],
        ),
    }


def card_markdown(card: dict[str, Any]) -> str:
    """``card.md``: the card as Markdown, each section its verdict line and its table."""
    lines = [f"# {card['label']} (`{card['norm']}`): lnbench report card", ""]
    if not card["conformance"]["passed"]:
        lines += [
            f"**This norm failed conformance** ({card['conformance']['verdict']}): every other section was measured on a norm that failed it.",
            "",
        ]
    tables = _section_tables(card)
    for name in (*SECTIONS, "science"):
        lines += [f"## {TITLES[name]}", "", f"**{card[name]['verdict']}**", ""]
        if tables.get(name, ([], []))[1]:
            lines += [*_md_table(*tables[name]), ""]
        if card[name].get("confirm"):
            lines += [card[name]["confirm"].replace("CARD/", "<card folder>/") + ".", ""]
    lines += ["## Summary", "", *(f"- {s}" for s in card["summary"]), ""]
    return "\n".join(lines)


def card_html(card: dict[str, Any]) -> str:
    """``card.html``: the card as one self-contained HTML page (the tables of :func:`card_markdown`)."""
    e = html.escape
    tables = _section_tables(card)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(card['label'])}: lnbench report card</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
        ".fail{color:#b00;font-weight:bold}</style></head><body>",
        f"<h1>{e(card['label'])} (<code>{e(card['norm'])}</code>): lnbench report card</h1>",
    ]
    if not card["conformance"]["passed"]:
        parts.append(
            f"<p class='fail'>This norm failed conformance ({e(card['conformance']['verdict'])}): every other "
            "section was measured on a norm that failed it.</p>"
        )
    for name in (*SECTIONS, "science"):
        parts += [f"<h2>{e(TITLES[name])}</h2>", f"<p><b>{e(card[name]['verdict'])}</b></p>"]
        if tables.get(name, ([], []))[1]:
            header, rows = tables[name]
            parts.append("<table><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in header) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
            parts.append("</table>")
    parts += ["<h2>Summary</h2><ul>", *(f"<li>{e(s)}</li>" for s in card["summary"]), "</ul></body></html>"]
    return "\n".join(parts)


def science_spec(norm: str, seeds: int = SCIENCE_SEEDS, full: bool = False) -> tuple[Any, list]:
    """The claims run of a card's science section: the claims of
    :func:`lnbench.analysis.claim_catalogue.norm_claims` for ``norm`` (by its declared
    ``uses_batch_statistics``; ``full``: the full card's too) and their LayerNorm and BatchNorm
    instances, each in its regime (``configs/claims/<regime>.yaml``, at its own sizes) with
    ``seeds`` seeds 0 .. seeds - 1.

    Returns:
        The :class:`lnbench.experiments.claims.ClaimsSpec` (named ``science``) and the pairs
        ``(claim, {"layer": claim, "batch": claim})``.

    Raises:
        ConfigError: a bad norm, ``seeds`` < 2 (a paired test needs two).
    """
    from lnbench.analysis.claim_catalogue import norm_claims
    from lnbench.experiments import claim_regimes
    from lnbench.experiments.claims import ClaimsSpec, seed_overrides

    if seeds < 2:
        raise ConfigError(f"--seeds: a paired test needs at least 2 seeds, got {seeds}")
    cls = norm_class(norm)
    pairs = norm_claims(norm, bool(getattr(cls, "uses_batch_statistics", False)), full)
    selected = list({c.id: c for claim, refs in pairs for c in (claim, *refs.values())}.values())
    presets = Path(__file__).resolve().parents[2] / "configs" / "claims"
    regimes = claim_regimes.load_regimes(selected, presets, seed_overrides(seeds, 0), None)
    return ClaimsSpec(selected, regimes, name="science", presets=presets), pairs


def science_folder(reference: str | Path) -> Path:
    """The claims run folder of an earlier card (``--reference DIR``: the card's folder or its
    science folder), whose finished runs a new card copies instead of training them again.

    Raises:
        ConfigError: DIR is neither, or its card was made with ``--no-science``.
    """
    from lnbench.experiments.claims import CLAIMS

    path = Path(reference)
    card = RunFolder(path).json("card.json") if (path / "card.json").is_file() else None
    if card is not None:
        folder = (card.get("science") or {}).get("folder")
        if not folder or not (path / folder).is_dir():
            raise ConfigError(f"--reference {reference}: this card has no science folder (made with --no-science)")
        return path / folder
    if (RunFolder(path).manifest() or {}).get("kind") == CLAIMS.kind:
        return path
    raise ConfigError(f"--reference {reference}: not a card folder (lnbench card NORM) or its science folder")


def science_section(pairs: list, summary: dict, folder: str) -> dict[str, Any]:
    """The science section from the claims run's summary.json: per claim of the norm, its verdict,
    effect, interval and seeds, and the same claim's verdict for LayerNorm and BatchNorm in the
    same run (``reference``); ``folder``: the run's folder, relative to the card's."""
    results = {r["id"]: r for r in summary.get("claims") or []}
    claims = []
    for claim, refs in pairs:
        r = results.get(claim.id, {})
        claims.append(
            {
                "id": claim.id,
                "claim": claim.text,
                "verdict": r.get("verdict", "not run"),
                "effect": r.get("effect"),
                "interval": r.get("ci95"),
                "seeds": r.get("n_seeds", 0),
                "metric": claim.metric,
                "reference": {ref: results.get(c.id, {}).get("verdict", "not run") for ref, c in refs.items()},
            }
        )
    counts = {v: sum(c["verdict"] == v for c in claims) for v in ("held", "not held", "inconclusive")}
    like = sum(c["verdict"] == c["reference"]["layer"] for c in claims)
    verdict = (
        f"{counts['held']} of {len(claims)} claims held ({counts['not held']} not held, {counts['inconclusive']} "
        f"inconclusive; {max((c['seeds'] for c in claims), default=0)} seeds, Holm over the run's "
        f"{len(results)} claims); the same verdict as LayerNorm's on {like} of {len(claims)}"
    )
    open_ = counts["inconclusive"]
    settle = (
        f"{plural(open_, 'claim')} inconclusive at {plural(max((c['seeds'] for c in claims), default=0), 'seed')}: "
        f"lnbench claims --resume CARD/{folder} --confirm settles them on fresh seeds (--dry-run: its plan and time)"
        if open_
        else ""
    )
    return {
        "passed": None,
        "verdict": verdict,
        "claims": claims,
        "folder": folder,
        "holm_family": len(results),
        "confirm": settle,
    }


def add_science(card_folder: Path, science: dict[str, Any]) -> dict[str, Any]:
    """Put the science section into ``card_folder``'s card.json (its summary sentence too) and
    write its pages again; returns the card."""
    from lnbench.records.io import write_json_atomic

    card = RunFolder(card_folder).json("card.json") or {}
    conformed = card["conformance"]["passed"]
    card["science"] = {**science, "caveat": "" if conformed else "measured on a norm that failed conformance"}
    for entry in card["sections"]:
        if entry["name"] == "science":
            entry["verdict"] = science["verdict"]
    caveat = "" if conformed else " (measured on a norm that failed conformance)"
    card["summary"] = [s for s in card["summary"] if not s.startswith(TITLES["science"])]
    card["summary"].append(f"{TITLES['science']}: {science['verdict']}{caveat}.")
    write_json_atomic(card_folder / "card.json", card)
    CARD.figures(card_folder)
    return card


def card(
    norm: str,
    runs_dir: str | Path | None = "runs",
    draws: int = 3,
    repeats: int = 15,
    seeds: int = SCIENCE_SEEDS,
    science: bool = True,
    full: bool = False,
    **options: Any,
) -> tuple[dict, Path | None]:
    """``lnbench card NORM``: measure the card of ``norm`` and write its run folder under
    ``runs_dir`` (card.json, card.md, card.html, report.html), then, with ``science``, train its
    claims (:func:`science_spec`, ``seeds`` seeds) into a ``science`` folder inside it; nowhere
    (and no science) if ``runs_dir`` is None; ``full``: the full card's claims too. ``options``:
    the claims run's :class:`lnbench.experiments.base.LaunchOptions` (``jobs``, ``on_epoch``,
    ``reference``: an earlier card's science folder, :func:`science_folder`).

    Returns:
        card.json's body and the folder (or None).

    Raises:
        ConfigError: an unknown norm, ``none``, ``draws``, ``repeats`` < 1 or ``seeds`` < 2;
            before anything is written.
    """
    from lnbench.experiments import driver
    from lnbench.experiments.claims import CLAIMS

    spec = CardSpec(norm, draws, repeats)
    if runs_dir is None:
        CARD.check(spec)
        return CARD.compute(spec).files["card.json"], None
    claims_spec, pairs = science_spec(norm, seeds, full) if science else (None, [])
    result = driver.run(CARD, spec, runs_dir=runs_dir)
    report = RunFolder(result.path).json("card.json") or {}
    if claims_spec is None:
        return report, result.path
    checked = report["conformance"]["passed"]  # a norm that failed conformance is trained as measured, unchecked
    run = driver.run(CLAIMS, claims_spec, runs_dir=result.path, check_norm=checked, **options)
    summary = RunFolder(run.path).summary() or {}
    section = science_section(pairs, summary, run.path.name)
    reference = options.get("reference")
    section.update(full=full, copied_from=None if reference is None else str(Path(reference).resolve()))
    return add_science(result.path, section), result.path
