"""Text search: rank indexed units by how well they match a sentence.

Every indexed signal with a text tower answers: the caption model (``text``) embeds the sentence as it
embedded the captions, and CLIP-family models embed it with their text tower into the space of their image
vectors.  Signals without one (EfficientNet, DINOv2, VideoMAE) cannot compare a sentence with a clip and are
skipped.  Each answering signal scores a unit by its (cos + 1) / 2 similarity, and the signals combine like
the concepts of a query (Eq. 2): equal weights unless weights are given (normalised to sum to 1).

With a concept (``--concept location "a beach"``), only that concept's descriptions answer: the text
indexer embeds the sentence and compares it with each unit's description of the concept, written at
index time (``--captioner``, ``convis describe``, or ``<stem>.<concept>.txt`` files).  An index without
descriptions of the concept answers with a concept-conditioned indexer's vectors of it, when it has them
(``qwen3-vl-embedding#location``): the sentence embedded under the model's query instruction.

A concept-conditioned indexer answers a search without a concept as a CLIP model does: its query instruction
embeds the sentence, its generic vectors answer.

Each signal's FAISS index proposes candidates; their scores come from the catalog's vectors, as in a query.
The cost is one text-tower forward pass per answering signal; no LMM is asked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from indexers.base import Indexer
from indexers.errors import ModelUnavailableError
from indexers.factory import has_text_tower
from indexers.text_towers import TextEncoder
from retrieval.core.concepts import Concept, closest, normalise
from retrieval.core.errors import one_line
from retrieval.core.scores import unit_similarity
from retrieval.search import calibration, filters, hybrid, ranking
from retrieval.search.confidence import Spread, concept_ranges
from retrieval.search.hit_lines import with_lines
from retrieval.search.request_fields import MAX_TEXT_CHARS
from retrieval.search.results import QueryResult
from retrieval.search.signals import SignalError, conditioned_concepts, described_concepts, short_name
from retrieval.store.catalog import Catalog
from retrieval.store.index_dir import open_catalog, protocol_of, unavailable_notice
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.policy import RecallIndex, vector_index

if TYPE_CHECKING:
    from retrieval.model_cache import ModelCache
    from retrieval.store.keyword.index import KeywordIndex



class NoTextSignal(SignalError):
    """No indexed signal can compare a sentence with a clip."""


@dataclass(frozen=True)
class TextResult(QueryResult):
    """A QueryResult whose anchor is a sentence: its JSON is a query's, plus ``text``."""

    text: str = ""
    mode: str = hybrid.VECTOR  # vector, keyword or hybrid (retrieval/search/hybrid.py)

    def as_dict(self) -> dict:
        fusion = {"lift": hybrid.LIFT} if self.mode == hybrid.HYBRID else {}
        return {**super().as_dict(), "text": self.text, "mode": self.mode, **fusion}


def answers_text(model) -> bool:
    """Whether ``model`` has a text tower: an exported one, or an indexer whose class implements
    ``embed_texts``."""
    if isinstance(model, Indexer):
        return type(model).embed_texts is not Indexer.embed_texts
    return callable(getattr(model, "embed_texts", None))


def check_text(text: str) -> str:
    """The sentence to search for, stripped; empty or overlong text is refused."""
    text = " ".join(str(text).split())
    if not text:
        raise SignalError("give a text to search for, e.g. convis search \"a hand holding a cup\"")
    if len(text) > MAX_TEXT_CHARS:
        raise SignalError(f"the text is {len(text)} characters long; at most {MAX_TEXT_CHARS} are searched")
    return text


def parse_weights(specs: Iterable[str]) -> dict[str, float]:
    """``clip=0.7`` -> {"clip": 0.7}: a signal's weight, a finite number > 0."""
    out: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.rpartition("=")
        try:
            weight = float(value) if sep and name.strip() else float("nan")
        except ValueError:
            weight = float("nan")
        if not np.isfinite(weight) or weight <= 0:
            raise SignalError(f"--signal takes INDEXER=WEIGHT with a weight > 0, got {spec!r}")
        out[name.strip()] = weight
    return out


