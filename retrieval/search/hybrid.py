"""Keyword and hybrid text search: the keyword index's ranks, alone or fused with the vector ranks.

* ``vector``: the text towers' similarities (``text_query``), as before.
* ``keyword``: BM25 over each unit's stored text (``retrieval.store.keyword.index``); no model is built.
* ``hybrid``: both, fused by reciprocal rank fusion (Cormack et al., 2009): a unit scores
  sum(1 / (RRF_K + rank)) over the two lists it is ranked in, with RRF_K = 60 as in that paper. Its vector rank is
  its place among every candidate either list proposed, scored from the stored vectors; a unit the keyword
  index does not find has no keyword rank and adds nothing from it. Ties go to the better vector rank.

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
RRF_K = 60  # reciprocal rank fusion's constant, the value of Cormack et al. (2009)
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


def fused(by_vector: Sequence[Hit], found: Sequence[KeywordHit]) -> list[Hit]:
    """``by_vector`` (every candidate, best vector score first) reordered by reciprocal rank fusion with the
    keyword hits ``found`` (best first), each hit carrying both ranks and its matched terms."""
    keyword = {h.unit_id: (rank, h.matched) for rank, h in enumerate(found, 1)}
    marked = [_marked(hit, rank, *keyword.get(hit.unit_id, (None, ()))) for rank, hit in enumerate(by_vector, 1)]
    return sorted(marked, key=lambda h: (-h.keyword["rrf"], h.keyword["vector_rank"]))


def _marked(hit: Hit, vector_rank: int | None, keyword_rank: int | None, matched: tuple[str, ...]) -> Hit:
    rrf = sum(1 / (RRF_K + r) for r in (vector_rank, keyword_rank) if r is not None)
    return replace(hit, keyword={"keyword_rank": keyword_rank, "vector_rank": vector_rank,
                                 "matched_terms": list(matched), "rrf": rrf})


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
