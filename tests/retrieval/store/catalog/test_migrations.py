"""The catalog's schema is its numbered migrations: a new catalog applies them all, an older one (schema "1",
whatever it lacks) is brought up to date by the next writer in one transaction, and a reader of an older one reads
an upgraded copy in memory, leaving the file as it is."""

import duckdb
import pytest

from retrieval.store.catalog import Catalog, list_files, migrations
from retrieval.store.catalog.connection import SCHEMA_VERSION
from retrieval.store.catalog.migrations import LATEST, MIGRATIONS, Migration, migrate, pending, version

COLUMNS = "SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY table_name, " \
          "ordinal_position"


def schema(path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as db:
        return db.execute(COLUMNS).fetchall()


@pytest.fixture
def oldest(tmp_path):
    """A catalog as the first schema wrote it: files, units, vectors, indexers and settings only, schema "1",
    holding one file of one unit."""
    path = tmp_path / "old" / "catalog.duckdb"
    path.parent.mkdir()
    with duckdb.connect(str(path)) as db:
        MIGRATIONS[0].apply(db, None)
        db.execute("INSERT INTO settings VALUES ('schema_version', '1'), ('generation', '4')")
        db.execute("INSERT INTO files (file_id, path, size, mtime, status) VALUES (1, 'a.mp4', 10, 1.0, 'ok')")
        db.execute("INSERT INTO units (unit_id, file_id, segment, start_s, end_s) VALUES (1, 1, 0, 0.0, 2.0)")
    return path


def test_the_steps_are_numbered_one_to_latest_and_a_new_catalog_applies_them_all(tmp_path):
    assert [m.number for m in MIGRATIONS] == list(range(1, LATEST + 1))
    assert SCHEMA_VERSION == str(LATEST)
    with Catalog(tmp_path / "catalog.duckdb") as catalog:
        assert catalog.setting("schema_version") == SCHEMA_VERSION
        assert pending(catalog.db) == []


def test_a_writer_brings_an_old_catalog_to_the_schema_of_a_new_one_and_keeps_its_rows(oldest, tmp_path):
    Catalog(tmp_path / "catalog.duckdb").close()
    with Catalog(oldest) as catalog:
        assert catalog.setting("schema_version") == SCHEMA_VERSION
        assert set(catalog.file_states()) == {"a.mp4"} and catalog.generation == 4
    assert schema(oldest) == schema(tmp_path / "catalog.duckdb")
    with Catalog(oldest) as catalog:  # a second open has nothing to do
        assert migrate(catalog.db, oldest.parent) == []


def test_a_reader_of_an_old_catalog_answers_from_an_upgraded_copy_and_leaves_the_file_alone(oldest):
    before = oldest.read_bytes()
    with Catalog(oldest, read_only=True) as old:
        assert old.setting("schema_version") == SCHEMA_VERSION
        [listed] = list_files(old)
        assert (listed.path, listed.status, listed.units, listed.fields, listed.lines) == \
            ("a.mp4", "ok", ((0, 0.0, 2.0),), {}, ())
        assert (old.excluded(), old.removed_files(), old.unavailable(), old.folder_devices()) == ([], [], [], {})
        assert (old.description_signals(), old.backgrounds(), old.file_fields(), old.line_sources()) == \
            ([], {}, {}, [])
        assert old.summary()["files_ok"] == 1 and old.description_count() == 0
    assert oldest.read_bytes() == before
    with duckdb.connect(str(oldest), read_only=True) as db:
        assert version(db) == 1


def test_the_pending_steps_are_one_transaction(oldest, monkeypatch):
    def fails(db, _index_dir):
        raise duckdb.IOException("disk on fire")

    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS, Migration(LATEST + 1, "a failing step", fails)))
    with duckdb.connect(str(oldest)) as db:
        with pytest.raises(duckdb.IOException):
            migrate(db, None)
        assert version(db) == 1
        assert db.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'descriptions'"
                          ).fetchone() == (0,)  # step 3 went back with the failed one


def test_a_catalog_of_a_later_release_is_left_as_it_is(tmp_path):
    path = tmp_path / "catalog.duckdb"
    with Catalog(path) as catalog:
        catalog.set_setting("schema_version", str(LATEST + 1))
    with Catalog(path) as catalog:
        assert pending(catalog.db) == [] and catalog.setting("schema_version") == str(LATEST + 1)