def text_signals(indexed: dict[str, str], build: Callable[[str], TextEncoder]) -> tuple[dict[str, Indexer], list[str]]:
    """Indexer name -> model, for each indexed signal that answers text, and notices of those that cannot;
    NoTextSignal when none answers."""
    models, failed = {}, []
    mute = sorted(name for name, model_id in indexed.items() if not has_text_tower(model_id))
    for name, model_id in sorted(indexed.items()):
        if name in mute:
            continue  # the registry says it has no text tower: not built for nothing
        try:
            models[name] = build(model_id)
        except ModelUnavailableError as exc:  # its weights are gone: the others may still answer
            failed.append(f"{name} not used: {one_line(exc, 200)}")
    answering = {name: m for name, m in models.items() if answers_text(m)}
    mute = sorted({*mute, *(set(models) - set(answering))})
    if not answering:
        why = [f"{', '.join(mute)} {'has' if len(mute) == 1 else 'have'} no text tower"] if mute else []
        raise NoTextSignal(f"no signal here can search by text: {'; '.join(why + failed) or 'nothing is indexed'}; "
                           "index captions (--captions DIR) or a CLIP model (--indexer clip)")
    mute_notice = [f"{', '.join(mute)} cannot compare text with clips (no text tower): not used"] if mute else []
    return answering, failed + mute_notice


def wanted_signals(indexed: dict[str, str], weights: dict[str, float] | None) -> dict[str, str]:
    """The indexed signals to ask: every one, or only those ``weights`` names (by name or model id), so that no
    other model is loaded; a name the index lacks is an error."""
    if not weights:
        return indexed
    by_id = {model_id: name for name, model_id in indexed.items()}
    stray = sorted(w for w in weights if w not in indexed and w not in by_id)
    if stray:
        raise SignalError(f"--signal {stray[0]}: that indexer is not in this index "
                          f"(indexed: {', '.join(sorted(indexed)) or 'none'})")
    names = {by_id.get(w, w) for w in weights}
    return {name: model_id for name, model_id in indexed.items() if name in names}


def signal_concepts(names: list[str], model_ids: dict[str, str], weights: dict[str, float] | None) -> list[Concept]:
    """One concept per answering signal, keyed by its indexer name, equally weighted; with ``weights``
    (indexer name or model id -> weight), only the signals named, as weighted (normalised to sum to 1)."""
    known = {**{model_ids[n]: n for n in names}, **{n: n for n in names}}
    stray = sorted(w for w in weights or {} if w not in known)
    if stray:
        raise SignalError(f"--signal {stray[0]}: not a signal that answers text here (answering: {', '.join(names)})")
    given = {known[w]: v for w, v in (weights or {}).items()}
    chosen = [n for n in names if n in given] if given else names
    return [Concept(n, n, w) for n, w in zip(chosen, normalise([given.get(n, 1.0) for n in chosen]), strict=False)]


@dataclass(frozen=True)
class TextQuery:
    text: str
    k: int
    weights: dict[str, float] | None = None
    recall_k: int | None = None
    concept: str | None = None  # search this concept's descriptions only (a concept key)
    where: tuple[str, ...] = ()  # FIELD OP VALUE conditions (retrieval.store.where): only the units they keep
    mode: str | None = None  # vector, keyword or hybrid; None: hybrid when the index holds descriptions


