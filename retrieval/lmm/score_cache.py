"""The persistent score cache: every LMM answer worth keeping, in a DuckDB file of its own.

A row is keyed by the model's identity for the task (model, revision, prompt version, frames), what was asked
(a concept, or a digest of the question), the scoring mode and both clips' content hashes and time spans, so a
repeated question makes no model call. The score cache is a separate file from the catalog so that querying
never needs the catalog's write lock.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb

from rerankers.base import PairScore

SCORES_NAME = "scores.duckdb"


class ScoreCache:
    SCHEMA = """CREATE TABLE IF NOT EXISTS scores (
        tag VARCHAR, concept VARCHAR, mode VARCHAR, a VARCHAR, b VARCHAR,
        score DOUBLE, raw VARCHAR, probs DOUBLE[], created TIMESTAMP DEFAULT current_timestamp,
        evidence VARCHAR, PRIMARY KEY (tag, concept, mode, a, b))"""
    # the steps that bring a cache file of an earlier layout to SCHEMA, in order; each a no-op on a current one
    MIGRATIONS = ("ALTER TABLE scores ADD COLUMN IF NOT EXISTS evidence VARCHAR",)  # a score's evidence

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = duckdb.connect(str(self.path))
        self.db.execute(self.SCHEMA)
        for step in self.MIGRATIONS:
            self.db.execute(step)

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
