"""Cross-modal signals in queries: CLIPScore from index-time caption vectors, VQAScore asked of an LMM."""

import json
import shutil

import numpy as np
import open_clip
import pytest
import torch
from typer.testing import CliRunner

from bench.tiny.vlm import build_llava_onevision
from indexers.text import read_captions
from rerankers.factory import create_reranker
from rerankers.prompts.vqascore import pair_questions
from retrieval.api import CompareRequest, Engine, QueryRequest
from retrieval.cli.app import app
from retrieval.core.signal_kinds import caption_signal
from retrieval.media.video_decoder import VideoDecoder
from retrieval.search.signals import SignalError
from retrieval.store.catalog import Catalog
from tests.indexers.test_clip import _hf_clip_with_tokenizer, _open_clip_with_vocabulary
from tests.indexes import CAPTIONS, indexed_copies

CLIPS = ("cup.mp4", "box.mp4", "campus_01.mp4", "campus_02.mp4")


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def open_clip_text(folder, texts):
    """The raw open_clip model's text vectors (its module tokenizer at the model's context length)."""
    model = open_clip.create_model(f"local-dir:{folder}", pretrained=str(folder / "open_clip_model.safetensors"))
    context = json.loads((folder / "open_clip_config.json").read_text())["model_cfg"]["text_cfg"]["context_length"]
    with torch.no_grad():
        return _unit(model.eval().encode_text(open_clip.tokenize(texts, context_length=context)).numpy())


def hf_clip_text(folder, texts):
    """The raw transformers CLIP's get_text_features of its own tokenizer's tokens (truncated to its positions)."""
    from transformers import CLIPModel, CLIPTokenizer

    model = CLIPModel.from_pretrained(folder).eval()
    positions = min(77, model.config.text_config.max_position_embeddings)
    tokens = CLIPTokenizer.from_pretrained(folder)(texts, padding=True, truncation=True, max_length=positions,
                                                   return_tensors="pt")
    with torch.no_grad():
        out = model.get_text_features(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"])
    return _unit((out if isinstance(out, torch.Tensor) else out.pooler_output).numpy())


@pytest.fixture(scope="module", params=["open_clip", "hf_clip"])
def clip_index(request, tmp_path_factory, tiny_models):
    """Four clips indexed with their caption files and a tiny CLIP of each kind (with a text tower)."""
    base = tmp_path_factory.mktemp(f"clipscore-{request.param}")
    if request.param == "open_clip":
        folder, text_of = _open_clip_with_vocabulary(base / "model", 49408), open_clip_text
    else:
        folder, text_of = _hf_clip_with_tokenizer(tiny_models["hf_clip"], base / "model"), hf_clip_text
    videos = indexed_copies(base, CLIPS, [f"clip:{folder}"], captions=CAPTIONS)
    return videos, folder, text_of


def _catalog_vectors(index_dir, model_id):
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        return {p: catalog.unit_vectors(p, model_id)[0] for p in catalog.file_states()}


def test_the_caption_vectors_are_the_models_own_text_vectors_of_the_captions(clip_index):
    videos, folder, text_of = clip_index
    model_id = f"clip:{folder}"
    stored = _catalog_vectors(videos / ".convis", caption_signal(model_id))
    captions = read_captions(CAPTIONS)
    want = dict(zip(CLIPS, text_of(folder, [captions[c.removesuffix(".mp4")] for c in CLIPS]), strict=False))
    assert sorted(stored) == sorted(CLIPS)
    for path, vector in stored.items():
        assert np.allclose(vector, want[path], atol=1e-5)


def test_a_concept_scored_by_clipscore_ranks_every_clip_by_the_references_formula(clip_index):
    videos, folder, text_of = clip_index
    model_id = f"clip:{folder}"
    result = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=10,
                                                           signal_overrides={"location": "clipscore"}))
    # independently: each clip's video vector (the index's) and the raw model's text vector of its caption
    video = _catalog_vectors(videos / ".convis", model_id)
    captions = read_captions(CAPTIONS)
    text = dict(zip(CLIPS, text_of(folder, [captions[c.removesuffix(".mp4")] for c in CLIPS]), strict=False))
    want = {c: ((video["cup.mp4"] @ text[c] + video[c] @ text["cup.mp4"]) / 2 + 1) / 2 for c in CLIPS[1:]}
    assert [h.path for h in result.hits] == sorted(want, key=want.get, reverse=True)
    for hit in result.hits:
        assert hit.scores["location"] == pytest.approx(want[hit.path], abs=1e-5)
    assert result.signals["location"] == f"clipscore:{model_id}"
    concept = result.as_dict()["concepts"][0]
    assert concept["scored_by"] == f"clipscore:{model_id}"


