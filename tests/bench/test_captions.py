"""The release's three caption sets embedded again: their SBERT files and the Table 3 rows they give."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import paper
from bench.captions import caption_scores
from bench.evaluate import correlation_rows, file_correlation
from bench.loaders import ScoreFile, load_gt_pairs, load_pair_scores
from bench.report import signed
from indexers.base import INDEXERS
from indexers.text import TextIndexer, read_captions
from tests.paths import CONVIS_BENCH

GT = CONVIS_BENCH / "gt_conditioned_similarities.json"
SETS = ("mPLUG-Owl3-7B-240728", "InternVL2_5-8B", "Qwen2.5-VL-7B-Instruct")  # the release's caption sets

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("captions_embedded_once")]


def released(name: str) -> Path:
    return CONVIS_BENCH / "computed_similarities" / name / f"{name}_similarities.json"


@pytest.fixture(scope="module")
def indexer() -> TextIndexer:
    return INDEXERS.create("text", device="cpu")


@pytest.fixture(scope="module")
def ours(indexer) -> dict[str, dict]:
    """Each set's pair scores, every rated pair, embedded with the real all-MiniLM-L6-v2."""
    gt = load_gt_pairs(GT)
    return {name: caption_scores(name, gt, read_captions(CONVIS_BENCH / "captions" / name), indexer) for name in SETS}


# ---------------------------------------------------------------- the released score files, reproduced


def test_the_vendored_sets_are_complete():
    gt_videos = {Path(v).stem for k in load_gt_pairs(GT) for v in k}
    for name in SETS:
        assert len(read_captions(CONVIS_BENCH / "captions" / name)) == 543
        assert gt_videos <= set(read_captions(CONVIS_BENCH / "captions" / name))
        assert len(load_pair_scores(released(name))) == 610


@pytest.mark.parametrize("name", SETS)
def test_each_set_reproduces_its_released_sbert_file(ours, name):
    theirs = load_pair_scores(released(name))
    assert set(ours[name]) == set(theirs)
    assert max(abs(theirs[k] - v) for k, v in ours[name].items()) < 1e-5


@pytest.mark.parametrize("name", SETS)
def test_each_set_reproduces_the_correlation_of_its_released_file(ours, name):
    gt = load_gt_pairs(GT)
    mine = {r.concept: r for r in file_correlation(ScoreFile(Path(name), name, None), ours[name], gt)}
    theirs = {r.concept: r for r in correlation_rows([ScoreFile(released(name), name, None)], gt)}
    assert set(mine) == set(theirs) == set(paper.CONCEPTS)
    for concept, r in theirs.items():
        assert mine[concept].scores.rho == pytest.approx(r.scores.rho, abs=0.1)
        assert mine[concept].scores.tau == pytest.approx(r.scores.tau, abs=0.1)
        assert mine[concept].scores.n == r.scores.n == 610


def test_signed_differences():
    assert [signed(d, 1) for d in (0.3, -1.24, 1.25, -0.01, None)] == ["+0.3", "-1.2", "+1.2", "+0.0", ""]
    assert signed(2.0, 2) == "+2.00" and signed(float("nan"), 1) == "n/a"
