"""The store's own operations on an index folder, without an engine: remove, restore and tag name files as the
catalog does, refuse what the index does not hold before anything changes, and commit."""

import pytest

from retrieval.store import operations
from retrieval.store.catalog import Catalog
from retrieval.store.index_dir import NotIndexedError
from retrieval.store.snapshots import CATALOG_NAME
from tests.indexes import copied_index


@pytest.fixture
def index(three_clips_indexed, tmp_path):
    return copied_index(three_clips_indexed, tmp_path / "videos") / ".convis"


def test_a_removed_file_is_refused_a_tag_until_it_is_restored(index):
    assert operations.remove(index, [index.parent / "cup.mp4", "cup.mp4"]) == ["cup.mp4"]  # once, as the catalog
    with pytest.raises(NotIndexedError, match=r"not in the index: cup.mp4 \(cup.mp4 removed already\)"):
        operations.tag(index, ["campus_01.mp4", "cup.mp4"], ["team=red"])
    with Catalog(index / CATALOG_NAME, read_only=True) as catalog:
        assert catalog.excluded() == ["cup.mp4"] and "cup.mp4" not in catalog.file_states()
        assert catalog.file_fields() == {}  # nor campus_01.mp4 tagged
    assert operations.restore(index, ["cup.mp4"]).restored == ["cup.mp4"]
    assert operations.tag(index, ["cup.mp4"], ["team=red"]) == ["cup.mp4"]
    with Catalog(index / CATALOG_NAME, read_only=True) as catalog:
        assert catalog.excluded() == [] and "cup.mp4" in catalog.file_states()
        assert catalog.file_fields() == {"cup.mp4": {"team": "red"}}
    with pytest.raises(NotIndexedError, match="not removed from the index: cup.mp4"):
        operations.restore(index, ["cup.mp4"])
