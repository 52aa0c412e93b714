"""Presenting results: rich tables (ours next to the paper's), JSON, CSV and a PNG bar chart."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from bench import paper, per_concept
from bench.evaluate import ALL_ANCHORS, PAPER_SPLIT, RANDOM_MODEL, CorrelationRow, RetrievalRow
from bench.metrics import NDCG_LABEL, NDCG_VARIANT
from retrieval.core.concepts import CONVIS_CONCEPTS

PAPER_STYLE = "dim"


def _fmt(value: float | None, decimals: int = 2) -> str:
    if value is None:
        return ""
    return "n/a" if not math.isfinite(value) else paper.as_printed(value, decimals)


def _concepts_of(rows: Sequence[Any]) -> list[str]:
    present = {r.concept for r in rows}
    return [c for c in CONVIS_CONCEPTS if c in present]


# ---------------------------------------------------------------- tables


def correlation_tables(rows: Sequence[CorrelationRow], side_by_side: bool = False) -> list[RenderableType]:
    """One table per concept: rho and tau x100, each next to the paper's value and ours minus it (Δ) when the
    model is in it; then one note on how they are laid out. A single model gets one table with a row per concept
    instead, and so do several with ``side_by_side``, their columns next to each other.
    """
    if len({(r.kind, r.model) for r in rows}) == 1:
        return [_model_table(rows)]
    if side_by_side:
        return [_side_by_side_table(rows), _footer(_pairs_note(rows))]
    shown = per_concept.shown_names(r.model for r in rows)
    tables = [_correlation_table(c, [r for r in rows if r.concept == c], shown) for c in _concepts_of(rows)]
    return [*tables, _footer(["concept-conditioned answers first, then global signals; "
                             "model = paper's name when it has one", *_per_concept_note(shown), *_release_note(rows)])]


def _per_concept_note(shown: dict[str, str]) -> list[str]:
    paired = [name for model, name in shown.items() if name != model]
    if not paired:
        return []
    return [f"{per_concept.SHOWN.strip()} = the model's vectors embedded under each concept's instruction, scored by "
            "their cosine; the same model among the global signals = its generic vectors"]


def _footer(lines: Sequence[str]) -> Text:
    """Notes that hold for every table above them, printed once after the last."""
    return Text("\n".join(lines), style="table.caption")


def _release_note(rows: Sequence[CorrelationRow]) -> list[str]:
    return [paper.RELEASE_NOTE] if any(r.paper_source == paper.RELEASE for r in rows) else []


def _name(r: CorrelationRow, shown: dict[str, str] | None = None) -> str:
    """The paper's name of the row's model, else how ``shown`` (``per_concept.shown_names``) names its folder."""
    return escape(paper.label(r.paper_name, r.paper_source) if r.paper_name else (shown or {}).get(r.model, r.model))


def _model_table(rows: Sequence[CorrelationRow]) -> Table:
    first = rows[0]
    t = Table(title=f"{_name(first)}: correlation with human ratings (x100)", title_justify="left",
              caption="\n".join(_release_note(rows)) or None, caption_justify="left")
    t.add_column("concept")
    _add_correlation_columns(t, first.paper_source or paper.PRINTED)
    for r in sorted(rows, key=lambda r: list(CONVIS_CONCEPTS).index(r.concept)):
        t.add_row(CONVIS_CONCEPTS[r.concept], *_correlation_cells(r))
    return t


def _add_correlation_columns(t: Table, reference: str = paper.PRINTED) -> None:
    """rho and tau, each followed by the reference value (the paper's, or the release's) and ours minus it."""
    for name in ("rho", "tau"):
        t.add_column(name, justify="right")
        t.add_column(reference, justify="right", style=PAPER_STYLE)
        t.add_column("Δ", justify="right")
    t.add_column("pairs", justify="right")


def _correlation_cells(r: CorrelationRow) -> tuple[str, ...]:
    return (*_metric_cells(r, with_paper=True), f"{r.scores.n}/{r.n_gt}")


def _metric_cells(r: CorrelationRow, with_paper: bool) -> tuple[str, ...]:
    """rho then tau; each followed by the paper's value and ours minus it when ``with_paper``."""
    cells: list[str] = []
    for ours, theirs, delta in ((r.scores.rho, r.paper_rho, r.paper_delta_rho),
                                (r.scores.tau, r.paper_tau, r.paper_delta_tau)):
        cells.append(_fmt(ours))
        if with_paper:
            cells += [_fmt(theirs, r.paper_decimals), signed(delta, r.paper_decimals)]
    return tuple(cells)


def signed(delta: float | None, decimals: int) -> str:
    """A difference as the paper prints its values, with its sign: '+0.3', '-1.2'; '' without one."""
    if delta is None:
        return ""
    if not math.isfinite(delta):
        return "n/a"
    # a difference that rounds to zero is '+0.0', not '-0.0'
    return f"{round(delta, decimals) + 0.0:+.{decimals}f}"


