"""The ConViS-Bench paper's published values (arXiv 2509.19245), x100, to print next to ours.

Rows are keyed by the folder name the released files use for that model. Concept order everywhere:
Main Action, Main Subjects, Main Objects, Location, Order of Actions. A row's ``source`` says whether its
values are the paper's printed cells or were computed from the release's score files with the paper's rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping

CONCEPTS = ("main-action", "main-subjects", "main-objects", "location", "order-of-actions")

CONDITIONED = "conditioned"  # one LMM answer per concept (Table 2)
GLOBAL = "global"  # one concept-agnostic score per pair, compared with every concept (Table 3)

PRINTED = "paper"  # the cells the paper prints
RELEASE = "release"  # computed from the release's score files with the paper's rule; no printed cells were at hand
RELEASE_NOTE = ("release = computed from the release's score files (commit b8fa4ef) with the paper's rule, "
                "not values the paper prints; Δ there = ours - release")


@dataclass(frozen=True)
class PaperRow:
    name: str  # as the paper prints it
    folder: str  # model folder in the release
    values: dict[str, tuple[float, ...]]  # concept -> (rho, tau) or (R@1, P@1, F1@1)
    decimals: int  # precision the paper prints
    source: str = PRINTED  # PRINTED or RELEASE

    @property
    def label(self) -> str:
        return label(self.name, self.source)


def label(name: str, source: str | None) -> str:
    """The name to print beside a row's values: a row the paper does not print says where its values are from."""
    return name if source in (None, PRINTED) else f"{name} ({source})"


def _row(record: dict) -> PaperRow:
    cells = (tuple(float(x) for x in cell) for cell in record["values"])
    source = record.get("source", PRINTED)
    if source not in (PRINTED, RELEASE):
        raise ValueError(f"paper table row {record['name']!r}: source {source!r} is neither "
                         f"{PRINTED!r} nor {RELEASE!r}")
    return PaperRow(record["name"], record["folder"], dict(zip(CONCEPTS, cells, strict=False)), int(record["decimals"]),
                    source)


def _table(rows: list[dict]) -> dict[str, PaperRow]:
    return {r.folder: r for r in map(_row, rows)}


# the published numbers are data (bench/data/paper_tables.json); the rules that use them are code
_DATA = Path(__file__).parent / "data"
_TABLES = json.loads((_DATA / "paper_tables.json").read_text(encoding="utf-8"))
TABLE2 = _table(_TABLES["table2"])  # concept-conditioned LMM answers, (rho, tau)
TABLE3 = _table(_TABLES["table3"])  # global similarity, (rho, tau)
TABLE4 = _table(_TABLES["table4"])  # retrieval on the paper's 133-anchor split, (R@1, P@1, F1@1)
RANDOM_CHOICE = _row(_TABLES["random_choice"])  # Table 4's random-choice row, same split
# the split itself (the release's to_be_ranked.json): anchor -> its candidates, base names
_SPLIT = json.loads((_DATA / "paper_split.json").read_text(encoding="utf-8"))["split"]
SPLIT = {anchor: frozenset(candidates) for anchor, candidates in _SPLIT.items()}
RETRIEVAL_ANCHORS = len(SPLIT)  # 133


def correlation_row(kind: str, folder: str) -> PaperRow | None:
    """Table 2 row for a conditioned model, Table 3 row for a global signal."""
    return (TABLE2 if kind == CONDITIONED else TABLE3).get(folder)


def paper_retrieval(folder: str, concept: str) -> tuple[float, float, float] | None:
    row = TABLE4.get(folder)
    return row.values.get(concept) if row else None


def paper_random(concept: str) -> tuple[float, float, float] | None:
    return RANDOM_CHOICE.values.get(concept)


def is_split(ranks: Mapping[str, Collection[str]]) -> bool:
    """Whether these anchors, each with these candidates, are exactly the paper's retrieval split."""
    return ranks.keys() == SPLIT.keys() and all(set(ranks[a]) == SPLIT[a] for a in SPLIT)


def as_printed(value: float, decimals: int) -> str:
    """How the reference prints a value: rounded to 2 decimals first, then formatted (e.g. 22.65 -> '22.6')."""
    return f"{round(value, 2):.{decimals}f}"
