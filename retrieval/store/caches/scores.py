"""The persistent score cache: every LMM answer worth keeping, in a DuckDB file of its own.

A row is keyed by the model's identity for the task (model, revision, prompt version, frames, and whether pairs of
one anchor shared its vision output and prefix: ``rerankers.sharing.sharing_key``), what was asked
(a concept, or a digest of the question), the scoring mode and both clips' content hashes and time spans, so a
repeated question makes no model call. The score cache is a separate file from the catalog so that querying
never needs the catalog's write lock.  It is a side cache (``retrieval.store.caches.base``) held open while its
engine lives: a request asks it once a pair and concept, too often to open the file each time.  The scorers of
``retrieval.lmm`` are handed it by their caller (they ask only ``get`` and ``put``: ``lmm.cached_scores``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rerankers.base import PairScore
from retrieval.store.caches.base import SideCache

SCORES_NAME = "scores.duckdb"


class ScoreCache(SideCache):
    LABEL, LOST = "score cache", "not caching"
    TABLE = "scores"
    SCHEMA = """CREATE TABLE IF NOT EXISTS scores (
        tag VARCHAR, concept VARCHAR, mode VARCHAR, a VARCHAR, b VARCHAR,
        score DOUBLE, raw VARCHAR, probs DOUBLE[], created TIMESTAMP DEFAULT current_timestamp,
        evidence VARCHAR, PRIMARY KEY (tag, concept, mode, a, b))"""

    MIGRATIONS = ("ALTER TABLE scores ADD COLUMN IF NOT EXISTS evidence VARCHAR",)  # a score's evidence: kept since
    KEY, VALUE = ("tag", "concept", "mode", "a", "b"), ("score", "raw", "probs", "evidence")
    COLUMNS = (*KEY, *VALUE)

    def __init__(self, path: str | Path):
        super().__init__(path, held=True)

    def get(self, tag: str, concept: str, mode: str, a: str, b: str) -> PairScore | None:
        row = self.get_many([(tag, concept, mode, a, b)], None).get((tag, concept, mode, a, b))
        if row is None:
            return None
        probs = tuple(row[2]) if row[2] is not None else None
        return PairScore(row[0], mode, row[1] or "", probs, json.loads(row[3]) if row[3] else None)

    def put(self, tag: str, concept: str, mode: str, a: str, b: str, score: PairScore) -> None:
        self.put_many([(tag, concept, mode, a, b, score.score, score.raw, list(score.probs) if score.probs else None,
                        json.dumps(score.evidence) if score.evidence else None)], None)


def default_score_cache(index_dir: Path | None) -> Path:
    """Beside the index when there is one, else in the user's cache folder."""
    if index_dir is not None:
        return index_dir / SCORES_NAME
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "convis" / SCORES_NAME