def _side_by_side_table(rows: Sequence[CorrelationRow]) -> Table:
    """Rows = concepts; a column per model with its 'rho / tau', then the paper's and Δ where it has the model."""
    models = list(dict.fromkeys((r.kind, r.model) for r in rows))
    by = {(r.kind, r.model, r.concept): r for r in rows}
    with_paper = {m: any(r.paper_rho is not None for r in rows if (r.kind, r.model) == m) for m in models}
    reference = {(r.kind, r.model): r.paper_source or paper.PRINTED for r in rows}
    t = Table(title="correlation with human ratings (x100), rho / tau", title_justify="left")
    t.add_column("concept")
    for m in models:
        t.add_column(escape(m[1]), justify="right")
        if with_paper[m]:
            t.add_column(reference[m], justify="right", style=PAPER_STYLE)
            t.add_column("Δ", justify="right")
    for concept in _concepts_of(rows):
        cells = [_pair_cells(by.get((*m, concept)), with_paper[m]) for m in models]
        t.add_row(CONVIS_CONCEPTS[concept], *(c for group in cells for c in group))
    return t


def _pair_cells(r: CorrelationRow | None, with_paper: bool) -> tuple[str, ...]:
    """'rho / tau' of ours, then of the paper and of ours minus the paper when ``with_paper``."""
    if r is None:  # a concept this model has no row for
        return ("",) * (3 if with_paper else 1)
    cells = _metric_cells(r, with_paper=True)  # rho, paper, Δ, tau, paper, Δ
    pairs = [f"{a} / {b}" if a or b else "" for a, b in zip(cells[:3], cells[3:], strict=False)]
    return tuple(pairs if with_paper else pairs[:1])


def _pairs_note(rows: Sequence[CorrelationRow]) -> list[str]:
    models = dict.fromkeys(r.model for r in rows)
    counts = {m: [r for r in rows if r.model == m] for m in models}
    scored = ", ".join(f"{m} {_span(r.scores.n for r in c)}/{_span(r.n_gt for r in c)}" for m, c in counts.items())
    return [f"pairs scored / rated: {scored}", "Δ = ours - paper, where the paper has the model",
            *_release_note(rows)]


def _correlation_table(concept: str, rows: list[CorrelationRow], shown: dict[str, str]) -> Table:
    t = Table(title=f"{CONVIS_CONCEPTS[concept]}: correlation with human ratings (x100)", title_justify="left")
    t.add_column("model")
    _add_correlation_columns(t)
    for kind in (paper.CONDITIONED, paper.GLOBAL):
        group = [r for r in rows if r.kind == kind]
        if group and t.row_count:
            t.add_section()
        for r in group:
            t.add_row(_name(r, shown), *_correlation_cells(r))
    return t


def retrieval_tables(rows: Sequence[RetrievalRow]) -> list[RenderableType]:
    """One table per concept and anchor set: top-1 R/P/F1 (the paper's in brackets where comparable), tau and
    NDCG; then one note on the anchors and on the paper's values.
    """
    tables = []
    shown = per_concept.shown_names(r.model for r in rows)
    for concept in _concepts_of(rows):
        mine = [r for r in rows if r.concept == concept]
        for label in dict.fromkeys(r.anchor_set for r in mine):
            tables.append(_retrieval_table(concept, label, [r for r in mine if r.anchor_set == label], shown))
    return [*tables, _footer(_retrieval_notes(rows))]


def _retrieval_table(concept: str, label: str, rows: list[RetrievalRow], shown: dict[str, str]) -> Table:
    title = f"{CONVIS_CONCEPTS[concept]}: retrieval at 1 (x100)"
    t = Table(title=title if label == ALL_ANCHORS else f"{title}, {label} only", title_justify="left")
    t.add_column("model")
    for name in ("R@1", "P@1", "F1@1", "tau", NDCG_LABEL, "anchors"):
        t.add_column(name, justify="right")
    for r in rows:
        m, theirs = r.scores, r.paper or (None, None, None)
        t.add_row(
            escape(shown.get(r.model, r.model)),
            *(_with_paper(ours, paper_value)
              for ours, paper_value in zip((m.recall, m.precision, m.f1), theirs, strict=False)),
            _fmt(m.tau), _fmt(m.ndcg),
            f"{m.n}/{r.n_gt}",
        )
    return t


