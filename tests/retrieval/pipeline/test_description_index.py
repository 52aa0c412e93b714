"""Per-concept description signals: each concept's descriptions embedded by the text indexer into a signal and a
FAISS index of their own, kept in step with the descriptions (only what changed is embedded again).

The real all-MiniLM-L6-v2 embeds; descriptions come from ``<stem>.<concept>.txt`` files (no LMM needed) or are
written into the catalog directly.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from indexers.text import MINILM
from retrieval.api import Engine
from retrieval.pipeline import description_index
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import FILE_KEY, DescriberKey, Description
from retrieval.store.vectors.faiss_index import VectorIndex, index_path
from tests.paths import EXAMPLES

TEXT_ID = f"text:{MINILM}"
CLIPS = ("cup.mp4", "box.mp4", "campus_01.mp4")


@pytest.fixture
def folders(tmp_path):
    videos, captions = tmp_path / "videos", tmp_path / "captions"
    videos.mkdir()
    captions.mkdir()
    for name in CLIPS:
        shutil.copy(EXAMPLES / name, videos / name)
    (captions / "cup.location.txt").write_text("A kitchen table indoors.")
    (captions / "box.location.txt").write_text("A warehouse shelf.")
    (captions / "campus_01.location.txt").write_text("A paved campus square outdoors.")
    (captions / "cup.main-action.txt").write_text("A hand turns a cup.")
    (captions / "box.main-action.txt").write_text("   ")  # unreadable: no vector
    return videos, captions


def index(videos, captions):
    engine = Engine(videos / ".convis")
    report = engine.index(videos, ["efficientnet-lite0"], IndexSettings(captions=captions, workers=1))
    return engine, report


def stored(engine, signal):
    with Catalog(engine.catalog_path, read_only=True) as cat:
        ids, matrix = cat.vectors(signal)
        units = cat.units(ids.tolist())
    return {units[int(u)].path: row for u, row in zip(ids, matrix, strict=False)}


def test_each_concept_gets_a_signal_holding_exactly_its_readable_descriptions(folders):
    videos, captions = folders
    engine, report = index(videos, captions)
    assert report.description_signals == ["location", "main-action"]
    assert report.description_vectors == 4  # three locations, one readable action
    minilm = engine.indexer("text")
    with Catalog(engine.catalog_path, read_only=True) as cat:
        rows = {r.signal: (r.indexer, r.concept, r.dim) for r in cat.description_signals()}
        assert rows == {f"{TEXT_ID}#location": (TEXT_ID, "location", 384),
                        f"{TEXT_ID}#main-action": (TEXT_ID, "main-action", 384)}
        assert not {r.indexer for r in cat.indexers()} & set(rows)  # not indexers: a re-index never builds them
    location = stored(engine, f"{TEXT_ID}#location")
    assert sorted(location) == sorted(CLIPS)
    for name in CLIPS:
        text = (captions / f"{name[:-4]}.location.txt").read_text()
        np.testing.assert_allclose(location[name], minilm.embed_texts([text])[0], atol=1e-5)
    assert list(stored(engine, f"{TEXT_ID}#main-action")) == ["cup.mp4"]
    saved = VectorIndex.load(index_path(engine.index_dir, f"{TEXT_ID}#location"))
    assert saved is not None and saved.size == 3  # published beside the indexers' indices


def test_only_changed_descriptions_are_embedded_again_and_a_forgotten_file_loses_its_vectors(folders):
    videos, captions = folders
    engine, _ = index(videos, captions)
    before = stored(engine, f"{TEXT_ID}#location")
    assert index(videos, captions)[1].description_vectors == 0
    (captions / "box.location.txt").write_text("A garage with shelves.")
    assert index(videos, captions)[1].description_vectors == 1
    after = stored(engine, f"{TEXT_ID}#location")
    np.testing.assert_array_equal(after["cup.mp4"], before["cup.mp4"])
    assert not np.allclose(after["box.mp4"], before["box.mp4"])
    (videos / "cup.mp4").unlink()
    index(videos, captions)
    assert sorted(stored(engine, f"{TEXT_ID}#location")) == ["box.mp4", "campus_01.mp4"]


def test_a_persons_file_wins_over_the_captioner_which_wins_over_other_models(tmp_path):
    with Catalog(tmp_path / "catalog.duckdb") as cat:
        cat.db.execute("INSERT INTO files (file_id, path, content_hash, status) VALUES (1, 'a.mp4', 'h', 'ok')")
        cat.db.execute("INSERT INTO units (unit_id, file_id, segment, start_s, end_s, frame_times) "
                       "VALUES (1, 1, 0, 0.0, 4.0, [])")
        cat.db.execute("INSERT INTO units (unit_id, file_id, segment, start_s, end_s, frame_times) "
                       "VALUES (2, 1, 1, 4.0, 8.0, [])")
        other, captioner = DescriberKey("other", "r", "p"), DescriberKey("qwen", "r", "p")

        def write(key, start, end, text, status="ok"):
            cat.write_descriptions([Description("h", start, end, "location", key, text, status)])

        write(other, 0, 4, "other's first unit")
        write(captioner, 0, 4, "captioner's first unit")
        write(FILE_KEY, 0, 4, "a person's first unit")
        write(captioner, 4, 8, None, "unreadable")
        write(other, 4, 8, "other's second unit")
        assert description_index.chosen_texts(cat, "location", [captioner]) == {
            1: "a person's first unit", 2: "other's second unit"}
        cat.db.execute("DELETE FROM descriptions WHERE model = 'file'")
        assert description_index.chosen_texts(cat, "location", [captioner])[1] == "captioner's first unit"


def test_signal_names_split_back_into_indexer_and_concept():
    signal = description_index.signal_id(TEXT_ID, "camera-angle")
    assert signal == f"{TEXT_ID}#camera-angle"
    assert description_index.split_signal(signal) == (TEXT_ID, "camera-angle")
    assert description_index.split_signal(TEXT_ID) is None
