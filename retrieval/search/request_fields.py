"""What each request field means and takes, declared once: its help, its bounds, its choices.

The request values (``requests.py``) carry these specs on their fields (``dataclasses.fields(...)[i].metadata``
under ``SPEC``) and check their values against the same bounds; the command line builds its typer options from
them (``retrieval.cli.options``) and the server its JSON bodies and query parameters (``retrieval.serve.fields``),
so a help text or a limit cannot say one thing in one face and another in the next.

Only constants are imported here: `convis --help` reads these texts without importing the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.core.defaults import MAX_K
from retrieval.store.where import BUILTIN, MAX_CONDITION_CHARS, MAX_CONDITIONS, OPERATORS

SPEC = "spec"  # the key of a request field's metadata that holds its FieldSpec


@dataclass(frozen=True)
class FieldSpec:
    """One request field as every face shows it: ``help``; ``metavar`` (how the command line names its value);
    ``choices`` (the values it takes, when they are a few words); numeric bounds ``ge``/``gt``/``le``;
    ``max_items`` (a list of at most that many values) and ``max_chars`` (each value's length)."""

    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    max_items: int | None = None
    max_chars: int | None = None

    @property
    def pattern(self) -> str | None:
        """A regular expression that takes exactly the choices (None: any value)."""
        return "^(" + "|".join(re.escape(c) for c in self.choices) + ")$" if self.choices else None

    def metadata(self) -> dict:
        """What a request's ``dataclasses.field(metadata=...)`` carries."""
        return {SPEC: self}


K = FieldSpec("How many results.", metavar="N", ge=1, le=MAX_K)
RERANK_TOP = FieldSpec("How many recalled candidates the reranker (or VQAScore) rescores.", metavar="N", ge=1)
FREE_TEXT = FieldSpec("Take every concept name as written: a name close to a ConViS concept (e.g. 'locaton') is "
                      "otherwise refused as a likely typo.")
WHERE = FieldSpec(
    "Search only the units of files that match, e.g. \"duration > 10\", \"folder = sports\", \"path glob "
    f"'match/*.mp4'\", \"codec in h264,hevc\", \"tags has goal\" (repeat to AND; operators {' '.join(OPERATORS)}; "
    f"fields: {' '.join(BUILTIN)}, and those set by `convis tag` or --metadata; GET /fields lists an index's). The "
    "filter is applied before ranking: nothing it keeps is lost.",
    metavar="\"FIELD OP VALUE\"", max_items=MAX_CONDITIONS, max_chars=MAX_CONDITION_CHARS)
RERANK_MODE = FieldSpec("Reranker scoring: expected (mean of P(1..5)) or greedy (one greedy token parsed 1-5, as "
                        "the paper's code reads Qwen, LLaVA and mPLUG-Owl3; its InternVL sampled).",
                        metavar="expected|greedy", choices=("expected", "greedy"))
SYMMETRIC = FieldSpec("Score (a, b) and (b, a) and average them.")
CHANGE_WEIGHT = FieldSpec("How much matching the change counts against staying like the anchor (w in (stay + w * "
                          "change) / (1 + w); > 0).", metavar="W", gt=0, le=100)
MOST_DIFFERENT = FieldSpec("Rank the other way: the clips that differ most from the anchor under the concepts first "
                           "(the same scores, ascending; recalled as the farthest from it).")

MAX_TEXT_CHARS = 1000  # a sentence, not a document: CLIP reads 77 tokens, MiniLM 256
TEXT = FieldSpec(f"What to look for, in words (at most {MAX_TEXT_CHARS:,} characters).", metavar="TEXT",
                 max_chars=MAX_TEXT_CHARS)
CONCEPT = FieldSpec("Search only this concept's descriptions (written at index time by --captioner or `convis "
                    "describe`), e.g. location.", metavar="CONCEPT", max_chars=200)
SEARCH_MODE = FieldSpec(
    "vector (the text towers' similarity), keyword (BM25 over the stored captions, descriptions, timed lines and "
    "path) or hybrid (the vector score v lifted by the unit's IDF-weighted coverage c of the query's words, "
    "v + 0.45 c (1 - v)), by default hybrid when the index holds captions, descriptions or timed lines, else vector. "
    "A concept's descriptions are searched by vector.",
    metavar="vector|keyword|hybrid", choices=("vector", "keyword", "hybrid"))

LEVEL = FieldSpec("file: copies of whole files (a trimmed copy counts when its matching units cover most of it); "
                  "unit: single units.", metavar="file|unit", choices=("file", "unit"))
KEEP = FieldSpec("Which member of a group to keep: the longest, the most pixels (resolution), or the oldest file.",
                 metavar="longest|resolution|oldest", choices=("longest", "resolution", "oldest"))
THRESHOLD = FieldSpec("Similarity from which two units are copies, above 0.5 and at most 1, as query scores read "
                      "(default: read from the index's background, as --auto).", metavar="T", gt=0.5, le=1.0)
DUPES_INDEXER = FieldSpec("Whose vectors to compare (default: fingerprint when indexed, made for copies; else the "
                          "first visual indexer).", metavar="NAME", max_chars=200)