def _retrieval_notes(rows: Sequence[RetrievalRow]) -> list[str]:
    groups: dict[str, list[RetrievalRow]] = {}
    for r in rows:
        groups.setdefault(r.anchor_set, []).append(r)
    return [
        "anchors = anchors scored / anchors the ground truth ranks; random choice is averaged over the same "
        "anchors and candidates as the models in its table",
        *(_anchor_set_note(label, group) for label, group in groups.items() if label != ALL_ANCHORS),
        *_paper_note(rows),
        f"{NDCG_LABEL} = {NDCG_VARIANT}",
        "bottom-1 scores are in the JSON/CSV output",
    ]


def _anchor_set_note(label: str, rows: list[RetrievalRow]) -> str:
    anchors = _span(len(r.used_ranks) for r in rows)
    candidates = _span(sum(map(len, r.used_ranks.values())) for r in rows)
    if label == PAPER_SPLIT:
        return (f"{label} = the {anchors} anchors of the paper's retrieval split (to_be_ranked.json), the ones "
                f"the scores share with the ground truth; it ranks {candidates} of their "
                f"{sum(map(len, paper.SPLIT.values()))} candidates, and only those are scored")
    models = ", ".join(dict.fromkeys(r.model for r in rows if r.model != RANDOM_MODEL))
    return f"{label} = the {anchors} anchors ({candidates} candidates) that {models} share with the ground truth"


def _span(values: Iterable[int]) -> str:
    distinct = sorted(set(values))
    return str(distinct[0]) if len(distinct) == 1 else f"{distinct[0]}-{distinct[-1]}"


def _paper_note(rows: Sequence[RetrievalRow]) -> list[str]:
    if any(r.paper for r in rows):
        return ["(paper) = the paper's Table 4, averaged over the same anchors and candidates"]
    if not any(_in_table4(r) for r in rows):
        return []
    return [f"the paper's Table 4 is not shown: it is averaged over its own split ({paper.RETRIEVAL_ANCHORS} "
            "anchors x 4 candidates, with its unreleased human rankings), and no table here is on exactly that"]


def _in_table4(row: RetrievalRow) -> bool:
    if row.model == RANDOM_MODEL:
        return paper.paper_random(row.concept) is not None
    return paper.paper_retrieval(row.model, row.concept) is not None


def _with_paper(ours: float, theirs: float | None) -> str:
    return _fmt(ours) + (f" [{PAPER_STYLE}]({_fmt(theirs, 1)})[/{PAPER_STYLE}]" if theirs is not None else "")


# ---------------------------------------------------------------- files


def json_notes(rows: Sequence[CorrelationRow | RetrievalRow]) -> dict[str, str]:
    """What the JSON output says beside its results: which NDCG its retrieval rows hold."""
    return {"ndcg_variant": NDCG_VARIANT} if any(isinstance(r, RetrievalRow) for r in rows) else {}


def records(rows: Iterable[CorrelationRow | RetrievalRow]) -> list[dict]:
    """Plain dicts with NaN as None, so JSON stays valid."""
    return [{k: _clean(v) for k, v in r.record().items()} for r in rows]


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, allow_nan=False)


def write_json(path: str | Path, data: Any) -> None:
    Path(path).write_text(to_json(data) + "\n", encoding="utf-8")


def write_csv(path: str | Path, rows: Sequence[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        if not rows:
            return
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------- chart


def bar_chart(path: str | Path, rows: Sequence[dict], metrics: dict[str, str], title: str) -> None:
    """One panel per metric; in each, concepts on the x axis and one bar per model."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt
    import numpy as np

    concepts = [c for c in CONVIS_CONCEPTS if any(r["concept"] == c for r in rows)]
    models = list(dict.fromkeys(_label(r) for r in rows))
    fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4.5), squeeze=False)
    width = 0.8 / max(len(models), 1)
    x = np.arange(len(concepts))
    for ax, (field, label) in zip(axes[0], metrics.items(), strict=False):
        for i, model in enumerate(models):
            values = [_value(rows, model, c, field) for c in concepts]
            offset = (i - (len(models) - 1) / 2) * width
            ax.bar(x + offset, values, width, label=model, color=_colour(plt, i, len(models)))
        ax.set_xticks(x, [CONVIS_CONCEPTS[c] for c in concepts], rotation=20, ha="right")
        ax.set_ylabel(label)
        ax.axhline(0, color="black", linewidth=0.5)
    axes[0][-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def _colour(plt, i: int, n: int):
    # the default cycle repeats after 10 colours; tab20 keeps up to 20 models apart
    return plt.get_cmap("tab10" if n <= 10 else "tab20")(i % 20)


def _label(row: dict) -> str:
    name = row.get("paper_name") or row["model"]
    return f"{name} ({row['kind']})" if "kind" in row else name


def _value(rows: Sequence[dict], model: str, concept: str, field: str) -> float:
    for r in rows:
        if _label(r) == model and r["concept"] == concept and r[field] is not None:
            return float(r[field])
    return float("nan")
