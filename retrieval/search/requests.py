"""What each engine verb is asked: one frozen value per verb, checked when it is made.

A request that exists is one the engine can run as given: the checks that need nothing but the request (a
concept list, a scoring mode, options that exclude each other) raise here, with the same errors and lines
every face shows, so the CLI, the server and Python callers refuse the same inputs the same way.  What
needs the index or the files (is the anchor indexed, is a signal available) is checked by the verb.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from rerankers.base import check_mode
from rerankers.prompts.diff import DiffInputError, check_action
from retrieval.core.concepts import CONVIS_CONCEPTS, Concept, parse_concept, parse_concepts
from retrieval.core.defaults import DEFAULT_DIFF_MODEL, DEFAULT_K, MAX_SAMPLE_FPS
from retrieval.core.errors import ConvisError
from retrieval.core.ranges import in_range
from retrieval.core.signal_kinds import parse_signal
from retrieval.search import hybrid, signals
from retrieval.search import request_fields as spec
from retrieval.search.compose import Change
from retrieval.search.text_query import TextQuery, check_text
from retrieval.store.where import parse as parse_where

Span = tuple[float | None, float | None]

LEVELS = spec.LEVEL.choices  # what `dupes` groups
KEEP = spec.KEEP.choices  # which copy of a group `dupes` keeps


class DupesError(ConvisError, ValueError):
    """A ``dupes`` the index cannot answer: an unknown level, keep rule or indexer, a threshold out of range, or
    ``--auto`` on a signal with no background."""

    exit_code, http_status = 2, 400


def as_concepts(concepts: Sequence[str] | Sequence[Concept]) -> tuple[Concept, ...]:
    """Concepts as given (already parsed: their weights stay), or parsed from strings (ConceptError when none)."""
    if concepts and all(isinstance(c, Concept) for c in concepts):
        return tuple(concepts)
    return tuple(parse_concepts(list(concepts)))


def _vqa_models(pair_signals: dict[str, str]) -> list[str]:
    """The LMMs that VQAScore signals (``vqascore[:MODEL]``) ask: each one's model, else VQAScore's default."""
    kinds = (parse_signal(spec) for spec in pair_signals.values())
    return [kind.model for kind in kinds if kind is not None]


def _check_k(k: int) -> None:
    """How many results: a whole number within the bounds of ``request_fields.K``."""
    if isinstance(k, bool) or not isinstance(k, int) or not in_range(k, spec.K.ge, spec.K.le):
        raise signals.SignalError(f"-k must be a whole number from {spec.K.ge:g} to {spec.K.le:g}, not {k!r}")


def check_where(where: Sequence[str] | str) -> tuple[str, ...]:
    """The filters as a tuple, each one checked to read as FIELD OP VALUE (whether the field exists is the index's
    to say)."""
    where = (where,) if isinstance(where, str) else tuple(where or ())
    for text in where:
        parse_where(text)
    return where


def _set(request, name: str, value) -> None:
    object.__setattr__(request, name, value)  # a frozen value normalises its own fields once


@dataclass(frozen=True)
class QueryRequest:
    """Clips like ``anchor`` under ``concepts`` (see ``Engine.query``): recall with the indexed signals; with
    ``reranker`` (a spec or a Reranker), the top ``rerank_top`` rescored by the LMM; with ``fusion`` (a
    FusionModel, a weights file or "default"), each concept scored by the learned combination of every signal;
    with ``change`` (a ``compose.Change`` or its text), clips like the anchor but changed as it says (no
    concepts: the five ConViS ones); with ``most_different``, the clips least like the anchor first."""

    anchor: str | Path
    concepts: Sequence[str] | Sequence[Concept] = ()
    k: int = field(default=DEFAULT_K, metadata=spec.K.metadata())
    start: float | None = None
    end: float | None = None
    signal_overrides: dict[str, str] | None = None
    recall_k: int | None = None
    reranker: object = None
    rerank_top: int = field(default=20, metadata=spec.RERANK_TOP.metadata())
    mode: str = field(default="expected", metadata=spec.RERANK_MODE.metadata())
    symmetric: bool = field(default=False, metadata=spec.SYMMETRIC.metadata())
    fusion: object = None
    change: Change | str | None = None
    most_different: bool = field(default=False, metadata=spec.MOST_DIFFERENT.metadata())
    # FIELD OP VALUE filters (retrieval.store.where), ANDed: only the units they keep
    where: Sequence[str] = field(default=(), metadata=spec.WHERE.metadata())
    named: bool = field(default=False, init=False)  # the concepts were given, not the change's default five

    def __post_init__(self) -> None:
        _set(self, "where", check_where(self.where))
        _set(self, "named", bool(self.concepts))
        if self.most_different and self.change is not None:
            raise signals.SignalError("--most-different ranks clips unlike the anchor and --change clips like it "
                                      "but changed: use one of them")
        if isinstance(self.change, str):
            _set(self, "change", Change(self.change))
        default = tuple(CONVIS_CONCEPTS) if self.change is not None else ()  # a change alone: the ConViS five
        _set(self, "concepts", as_concepts(self.concepts or default))
        check_mode(self.mode)
        pair = self.pair_overrides
        if self.change is not None and (self.fusion is not None or pair):
            raise signals.SignalError("--change goes with recall signals or a --reranker, not yet with --fusion or "
                                      "a pair signal (vqascore)")
        if pair and self.reranker is not None:
            raise signals.SignalError(f"--signal {next(iter(pair))}=vqascore and --reranker both rescore "
                                      "the shortlist, and the reranker would overwrite VQAScore: use one of them")
        signals.check_concepts(pair, list(self.concepts))
        _check_k(self.k)

    @property
    def vector_overrides(self) -> dict[str, str]:
        """The signals asked for by concept that recall (every override but a pair signal's)."""
        return signals.split_pair_signals(self.signal_overrides or {})[0]

    @property
    def pair_overrides(self) -> dict[str, str]:
        """Concept -> the pair signal (VQAScore) that rescores its shortlist."""
        return signals.split_pair_signals(self.signal_overrides or {})[1]

    @property
    def lmms(self) -> tuple:
        """The video LMMs this query may ask (specs or Rerankers): its reranker, its VQAScore signals' models."""
        return tuple(m for m in (self.reranker, *_vqa_models(self.pair_overrides)) if m is not None)

    @property
    def recall(self) -> int:
        """How many candidates each signal's index proposes."""
        return self.recall_k or max(100, 10 * self.k)


@dataclass(frozen=True)
class SearchRequest:
    """Indexed units ranked by how well they match ``text``: with every indexed signal that has a text tower
    (``weights``: indexer name -> weight, else equal), or with ``concept``'s descriptions only (a ConViS
    concept or free text, as ``describe`` named it; with ``free_text`` False, a name close to a ConViS concept is
    refused with the name it is close to, as in a query)."""

    text: str = field(metadata=spec.TEXT.metadata())
    k: int = field(default=DEFAULT_K, metadata=spec.K.metadata())
    weights: dict[str, float] | None = None
    recall_k: int | None = None
    concept: str | None = field(default=None, metadata=spec.CONCEPT.metadata())
    # False: a concept close to a ConViS one is refused as a likely typo, as a query's is
    free_text: bool = field(default=True, metadata=spec.FREE_TEXT.metadata())
    where: Sequence[str] = field(default=(), metadata=spec.WHERE.metadata())
    mode: str | None = field(default=None, metadata=spec.SEARCH_MODE.metadata())  # None: chosen by the index

    def __post_init__(self) -> None:
        _set(self, "where", check_where(self.where))
        _set(self, "text", check_text(self.text))
        _check_k(self.k)
        hybrid.check_mode(self.mode)
        if self.mode == hybrid.KEYWORD and self.weights:
            raise signals.SignalError("--signal weighs the vector signals, and --mode keyword uses none of them")
        if self.concept is not None:
            parse_concept(self.concept, free_text=self.free_text)

    @property
    def concept_key(self) -> str | None:
        """The concept whose descriptions answer, by its key; None: every signal with a text tower."""
        return None if self.concept is None else parse_concept(self.concept, free_text=True).key

    def text_query(self) -> TextQuery:
        return TextQuery(self.text, self.k, self.weights, self.recall_k, self.concept_key, self.where, self.mode)


@dataclass(frozen=True)
class DupesRequest:
    """Near-duplicate ``level`` items ("file" or "unit") of the index, grouped: pairs at least ``threshold``
    alike (None: read from the index's background, ``--auto``) by ``indexer``'s vectors (None: the fingerprint's
    when indexed), among the units ``where`` keeps; in each group the one to keep by ``keep``."""

    level: str = field(default="file", metadata=spec.LEVEL.metadata())
    threshold: float | None = field(default=None, metadata=spec.THRESHOLD.metadata())
    indexer: str | None = field(default=None, metadata=spec.DUPES_INDEXER.metadata())
    where: Sequence[str] = field(default=(), metadata=spec.WHERE.metadata())
    keep: str = field(default="longest", metadata=spec.KEEP.metadata())

    def __post_init__(self) -> None:
        _set(self, "where", check_where(self.where))
        if self.level not in LEVELS:
            raise DupesError(f"--level is one of {', '.join(LEVELS)}, not {self.level!r}")
        if self.keep not in KEEP:
            raise DupesError(f"--keep is one of {', '.join(KEEP)}, not {self.keep!r}")
        threshold = self.threshold
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not in_range(threshold, spec.THRESHOLD.gt, spec.THRESHOLD.le,
                                                      low_open=True)):
            raise DupesError(f"--threshold is a similarity above 0.5 and at most 1 (as query scores read), not "
                             f"{threshold!r}")


