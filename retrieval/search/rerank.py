"""LMM reranking of recalled candidates: a frame cache, a persistent score cache, the scorer, the reranked hits.

Each clip is decoded once per command (``FrameCache``); every directional score is
stored in a DuckDB file of its own (``ScoreCache``), keyed by the reranker's identity
(model, revision, prompt version, frame count), the concept, the scoring mode and
both clips' content hashes and time spans, so a repeated query makes no model call.
The score cache is a separate file from the catalog so that querying never needs the
catalog's write lock.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import duckdb

from rerankers.base import PairScore, average_scores, check_mode
from retrieval.core.concepts import Concept
from retrieval.core.sampling import FrameSpec
from retrieval.media.frames import Frames
from retrieval.media.video_decoder import VideoDecoder
from retrieval.search.results import Hit

SCORES_NAME = "scores.duckdb"


@dataclass(frozen=True)
class ClipRef:
    """A clip to compare: a file (by path and content hash) and a time span (end None = to the end)."""

    path: str
    content_hash: str
    start: float = 0.0
    end: float | None = None

    @property
    def key(self) -> str:
        end = "end" if self.end is None else f"{self.end:.3f}"
        return f"{self.content_hash}@{self.start:.3f}-{end}"


class FrameCache:
    """Decode each (clip, frame spec) once per command."""

    def __init__(self, decoder: VideoDecoder | None = None):
        self._decoder = decoder
        self._frames: dict[tuple[str, FrameSpec], Frames] = {}
        self.decodes = 0

    @property
    def decoder(self) -> VideoDecoder:
        """Made at the first decode: making one imports the decoders (PyAV, decord), which a command that
        decodes nothing (a query whose anchor is indexed) never needs."""
        if self._decoder is None:
            self._decoder = VideoDecoder()
        return self._decoder

    def get(self, clip: ClipRef, spec: FrameSpec | int) -> Frames:
        key = (f"{clip.path}|{clip.key}", spec)
        if key not in self._frames:
            self._frames[key] = self.decoder.sample_span(clip.path, spec, clip.start, clip.end)
            self.decodes += 1
        return self._frames[key]


def seen(frames: Frames) -> dict:
    """The frames a model was shown: frame numbers in the file and their timestamps (s)."""
    return {"indices": [int(i) for i in frames.indices],
            "timestamps": [round(float(t), 3) for t in frames.timestamps]}


class ScoreCache:
    SCHEMA = """CREATE TABLE IF NOT EXISTS scores (
        tag VARCHAR, concept VARCHAR, mode VARCHAR, a VARCHAR, b VARCHAR,
        score DOUBLE, raw VARCHAR, probs DOUBLE[], created TIMESTAMP DEFAULT current_timestamp,
        evidence VARCHAR, PRIMARY KEY (tag, concept, mode, a, b))"""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = duckdb.connect(str(self.path))
        self.db.execute(self.SCHEMA)
        # caches written before scores kept their evidence gain the column, empty for old rows
        self.db.execute("ALTER TABLE scores ADD COLUMN IF NOT EXISTS evidence VARCHAR")

    def close(self) -> None:
        self.db.close()

    def get(self, tag: str, concept: str, mode: str, a: str, b: str) -> PairScore | None:
        row = self.db.execute(
            "SELECT score, raw, probs, evidence FROM scores WHERE tag=? AND concept=? AND mode=? AND a=? AND b=?",
            [tag, concept, mode, a, b],
        ).fetchone()
        if row is None:
            return None
        probs = tuple(row[2]) if row[2] is not None else None
        return PairScore(row[0], mode, row[1] or "", probs, json.loads(row[3]) if row[3] else None)

    def put(self, tag: str, concept: str, mode: str, a: str, b: str, score: PairScore) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO scores (tag, concept, mode, a, b, score, raw, probs, evidence) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            [tag, concept, mode, a, b, score.score, score.raw, list(score.probs) if score.probs else None,
             json.dumps(score.evidence) if score.evidence else None],
        )


def default_score_cache(index_dir: Path | None) -> Path:
    """Beside the index when there is one, else in the user's cache folder."""
    if index_dir is not None:
        return index_dir / SCORES_NAME
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "convis" / SCORES_NAME


class PairScorer:
    """Scores (anchor, candidate) pairs per concept with a reranker: cache first, model for the rest."""

    def __init__(self, reranker, cache: ScoreCache | None, frames: FrameCache | None = None,
                 mode: str = "expected", symmetric: bool = False):
        check_mode(mode)
        self.reranker, self.cache, self.mode, self.symmetric = reranker, cache, mode, symmetric
        self.frames = frames or FrameCache()
        self.model_pairs = 0  # pairs sent to the model (cache misses), for reporting and tests

    def score(self, pairs: Sequence[tuple[ClipRef, ClipRef]], concept: Concept) -> list[PairScore]:
        forward = self._directional(list(pairs), concept)
        if not self.symmetric:
            return forward
        backward = self._directional([(b, a) for a, b in pairs], concept)
        return [average_scores(ab, ba) for ab, ba in zip(forward, backward)]

    def _directional(self, pairs: list[tuple[ClipRef, ClipRef]], concept: Concept) -> list[PairScore]:
        tag = self.reranker.cache_tag
        found = [self.cache.get(tag, concept.words, self.mode, a.key, b.key) if self.cache else None
                 for a, b in pairs]
        missing = [i for i, score in enumerate(found) if score is None]
        if missing:
            spec = self.reranker.frame_spec  # the family's frames, decoded at its size
            decoded = [(self.frames.get(pairs[i][0], spec), self.frames.get(pairs[i][1], spec)) for i in missing]
            scored = self.reranker.score_pairs([(a.pixels, b.pixels) for a, b in decoded], concept.words,
                                               self.mode, prepared=True)
            self.model_pairs += len(missing)
            for i, score, (a, b) in zip(missing, scored, decoded):
                found[i] = replace(score, evidence={**(score.evidence or {}), "a": seen(a), "b": seen(b)})
                if self.cache:
                    self.cache.put(tag, concept.words, self.mode, pairs[i][0].key, pairs[i][1].key, found[i])
        return found


def rerank(scorer: PairScorer, anchor: ClipRef, hits: Sequence[Hit], concepts: list[Concept], root: Path) -> list[Hit]:
    """``hits`` scored per concept by the reranker against ``anchor`` (hit paths are relative to ``root``)."""
    clips = [ClipRef(str(root / h.path), h.content_hash, h.start, h.end) for h in hits]
    answers = {c.key: scorer.score([(anchor, clip) for clip in clips], c) for c in concepts}
    return [hit.reranked({c.key: answers[c.key][i] for c in concepts}, concepts) for i, hit in enumerate(hits)]