def test_clipscore_by_model_name_and_a_new_anchor_falls_back_to_the_visual_signal(clip_index, tmp_path):
    videos, folder, _ = clip_index
    engine = Engine(videos / ".convis")
    named = engine.query(QueryRequest(videos / "cup.mp4", ["location"],
                                      signal_overrides={"location": "clipscore:clip"}))
    assert named.signals["location"] == f"clipscore:clip:{folder}"
    stranger = tmp_path / "stranger.mp4"  # not indexed: it has no caption
    shutil.copy(CAPTIONS.parent / "videos" / "bikes.mp4", stranger)
    result = engine.query(QueryRequest(stranger, ["location"], signal_overrides={"location": "clipscore"}))
    assert result.signals["location"] == f"clip:{folder}"
    assert any("no caption" in n for n in result.notices)


def test_clipscore_without_captions_in_the_index_is_one_clear_line(three_clips_indexed, tmp_path):
    videos = tmp_path / "videos"
    shutil.copytree(three_clips_indexed, videos)
    with pytest.raises(SignalError, match="no such CLIPScore; it needs a CLIP-family indexer"):
        Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"],
                                                      signal_overrides={"location": "clipscore"}))
    result = CliRunner().invoke(app, ["query", "--index-dir", str(videos / ".convis"), "--anchor",
                                      str(videos / "cup.mp4"), "-c", "location", "--signal", "location=clipscore"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "CLIPScore" in result.output and len(result.output.strip().splitlines()) == 1


# ---------------------------------------------------------------- VQAScore


@pytest.fixture(scope="module")
def vqa_setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("vqascore")
    videos = indexed_copies(base, CLIPS, ["efficientnet-lite0"], captions=CAPTIONS)
    return videos, build_llava_onevision(base / "llava")


def test_a_concept_scored_by_vqascore_is_the_mean_yes_probability_of_the_two_cross_questions(vqa_setup):
    videos, llava = vqa_setup
    engine = Engine(videos / ".convis")
    result = engine.query(QueryRequest(videos / "cup.mp4", ["location", "main-action"], k=3, rerank_top=3,
                                       signal_overrides={"location": f"vqascore:{llava}"}))
    assert len(result.hits) == 3
    # independently: the model asked the reference's two questions about the decoded clips
    model = create_reranker(str(llava), device="cpu")
    captions = read_captions(CAPTIONS)
    decoder = VideoDecoder()

    def frames(name):
        return decoder.sample_span(videos / name, model.frame_spec, 0.0, None).pixels

    for hit in result.hits:
        q1, q2 = pair_questions(captions["cup"], captions[hit.path.removesuffix(".mp4")])
        p1, p2 = model.yes_probabilities([frames("cup.mp4"), frames(hit.path)], [q1, q2], prepared=True)
        assert hit.scores["location"] == pytest.approx((p1 + p2) / 2, abs=1e-6)
        assert hit.evidence["location"] == {f"vqascore:{llava}": pytest.approx((p1 + p2) / 2, abs=1e-6)}
        assert "location" in hit.recall_scores  # the recall score stays beside
    concept = result.as_dict()["concepts"][0]
    assert concept["pair_signal"] == f"vqascore:{llava}" and concept["scored_by"] == f"vqascore:{llava}"
    assert engine.models.vqa_scorer(str(llava)).questions_asked == 6  # two questions a pair, none cached yet
    # a repeated query reads every answer from the score cache
    again = Engine(videos / ".convis")
    again.query(QueryRequest(videos / "cup.mp4", ["location"], k=3, rerank_top=3,
                             signal_overrides={"location": f"vqascore:{llava}"}))
    assert again.models.vqa_scorer(str(llava)).questions_asked == 0


def test_vqascore_reorders_the_shortlist_before_it_is_cut_to_k(vqa_setup):
    videos, llava = vqa_setup
    asked = {"location": f"vqascore:{llava}"}
    three = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=3, rerank_top=3,
                                                          signal_overrides=asked))
    best = max(three.hits, key=lambda h: h.scores["location"])
    one = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=1, rerank_top=3,
                                                        signal_overrides=asked))
    assert [h.path for h in one.hits] == [best.path]
    assert [h.path for h in three.hits] == sorted((h.path for h in three.hits),
                                                  key=lambda p: -next(h.scores["location"] for h in three.hits
                                                                      if h.path == p))


def test_vqascore_with_a_reranker_is_one_clear_error(vqa_setup):
    videos, llava = vqa_setup
    with pytest.raises(SignalError, match="use one of them"):
        Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], reranker=str(llava),
                                                      signal_overrides={"location": f"vqascore:{llava}"}))


