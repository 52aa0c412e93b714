"""An index written by the previous release (``tests/data/legacy_index_v1``, catalog schema "1") answers the queries
it answered then: read-only, from an upgraded copy in memory (a query never needs write access); and the next
writer migrates its catalog once, after which it answers them the same.

Only what depends on where the copy lies is left out of the comparison: the index's root and the anchor, which a
query prints whole when the index's root moved. What this release says differently of the same answer is read
across: the confidence words (one scale: high, medium, low became strong, likely, weak), notices it adds, the
echoed query, and BM25's values (the keyword index now stems its words; the ranks are compared)."""

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.connection import SCHEMA_VERSION
from retrieval.store.catalog.migrations import migrate
from retrieval.store.index_dir import OLDER_RELEASE
from tests.paths import DATA
from tests.permissions import convis_as_user, needs_permissions, read_only, writable

LEGACY = DATA / "legacy_index_v1"
# expected/<name>.json: what `convis ARGS` printed in the videos folder (LEGACY / "README.md")
COMMANDS = {
    "q_location": ["query", "--anchor", "bikes.mp4", "-c", "location", "--json"],
    "q_two": ["query", "--anchor", "campus_01.mp4", "-c", "main-action", "-c", "location", "--json"],
    "search": ["search", "a man talking on a phone", "--json"],
    "search_kw": ["search", "rider waves", "--mode", "keyword", "--json"],
    "q_where": ["query", "--anchor", "bikes.mp4", "-c", "location", "--where", "rating >= 2", "--json"],
    "ls": ["ls", "--json"],
}
WHERE_IT_LIES = ("root", "anchor", "query")
SAID_BEFORE = {"high": "strong", "medium": "likely", "low": "weak"}  # the previous release's confidence words
SLOW = {"search"}  # embeds its text with the index's text model, exported once for the user cache (some 40 s)


@pytest.fixture
def videos(tmp_path):
    """A copy of the videos with the legacy index as their ``.convis``, each file dated as the index recorded it
    (a copy is dated now: a run would take it for a changed file)."""
    folder = tmp_path / "videos"
    shutil.copytree(LEGACY / "videos", folder)
    shutil.copytree(LEGACY / "index", folder / ".convis")
    for listed in expected("ls")["files"]:
        os.utime(folder / listed["path"], (listed["mtime"], listed["mtime"]))
    yield folder
    writable(folder)


def expected(name: str) -> dict:
    return json.loads((LEGACY / "expected" / f"{name}.json").read_text())


def answer(printed: str) -> dict:
    found = json.loads(printed)
    for field in WHERE_IT_LIES:
        found.pop(field, None)
    found.pop("notices", None)  # compared apart: this release may add some
    for hit in found.get("hits", ()):
        hit["confidence"] = SAID_BEFORE.get(hit.get("confidence"), hit.get("confidence"))
        if isinstance(hit.get("cuts"), dict):
            hit["cuts"] = {SAID_BEFORE.get(k, k): v for k, v in hit["cuts"].items()}
        if "bm25" in hit:
            hit["bm25"] = None
    if found.get("mode") == "hybrid":
        hybrid_read_across(found)
    if isinstance(found.get("calibration"), dict):
        rule = found["calibration"].get("rule", "")
        for old, new in SAID_BEFORE.items():
            rule = (rule.replace(f": {old} from", f": {new} from").replace(f", {old} from", f", {new} from")
                    .replace(f"else {old};", f"else {new};"))
        found["calibration"]["rule"] = rule
    return found


def hybrid_read_across(found: dict) -> None:
    """Hybrid search ranks by a new rule (the vector score lifted by keyword coverage, not reciprocal rank fusion):
    compared are its ranks on each side and the vector score, which the previous release printed as the total."""
    for key in ("spread", "lift", "rrf_k", "calibration"):
        found.pop(key, None)
    for hit in found["hits"]:
        vector = hit.pop("vector_score", None)
        hit["total"] = round(vector if vector is not None else hit["total"], 4)
        # the keyword index now stems its words (matched_terms), and the spread the z-score reads is of the totals
        for key in ("coverage", "rrf", "recall_total", "confidence", "cuts", "scores", "evidence", "z",
                    "matched_terms"):
            hit.pop(key, None)


def same_answer(printed: str, name: str) -> None:
    before = expected(name)
    assert answer(printed) == answer(json.dumps(before))
    now = [n for n in json.loads(printed).get("notices", ()) if n != OLDER_RELEASE]  # a reader's, before migration
    if before.get("mode") != "hybrid":  # hybrid's notices speak of its new rule and of one confidence scale
        assert set(before.get("notices", ())) <= set(now)


@needs_permissions
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in COMMANDS])
def test_a_read_only_copy_answers_as_the_previous_release_did(videos, name):
    before = {p: p.read_bytes() for p in (videos / ".convis").rglob("*") if p.is_file()}
    read_only(videos)
    ran = convis_as_user(*COMMANDS[name], cwd=videos)
    assert ran.returncode == 0, ran.stderr
    same_answer(ran.stdout, name)
    if "notices" in expected(name):
        assert OLDER_RELEASE in json.loads(ran.stdout)["notices"]  # the reader says what each read costs
    assert {p: p.read_bytes() for p in before} == before  # nothing was written


def test_the_next_writer_migrates_the_catalog_once_and_the_answers_stay(videos, monkeypatch):
    monkeypatch.chdir(videos)
    runner = CliRunner()
    ran = runner.invoke(app, ["index", str(videos), "--move-root"])  # the copy lies elsewhere than the index did
    assert ran.exit_code == 0, ran.output
    ran = runner.invoke(app, ["tag", "carphone_pristine.mp4", "--set", "rating=1"])
    assert ran.exit_code == 0, ran.output
    for name in ("catalog.duckdb", "snapshot.duckdb"):
        with Catalog(videos / ".convis" / name, read_only=True) as catalog:
            assert catalog.setting("schema_version") == SCHEMA_VERSION
    with Catalog(videos / ".convis" / "catalog.duckdb") as catalog:  # a second open has nothing to apply
        assert migrate(catalog.db, videos / ".convis") == []
    for name in ("q_where", "search_kw", "ls"):
        ran = runner.invoke(app, COMMANDS[name])
        assert ran.exit_code == 0, ran.output
        assert OLDER_RELEASE not in ran.stdout  # migrated: read as it is
        found, want = answer(ran.stdout), answer(json.dumps(expected(name)))
        if name == "ls":  # the tag set now
            assert found["files"][2].pop("fields") == {"rating": "1"}
            want["files"][2].pop("fields")
        assert found == want
