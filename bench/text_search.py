"""The public evaluation of text search: written queries over the bundled example clips' captions, each with the
clips it should find, ranked by vector, keyword and hybrid search; R@1 and MRR per mode, and per query kind.

The queries (``bench/data/text_search.json``) are paraphrases, rare terms, one-word queries and misspellings. The
index is built as ``make demo`` builds it, from files every clone holds (examples/videos and examples/captions),
so the numbers are reproducible offline; the vector side is the bundled text model (all-MiniLM-L6-v2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from retrieval.api import Engine, SearchRequest
from retrieval.core.errors import ConvisError

QUERIES = Path(__file__).parent / "data" / "text_search.json"
REPO = Path(__file__).resolve().parent.parent
MODES = ("vector", "keyword", "hybrid")
VIDEO_INDEXER = "efficientnet-lite0"  # as `make demo`: the clips need a video signal; the captions add `text`


class TextBenchError(ConvisError):
    """The query file is unreadable or names no clip."""

    exit_code = 2
    http_status = 400


@dataclass(frozen=True)
class TextQuery:
    text: str
    kind: str  # paraphrase, rare term, one word, misspelling
    relevant: frozenset[str]  # file names of the clips it should find


def load_queries(path: Path = QUERIES) -> tuple[list[TextQuery], dict]:
    """The queries, and the file's other fields (``videos``, ``captions``: folders relative to the repository)."""
    try:
        data = json.loads(path.read_text())
        queries = [TextQuery(q["text"], q["kind"], frozenset(q["relevant"])) for q in data["queries"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TextBenchError(f"{path}: not a text-search query file ({exc})") from None
    if not queries or any(not q.relevant for q in queries):
        raise TextBenchError(f"{path}: every query needs at least one relevant clip")
    return queries, data


def build_index(index_dir: Path, data: dict) -> Path:
    """The bench's index of the example clips and their captions, in ``index_dir`` (the index folder)."""
    from retrieval.pipeline.settings import IndexSettings

    videos, captions = REPO / data["videos"], REPO / data["captions"]
    Engine(index_dir).index(videos, [VIDEO_INDEXER], IndexSettings(captions=captions, workers=1))
    return index_dir


def reciprocal_rank(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    """1 / the place of the first relevant clip in ``ranked`` (file names, best first); 0 when none is there."""
    return next((1.0 / place for place, name in enumerate(ranked, 1) if name in relevant), 0.0)


def ranked_names(engine: Engine, text: str, mode: str, k: int) -> list[str]:
    return [Path(h.path).name for h in engine.search(SearchRequest(text, k=k, mode=mode)).hits]


def evaluate(index_dir: Path, queries: Sequence[TextQuery], modes: Sequence[str] = MODES, k: int = 20,
             rank: Callable[[Engine, str, str, int], list[str]] = ranked_names) -> dict:
    """R@1 and MRR (x100, 1 decimal) of each mode over ``queries``, overall and per query kind, and each query's
    reciprocal rank per mode."""
    engine = Engine(index_dir)
    per_query = [{"text": q.text, "kind": q.kind,
                  "rr": {m: reciprocal_rank(rank(engine, q.text, m, k), q.relevant) for m in modes}}
                 for q in queries]
    kinds = sorted({q.kind for q in queries})
    return {"queries": len(queries), "modes": list(modes),
            "overall": _metrics(per_query, modes),
            "by_kind": {kind: _metrics([r for r in per_query if r["kind"] == kind], modes) for kind in kinds},
            "per_query": per_query}


def _metrics(rows: list[dict], modes: Sequence[str]) -> dict:
    n = len(rows)
    return {m: {"r@1": round(100 * sum(r["rr"][m] == 1.0 for r in rows) / n, 1),
                "mrr": round(100 * sum(r["rr"][m] for r in rows) / n, 1), "n": n} for m in modes}


def run(index_dir: Path | None = None, queries_path: Path = QUERIES, limit: int | None = None,
        note: Callable[[str], None] = lambda _: None) -> dict:
    """The bench: on the index at ``index_dir``, else on one built now in a temporary folder (about a minute on
    two CPU cores); the first ``limit`` queries of each kind when given."""
    import tempfile

    queries, data = load_queries(queries_path)
    if limit is not None:
        queries = [q for q in queries if [p for p in queries if p.kind == q.kind].index(q) < limit]
    if index_dir is not None:
        return evaluate(index_dir, queries)
    with tempfile.TemporaryDirectory(prefix="convis-text-bench-") as tmp:
        note(f"indexing {data['videos']} with the captions of {data['captions']} (as `make demo`)")
        return evaluate(build_index(Path(tmp) / ".convis", data), queries)


def table_lines(result: dict) -> list[str]:
    """The result as a Markdown table: one row a query kind and overall, R@1 and MRR (x100) of each mode."""
    modes = result["modes"]
    head = "| queries | n | " + " | ".join(f"{m} R@1 | {m} MRR" for m in modes) + " |"
    rows = [("all", result["overall"]), *result["by_kind"].items()]
    body = [f"| {name} | {next(iter(m.values()))['n']} | "
            + " | ".join(f"{m[mode]['r@1']:.1f} | {m[mode]['mrr']:.1f}" for mode in modes) + " |"
            for name, m in rows]
    return [head, "|" + "---|" * (2 + 2 * len(modes)), *body]