@dataclass(frozen=True)
class CompareRequest:
    """Per-concept similarity of clips ``a`` and ``b``: the LMM's answers with a ``reranker`` (whole files), else
    the index's signals, exactly as a query for ``a`` (over ``a_span``) scores ``b`` (``b_start``: its unit)."""

    a: str | Path
    b: str | Path
    concepts: Sequence[str] | Sequence[Concept]
    reranker: object = None
    mode: str = field(default="expected", metadata=spec.RERANK_MODE.metadata())
    symmetric: bool = field(default=False, metadata=spec.SYMMETRIC.metadata())
    signal_overrides: dict[str, str] | None = None
    a_span: Span = (None, None)
    b_start: float | None = None
    # FIELD OP VALUE filters: b is ranked among the units they keep (signals only)
    where: Sequence[str] = field(default=(), metadata=spec.WHERE.metadata())

    def __post_init__(self) -> None:
        _set(self, "concepts", as_concepts(self.concepts))
        check_mode(self.mode)
        _set(self, "where", check_where(self.where))
        if self.where and self.reranker is not None:
            raise signals.SignalError("--where narrows the indexed units b is ranked among; with a reranker only "
                                      "the pair is asked, so drop one of them")

    @property
    def lmms(self) -> tuple:
        """The video LMMs this comparison may ask: its reranker, else its VQAScore signals' models."""
        if self.reranker is not None:
            return (self.reranker,)
        return tuple(_vqa_models(signals.split_pair_signals(self.signal_overrides or {})[1]))


