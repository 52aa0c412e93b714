"""Files removed from the index are recorded as excluded: their rows leave the index's tables in the same
transaction, kept aside so that an undo puts them back as they were; a catalog written before files could be
excluded reads as excluding none."""

from datetime import datetime

import numpy as np
import pytest

from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import FileRecord, IndexerRow, UnitRecord

INDEXER = "tiny"


def _add(catalog: Catalog, path: str) -> None:
    record = FileRecord(path, 10, 1.0, f"hash-{path}", 2.0, 25.0, 64, 48, 50, "av")
    catalog.commit_file(record, [UnitRecord(0, 0.0, 2.0, (0.5, 1.5))], {INDEXER: np.ones((1, 4), np.float32)})


def _catalog_with(path, *files: str) -> Catalog:
    catalog = Catalog(path)
    for name in files:
        _add(catalog, name)
    return catalog


def test_exclude_takes_the_rows_out_of_the_index_and_records_the_paths(tmp_path):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4", "b.mp4") as catalog:
        before = catalog.generation
        assert catalog.exclude(["a.mp4", "a.mp4"]) == 1
        assert set(catalog.file_states()) == {"b.mp4"}
        assert catalog.vector_count(INDEXER) == 1  # a.mp4's vector is no longer searched
        assert catalog.vectors(INDEXER)[1].shape == (1, 4) and catalog.summary()["units"] == 1
        assert catalog.excluded() == ["a.mp4"]
        assert catalog.generation > before  # saved FAISS indices no longer match: they are rebuilt
        assert catalog.exclude(["a.mp4"]) == 0  # excluded already


def test_restore_puts_back_the_very_rows_and_vectors(tmp_path):
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        record = FileRecord("a.mp4", 10, 1.0, "hash-a", 4.0, 25.0, 64, 48, 100, "av", units_by="10s")
        vectors = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
        catalog.commit_file(record, [UnitRecord(0, 0.0, 2.0, (0.5, 1.5)), UnitRecord(1, 2.0, 4.0, (2.5, 3.5))],
                            {INDEXER: vectors})
        _add(catalog, "b.mp4")
        rows = _rows(catalog, "a.mp4")
        catalog.exclude(["a.mp4"])
        removed_at = catalog.generation
        undone = catalog.restore(["a.mp4", "b.mp4"])  # b.mp4 was never removed: left alone
        assert (undone.restored, undone.to_index) == (["a.mp4"], [])
        assert catalog.excluded() == [] and catalog.removed_files() == []
        assert _rows(catalog, "a.mp4") == rows  # ids, spans, frame times, and the vectors' bytes
        assert catalog.unit_vectors("a.mp4", INDEXER).tobytes() == vectors.tobytes()
        assert catalog.vector_count(INDEXER) == 3 and catalog.generation > removed_at


def test_a_path_removed_before_rows_were_kept_is_left_to_the_next_run(tmp_path):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4") as catalog:
        catalog.exclude(["a.mp4"])
        for table in ("removed_embeddings", "removed_units", "removed_files"):  # as an older catalog kept nothing
            catalog.db.execute(f"DELETE FROM {table}")
        assert [(f.path, f.kept) for f in catalog.removed_files()] == [("a.mp4", False)]
        undone = catalog.restore(["a.mp4"])
        assert (undone.restored, undone.to_index) == ([], ["a.mp4"])
        assert catalog.excluded() == [] and catalog.file_states() == {}  # indexed by the next run


def test_removed_files_say_when_and_what_is_kept(tmp_path):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4", "b.mp4") as catalog:
        catalog.exclude(["b.mp4"])
        (listed,) = catalog.removed_files()
        assert (listed.path, listed.kept, listed.units, listed.status) == ("b.mp4", True, 1, "ok")
        assert abs(datetime.fromisoformat(listed.removed_at) - datetime.now()).total_seconds() < 3600 * 24
        assert catalog.summary()["files_removed"] == 1 and catalog.summary()["files_ok"] == 1


def test_a_column_the_files_gained_later_is_kept_and_restored(tmp_path):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4") as catalog:
        catalog.db.execute("ALTER TABLE files ADD COLUMN rating INTEGER")
        catalog.db.execute("UPDATE files SET rating = 5")
        catalog.exclude(["a.mp4"])
        catalog.restore(["a.mp4"])
        assert catalog.db.execute("SELECT rating FROM files WHERE path = 'a.mp4'").fetchone() == (5,)


def test_a_remove_that_fails_half_way_changes_nothing(tmp_path, monkeypatch):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4") as catalog:
        before = catalog.generation

        def fail(*_args):  # after the rows were copied aside, before they leave the index
            raise OSError("killed")

        monkeypatch.setattr(Catalog, "_delete_rows", fail)
        with pytest.raises(OSError):
            catalog.exclude(["a.mp4"])
        monkeypatch.undo()
        assert set(catalog.file_states()) == {"a.mp4"} and catalog.vector_count(INDEXER) == 1
        assert catalog.excluded() == [] and catalog.removed_files() == [] and catalog.generation == before
        assert catalog.db.execute("SELECT count(*) FROM removed_embeddings").fetchone() == (0,)


def _rows(catalog: Catalog, path: str) -> tuple:
    files = catalog.db.execute("SELECT * EXCLUDE (indexed_at) FROM files WHERE path = ?", [path]).fetchall()
    units = catalog.db.execute("SELECT u.* FROM units u JOIN files f USING (file_id) WHERE f.path = ? "
                               "ORDER BY u.unit_id", [path]).fetchall()
    vectors = catalog.db.execute("SELECT e.* FROM embeddings e JOIN units u USING (unit_id) JOIN files f "
                                 "USING (file_id) WHERE f.path = ? ORDER BY e.unit_id", [path]).fetchall()
    return files, units, vectors


def test_exclusions_are_kept_across_opens_and_read_only(tmp_path):
    path = tmp_path / "catalog.duckdb"
    with _catalog_with(path, "a.mp4") as catalog:
        catalog.exclude(["a.mp4"])
    with Catalog(path, read_only=True) as catalog:
        assert catalog.excluded() == ["a.mp4"]


def test_a_catalog_from_before_exclusions_opens_read_only_and_gets_the_table_from_a_writer(tmp_path):
    path = tmp_path / "catalog.duckdb"
    with _catalog_with(path, "a.mp4") as catalog:
        catalog.db.execute("DROP TABLE excluded")  # as written before the table existed
        catalog.db.execute("UPDATE settings SET value = '1' WHERE key = 'schema_version'")
    with Catalog(path, read_only=True) as catalog:
        assert catalog.excluded() == []
        assert set(catalog.file_states()) == {"a.mp4"}
    with Catalog(path) as catalog:
        assert catalog.exclude(["a.mp4"]) == 1
        assert catalog.excluded() == ["a.mp4"]


def test_upserts_still_work_beside_the_excluded_table(tmp_path):
    # DuckDB calls an upsert's incoming row "excluded": the table of that name must not break the indexers' upsert
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        catalog.register_indexer(IndexerRow(INDEXER, "tiny", "test", "image", 4, 1, None))
        catalog.register_indexer(IndexerRow(INDEXER, "tiny", "test", "image", 8, 2, None))
        assert catalog.indexers()[0].dim == 8