def test_compare_by_vqascore_asks_about_that_pair_alone(vqa_setup):
    videos, llava = vqa_setup
    engine = Engine(videos / ".convis")
    compared = engine.compare(CompareRequest(videos / "cup.mp4", videos / "box.mp4", ["location"],
                                             signal_overrides={"location": f"vqascore:{llava}"}))
    assert engine.models.vqa_scorer(str(llava)).questions_asked in (0, 2)  # box's two questions at most (maybe cached)
    query = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=3, rerank_top=3,
                                                          signal_overrides={"location": f"vqascore:{llava}"}))
    box = next(h for h in query.hits if h.path == "box.mp4")
    assert compared.concepts[0].score == pytest.approx(box.scores["location"], abs=1e-9)
    assert compared.as_dict()["scored_by"] == "recall similarity (location: vqascore)" and compared.rank is None


def test_vqascore_for_an_anchor_without_a_caption_keeps_the_recall_score_and_says_why(vqa_setup, tmp_path):
    videos, llava = vqa_setup
    stranger = tmp_path / "stranger.mp4"
    shutil.copy(CAPTIONS.parent / "videos" / "bikes.mp4", stranger)
    result = Engine(videos / ".convis").query(QueryRequest(stranger, ["location"], k=2,
                                                           signal_overrides={"location": f"vqascore:{llava}"}))
    assert result.hits and all(not h.recall_scores for h in result.hits)
    assert any("VQAScore asks about the anchor's caption" in n for n in result.notices)


def test_info_lists_the_clipscore_signal(clip_index):
    videos, folder, _ = clip_index
    assert Engine(videos / ".convis").info()["cross_modal_signals"] == [f"clipscore:clip:{folder}"]
    shown = CliRunner().invoke(app, ["info", "--index-dir", str(videos / ".convis")], env={"COLUMNS": "300"})
    assert f"clipscore:clip:{folder}  cross-modal" in shown.output


# ---------------------------------------------------------------- fusion inputs


def test_fusion_takes_clipscore_as_an_input_and_explains_it(clip_index):
    videos, folder, _ = clip_index
    result = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=3, fusion="default"))
    for hit in result.hits:
        assert "clipscore" in hit.contributions["location"]
        # the value fused is the hit's exact CLIPScore, the one a clipscore-scored query gives
        assert hit.inputs["location"]["clipscore"] == pytest.approx(
            _clipscore_of(videos, hit.path), abs=1e-6)


def _clipscore_of(videos, path):
    plain = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=10,
                                                          signal_overrides={"location": "clipscore"}))
    return next(h.scores["location"] for h in plain.hits if h.path == path)


def test_fusion_takes_vqascore_as_an_input(vqa_setup):
    videos, llava = vqa_setup
    asked = {"location": f"vqascore:{llava}"}
    plain = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=2, rerank_top=2,
                                                          signal_overrides=asked))
    vqa = {h.path: h.scores["location"] for h in plain.hits}
    result = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"], k=2, rerank_top=2,
                                                           signal_overrides=asked, fusion="default"))
    assert {h.path for h in result.hits} == set(vqa)
    for hit in result.hits:
        assert {"vqascore", "text"} <= set(hit.inputs["location"]) and "vqascore" in hit.contributions["location"]
        assert hit.inputs["location"]["vqascore"] == pytest.approx(vqa[hit.path], abs=1e-9)


def test_composed_vectors_skip_units_that_lack_a_part(clip_index, tmp_path):
    from retrieval.store.vectors import signals as signal_vectors

    videos, folder, _ = clip_index
    copy = tmp_path / "videos"
    shutil.copytree(videos, copy)
    model_id = f"clip:{folder}"
    with Catalog(copy / ".convis" / "catalog.duckdb") as catalog:
        (box,) = catalog.unit_ids("box.mp4")
        catalog.put_unit_vectors(caption_signal(model_id), {}, [box])  # box loses its caption vector
        signal = f"clipscore:{model_id}"
        ids, matrix = signal_vectors.vectors(catalog, signal)
        assert box not in ids and len(ids) == len(CLIPS) - 1 == signal_vectors.count(catalog, signal)
        assert set(signal_vectors.vectors_of(catalog, signal, [box, *ids])) == set(ids.tolist())
        assert signal_vectors.query_vectors(catalog, "box.mp4", signal).shape[0] == 0
        (cup,) = catalog.unit_ids("cup.mp4")
        video, text = catalog.unit_vectors("cup.mp4", model_id)[0], catalog.unit_vectors(
            "cup.mp4", caption_signal(model_id))[0]
        row = list(ids).index(cup)
        assert np.allclose(matrix[row], np.concatenate([text, video]) / np.sqrt(2), atol=1e-6)