@dataclass(frozen=True)
class DiffRequest:
    """What differs between clips performing ``action``: for the pair ``a``, ``b``, or each of ``candidates``
    against ``a`` (ranked, most different first).  Closed mode: ``statements`` (key -> text: which clip each is
    more true of); open mode: ``most`` (the LMM proposes up to that many).  ``fps``: frames at that fixed rate
    instead of the family's rule.  ``a_frames``/``b_frames``: a range of frame numbers (first, stop), stop
    excluded, in place of that clip's time span, used as given (a dataset's frame ranges stay exact)."""

    a: str | Path
    b: str | Path | None = None
    candidates: Sequence[str | Path] = ()
    action: str = ""
    statements: dict[str, str] | None = None
    most: int | None = None
    reranker: object = DEFAULT_DIFF_MODEL
    mode: str = "expected"
    symmetric: bool = False
    fps: float | None = None
    a_span: tuple[float, float | None] = (0.0, None)
    b_span: tuple[float, float | None] = (0.0, None)
    a_frames: tuple[int, int] | None = None
    b_frames: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        _check_frames(self.a_frames, self.a_span, "a")
        _check_frames(self.b_frames, self.b_span, "b")
        if (self.b is None) == (not self.candidates):
            raise DiffInputError("compare two clips, or rank candidates against one: give b or candidates, "
                                 "not both and not neither")
        _set(self, "candidates", tuple(self.candidates))
        # before a model is built: a bad action is the user's line, not a load error
        _set(self, "action", check_action(self.action))
        check_mode(self.mode)
        if self.fps is not None and not in_range(self.fps, 0, MAX_SAMPLE_FPS, low_open=True):
            raise DiffInputError(f"--fps must be a positive number of frames a second, at most {MAX_SAMPLE_FPS:g}, "
                                 f"got {self.fps}")

    @property
    def lmms(self) -> tuple:
        """The video LMM this request asks."""
        return (self.reranker,)

    @property
    def ranks(self) -> bool:
        """Candidates ranked by difference (else one pair)."""
        return self.b is None


def _check_frames(frames: tuple[int, int] | None, span: tuple[float, float | None], which: str) -> None:
    """A frame range is two frame numbers, first below stop, and replaces the time span (not both)."""
    if frames is None:
        return
    numbers = isinstance(frames, (tuple, list)) and all(isinstance(f, int) and not isinstance(f, bool)
                                                        for f in frames)
    ok = numbers and len(frames) == 2 and 0 <= frames[0] < frames[1]
    if not ok:
        raise DiffInputError(f"clip {which}'s frame range must be [first, stop) frame numbers with first < stop, "
                             f"got {frames!r}")
    if (span[0] or 0.0) != 0.0 or span[1] is not None:
        raise DiffInputError(f"clip {which} has both a time span and a frame range: give one")
