"""A process serving a Lance index while another publishes to it: every answer reads one committed version, and the
version a publish records in the catalog moves the reader on to it."""

import multiprocessing
from pathlib import Path

import numpy as np

from retrieval.store.vectors import lance_sync

SIGNAL = "toy:model"
BLOCK, BLOCKS, DIM = 40, 12, 16


def block_vectors(block: int) -> np.ndarray:
    rng = np.random.default_rng(block)
    matrix = rng.standard_normal((BLOCK, DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class Catalog:
    """What publishing and reading a Lance index ask of the catalog: the store setting, the table's version the
    last publish recorded, and the units with vectors (the first ``blocks`` blocks of ``BLOCK`` units)."""

    def __init__(self, store: str, blocks: int, version: int = 0):
        self.store, self.blocks, self.version = store, blocks, version

    def setting(self, key):
        return {lance_sync.STORE: self.store, lance_sync.VERSION + SIGNAL: str(self.version)}.get(key)

    def vector_ids(self, signal):
        return np.arange(self.blocks * BLOCK, dtype=np.int64)

    def vectors_of(self, signal, unit_ids):
        return {int(u): block_vectors(int(u) // BLOCK)[int(u) % BLOCK] for u in unit_ids}


def publish(store: str, index_dir: str, blocks: int, published: Path) -> None:
    """One publish of an index whose catalog holds ``blocks`` blocks; ``published`` then says how many blocks and
    the version it left, as the catalog's snapshot would."""
    table = lance_sync.LanceVectors(lance_sync.location(Catalog(store, 0), Path(index_dir)), SIGNAL)
    version = lance_sync.sync_signal(Catalog(store, blocks), table, SIGNAL)
    Path(f"{published}.tmp").write_text(f"{blocks} {version}")
    Path(f"{published}.tmp").replace(published)


def publish_blocks(store: str, index_dir: str, published: str) -> None:
    """The writer: publishes one more block at a time."""
    for blocks in range(2, BLOCKS + 1):
        publish(store, index_dir, blocks, Path(published))


def test_every_answer_while_an_index_publishes_is_one_version(tmp_path):
    store, published = f"lance:{tmp_path / 'tables'}", tmp_path / "published"
    publish(store, str(tmp_path), 1, published)  # the first block, before the server starts
    writer = multiprocessing.get_context("spawn").Process(
        target=publish_blocks, args=(store, str(tmp_path), str(published)))
    writer.start()
    query = block_vectors(99)[:1]
    seen = []
    while True:
        running = writer.is_alive()  # read before the answer: once gone, this answer sees its last block
        blocks_published, version = map(int, published.read_text().split())
        table = lance_sync.reader(Catalog(store, 0, version), tmp_path, SIGNAL)
        _, ids = table.search(query, BLOCKS * BLOCK)
        held = np.sort(ids[0][ids[0] >= 0])
        blocks = len(held) // BLOCK
        assert np.array_equal(held, np.arange(blocks * BLOCK)), "an answer holds part of a block"
        assert blocks == blocks_published  # what the catalog says was published is served, no more
        seen.append(blocks)
        if not running:
            break
    writer.join()
    assert writer.exitcode == 0 and seen[-1] == BLOCKS and seen == sorted(seen)


def test_a_reader_serves_the_published_version_not_a_newer_append(tmp_path):
    store = f"lance:{tmp_path / 'tables'}"
    where = lance_sync.location(Catalog(store, 0), tmp_path)
    version = lance_sync.sync_signal(Catalog(store, 2), lance_sync.LanceVectors(where, SIGNAL), SIGNAL)
    lance_sync.LanceVectors(where, SIGNAL).append(np.arange(2 * BLOCK, 3 * BLOCK), block_vectors(2))  # mid-publish
    table = lance_sync.reader(Catalog(store, 0, version), tmp_path, SIGNAL)
    assert table.size == 2 * BLOCK and table.version == version
    newer = lance_sync.sync_signal(Catalog(store, 3), lance_sync.LanceVectors(where, SIGNAL), SIGNAL)
    assert lance_sync.reader(Catalog(store, 0, newer), tmp_path, SIGNAL).size == 3 * BLOCK
