"""A query: clips like an anchor under some concepts, best first.

Each indexed signal's FAISS index recalls candidates for the anchor's vectors (a concept with descriptions is
recalled by them too, beside its visual signal; a change adds its text's and the composed vectors' lists);
their scores come from the catalog's vectors.  Then, as the request asks: a pair signal (VQAScore) or a
reranker rescores the shortlist, a fusion model combines every signal per concept, and the list is cut at k.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from rerankers.sharing import WORK_KEYS
from retrieval.core.concepts import Concept
from retrieval.core.signal_kinds import CAPTION, CLIPSCORE, parse_signal, vqascore_id
from retrieval.core.timecode import format_span
from retrieval.lmm.similarity import rerank
from retrieval.model_cache import ModelCache, model_notices
from retrieval.search import calibration, filters, ranking, signals
from retrieval.search.anchor import Anchor, AnchorVectors, ConceptSignals
from retrieval.search.calibration import Calibration
from retrieval.search.change_edits import LmmEditor, change_editor
from retrieval.search.change_reading import ChangeReading
from retrieval.search.compose import ChangeQuery
from retrieval.search.compose_reading import edited_signals, read_anchor_change
from retrieval.search.confidence import Spread, concept_ranges
from retrieval.search.fusion_query import fuse, fusion_label, load_fusion
from retrieval.search.pair_signals import PairSignals
from retrieval.search.requests import QueryRequest
from retrieval.search.results import Hit, QueryResult, shown_path
from retrieval.store.caches.anchor import AnchorKey
from retrieval.store.catalog import Catalog
from retrieval.store.index_dir import CAPTIONER, open_catalog, protocol_of, root_of, unavailable_notice
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.policy import vector_index


@dataclass
class Recalled:
    """What the catalog gives one query: the signals chosen, the candidates and their stored vectors."""

    root: str  # as results name it
    root_path: Path  # where the clips a model is shown live
    indexed: dict[str, str]
    recalled: ConceptSignals
    beside: ConceptSignals
    anchors: dict
    found_by: dict[int, list[str]]
    candidates: list[int]
    units: dict
    exact: dict
    every: list[str]  # the signals a fusion combines (none without one)
    wanted: ChangeQuery | None = None
    changed: dict | None = None
    captions: dict | None = None
    anchor_caption: str | None = None
    request: QueryRequest | None = None  # the request as scored: a change's touched concepts left out of stay
    reading: ChangeReading | None = None
    backgrounds: dict = field(default_factory=dict)  # signal -> its unit-pair background (search/calibration.py)
    described: dict = field(default_factory=dict)  # concept -> its description signal (search/signals.py)
    conditioned: dict = field(default_factory=dict)  # concept -> its concept-conditioned signal (search/signals.py)


def run_query(request: QueryRequest, index_dir: Path, models: ModelCache, only: str | None = None,
              short_reasons: bool = True) -> QueryResult:
    """``request`` answered from the index in ``index_dir``; ``only``: keep the units of this content hash alone
    (a comparison scores one pair, and asks for no ``short_reasons``: why there are fewer than k results)."""
    clip = Anchor.of(request.anchor, request.start, request.end)
    catalog, notices = open_catalog(index_dir)
    with catalog:
        notices += unavailable_notice(catalog) + filters.notices(catalog, request.where)
        found = _recall(request, clip, catalog, index_dir, models, notices)
        notices += _copy_notice(clip, catalog.files_by_hash(clip.content_hash), Path(found.root_path))
    request = found.request or request  # a change's touched concepts left the stay term
    notices += [*found.recalled.notices, *found.beside.notices]
    hits = _ranked(request, clip, found, only)
    if found.wanted is not None:  # staying like the anchor, and matching the change
        notices += found.wanted.notices
    pair = PairSignals(clip.clip, found.anchor_caption, found.captions or {}, list(request.concepts))
    if request.pair_overrides:  # the shortlist, best first by its new scores: what is cut at k next
        rescored = _pair_signals(pair, hits[:request.rerank_top], request.pair_overrides, models, found.root_path,
                                 notices)
        hits = ranking.ordered(rescored, request.most_different)
    shortlist, model, work = _shortlist(request, clip, found, hits, models, notices)
    if request.fusion is not None:
        sims = ranking.similarities([h.unit_id for h in shortlist], found.every, found.exact)
        shortlist, fusion_notices = fuse(shortlist, list(request.concepts), load_fusion(request.fusion),
                                         pair.with_values(sims), None if model is None else model.name,
                                         found.beside.signal_of)
        notices += fusion_notices
    if request.reranker is None:
        alone = [c for c in request.concepts if not any(c.key in hit.contributions for hit in shortlist)]
        notices += signals.scoring_notices(alone, found.recalled.signal_of, found.indexed, found.beside.signal_of,
                                           found.described, found.conditioned)
    if short_reasons:
        notices += _short_reasons(request.k, hits, found, clip, tuple(request.where))
    return replace(_result(request, found, shortlist, hits, pair, model, notices), work=work)


def _recall(request: QueryRequest, clip: Anchor, catalog: Catalog, index_dir: Path, models: ModelCache,
            notices: list[str]) -> Recalled:
    protocol = protocol_of(catalog)  # anchors are embedded as the index was

    def build(spec: str):
        return models.indexer(spec, protocol)

    def cached(model_id: str, embed):
        key = AnchorKey.of(clip.content_hash, clip.start, clip.end, model_id, protocol, models.device)
        return models.anchor_vector(index_dir, key, embed, notices)

    def index(model_id: str):
        return vector_index(catalog, index_dir, model_id)

    def tower(spec: str):
        return models.text_tower(spec, protocol, notices)

    indexed = {r.name: r.indexer for r in catalog.indexers()}
    described = signals.described_concepts(catalog.description_signals(), indexed)
    clipscores = signal_vectors.clipscore_signals(catalog)
    vectors = AnchorVectors(clip, catalog, build, cached)
    reading, request = (None, request) if request.change is None else \
        read_anchor_change(request, catalog, vectors, indexed, described, tower, notices,
                           _editor(request, catalog, clip, index_dir, models, notices))
    conditioned = signals.conditioned_concepts(catalog.description_signals(), indexed)
    chosen = signals.choose_all(list(request.concepts), indexed, request.vector_overrides, described,
                                signals.clipscore_names(clipscores), conditioned)
    recalled = vectors.per_concept(chosen, indexed)
    # a concept with descriptions is recalled and scored by them too, beside its visual signal
    beside = vectors.descriptions(signals.beside(recalled.signal_of, described, request.vector_overrides))
    anchors = {**recalled.vectors, **beside.vectors}
    allowed = filters.allowed_units(catalog, request.where)  # before ranking: a filter loses no match
    found_by = ranking.recall(anchors, {m: index(m) for m in anchors}, request.recall, farthest=request.most_different,
                              allowed=allowed)
    wanted = None
    if request.change is not None:  # the change text's and the composed vectors' top lists join the candidates
        wanted = ChangeQuery.prepare(request.change, indexed, tower,
                                     lambda m: anchors[m] if m in anchors else vectors.visual(m), described,
                                     *edited_signals(reading, indexed, described))
        for unit, by in wanted.recall(index, request.recall, allowed).items():
            found_by.setdefault(unit, []).extend(by)
    candidates = sorted(found_by)
    # scores come from the catalog's vectors: FAISS only proposes the candidates
    exact = ranking.stored_vectors(catalog, anchors, candidates)
    every = []
    if request.fusion is not None:  # the fusion's one `clipscore` input: the one `--signal C=clipscore` means
        preferred = signals.clipscore_names(clipscores).get(CLIPSCORE)
        every = vectors.every_signal(indexed, anchors, [preferred] if preferred else [])
        exact.update(ranking.stored_vectors(catalog, [m for m in every if m not in exact], candidates))
    found = Recalled(catalog.setting("root") or str(index_dir.parent.resolve()), root_of(catalog, index_dir),
                     indexed, recalled, beside, anchors, found_by, candidates, catalog.units(candidates), exact, every)
    if wanted is not None:
        found.wanted = wanted
        found.changed = wanted.scores(candidates, ranking.stored_vectors(catalog, wanted.text_vectors, candidates))
    found.request, found.reading, found.described = request, reading, described
    found.backgrounds, found.conditioned = catalog.backgrounds(), conditioned
    if request.pair_overrides:
        found.captions = catalog.chosen_texts(CAPTION)
        found.anchor_caption = vectors.caption(found.captions)
    return found


def _editor(request: QueryRequest, catalog: Catalog, clip: Anchor, index_dir: Path, models: ModelCache,
            notices: list[str]) -> LmmEditor | None:
    """Who edits the anchor's texts as the change says: the query's reranker, else the index's captioner (None:
    neither, and the rule edits)."""
    return change_editor(request.reranker or catalog.setting(CAPTIONER), request.change.text,
                         (clip.content_hash, clip.start, clip.end), index_dir, models.reranker, notices)


def _ranked(request: QueryRequest, clip: Anchor, found: Recalled, only: str | None) -> list[Hit]:
    """Every recalled candidate scored by the indexed signals (never the anchor itself), in the request's order."""
    anchors = found.anchors if found.wanted is None else found.wanted.as_changed(found.anchors)
    evidence = ranking.evidence(found.candidates, anchors, found.exact, found.recalled.signal_of,
                                found.beside.signal_of)
    hits = ranking.rank(evidence, found.units, list(request.concepts), recalled_by=found.found_by,
                        keep=lambda unit: not clip.overlaps(unit) and only in (None, unit.content_hash))
    hits = ranking.ordered(hits, request.most_different)
    if found.wanted is not None:
        hits = found.wanted.rescore(hits, found.changed)
    return ranking.one_per_copy(hits)


