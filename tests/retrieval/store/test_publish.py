"""What is derived from the catalog is published from one list: each entry brought up to date once, in order, by
whoever changed the catalog (an index run, a remove, its undo); an entry added to the list is published with
them."""

import pytest

from retrieval.api import Engine
from retrieval.pipeline.settings import IndexSettings
from retrieval.store import publish
from retrieval.store.catalog import Catalog
from retrieval.store.keyword.index import KeywordIndex
from retrieval.store.keyword.unit_texts import stamp
from retrieval.store.snapshots import CATALOG_NAME, SNAPSHOT_NAME, snapshot_is_current
from retrieval.store.vectors.faiss_index import VectorIndex, index_path
from retrieval.store.vectors.policy import index_signals
from tests.indexes import copied_index


@pytest.fixture
def index(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos") / ".convis"


@pytest.fixture
def published(monkeypatch) -> list[str]:
    """The names of the entries published, in order, each as it is published."""
    names: list[str] = []

    def counted(derived):
        return publish.Derived(derived.name, lambda catalog, index_dir: names.append(derived.name)
                               or derived.write(catalog, index_dir))

    monkeypatch.setattr(publish, "DERIVED", [counted(d) for d in publish.DERIVED])
    return names


def test_a_change_publishes_each_derived_file_once_in_order(index, published):
    Engine(index).remove(["cup.mp4"])
    assert published == ["backgrounds", "faiss", "lance", "keyword", "snapshot"]
    with Catalog(index / CATALOG_NAME, read_only=True) as catalog:
        signals, generation, texts = index_signals(catalog), catalog.generation, stamp(catalog)
        assert set(catalog.backgrounds()) == set(signals)
        assert {row.generation for row in catalog.backgrounds().values()} == {generation}
    for signal in signals:  # the saved FAISS indices are of the catalog as it is now
        saved = VectorIndex.load(index_path(index, signal, signals), signal)
        assert saved.generation == generation
    assert KeywordIndex.load(index).stamp == texts
    assert snapshot_is_current(index / CATALOG_NAME, index / SNAPSHOT_NAME)
    with Catalog(index / SNAPSHOT_NAME, read_only=True) as snapshot:  # the snapshot holds what came before it
        assert "cup.mp4" not in snapshot.file_states()
        assert {row.generation for row in snapshot.backgrounds().values()} == {generation}


def test_an_undo_that_moves_nothing_back_publishes_nothing(index, published):
    engine = Engine(index)
    with Catalog(index / CATALOG_NAME) as catalog:
        catalog.exclude(["never-kept.mp4"])  # excluded with no rows kept: an undo leaves it to the next run
    published.clear()
    assert engine.unremove(["never-kept.mp4"]).to_index == ["never-kept.mp4"]
    assert published == []


def test_an_entry_added_to_the_list_is_published_by_every_writer(index, monkeypatch):
    def generation(catalog, index_dir):
        (index_dir / "generation.txt").write_text(str(catalog.generation))

    monkeypatch.setattr(publish, "DERIVED", [*publish.DERIVED, publish.Derived("generation", generation)])
    engine = Engine(index)
    engine.remove(["cup.mp4"])
    with Catalog(index / CATALOG_NAME, read_only=True) as catalog:
        assert (index / "generation.txt").read_text() == str(catalog.generation)
    (index / "generation.txt").unlink()
    engine.unremove(["cup.mp4"])
    with Catalog(index / CATALOG_NAME, read_only=True) as catalog:
        assert (index / "generation.txt").read_text() == str(catalog.generation)
    (index / "generation.txt").unlink()
    engine.index(index.parent, settings=IndexSettings(workers=1))
    assert (index / "generation.txt").is_file()