def search(query: TextQuery, catalog: Catalog, build: Callable[[str], TextEncoder],
           vector_index: Callable[[str], RecallIndex],
           keywords: Callable[[], KeywordIndex] | None = None) -> TextResult:
    """Rank the catalog's units for ``query.text`` with every answering signal, or with one concept's
    description signal (see the module's notes); with ``keywords`` (the keyword index, asked for when needed),
    in the query's mode (retrieval/search/hybrid.py)."""
    text = check_text(query.text)
    mode = hybrid.chosen_mode(query.mode, query.concept, catalog) if keywords else hybrid.VECTOR
    allowed = filters.allowed_units(catalog, query.where)  # before ranking: a filter loses no match
    if mode == hybrid.KEYWORD:
        return keyword_search(text, query.k, catalog, keywords(), allowed, query.where)
    recall_k = query.recall_k or max(100, 10 * query.k)
    found = keywords().search(text, recall_k, allowed) if mode == hybrid.HYBRID else None
    indexed = {r.name: r.indexer for r in catalog.indexers()}
    if query.concept is not None:
        concepts, signal_of, models, notices = _description_signal(query, catalog, indexed, build)
    else:
        try:
            answering, notices = text_signals(wanted_signals(indexed, query.weights), build)
        except NoTextSignal:
            if query.mode is not None or found is None or query.weights:
                raise  # a mode or a signal asked for by name that cannot answer is the user's to hear of
            # words on screen or said, with no model that compares text with clips: the keyword index answers
            result = keyword_search(text, query.k, catalog, keywords(), allowed, query.where)
            result.notices.append("no indexed signal compares text with clips: searched by keyword only")
            return result
        concepts = signal_concepts(sorted(answering), indexed, query.weights)
        signal_of = {c.key: indexed[c.key] for c in concepts}
        models = {indexed[name]: model for name, model in answering.items()}
    vectors = {m: models[m].embed_texts([text])[0] for m in signal_of.values()}
    indices = {m: vector_index(m) for m in vectors}
    found_by = ranking.recall(vectors, indices, recall_k, allowed=allowed)
    for h in found or ():
        found_by.setdefault(h.unit_id, []).append(hybrid.KEYWORD_SIGNAL)
    candidates = sorted(found_by)
    units = catalog.units(candidates)
    exact = ranking.stored_vectors(catalog, vectors, candidates)
    hits = ranking.rank(ranking.evidence(candidates, vectors, exact, signal_of), units, concepts,
                        keep=lambda _: True, recalled_by=found_by)
    root = catalog.setting("root")
    ordered = ranking.one_per_copy(hits if found is None else hybrid.fused(hits, found))  # hybrid: by its total
    final = ranking.ranked(ordered[:query.k]) if found is None else _numbered(ordered[:query.k])
    return TextResult(text, concepts, signal_of, final, notices, root=root, mode=mode,
                      empty_reason=None if hits else _why_empty(candidates, signal_of, query.where), text=text,
                      spread=Spread.of(h.total for h in ordered),
                      ranges=concept_ranges([h.scores for h in hits], [c.key for c in concepts]),
                      calibration=_calibration(catalog, final, concepts, vectors, notices))


def keyword_search(text: str, k: int, catalog: Catalog, index: KeywordIndex, allowed: np.ndarray | None = None,
                   where: Sequence[str] = ()) -> TextResult:
    """The ``k`` units whose stored text scores highest for ``text`` by BM25 alone (of the ``allowed`` units, those
    the ``where`` filters keep, when given): no model is built."""
    found = index.search(text, k, allowed)
    hits = hybrid.keyword_hits(found, catalog.units([h.unit_id for h in found]))
    concepts, signals = hybrid.keyword_concepts()
    why = None if hits else "no searchable unit's text holds a word of this text (captions, descriptions, paths)"
    if not hits and allowed is not None and not len(allowed):
        why = filters.none_kept(where)
    return TextResult(text, concepts, signals, hits, [], root=catalog.setting("root"), empty_reason=why, text=text,
                      spread=Spread.of(h.total for h in hits), mode=hybrid.KEYWORD)


def _numbered(hits: list) -> list:
    return [replace(hit, rank=i) for i, hit in enumerate(hits, 1)]


def _calibration(catalog: Catalog, hits: list, concepts: list[Concept], vectors: dict[str, np.ndarray],
                 notices: list[str]) -> calibration.Calibration | None:
    """The hits read against each signal's background: a sentence against descriptions, against the unit-pair
    background of that description signal (sentence against sentence, one text model); a sentence against video
    vectors, against its own similarities to random units (search/calibration.py says why)."""
    if not hits:
        return None
    sentences = {r.indexer for r in catalog.indexers() if r.kind == "text"} | \
        {r.signal for r in catalog.description_signals()}
    same_space = [m for m in vectors if m in sentences]
    backgrounds = catalog.backgrounds()
    lacking = calibration.missing(same_space, backgrounds)
    cuts, references = calibration.stored_cuts([m for m in same_space if m not in lacking], backgrounds)
    for model_id in set(vectors) - set(same_space):
        own = sentence_cuts(catalog, model_id, vectors[model_id])
        if own is None:
            lacking.append(model_id)
        else:
            cuts[model_id], references[model_id] = own
    if lacking:
        notices.append(calibration.no_background(sorted(lacking)))
        return None
    return calibration.calibrate(hits, concepts, cuts, references, most_different=False)