def _shortlist(request: QueryRequest, clip: Anchor, found: Recalled, hits: list[Hit], models: ModelCache,
               notices: list[str]) -> tuple[list[Hit], object, dict | None]:
    """The hits the final scores go to, the reranker that gave them (None without one) and the model work it took
    (``rerankers.sharing.WORK_KEYS``: vision-tower calls, shared-prefix passes, pair rows; None without one)."""
    if request.reranker is None:
        return (hits[:max(request.k, request.rerank_top)] if request.fusion is not None else hits[:request.k]), None, \
            None
    concepts = list(request.concepts)
    scorer = models.pair_scorer(request.reranker, request.mode, request.symmetric, notices)
    asked = [*concepts, found.wanted.question] if found.wanted is not None else concepts
    before = dict(scorer.reranker.work)  # the model is kept between queries: its counts run on
    shortlist = rerank(scorer, clip.clip, hits[:request.rerank_top], asked, found.root_path)
    work = {key: scorer.reranker.work[key] - before.get(key, 0) for key in WORK_KEYS}
    model_notices(notices, scorer.reranker)  # e.g. a precision fallback, or smaller batches after running out of memory
    if found.wanted is not None:  # the reranker's ratings: of the concepts (stay) and of the change
        shortlist = found.wanted.reranked(shortlist, concepts)
    return shortlist, scorer.reranker, work


