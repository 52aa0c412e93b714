"""Keyword and hybrid text search: the keyword index's hits, alone or fused with the vector scores.

* ``vector``: the text towers' similarities (``text_query``), as before.
* ``keyword``: BM25 over each unit's stored text (``retrieval.store.keyword.index``); no model is built.
* ``hybrid``: the vector score lifted toward 1 by how much of the query the unit's text holds:
  total = v + LIFT * c * (1 - v), with v the unit's vector score and c its keyword coverage (the IDF-weighted share
  of the query's terms its text holds, in [0, 1]; 0 when the keyword index does not find it). A unit whose text
  holds every term of the query, or its one rare term, closes most of its gap to 1; one common word of a long
  paraphrase lifts it by a sliver, so it does not pass the unit the vector side ranked first by far. Reciprocal
  rank fusion, which this replaces, gave keyword rank 1 for one matched word as much weight as vector rank 1, and
  lost to vector search on paraphrases (``convis bench text-search`` measures both sides and the fusion).
  The fused score is the hit's ``total``: it orders the list and is what confidence reads; the vector score stays
  as ``recall_total`` and ``keyword["vector_score"]``. Ties go to the better vector rank.

The default is hybrid when some unit has a stored description (a caption or a concept's), else vector.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from retrieval.core.concepts import Concept
from retrieval.search.results import Hit
from retrieval.search.signals import SignalError
from retrieval.store.keyword.unit_texts import stamp

if TYPE_CHECKING:
    from retrieval.store.catalog import Catalog
    from retrieval.store.catalog.records import UnitRow
    from retrieval.store.keyword.index import KeywordHit

VECTOR, KEYWORD, HYBRID = "vector", "keyword", "hybrid"
MODES = (VECTOR, KEYWORD, HYBRID)
LIFT = 0.45  # how much of its gap to 1 a unit whose text covers the whole query closes (measured: docs/text-search.md)
RULE = (f"hybrid: total = v + {LIFT} c (1 - v), the vector score v lifted by the unit's IDF-weighted coverage c of the "
        "query's words; it orders the list and confidence reads it")  # what a result's reader is told
KEYWORD_SIGNAL = "bm25"  # how results name the keyword index as a signal


def check_mode(mode: str | None) -> str | None:
    """``mode`` as given (None: chosen by the index), or SignalError naming the modes."""
    if mode is not None and mode not in MODES:
        raise SignalError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


def chosen_mode(mode: str | None, concept: str | None, catalog: Catalog) -> str:
    """The mode a search runs in: the one asked for, else hybrid when the index holds descriptions; a concept's
    descriptions are searched by vector only."""
    if concept is not None:
        if mode not in (None, VECTOR):
            raise SignalError(f"--mode {mode} and --concept do not go together: a concept's descriptions are "
                              "searched by vector")
        return VECTOR
    if mode is not None:
        return mode
    return HYBRID if stamp(catalog).described else VECTOR


def fused_score(vector: float, coverage: float, lift: float = LIFT) -> float:
    """The hybrid score of a unit: its vector score lifted toward 1 by ``lift`` times its keyword coverage."""
    return vector + lift * coverage * (1.0 - vector)


def fused(by_vector: Sequence[Hit], found: Sequence[KeywordHit], lift: float = LIFT) -> list[Hit]:
    """``by_vector`` (every candidate, best vector score first) scored and reordered by ``fused_score`` with the
    keyword hits ``found`` (best first); each hit carries both ranks, its matched words, its coverage and its
    vector score. A hit without a vector score (a reranker's unread answer) stays without a total, last."""
    keyword = {h.unit_id: (rank, h) for rank, h in enumerate(found, 1)}
    marked = [_marked(hit, rank, *keyword.get(hit.unit_id, (None, None)), lift=lift)
              for rank, hit in enumerate(by_vector, 1)]
    return sorted(marked, key=lambda h: (h.total is None, -(h.total or 0.0), h.keyword["vector_rank"]))


def _marked(hit: Hit, vector_rank: int, keyword_rank: int | None, found: KeywordHit | None, lift: float) -> Hit:
    coverage = 0.0 if found is None else found.coverage
    total = None if hit.total is None else fused_score(hit.total, coverage, lift)
    return replace(hit, total=total, recall_total=hit.total,
                   keyword={"keyword_rank": keyword_rank, "vector_rank": vector_rank,
                            "matched_terms": list(found.matched if found else ()), "coverage": round(coverage, 4),
                            "vector_score": hit.total})


def keyword_hits(found: Sequence[KeywordHit], units: dict[int, UnitRow]) -> list[Hit]:
    """The keyword hits as Hits, numbered: each scored by its BM25 score over the best one's (the first scores 1),
    with its rank and matched terms."""
    top = found[0].score if found else 1.0
    hits = []
    for rank, h in enumerate((h for h in found if h.unit_id in units), 1):
        unit, scores = units[h.unit_id], {KEYWORD_SIGNAL: h.score / top}
        hits.append(Hit(unit.unit_id, unit.path, unit.segment, unit.start, unit.end, scores, scores[KEYWORD_SIGNAL],
                        unit.content_hash, rank=rank, recalled_by=(KEYWORD_SIGNAL,),
                        keyword={"keyword_rank": rank, "vector_rank": None, "matched_terms": list(h.matched),
                                 "bm25": h.score}))
    return hits


def keyword_concepts() -> tuple[list[Concept], dict[str, str]]:
    """A keyword search's one concept and its signal, as results name them."""
    return [Concept(KEYWORD_SIGNAL, KEYWORD_SIGNAL, 1.0)], {KEYWORD_SIGNAL: KEYWORD_SIGNAL}