def sentence_cuts(catalog: Catalog, model_id: str, vector: np.ndarray) -> tuple[calibration.Cuts, str] | None:
    """Cuts from the sentence's similarity to a seeded random sample of ``model_id``'s units (at most
    ``SENTENCE_SAMPLE``), and what they were drawn from; None with too few units."""
    ids = signal_vectors.ids_of(catalog, model_id)
    if len(ids) > calibration.SENTENCE_SAMPLE:
        ids = np.sort(np.random.default_rng(0).choice(ids, calibration.SENTENCE_SAMPLE, replace=False))
    stored = signal_vectors.vectors_of(catalog, model_id, ids.tolist())
    if not stored:
        return None
    similarities = unit_similarity(np.stack(list(stored.values())) @ np.ravel(vector))
    cuts = calibration.Cuts.of_sample(similarities)
    return None if cuts is None else (cuts, f"this sentence against {len(stored)} random units")


def run_search(query: TextQuery, index_dir: Path, models: ModelCache) -> TextResult:
    """``query`` answered from the index in ``index_dir``, with the text towers of the models the index used."""
    from retrieval.store.keyword import sync as keyword_sync

    catalog, notices = open_catalog(index_dir)
    with catalog:
        notices += unavailable_notice(catalog) + filters.notices(catalog, query.where)
        protocol = protocol_of(catalog)
        result = search(query, catalog, lambda spec: models.text_tower(spec, protocol, notices),
                        lambda model_id: vector_index(catalog, index_dir, model_id),
                        lambda: keyword_sync.current(catalog, index_dir, notices))
        result = replace(result, hits=with_lines(result.hits, catalog, query.text))
    return replace(result, notices=[*notices, *result.notices], root=result.root or str(index_dir.parent.resolve()))


def _description_signal(query: TextQuery, catalog: Catalog, indexed: dict[str, str],
                        build: Callable[[str], TextEncoder]) -> tuple[list[Concept], dict[str, str], dict, list[str]]:
    """One concept's description signal, and the text indexer that embeds the sentence into its space."""
    if query.weights:
        raise SignalError("--signal and --concept do not go together: a concept's descriptions are one signal")
    described = described_concepts(catalog.description_signals(), indexed)
    signal, name, embedder = described.get(query.concept), f"text#{query.concept}", indexed.get("text", "")
    conditioned = conditioned_concepts(catalog.description_signals(), indexed)
    if signal is None and query.concept in conditioned:
        # no descriptions of it: the units' vectors under the concept's instruction, the sentence under the model's
        # query instruction (``embed_texts``' default)
        signal = conditioned[query.concept]
        name, embedder = short_name(signal), signal.rpartition("#")[0]
    if signal is None:
        raise NoTextSignal(_not_described(query.concept, sorted({*described, *conditioned})))
    try:
        model = build(embedder)
    except ModelUnavailableError as exc:
        raise NoTextSignal(f"{name} cannot be searched: {one_line(exc, 200)}") from None
    return [Concept(name, name, 1.0)], {name: signal}, {signal: model}, []


def _not_described(concept: str, described: list[str]) -> str:
    """Why a concept's descriptions cannot be searched: a likely typo of a described one (said as a query says
    it), else how to describe it."""
    match, have = closest(concept, described), ", ".join(described) or "none"
    if match is not None:
        return f"unknown concept {concept!r}; did you mean {match}? (described concepts: {have})"
    return (f"this index holds no descriptions of {concept} (described concepts: {have}); index with --captioner, "
            f"or run `convis describe --concept \"{concept}\"`")


def _why_empty(candidates: list[int], signal_of: dict[str, str], where: tuple[str, ...] = ()) -> str:
    names = ", ".join(short_name(m) for m in signal_of.values())
    if not candidates and where:
        return filters.none_kept(where)
    if not candidates:
        return f"the index holds no vectors of {names} to search"
    return f"no recalled unit has a vector of every signal used ({names}); weight one of them alone with --signal"
