"""Composed queries: clips like the anchor, changed as a sentence says (TF-CoVR's request, answered zero-shot)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from indexers.text import MINILM, read_captions
from retrieval.api import Engine, QueryRequest
from retrieval.cli.app import app
from retrieval.search import ranking
from retrieval.search.compose import Change, ChangeError, ChangeQuery, composed_vector
from retrieval.search.signals import described_concepts
from retrieval.store.catalog import Catalog
from tests.indexers.test_clip import _hf_clip_with_tokenizer, _open_clip_with_vocabulary
from tests.indexes import CAPTIONS, indexed_copies
from tests.paths import EXAMPLES

CHANGE = "a cup instead of a box"

FIVE = ("location", "main-action", "main-objects", "main-subjects", "order-of-actions")  # sorted


@pytest.fixture(scope="module", params=["open_clip", "transformers"])
def clip_index(request, tmp_path_factory, tiny_models):
    """Three clips indexed with their captions and a tiny CLIP (open_clip, or transformers'): both read text."""
    base = tmp_path_factory.mktemp("compose")
    clip = _open_clip_with_vocabulary(base / "open-clip", 49408) if request.param == "open_clip" \
        else _hf_clip_with_tokenizer(tiny_models["hf_clip"], base / "hf-clip")
    videos = indexed_copies(base, ("cup.mp4", "box.mp4", "campus_01.mp4"), ["text", f"clip:{clip}"],
                            captions=CAPTIONS)
    return videos / ".convis", clip


def _unit(v):
    v = np.asarray(v, np.float64).ravel()
    return v / np.linalg.norm(v)


def test_the_composed_vector_is_the_normalised_sum_of_the_unit_video_and_weighted_text_vectors():
    rng = np.random.default_rng(0)
    video, text = rng.normal(size=16) * 3, rng.normal(size=16) * 0.2
    for weight in (0.5, 1.0, 2.0):
        expected = _unit(video) + weight * _unit(text)
        np.testing.assert_allclose(composed_vector(video, text, weight), expected / np.linalg.norm(expected),
                                   atol=1e-6)


@pytest.mark.parametrize("text, weight, message", [
    ("", 1.0, "needs a text"), ("   \n ", 1.0, "needs a text"), ("x" * 1001, 1.0, "characters long"),
    (CHANGE, 0.0, "> 0"), (CHANGE, -1.0, "> 0"), (CHANGE, float("nan"), "> 0"),
])
def test_a_change_that_cannot_be_made_is_refused_with_its_reason(text, weight, message):
    with pytest.raises(ChangeError, match=message):
        Change(text, weight)


def test_the_total_weighs_staying_alike_against_matching_the_change():
    assert Change(CHANGE).combine(0.8, 0.6) == pytest.approx(0.7)
    assert Change(CHANGE, 3.0).combine(0.8, 0.6) == pytest.approx((0.8 + 3 * 0.6) / 4)
    assert Change(CHANGE).combine(0.8, None) == pytest.approx(0.4)  # no vector to match: no match
    assert Change("  a   cup ").text == "a cup"


def test_the_change_score_is_the_mean_similarity_over_the_signals_a_unit_has():
    t1, t2 = _unit([1.0, 0.0]), _unit([0.0, 1.0])
    query = ChangeQuery(Change(CHANGE), {"a": t1, "b": t2}, {}, [])
    stored = {"a": ranking.StoredVectors({1: _unit([1.0, 0.0]), 2: _unit([0.0, 1.0])}),
              "b": ranking.StoredVectors({1: _unit([1.0, 1.0])})}
    scores = query.scores([1, 2, 3], stored)
    assert scores[1] == pytest.approx(((1 + 1) / 2 + (1 + np.sqrt(0.5)) / 2) / 2)
    assert scores[2] == pytest.approx((0 + 1) / 2)  # only signal a has a vector of unit 2
    assert 3 not in scores  # no vector of any change signal


def test_a_composed_query_recalls_by_text_and_composed_vectors_scores_both_parts_and_never_returns_the_anchor(
        clip_index):
    index_dir, _ = clip_index
    engine = Engine(index_dir)
    result = engine.query(QueryRequest(index_dir.parent / "box.mp4", ["main-objects"], k=5, change=Change(CHANGE, 2.0)))
    assert "box.mp4" not in [h.path for h in result.hits]  # the anchor is masked, as TF-CoVR does
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        models = {r.name: r.indexer for r in catalog.indexers()}
        clip_id, text_id = models["clip"], models["text"]
        described = sorted(described_concepts(catalog.description_signals(), models).values())
        assert described == [f"{text_id}#{c}" for c in FIVE]  # the captions folder's concept files
        assert {k: result.change[k] for k in ("text", "weight", "signals", "composed")} == {
            "text": CHANGE, "weight": 2.0, "signals": sorted([clip_id, text_id, *described]), "composed": [clip_id]}
        # -c named the concept: it stays although the change touches it (the box and the cup are objects)
        assert result.change["stay"] == ["main-objects"] and result.change["left"] == []
        built = {m: engine.indexer(m) for m in (clip_id, text_id)}
        text = {m: _unit(model.embed_texts([CHANGE])[0]) for m, model in built.items()}
        text.update({signal: text[text_id] for signal in described})  # descriptions: the text indexer's space
        anchor_clip = catalog.unit_vectors("box.mp4", clip_id)[0]
        wanted = ChangeQuery.prepare(Change(CHANGE, 2.0), models, engine.indexer, lambda m: anchor_clip)
        expected = _unit(_unit(anchor_clip) + 2.0 * text[clip_id])
        np.testing.assert_allclose(wanted.composed[clip_id], expected, atol=1e-5)
        # a touched concept's description, edited as the change says (box -> cup), joins the change score
        touched = {t["concept"] for t in result.change["touched"]}
        edits = [(f"{text_id}#{c}", _unit(built[text_id].embed_texts([said])[0]))
                 for c, said in result.change["edited"].items() if c in touched]
        for hit in result.hits:
            stay, change = hit.composed["stay"], hit.composed["change"]
            sims = [(float(_unit(vectors[0]) @ t) + 1) / 2 for m, t in [*text.items(), *edits]
                    if len(vectors := catalog.unit_vectors(hit.path, m))]
            assert change == pytest.approx(np.mean(sims), abs=1e-4)
            assert hit.total == pytest.approx((stay + 2.0 * change) / 3.0, abs=1e-6)
    assert [h.total for h in result.hits] == sorted((h.total for h in result.hits), reverse=True)
    assert any(f"{clip_id}+change" in h.recalled_by for h in result.hits)  # the composed vector's top list


def test_with_captions_and_the_real_minilm_a_cup_instead_of_a_box_ranks_the_cup_first(demo_index):
    assert "cup" in read_captions(CAPTIONS)["cup"].lower() and "box" in read_captions(CAPTIONS)["box"].lower()
    result = CliRunner().invoke(app, ["query", "--anchor", str(EXAMPLES / "box.mp4"), "--change", CHANGE,
                                      "--index-dir", str(demo_index), "-k", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [h["path"] for h in data["hits"]][0] == "cup.mp4"
    assert "box.mp4" not in [h["path"] for h in data["hits"]]
    # captions and each concept's descriptions read the change; no -c: the five concepts but the one the change
    # touches (a box and a cup are objects)
    assert data["change"]["signals"] == [f"text:{MINILM}", *(f"text:{MINILM}#{c}" for c in FIVE)]
    assert [c["key"] for c in data["concepts"]] == ["main-action", "main-subjects", "location", "order-of-actions"]
    assert data["change"]["left"] == ["main-objects"]
    first = data["hits"][0]
    assert first["composed"]["weight"] == 1.0
    assert first["total"] == pytest.approx((first["composed"]["stay"] + first["composed"]["change"]) / 2, abs=2e-4)


@pytest.mark.parametrize("args, message", [
    (["--change", "   "], "--change needs a text"),
    (["--change", CHANGE, "--change-weight", "0"], "change weight must be a number > 0"),
    ([], "Missing option '--concept'"),
])
def test_bad_change_input_is_one_line_and_a_non_zero_exit(demo_index, args, message):
    result = CliRunner().invoke(app, ["query", "--anchor", str(EXAMPLES / "box.mp4"), "--index-dir",
                                      str(demo_index), *args])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output


def test_a_change_on_an_index_with_no_signal_that_reads_text_is_refused_in_one_line(example_index):
    result = CliRunner().invoke(app, ["query", "--anchor", str(EXAMPLES / "box.mp4"), "--change", CHANGE,
                                      "--index-dir", str(example_index)])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--change needs a signal that reads text" in lines[0], result.output


# -- the LMM's composition question ----------------------------------------------------------------------

CHANGE_PROMPT = (
    "You are an AI designed to compare two videos: whether the second shows the first changed in a given way.\n\n"
    "The input consists of a sequence of concatenated frames: the first half represents Video 1, and the second "
    "half represents Video 2.\n"
    "Video 1 is the reference. The change is: 'a cup instead of a box'.\n"
    "Your task is to evaluate how well Video 2 shows Video 1 changed in this way.\n"
    "Output a single score between 1 and 5, where 1 means Video 2 does not show Video 1 changed in this way at all "
    "and 5 means Video 2 shows exactly Video 1 changed in this way.\n"
    "Do not explain your reasoning. Only output the numerical score.\n"
)


def test_the_composition_question_word_for_word_where_each_family_puts_its_concept_prompt():
    from rerankers.prompts.similarity import SCORE_REQUEST, ChangeWords, build_chat, system_prompt

    words = ChangeWords("  a cup instead   of a box ")
    assert system_prompt(words) == CHANGE_PROMPT
    assert str(words) == "change.1: a cup instead of a box"  # its score cache key, versioned
    assert build_chat("qwen", words)[0] == {"role": "system", "content": CHANGE_PROMPT}
    assert build_chat("llava", words)[1]["content"][1] == {"type": "text", "text": CHANGE_PROMPT}
    assert build_chat("internvl", words)[1]["content"] == [
        {"type": "text", "text": CHANGE_PROMPT + "\n"}, {"type": "video"}, {"type": "text", "text": SCORE_REQUEST}]
    assert system_prompt("Location") != system_prompt(ChangeWords("Location"))  # a concept is still a concept


@pytest.fixture
def demo_copy(demo_index, tmp_path):
    import shutil

    target = tmp_path / ".convis"
    shutil.copytree(demo_index, target, ignore=shutil.ignore_patterns("scores.duckdb"))
    return target


@pytest.mark.slow
def test_a_reranked_composed_query_asks_the_concepts_and_the_change_and_caches_both(demo_copy, tmp_path):
    from bench.tiny.vlm import build_qwen_vl
    from rerankers.prompts.similarity import ChangeWords

    qwen = str(build_qwen_vl(tmp_path / "qwen2-vl-tiny"))
    engine = Engine(demo_copy)
    assert CHANGE_PROMPT in engine.reranker(qwen).render_prompt(ChangeWords(CHANGE))  # what the model reads
    result = engine.query(QueryRequest(EXAMPLES / "box.mp4", ["main-objects"], k=3, reranker=qwen, rerank_top=3,
                                       change=Change(CHANGE)))
    assert engine.models.pair_scorer(qwen).model_pairs == 6  # three candidates, asked of the concept and of the change
    for hit in result.hits:
        assert set(hit.ratings) == {"main-objects", "change"} and set(hit.scores) == {"main-objects"}
        assert hit.composed["stay"] == pytest.approx((hit.ratings["main-objects"] - 1) / 4)
        assert hit.composed["change"] == pytest.approx((hit.ratings["change"] - 1) / 4)
        assert hit.total == pytest.approx((hit.composed["stay"] + hit.composed["change"]) / 2)
    again = Engine(demo_copy)
    repeat = again.query(QueryRequest(EXAMPLES / "box.mp4", ["main-objects"], k=3, reranker=qwen, rerank_top=3,
                                      change=Change(CHANGE)))
    assert again.models.pair_scorer(qwen).model_pairs == 0  # every answer from the score cache
    assert [h.as_dict() for h in repeat.hits] == [h.as_dict() for h in result.hits]
