"""A process serving a Lance index while another publishes to it: every answer reads one committed version, and a
new generation of the catalog moves the reader to the newest one."""

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
    """What publishing and reading a Lance index ask of the catalog: the store setting, the generation, and the
    units with vectors (the first ``blocks`` blocks of ``BLOCK`` units)."""

    def __init__(self, store: str, blocks: int, generation: int):
        self.store, self.blocks, self.generation = store, blocks, generation

    def setting(self, key):
        return self.store if key == lance_sync.STORE else None

    def vector_ids(self, signal):
        return np.arange(self.blocks * BLOCK, dtype=np.int64)

    def vectors_of(self, signal, unit_ids):
        return {int(u): block_vectors(int(u) // BLOCK)[int(u) % BLOCK] for u in unit_ids}


def publish(store: str, index_dir: str, blocks: int) -> None:
    """One publish of an index whose catalog holds ``blocks`` blocks."""
    table = lance_sync.LanceVectors(lance_sync.location(Catalog(store, 0, 0), Path(index_dir)), SIGNAL)
    lance_sync.sync_signal(Catalog(store, blocks, blocks), table, SIGNAL)


def publish_blocks(store: str, index_dir: str, generation_file: str) -> None:
    """The writer: publishes one more block at a time, then says the new generation (as a snapshot would)."""
    for blocks in range(2, BLOCKS + 1):
        publish(store, index_dir, blocks)
        Path(generation_file).write_text(str(blocks))


def test_every_answer_while_an_index_publishes_is_one_version(tmp_path):
    store, generation_file = f"lance:{tmp_path / 'tables'}", tmp_path / "generation"
    publish(store, str(tmp_path), 1)  # the first block, before the server starts
    generation_file.write_text("1")
    writer = multiprocessing.get_context("spawn").Process(
        target=publish_blocks, args=(store, str(tmp_path), str(generation_file)))
    writer.start()
    query = block_vectors(99)[:1]
    seen = []
    while True:
        running = writer.is_alive()  # read before the answer: once gone, this answer sees its last block
        generation = int(generation_file.read_text() or 0)
        table = lance_sync.reader(Catalog(store, 0, generation), tmp_path, SIGNAL)
        _, ids = table.search(query, BLOCKS * BLOCK)
        held = np.sort(ids[0][ids[0] >= 0])
        blocks = len(held) // BLOCK
        assert np.array_equal(held, np.arange(blocks * BLOCK)), "an answer holds part of a block"
        assert blocks >= generation  # what the catalog's generation says was published is served
        seen.append(blocks)
        if not running:
            break
    writer.join()
    assert writer.exitcode == 0 and seen[-1] == BLOCKS and seen == sorted(seen)
