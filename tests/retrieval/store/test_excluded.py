"""Files removed from the index are recorded as excluded: their rows go, in the same transaction, and a catalog
written before files could be excluded reads as excluding none."""

import numpy as np

from retrieval.store.catalog import Catalog
from retrieval.store.catalog_records import FileRecord, IndexerRow, UnitRecord

INDEXER = "tiny"


def _add(catalog: Catalog, path: str) -> None:
    record = FileRecord(path, 10, 1.0, f"hash-{path}", 2.0, 25.0, 64, 48, 50, "av")
    catalog.commit_file(record, [UnitRecord(0, 0.0, 2.0, (0.5, 1.5))], {INDEXER: np.ones((1, 4), np.float32)})


def _catalog_with(path, *files: str) -> Catalog:
    catalog = Catalog(path)
    for name in files:
        _add(catalog, name)
    return catalog


def test_exclude_forgets_the_rows_and_records_the_paths(tmp_path):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4", "b.mp4") as catalog:
        before = catalog.generation
        assert catalog.exclude(["a.mp4", "a.mp4"]) == 1
        assert set(catalog.file_states()) == {"b.mp4"}
        assert catalog.vector_count(INDEXER) == 1  # a.mp4's vector went with its rows
        assert catalog.excluded() == ["a.mp4"]
        assert catalog.generation > before  # saved FAISS indices no longer match: they are rebuilt
        assert catalog.exclude(["a.mp4"]) == 0  # excluded already


def test_include_undoes_exclude_only(tmp_path):
    with _catalog_with(tmp_path / "catalog.duckdb", "a.mp4", "b.mp4") as catalog:
        catalog.exclude(["a.mp4", "b.mp4"])
        assert catalog.include(["a.mp4", "never.mp4"]) == 1
        assert catalog.excluded() == ["b.mp4"]
        assert catalog.file_states() == {}  # included again, indexed by the next run


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
