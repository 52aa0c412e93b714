"""The side caches (anchor vectors, LMM edits, LMM scores) share one base: each keeps what it is given under its key
and gives it back, another process reads what one kept, and a new version of a cache reads none of the old
entries."""

import subprocess
import sys

import duckdb
import numpy as np
import pytest

from rerankers.base import PairScore
from retrieval.store.caches.anchor import AnchorCache, AnchorKey
from retrieval.store.caches.base import VERSION_TABLE
from retrieval.store.caches.edits import EditCache, EditKey
from retrieval.store.caches.scores import ScoreCache
from tests.paths import ROOT

ANCHOR = AnchorKey("c0ffee", "2.0-4.0", "dinov2:facebook/dinov2-small", "fast", "auto", "")
EDIT = EditKey("c0ffee", "whole", "caption", "A man sits in a car.", "a meadow instead of a car", "qwen2-vl@1", "1")
PAIR = ("qwen2-vl|v1|8", "location", "expected", "c0ffee@0-4", "decade@0-4")
SCORE = PairScore(3.25, "expected", "4", (0.0, 0.25, 0.25, 0.25, 0.25), {"why": "both in a square"})


def test_each_cache_gives_back_what_it_kept(tmp_path):
    vector = np.arange(6, dtype=np.float16)
    AnchorCache(tmp_path / "anchors.duckdb").put(ANCHOR, vector, [])
    cached = AnchorCache(tmp_path / "anchors.duckdb").get(ANCHOR, [])  # a new cache: no memory, the file
    assert cached.dtype == np.float16 and cached.tobytes() == vector.tobytes()

    edits = EditCache(tmp_path / "edits.duckdb")
    assert edits.get(EDIT, []) is None
    edits.put(EDIT, "A man sits in a meadow.", [])
    assert edits.get(EDIT, []) == "A man sits in a meadow."

    scores = ScoreCache(tmp_path / "scores.duckdb")
    scores.put(*PAIR, SCORE)
    scores.put(*PAIR[:2], "open", *PAIR[3:], PairScore(None, "open", "a list"))
    assert scores.get(*PAIR) == SCORE
    assert scores.get(*PAIR[:2], "open", *PAIR[3:]) == PairScore(None, "open", "a list")
    assert scores.get(*PAIR[:4], "other") is None
    scores.close()


def test_many_keys_are_read_and_kept_at_once(tmp_path):
    edits = EditCache(tmp_path / "edits.duckdb")
    rows = [(f"k{i}", "c0ffee", "whole", "caption", "change", "model", "1", f"answer {i}") for i in range(3)]
    edits.put_many(rows, [])
    found = edits.get_many([("k0",), ("k2",), ("missing",)], [])
    assert found == {("k0",): ("answer 0",), ("k2",): ("answer 2",)}


READ_BACK = """
import sys
import numpy as np
from retrieval.store.caches.anchor import AnchorCache
from retrieval.store.caches.edits import EditCache
from retrieval.store.caches.scores import ScoreCache
from tests.retrieval.store.caches.test_base import ANCHOR, EDIT, PAIR

folder = sys.argv[1]
scores = ScoreCache(f"{folder}/scores.duckdb")
anchor = AnchorCache(f"{folder}/anchors.duckdb").get(ANCHOR, [])
print(anchor.tolist(), EditCache(f"{folder}/edits.duckdb").get(EDIT, []), scores.get(*PAIR).score)
"""


def test_another_process_reads_what_one_kept(tmp_path):
    AnchorCache(tmp_path / "anchors.duckdb").put(ANCHOR, np.array([1.5, 2.5], np.float32), [])
    EditCache(tmp_path / "edits.duckdb").put(EDIT, "edited", [])
    scores = ScoreCache(tmp_path / "scores.duckdb")
    scores.put(*PAIR, SCORE)
    scores.close()  # held open while its engine lives: DuckDB lets no other process in meanwhile
    done = subprocess.run([sys.executable, "-c", READ_BACK, str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[1.5,", "2.5]", "edited", "3.25"]


class NextEdits(EditCache):
    VERSION = "2"


class NextScores(ScoreCache):
    VERSION = "2"


def test_a_new_version_reads_none_of_the_old_entries(tmp_path):
    EditCache(tmp_path / "edits.duckdb").put(EDIT, "old", [])
    newer = NextEdits(tmp_path / "edits.duckdb")
    assert newer.get(EDIT, []) is None
    newer.put(EditKey(*["other"] * 7), "new", [])  # the first write of the new version empties the file
    with duckdb.connect(str(tmp_path / "edits.duckdb"), read_only=True) as db:
        assert db.execute("SELECT answer FROM edits").fetchall() == [("new",)]
        assert db.execute(f"SELECT version FROM {VERSION_TABLE}").fetchall() == [("2",)]
    assert EditCache(tmp_path / "edits.duckdb").get(EditKey(*["other"] * 7), []) is None  # nor the old the new

    old = ScoreCache(tmp_path / "scores.duckdb")
    old.put(*PAIR, SCORE)
    old.close()
    held = NextScores(tmp_path / "scores.duckdb")
    assert held.get(*PAIR) is None
    held.close()


def test_a_cache_written_before_files_held_their_version_is_read_as_it_was(tmp_path):
    with duckdb.connect(str(tmp_path / "edits.duckdb")) as db:
        db.execute(EditCache.SCHEMA)
        db.execute("INSERT INTO edits (key, answer) VALUES (?, ?)", [EDIT.digest, "kept"])
    with duckdb.connect(str(tmp_path / "scores.duckdb")) as db:  # before scores kept their evidence, too
        db.execute("CREATE TABLE scores (tag VARCHAR, concept VARCHAR, mode VARCHAR, a VARCHAR, b VARCHAR, "
                   "score DOUBLE, raw VARCHAR, probs DOUBLE[], created TIMESTAMP DEFAULT current_timestamp, "
                   "PRIMARY KEY (tag, concept, mode, a, b))")
        db.execute("INSERT INTO scores (tag, concept, mode, a, b, score, raw) VALUES (?,?,?,?,?,?,?)",
                   [*PAIR, 4.0, "5"])
    assert EditCache(tmp_path / "edits.duckdb").get(EDIT, []) == "kept"
    scores = ScoreCache(tmp_path / "scores.duckdb")
    assert scores.get(*PAIR) == PairScore(4.0, "expected", "5", None, None)
    scores.close()


def test_a_file_that_cannot_be_opened_costs_a_notice_once_or_is_raised_to_a_caller_without_notices(tmp_path):
    (tmp_path / "edits.duckdb").mkdir()  # not a database: as a read-only index's would be
    notices: list[str] = []
    edits = EditCache(tmp_path / "edits.duckdb")
    assert edits.get(EDIT, notices) is None and notices == []  # nothing kept yet: nothing to say
    edits.put(EDIT, "edited", notices)
    edits.put(EDIT, "edited", notices)
    (said,) = notices
    assert said.startswith(f"edit cache {tmp_path / 'edits.duckdb'} unavailable (")
    assert said.endswith("; the LMM's edits are not cached")
    with pytest.raises((duckdb.Error, OSError)):
        edits.put_many([(EDIT.digest, *["x"] * 7)], None)
