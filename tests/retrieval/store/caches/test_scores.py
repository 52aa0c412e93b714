"""The score cache's key says whether anchor sharing was on: a score kept with sharing on never answers a request
with sharing off, and the scores kept before sharing was recorded (sharing on, the default) are still found."""

from retrieval.api import Engine, QueryRequest
from tests.retrieval.lmm.test_similarity import index_copy, qwen  # noqa: F401  (fixtures)


def test_a_shared_score_is_not_served_to_an_unshared_request(index_copy, example_videos, qwen):  # noqa: F811
    ask = QueryRequest(example_videos / "campus_01.mp4", ["location"], k=3, reranker=qwen, rerank_top=3)
    Engine(index_copy).query(ask)  # sharing on: the default
    for share, asked in ((False, 3), (False, 0), (True, 0)):  # a new command each: only the on-disk cache is shared
        engine = Engine(index_copy, share=share)
        engine.query(ask)
        assert engine.models.pair_scorer(qwen).model_pairs == asked, share


def test_the_shared_tag_is_the_tag_scores_were_kept_under_before(qwen):  # noqa: F811
    from rerankers.factory import create_reranker
    from rerankers.prompts.similarity import PROMPT_VERSION

    shared = create_reranker(qwen)
    spec = shared.frame_spec
    assert shared.cache_tag == (f"{shared.model_id}@{shared.revision}|prompt={PROMPT_VERSION}|frames={spec.rule}:"
                                f"{spec.count}|size={spec.resize.describe()}")
    assert shared.asked_with(share=False).cache_tag == f"{shared.cache_tag}|share=off"
