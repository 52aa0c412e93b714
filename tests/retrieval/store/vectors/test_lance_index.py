"""An index served from Lance (`convis index --store lance`) answers as the same index served from FAISS, and an
existing FAISS index moves to Lance by indexing it again with --store lance."""

import json

import pytest
from typer.testing import CliRunner

from retrieval.api import Engine, IndexSettings
from retrieval.cli.app import app
from retrieval.store.catalog import Catalog
from retrieval.store.vectors import lance_sync
from retrieval.store.vectors.lance_store import LanceVectors
from retrieval.store.vectors.signals import ids_of, index_signals
from tests.indexes import scratch_index

runner = CliRunner()
CUP = "a hand holding a cup"


def convis(*args):
    result = runner.invoke(app, [*map(str, args)])
    assert result.exit_code == 0, result.output
    return result


def answers(index_dir, example_videos, *where):
    """(query, search) --json answers' hits as (path, start, end, scores: total, each concept's, the vector's)."""
    filters = [f for w in where for f in ("--where", w)]
    queried = convis("query", "--anchor", example_videos / "cup.mp4", "-c", "main-objects", "--index-dir", index_dir,
                     "-k", "5", "--json", *filters)
    searched = convis("search", CUP, "--index-dir", index_dir, "-k", "5", "--json", *filters)
    return [[(h["path"], h["start"], h["end"], [h["total"], *h["scores"].values(), h.get("vector_score", 0)])
             for h in json.loads(r.stdout)["hits"]] for r in (queried, searched)]


def assert_same(got, expected):
    for mine, theirs in zip(got, expected, strict=True):
        assert [h[:3] for h in mine] == [h[:3] for h in theirs] and mine
        assert [s for h in mine for s in h[3]] == pytest.approx([s for h in theirs for s in h[3]], abs=1e-5)


def held(index_dir):
    """signal -> (unit ids its Lance table holds, unit ids the catalog searches), both sorted."""
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        where = lance_sync.location(catalog, index_dir)
        return {s: (sorted(LanceVectors(where, s).unit_ids().tolist()), ids_of(catalog, s).tolist())
                for s in index_signals(catalog)}


@pytest.fixture(scope="module")
def lance_index(tmp_path_factory, example_videos):
    """The example clips indexed as the demo index is, served from Lance tables beside the index."""
    index_dir = tmp_path_factory.mktemp("lance-demo") / ".convis"
    Engine(index_dir).index(example_videos, ["efficientnet-lite0"],
                            IndexSettings(captions=example_videos.parent / "captions", workers=1, store="lance"))
    return index_dir


def test_a_lance_index_answers_as_the_faiss_index(lance_index, demo_index, example_videos):
    assert_same(answers(lance_index, example_videos), answers(demo_index, example_videos))
    tables = held(lance_index)
    assert len(tables) >= 2 and all(lance == catalog and catalog for lance, catalog in tables.values())
    assert not list((lance_index / "faiss").glob("*.faiss"))  # no FAISS file is built for it


def test_a_where_filter_searches_the_lance_table_with_its_units(lance_index, demo_index, example_videos):
    where = "name in box.mp4,bikes.mp4,cup.mp4"
    got, expected = answers(lance_index, example_videos, where), answers(demo_index, example_videos, where)
    assert_same(got, expected)
    assert {h[0] for hits in got for h in hits} <= {"box.mp4", "bikes.mp4", "cup.mp4"}


def test_indexing_a_faiss_index_with_store_lance_moves_it(demo_index, example_videos, tmp_path):
    index_dir = scratch_index(demo_index, tmp_path)
    convis("index", index_dir.parent, "--index-dir", index_dir, "--store", "lance")
    tables = held(index_dir)
    assert all(lance == catalog and catalog for lance, catalog in tables.values())
    assert_same(answers(index_dir, example_videos), answers(demo_index, example_videos))
    convis("index", index_dir.parent, "--index-dir", index_dir)  # a later run keeps the store
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        assert catalog.setting(lance_sync.STORE) == "lance"
    assert held(index_dir) == tables  # nothing appended twice
    shown = runner.invoke(app, ["info", str(index_dir), "--json"])
    assert json.loads(shown.output)["store"] == "lance"
    lines = runner.invoke(app, ["info", str(index_dir)]).output.splitlines()
    assert "vectors served from Lance: lance" in lines and not any(" faiss " in line for line in lines)
    assert json.loads(runner.invoke(app, ["info", str(demo_index), "--json"]).output)["store"] == "faiss"


def test_a_wrong_store_fails_before_anything_is_indexed(tmp_path):
    result = runner.invoke(app, ["index", str(tmp_path), "--store", "qdrant"])
    assert result.exit_code == 2 and "--store 'qdrant'" in result.output


def test_the_export_of_a_lance_index_reads_its_vectors_from_the_tables(lance_index, demo_index, tmp_path):
    import pyarrow.parquet as pq

    def vectors(index_dir, out):
        convis("export", "--index-dir", index_dir, "--out", out)
        return {f.name: pq.read_table(f).select(["path", "segment", "vector"]).to_pylist()
                for f in sorted(out.glob("vectors.*.parquet"))}

    mine, theirs = vectors(lance_index, tmp_path / "lance"), vectors(demo_index, tmp_path / "faiss")
    assert mine.keys() == theirs.keys() and len(mine) >= 2
    for name, rows in mine.items():
        assert [r["path"] for r in rows] == [r["path"] for r in theirs[name]] and rows
        assert [r["vector"] for r in rows] == [r["vector"] for r in theirs[name]]


def test_a_removed_file_leaves_the_lance_tables_at_the_next_publish(lance_index, tmp_path):
    index_dir = scratch_index(lance_index, tmp_path)  # its tables (INDEX_DIR/lance) copied with it
    before = held(index_dir)
    Engine(index_dir).remove(["cup.mp4"])
    after = held(index_dir)
    assert all(lance == catalog for lance, catalog in after.values())
    assert all(len(after[s][0]) < len(before[s][0]) for s in before)
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:  # the versions readers move on to
        where = lance_sync.location(catalog, index_dir)
        assert {s: int(catalog.setting(lance_sync.VERSION + s)) for s in after} == \
            {s: LanceVectors(where, s).version for s in after}