def _pair_signals(pair: PairSignals, hits: list[Hit], wanted: dict[str, str], models: ModelCache, root: Path,
                  notices: list[str]) -> list[Hit]:
    """``hits`` with each concept in ``wanted`` (concept -> ``vqascore[:MODEL]``) scored by that pair signal;
    a concept whose anchor has no caption keeps its recall scores, with a notice."""
    if pair.anchor_caption is None:
        notices.append(f"{', '.join(wanted)}: VQAScore asks about the anchor's caption, and the anchor has none "
                       "in the index (a new file, a time window, or not captioned); scored by its recall signal")
        return hits
    for key, spec in wanted.items():
        kind = parse_signal(spec)
        scorer = models.vqa_scorer(kind.model, notices)
        hits = pair.score(hits, key, vqascore_id(kind.model), scorer, root)
        model_notices(notices, scorer.model)
    if pair.uncaptioned:
        notices.append(f"{pair.uncaptioned} candidate(s) have no caption in the index, so no VQAScore: they "
                       "rank last (index with --captions or --captioner)")
    return hits


def _result(request: QueryRequest, found: Recalled, shortlist: list[Hit], hits: list[Hit], pair: PairSignals,
            model, notices: list[str]) -> QueryResult:
    concepts: list[Concept] = list(request.concepts)
    # the pool the final scores were given to: every recalled candidate, or the shortlist a model rescored
    rescored = request.reranker is not None or request.fusion is not None or request.pair_overrides
    pool = shortlist if rescored else hits
    change = request.change
    final = ranking.ranked(shortlist, request.most_different)[:request.k]
    calibration = _calibration(request, found, final, bool(rescored), notices)
    return QueryResult(shown_path(request.anchor, found.root), concepts, found.recalled.signal_of,
                       final, notices,
                       reranker=None if model is None else model.model_id,
                       fusion=None if request.fusion is None else fusion_label(request.fusion), root=found.root,
                       start=request.start, end=request.end,
                       empty_reason=None if hits else _why_empty(found.candidates, found.units, request.where),
                       beside=found.beside.signal_of, pair_signals=pair.used, change=None if change is None else {
                           "text": change.text, "weight": change.weight,
                           "signals": sorted(found.wanted.text_vectors), "composed": sorted(found.wanted.composed),
                           **({} if found.reading is None else found.reading.as_dict()),
                           **({} if found.reading is None else {"footnote": found.reading.footnote()})},
                       most_different=request.most_different,
                       spread=Spread.of((h.total for h in pool), descending=not request.most_different),
                       ranges=concept_ranges([h.scores for h in pool], [c.key for c in concepts]),
                       calibration=calibration,
                       change_spread=None if change is None else Spread.of(h.composed.get("change") for h in pool))


