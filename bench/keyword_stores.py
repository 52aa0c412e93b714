"""The keyword side of hybrid search from two engines: bm25s (the index convis keeps, ``retrieval.store.keyword``)
against Lance's full-text index (``create_index`` with ``FTS``: its BM25, English stemming and stop words),
measured the same way.

Quality: the text-search bench's 63 written queries (``bench/data/text_search.json``) over the example clips'
unit texts (the index ``make demo`` builds), R@1 and MRR (x100) of each engine's keyword ranking. Speed: synthetic
unit texts (words drawn from those captions' vocabulary, Zipf-weighted, 40 a text), the build seconds and the
p50 / p99 ms of one- to three-word queries, in this process.

    python -m bench.keyword_stores [--docs 100000,1000000] [--index-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bench import text_search
from retrieval.store.index_dir import open_catalog
from retrieval.store.keyword.index import KeywordIndex, terms
from retrieval.store.keyword.unit_texts import unit_texts

ENGINES = ("bm25s", "lance-fts")
K = 20
QUERIES = 200  # timed queries a size
WORDS_A_TEXT = 40


def bm25s_ranker(ids: Sequence[int], texts: Sequence[str]) -> Callable[[str, int], list[int]]:
    """Unit ids best first, as convis's keyword index ranks them (its tokeniser, stemmer and stop words)."""
    import bm25s

    model = bm25s.BM25()
    model.index([terms(t) for t in texts], show_progress=False)
    index = KeywordIndex(np.asarray(ids, dtype=np.int64), None, model)
    return lambda text, k: [hit.unit_id for hit in index.search(text, k)]


def lance_ranker(ids: Sequence[int], texts: Sequence[str], folder: Path) -> Callable[[str, int], list[int]]:
    """Unit ids best first from a Lance table's full-text index (English stemming and stop words)."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    table = lancedb.connect(str(folder)).create_table(
        "texts", pa.table({"unit_id": pa.array(ids, pa.int64()), "text": pa.array(list(texts), pa.string())}))
    table.create_index("text", config=FTS(language="English", stem=True, remove_stop_words=True, ascii_folding=True),
                       replace=True)

    def rank(text: str, k: int) -> list[int]:
        found = table.search(text, query_type="fts").select(["unit_id", "_score"]).limit(k).to_arrow()
        return found.column("unit_id").to_pylist()

    return rank


def rankers(ids, texts, scratch: Path) -> dict[str, tuple[Callable[[str, int], list[int]], float]]:
    """Each engine's ranker over the texts, with its build seconds."""
    out = {}
    for name, make in (("bm25s", lambda: bm25s_ranker(ids, texts)),
                       ("lance-fts", lambda: lance_ranker(ids, texts, scratch / "lance"))):
        started = time.perf_counter()
        rank = make()
        out[name] = (rank, time.perf_counter() - started)
    return out


def quality(index_dir: Path | None, scratch: Path) -> dict:
    """R@1 and MRR (x100) of each engine on the text-search queries, overall and per kind."""
    queries, data = text_search.load_queries()
    index_dir = index_dir or text_search.build_index(scratch / ".convis", data)
    catalog, _ = open_catalog(index_dir)
    try:
        ids, texts = unit_texts(catalog)
        paths = dict(catalog.db.execute("SELECT u.unit_id, f.path FROM units u JOIN files f USING (file_id)")
                     .fetchall())
    finally:
        catalog.close()
    ranked = {name: rank for name, (rank, _) in rankers(ids, texts, scratch).items()}
    rows = [{"text": q.text, "kind": q.kind,
             "rr": {name: text_search.reciprocal_rank([Path(paths[u]).name for u in rank(q.text, K)], q.relevant)
                    for name, rank in ranked.items()}} for q in queries]
    kinds = sorted({q.kind for q in queries})
    return {"queries": len(rows), "overall": text_search._metrics(rows, ENGINES),
            "by_kind": {kind: text_search._metrics([r for r in rows if r["kind"] == kind], ENGINES) for kind in kinds}}


def synthetic(docs: int, vocabulary: Sequence[str], seed: int = 0) -> list[str]:
    """``docs`` texts of ``WORDS_A_TEXT`` words drawn Zipf-weighted from ``vocabulary``."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    drawn = rng.choice(len(vocabulary), size=(docs, WORDS_A_TEXT), p=weights / weights.sum())
    words = np.asarray(vocabulary)
    return [" ".join(words[row]) for row in drawn]


def speed(docs: int, vocabulary: Sequence[str], scratch: Path) -> dict:
    """Build seconds and query p50 / p99 ms of each engine over ``docs`` synthetic texts."""
    texts = synthetic(docs, vocabulary)
    rng = np.random.default_rng(1)
    asked = [" ".join(rng.choice(vocabulary[:2000], size=int(rng.integers(1, 4)))) for _ in range(QUERIES)]
    out = {}
    for name, (rank, build_s) in rankers(list(range(docs)), texts, scratch / f"speed-{docs}").items():
        rank(asked[0], K)  # warm: files opened, caches filled
        times = []
        for text in asked:
            started = time.perf_counter()
            rank(text, K)
            times.append(1000 * (time.perf_counter() - started))
        out[name] = {"build_s": round(build_s, 1), "p50_ms": round(float(np.percentile(times, 50)), 2),
                     "p99_ms": round(float(np.percentile(times, 99)), 2)}
    return out


def vocabulary_of(data_dir: Path) -> list[str]:
    """The example captions' words, most frequent first."""
    from collections import Counter

    words = Counter(w for path in sorted(data_dir.rglob("*.txt")) for w in path.read_text().lower().split()
                    if w.isalpha())
    return [w for w, _ in words.most_common()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.keyword_stores", description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="100000", help="synthetic text counts for the speed rows (comma-separated)")
    parser.add_argument("--index-dir", type=Path, default=None, help="a demo index to read (default: built now)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    _, data = text_search.load_queries()
    with tempfile.TemporaryDirectory(prefix="convis-keyword-") as tmp:
        scratch = Path(tmp)
        result = {"quality": quality(args.index_dir, scratch)}
        vocabulary = vocabulary_of(text_search.REPO / data["captions"])
        result["speed"] = {int(n): speed(int(n), vocabulary, scratch) for n in args.docs.split(",") if n}
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
