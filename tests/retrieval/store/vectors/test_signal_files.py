"""Each signal has its own FAISS file: free-text concepts that differ only in punctuation (or in letters outside
ASCII) no longer share one, and the names indexes were built with before stay as they were; a file whose sidecar
names no signal (made before sidecars named theirs) is never taken for one, and the catalog's migration removes it
so that it is built again."""

import json

import numpy as np
import pytest

from retrieval.pipeline.description_index import signal_id
from retrieval.store.catalog import Catalog
from retrieval.store.vectors.faiss_index import VectorIndex, index_path, old_name

TEXT = "text:sentence-transformers/all-MiniLM-L6-v2"


def one_vector_index(vector) -> VectorIndex:
    matrix = np.asarray([vector], np.float32)
    return VectorIndex.build(np.array([7], np.int64), matrix / np.linalg.norm(matrix), generation=3)


@pytest.mark.parametrize("a, b", [("camera-angle?", "camera-angle!"), ("mood.", "mood,"), ("ángulo", "éngulo"),
                                  ("日本", "中国"), ("camera-angle", "camera-angle?")])
def test_concepts_differing_in_punctuation_or_letters_have_files_of_their_own(tmp_path, a, b):
    first, second = signal_id(TEXT, a), signal_id(TEXT, b)
    assert index_path(tmp_path, first) != index_path(tmp_path, second)
    one_vector_index([1, 0]).save(index_path(tmp_path, first), first)
    one_vector_index([0, 1]).save(index_path(tmp_path, second), second)
    np.testing.assert_allclose(VectorIndex.load(index_path(tmp_path, first), first).vectors(np.array([7])), [[1, 0]])
    np.testing.assert_allclose(VectorIndex.load(index_path(tmp_path, second), second).vectors(np.array([7])),
                               [[0, 1]])


@pytest.mark.parametrize("signal, name", [
    ("dinov2:facebook/dinov2-large", "dinov2_facebook_dinov2-large.faiss"),
    ("clip:ViT-B-32/laion2b_s34b_b79k", "clip_ViT-B-32_laion2b_s34b_b79k.faiss"),
    (f"{TEXT}#main-action", "text_sentence-transformers_all-MiniLM-L6-v2_main-action.faiss"),
    (f"{TEXT}#camera-angle", "text_sentence-transformers_all-MiniLM-L6-v2_camera-angle.faiss"),
])
def test_model_ids_and_plain_concept_keys_keep_the_names_indexes_were_built_with(tmp_path, signal, name):
    assert index_path(tmp_path, signal).name == name


SHARED_OLD_NAME = ["camera:angle", "camera/angle", "camera#angle", "camera::angle", "camera:angle:", "camera_angle"]


def test_concepts_the_old_names_wrote_alike_have_files_of_their_own(tmp_path):
    signals = [signal_id(TEXT, c) for c in SHARED_OLD_NAME]
    assert {old_name(s) for s in signals} == {"text_sentence-transformers_all-MiniLM-L6-v2_camera_angle"}
    paths = [index_path(tmp_path, s) for s in signals]
    assert len(set(paths)) == len(signals)
    for n, (signal, path) in enumerate(zip(signals, paths, strict=True)):
        one_vector_index([n, 1]).save(path, signal)
    for n, (signal, path) in enumerate(zip(signals, paths, strict=True)):
        np.testing.assert_allclose(VectorIndex.load(path, signal).vectors(np.array([7])),
                                   [np.array([n, 1]) / np.hypot(n, 1)], rtol=1e-6)


def test_model_ids_the_old_names_wrote_alike_have_files_of_their_own_in_one_index(tmp_path):
    a, b = "clip:ViT-B-32/laion2b_s34b", "clip:ViT-B-32_laion2b/s34b"
    assert old_name(a) == old_name(b)
    assert index_path(tmp_path, a, [a, b]) != index_path(tmp_path, b, [a, b])
    assert index_path(tmp_path, a, [a]).name == f"{old_name(a)}.faiss"  # alone, it keeps the name it had


def test_a_file_saved_before_sidecars_named_their_signal_is_removed_by_the_migration_and_built_again(tmp_path):
    signal = f"{TEXT}#location"
    path, named = index_path(tmp_path, signal, [TEXT, signal]), index_path(tmp_path, TEXT, [TEXT, signal])
    one_vector_index([1, 0]).save(path)  # as indexes made before wrote it: no signal in the sidecar
    one_vector_index([0, 1]).save(named, TEXT)
    assert "signal" not in json.loads(path.with_suffix(".json").read_text())
    assert VectorIndex.load(path, signal) is None  # never taken: the catalog builds this one's
    Catalog(tmp_path / "catalog.duckdb").close()  # a writer applies the migrations
    assert not path.exists() and not path.with_suffix(".json").exists()
    assert VectorIndex.load(named, TEXT).size == 1


@pytest.mark.parametrize("concept", SHARED_OLD_NAME)
def test_a_file_made_before_under_a_name_several_concepts_had_is_not_taken(tmp_path, concept):
    signal = signal_id(TEXT, concept)
    old = tmp_path / "faiss" / f"{old_name(signal)}.faiss"
    one_vector_index([1, 0]).save(old)  # as made before: no signal in the sidecar, and any of them may have written it
    path = index_path(tmp_path, signal, [TEXT, signal])
    assert path != old and VectorIndex.load(path, signal) is None  # the catalog builds this one's


def test_a_file_without_its_signal_is_not_taken_when_another_signal_had_its_name(tmp_path):
    plain, other = signal_id(TEXT, "camera-angle"), "text:sentence-transformers/all-MiniLM-L6-v2/camera-angle"
    path = index_path(tmp_path, plain, [plain])
    one_vector_index([1, 0]).save(path)
    assert old_name(other) == old_name(plain)
    assert VectorIndex.load(path, plain) is None
    assert VectorIndex.load(path, other) is None


def test_a_file_of_another_signal_is_never_taken_for_this_one(tmp_path):
    path = tmp_path / "shared.faiss"
    one_vector_index([1, 0]).save(path, f"{TEXT}#camera-angle!")
    assert VectorIndex.load(path, f"{TEXT}#camera-angle?") is None
    assert VectorIndex.load(path, f"{TEXT}#camera-angle!").size == 1