def _calibration(request: QueryRequest, found: Recalled, hits: list[Hit], rescored: bool,
                 notices: list[str]) -> Calibration | None:
    """The hits read against each signal's unit-pair background (an anchor is a unit: search/calibration.py);
    None, with a notice, where the scores are not such similarities or the index keeps no background."""
    if not hits:
        return None
    if rescored or request.change is not None:
        why = "a change query's total mixes in the change text's scores" if request.change is not None else \
            "a reranker, fusion or VQAScore gave these scores, and the background is of similarities"
        notices.append(calibration.relative_notice(why))
        return None
    used = {s for hit in hits for parts in hit.evidence.values() for s in parts}
    lacking = calibration.missing(used, found.backgrounds)
    if lacking:
        notices.append(calibration.no_background(lacking, found.backgrounds))
        return None
    cuts, references = calibration.stored_cuts(used, found.backgrounds)
    return calibration.calibrate(hits, request.concepts, cuts, references, request.most_different)


def _copy_notice(clip: Anchor, same_bytes: list[str], root: Path) -> list[str]:
    """An anchor from outside the index with the bytes of indexed files: those files are the anchor itself to a
    query, which never returns its own anchor, so they are missing from the results; say so."""
    here = clip.path.resolve()
    others = [path for path in same_bytes if (root / path).resolve() != here]
    if not others or len(others) < len(same_bytes):  # the anchor is one of them: hidden as itself, as expected
        return []
    return [f"the anchor has the same bytes as {', '.join(others)} in the index: a query never returns its own "
            f"anchor, so {'that file is' if len(others) == 1 else 'those files are'} left out of the results"]


def _short_reasons(k: int, hits: list[Hit], found: Recalled, clip: Anchor, where: tuple[str, ...] = ()
                   ) -> list[str]:
    """Why a query gives fewer than ``k`` results, when it does and there are any (none: ``_why_empty``)."""
    if not hits or len(hits) >= k:
        return []
    own = sum(1 for u in found.candidates if u in found.units and clip.overlaps(found.units[u]))
    why = f"{len(hits)} result{'' if len(hits) == 1 else 's'}, not {k}: "
    if own and clip.whole:
        return [why + f"{own} unit(s) are the anchor itself (the whole file {clip.path.name}) and a query never "
                      "returns its own anchor; give the anchor a time window to search the rest of that file"]
    if own:  # a window already: the units it touches are left out whole, however little of them it covers
        said = (why + f"{own} unit(s) of {clip.path.name} overlap the anchor's window "
                f"({format_span(clip.start or 0.0, clip.end)}) and a query never returns its own anchor")
        same_file = sum(1 for unit in found.units.values() if unit.content_hash == clip.content_hash)
        if own < same_file:  # the file's other units are searched already
            return [said]
        return [said + "; a unit is left out whole, so to search the rest of that file index it in shorter units "
                       "(convis index --segment 10s)"]
    if where:
        return [why + f"the filter ({' and '.join(where)}) keeps only {len(hits)} unit"
                f"{'' if len(hits) == 1 else 's'} besides the anchor"]
    return [why + "that is every unit the index could recall"]


def _why_empty(candidates: list[int], units: dict, where: tuple[str, ...] = ()) -> str:
    if not candidates:
        return filters.none_kept(where) if where else "the index holds no vectors to recall from"
    files = {unit.path for unit in units.values()}
    return (f"every unit recalled ({len(candidates)}, from {', '.join(sorted(files)[:3])}) is part of the anchor "
            "itself, and a query never returns its own anchor; index more videos")
