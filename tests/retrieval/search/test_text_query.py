"""Text search: every indexed signal with a text tower answers a sentence; the others are skipped."""


import numpy as np
import pytest

from indexers import create_indexer
from indexers.text import MINILM, read_captions, weights_path
from retrieval.api import Engine, SearchRequest
from retrieval.pipeline.settings import IndexSettings
from retrieval.search import text_query as tq
from retrieval.search.signals import SignalError
from tests.indexers.test_clip import _open_clip_with_vocabulary
from tests.indexes import CAPTIONS, indexed_copies

CUP = "a hand holding a cup"


@pytest.fixture(scope="module")
def captioned_index(tmp_path_factory, example_videos):
    """The example clips indexed as `make demo` does: EfficientNet-Lite0, and their captions (text)."""
    index_dir = tmp_path_factory.mktemp("captioned") / ".convis"
    Engine(index_dir).index(example_videos, ["efficientnet-lite0"], IndexSettings(workers=1, captions=CAPTIONS))
    return index_dir


@pytest.fixture(scope="module")
def text_and_clip_index(tmp_path_factory, example_videos):
    """Three clips indexed with their captions and a tiny open_clip: two signals that answer text."""
    base = tmp_path_factory.mktemp("text-and-clip")
    clip = _open_clip_with_vocabulary(base / "open-clip", 49408)
    videos = indexed_copies(base, ("cup.mp4", "box.mp4", "campus_01.mp4"), ["text", f"clip:{clip}"],
                            captions=CAPTIONS)
    return videos / ".convis"


def _minilm_similarity(a: str, b: str) -> float:
    """(cos + 1) / 2 of MiniLM's sentence embeddings, computed here without convis."""
    from sentence_transformers import SentenceTransformer

    va, vb = SentenceTransformer(weights_path(MINILM), device="cpu").encode([a, b])
    return (float(va @ vb / np.linalg.norm(va) / np.linalg.norm(vb)) + 1) / 2


def test_captions_answer_a_sentence_and_rank_the_clip_they_describe_first(captioned_index):
    captions = read_captions(CAPTIONS)
    # only cup.mp4's caption speaks of a cup (box.mp4's hand holds a box): what the first place rests on
    assert [stem for stem, text in captions.items() if "cup" in text.lower()] == ["cup"]
    result = Engine(captioned_index).search(SearchRequest(CUP, k=3))
    assert [h.path for h in result.hits][0] == "cup.mp4" and [h.rank for h in result.hits] == [1, 2, 3]
    assert result.signals == {"text": f"text:{MINILM}"} and result.text == CUP
    assert any("efficientnet-lite0" in n and "no text tower" in n for n in result.notices)
    for hit in result.hits:  # the score is the caption similarity itself, on the 0-1 scale
        assert hit.scores["text"] == pytest.approx(_minilm_similarity(CUP, captions[hit.path[:-4]]), abs=1e-4)
        assert hit.keyword["vector_score"] == pytest.approx(hit.scores["text"])  # hybrid, the default here
        assert hit.total >= hit.keyword["vector_score"]  # the words the caption holds only lift it
    assert [h.total for h in result.hits] == sorted((h.total for h in result.hits), reverse=True)


def test_an_index_without_a_text_tower_cannot_search_and_says_what_would(example_index):
    with pytest.raises(tq.NoTextSignal) as refused:
        Engine(example_index).search(SearchRequest(CUP))
    message = str(refused.value)
    assert "\n" not in message and "efficientnet-lite0" in message and "--captions" in message


def test_every_signal_with_a_text_tower_answers_with_equal_weights(text_and_clip_index):
    result = Engine(text_and_clip_index).search(SearchRequest(CUP, k=3))
    assert sorted(result.signals) == ["clip", "text"]
    assert not [n for n in result.notices if "confidence labels" not in n]  # three clips: too few for a background
    assert [(c.key, c.weight) for c in result.concepts] == [("clip", 0.5), ("text", 0.5)]
    assert len(result.hits) == 3
    for hit in result.hits:
        assert hit.recall_total == pytest.approx((hit.scores["clip"] + hit.scores["text"]) / 2)  # the vector total


def test_weights_pick_and_weigh_the_signals(text_and_clip_index):
    engine = Engine(text_and_clip_index)
    weighted = engine.search(SearchRequest(CUP, k=3, weights={"text": 3, "clip": 1}))
    for hit in weighted.hits:
        assert hit.recall_total == pytest.approx(0.75 * hit.scores["text"] + 0.25 * hit.scores["clip"])
    alone = engine.search(SearchRequest(CUP, k=3, weights={"text": 1}))
    assert list(alone.signals) == ["text"] and alone.hits[0].path == "cup.mp4"
    with pytest.raises(SignalError, match="efficientnet-lite0"):
        engine.search(SearchRequest(CUP, weights={"efficientnet-lite0": 1}))


