"""The keyword-engine comparison: both engines rank the same small corpus, and the speed rows' texts."""

from __future__ import annotations

from bench import keyword_stores

TEXTS = ["a man rides two bicycles down a hill", "a cup on a wooden table", "a dog runs on the beach at dusk",
         "children ride a bicycle in the park"]


def test_both_engines_find_the_stemmed_word_and_rank_the_better_match_first(tmp_path):
    ids = [10, 20, 30, 40]
    ranked = {name: rank for name, (rank, build_s) in keyword_stores.rankers(ids, TEXTS, tmp_path).items()}
    assert set(ranked) == set(keyword_stores.ENGINES)
    for name, rank in ranked.items():
        assert set(rank("bicycle", 5)) == {10, 40}, name  # "bicycles" and "bicycle" are one term
        assert rank("wooden cup", 5)[0] == 20, name
        assert rank("zebra", 5) == [], name


def test_synthetic_texts_draw_from_the_vocabulary():
    texts = keyword_stores.synthetic(50, ["alpha", "beta", "gamma"], seed=3)
    assert len(texts) == 50 and all(len(t.split()) == keyword_stores.WORDS_A_TEXT for t in texts)
    assert {w for t in texts for w in t.split()} <= {"alpha", "beta", "gamma"}
    assert texts == keyword_stores.synthetic(50, ["alpha", "beta", "gamma"], seed=3)
