"""A reader opens the snapshot as it is on disk, even while another reader of this process holds the one it
replaced."""

import shutil

from retrieval.api import Engine
from retrieval.store.catalog import Catalog
from retrieval.store.snapshots import SNAPSHOT_NAME


def test_a_reader_sees_the_snapshot_published_while_another_read_the_old_one(example_index, tmp_path):
    index = tmp_path / ".convis"
    shutil.copytree(example_index, index)
    engine = Engine(index)
    before = {f.path for f in engine.files()}
    held = Catalog(index / SNAPSHOT_NAME, read_only=True)  # a read in progress on another thread
    try:
        engine.remove(["cup.mp4"])  # publishes a new snapshot: a new file renamed over the old one
        assert {f.path for f in engine.files()} == before - {"cup.mp4"}
    finally:
        held.close()