def test_signal_concepts_are_equal_unless_weighted():
    ids = {"clip": "clip:x", "text": "text:y"}
    assert [(c.key, c.weight) for c in tq.signal_concepts(["clip", "text"], ids, None)] == [("clip", .5), ("text", .5)]
    # a model id names its signal too
    assert [(c.key, c.weight) for c in tq.signal_concepts(["clip", "text"], ids, {"text:y": 1, "clip": 3})] == \
        [("clip", .75), ("text", .25)]


@pytest.mark.parametrize("spec", ["clip", "clip=", "=1", "clip=0", "clip=-1", "clip=nan", "clip=inf", "clip=a"])
def test_a_weight_is_a_positive_number(spec):
    with pytest.raises(SignalError, match="INDEXER=WEIGHT"):
        tq.parse_weights([spec])


def test_text_is_stripped_and_bounded():
    assert tq.check_text("  a   hand\n") == "a hand"
    for bad in ("", "   \n"):
        with pytest.raises(SignalError, match="give a text"):
            tq.check_text(bad)
    assert tq.check_text("a" * tq.MAX_TEXT_CHARS) == "a" * tq.MAX_TEXT_CHARS
    with pytest.raises(SignalError, match=str(tq.MAX_TEXT_CHARS)):
        tq.check_text("a" * (tq.MAX_TEXT_CHARS + 1))


def test_signals_that_cannot_load_or_read_text_are_named_in_the_refusal(tmp_path):
    indexed = {"efficientnet-lite0": "efficientnet-lite0", "clip": f"clip:{tmp_path}"}  # no weights in tmp_path
    with pytest.raises(tq.NoTextSignal) as refused:
        tq.text_signals(indexed, lambda spec: create_indexer(spec, device="cpu"))
    message = str(refused.value)
    assert "\n" not in message and "efficientnet-lite0 has no text tower" in message
    assert "clip not used: cannot load clip weights" in message


def test_the_registry_says_which_families_have_a_text_tower_as_their_built_models_do(tiny_models):
    from indexers.factory import has_text_tower

    specs = [f"dinov2:{tiny_models['dinov2']}", f"videomae:{tiny_models['videomae']}",
             f"clip:{tiny_models['hf_clip']}", f"clip:{tiny_models['open_clip']}", "text", "efficientnet-lite0"]
    for spec in specs:
        assert has_text_tower(spec) == tq.answers_text(create_indexer(spec, device="cpu")), spec
    assert not has_text_tower("no-such-family")


def test_a_search_builds_only_the_models_that_can_answer(captioned_index):
    engine = Engine(captioned_index)
    engine.search(SearchRequest(CUP, k=2))
    # indexing exported the caption model's text tower: EfficientNet-Lite0 never loads, and MiniLM not in torch
    assert engine.models.indexers() == []
    assert [type(t).__name__ for t in engine.models.text_towers()] == ["OnnxTextTower"]


def _search_with(index_dir, build, text: str, concept: str | None = None):
    from retrieval.store.index_dir import open_catalog
    from retrieval.store.vectors.policy import vector_index

    catalog, _ = open_catalog(index_dir)
    with catalog:
        return tq.search(tq.TextQuery(text, k=20, concept=concept), catalog, build,
                         lambda model_id: vector_index(catalog, index_dir, model_id))


def _ranked(result) -> list[tuple[str, int, float]]:
    return [(hit.path, hit.segment, hit.total) for hit in result.hits]


@pytest.mark.parametrize(("text", "concept"), [(CUP, None), ("the campus square", "location"),
                                               ("somebody rides a bike", "main-action")])
def test_onnx_towers_rank_and_score_the_demo_index_as_torch_does(demo_index, text, concept):
    from indexers.text_towers import OnnxTextTower
    from retrieval.model_cache import ModelCache

    models, torch_models = ModelCache(device="cpu"), ModelCache(device="cpu")
    exported = _search_with(demo_index, models.text_tower, text, concept)
    in_torch = _search_with(demo_index, torch_models.indexer, text, concept)
    assert [type(t) for t in models.text_towers()] == [OnnxTextTower] and models.indexers() == []
    got, want = _ranked(exported), _ranked(in_torch)
    assert len(got) == 9 and [g[:2] for g in got] == [w[:2] for w in want]
    assert np.allclose([g[2] for g in got], [w[2] for w in want], atol=1e-4)


def test_onnx_towers_of_captions_and_open_clip_rank_as_torch_does(text_and_clip_index):
    from retrieval.model_cache import ModelCache

    models, torch_models = ModelCache(device="cpu"), ModelCache(device="cpu")
    exported = _search_with(text_and_clip_index, models.text_tower, CUP)
    in_torch = _search_with(text_and_clip_index, torch_models.indexer, CUP)
    assert len(exported.signals) == 2 and models.indexers() == []
    got, want = _ranked(exported), _ranked(in_torch)
    assert [g[:2] for g in got] == [w[:2] for w in want]
    assert np.allclose([g[2] for g in got], [w[2] for w in want], atol=1e-4)
