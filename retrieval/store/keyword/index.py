"""The keyword index: BM25 over each unit's stored text (``unit_texts``), with the bm25s library.

Words are lower-cased and split so that names with hyphens, dots and digits stay one term ("F-16", "PS-2",
"3.5"), each part of such a name a term too; English stop words are dropped and each word's ending is folded
(``stem``: "bicycles" and "bicycle" are one term). A hit says how much of the query its unit's text covers, each
term weighted by its IDF (``KeywordHit.coverage``): what hybrid search weights the keyword side by.

The index is derived from the catalog, like the FAISS indices: it is saved in the index folder (``keyword/``)
with the stamp of the texts it was built from and the tokeniser's ``FORMAT``, and used only while that stamp is
the catalog's and that format this one (``sync.current``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Collection

import numpy as np

from retrieval.core.errors import ConvisError
from retrieval.store.catalog import Catalog
from retrieval.store.keyword.stem import stem
from retrieval.store.keyword.unit_texts import Stamp, stamp, unit_texts

if TYPE_CHECKING:
    import bm25s  # imported where an index is built or loaded: scipy with it, which a vector search never needs

KEYWORD_DIR = "keyword"  # in the index folder
FORMAT = 2  # of the tokeniser and the saved files: an index saved in another format is rebuilt (1: no stemming)
_TERM = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_STOP = frozenset((  # English stop words: bm25s's list (importing bm25s for it would bring scipy), then the
    # pronouns, auxiliaries and question words a spoken query adds, which say nothing of a clip
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will",
    "with",
    "am", "been", "being", "can", "could", "did", "do", "does", "from", "had", "has", "have", "he", "her", "him", "his",
    "i", "its", "me", "my", "our", "she", "so", "some", "somebody", "someone", "something", "than", "them", "us",
    "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "would", "you", "your"))


class OlderFormat(ConvisError, ValueError):
    """A saved index written by another tokeniser or file layout (``FORMAT``): rebuilt, never read."""


def _words(text: str) -> list[tuple[str, str]]:
    """(word as written in lower case, its term) for each word of ``text`` and each part of a hyphenated or dotted
    one; stop words left out."""
    out = []
    for word in _TERM.findall(text.lower()):
        parts = _PART.findall(word)
        out += [(w, stem(w)) for w in ([word] + (parts if len(parts) > 1 else [])) if w not in _STOP]
    return out


def terms(text: str) -> list[str]:
    """The index terms of ``text``: each word (lower case, its ending folded), and the parts of a hyphenated or
    dotted one; stop words left out."""
    return [term for _, term in _words(text)]


@dataclass(frozen=True)
class KeywordHit:
    unit_id: int
    score: float  # BM25
    matched: tuple[str, ...]  # the query's words (as written, lower case) whose terms the unit's text holds
    coverage: float = 0.0  # the IDF-weighted share of the query's terms the unit's text holds, in [0, 1]


@dataclass
class KeywordIndex:
    unit_ids: np.ndarray  # int64, one a document
    stamp: Stamp
    model: bm25s.BM25 | None  # None: no unit holds a term

    @classmethod
    def build(cls, catalog: Catalog) -> KeywordIndex:
        """The index of the catalog's texts as they are now."""
        found = stamp(catalog)
        ids, texts = unit_texts(catalog)
        docs = [terms(t) for t in texts]
        model = None
        if any(docs):
            import bm25s

            model = bm25s.BM25()
            model.index(docs, show_progress=False)
        return cls(np.asarray(ids, dtype=np.int64), found, model)

    def search(self, text: str, k: int, allowed: Collection[int] | None = None) -> list[KeywordHit]:
        """The ``k`` units whose text scores highest for ``text`` (only those in ``allowed`` when given), best
        first (ties by unit id); a unit sharing no term with the text is never a hit."""
        said = {}  # each term, as the query wrote it first: what a hit's matched words show
        for word, term in _words(text):
            said.setdefault(term, word)
        wanted = list(said)
        ids = [] if self.model is None else self.model.get_tokens_ids(wanted)
        if not ids:
            return []
        kept = None if allowed is None else np.fromiter(allowed, np.int64, count=len(allowed))  # a set or an array
        mask = None if kept is None else np.isin(self.unit_ids, kept).astype(np.float32)
        scores = self.model.get_scores_from_ids(ids, weight_mask=mask)
        order = [i for i in np.lexsort((self.unit_ids, -scores)) if scores[i] > 0][:k]
        held = {term: self.model.get_scores_from_ids([i])[order] > 0
                for term, i in zip([w for w in wanted if w in self.model.vocab_dict], ids, strict=True)}
        weight = self.idf(wanted)
        hits = []
        for n, doc in enumerate(order):
            matched = [term for term, has in held.items() if has[n]]
            share = sum(weight[t] for t in matched) / sum(weight.values())
            hits.append(KeywordHit(int(self.unit_ids[doc]), float(scores[doc]), tuple(said[t] for t in matched),
                                   min(1.0, share)))
        return hits

    def idf(self, wanted: list[str]) -> dict[str, float]:
        """Each term's inverse document frequency, ln(1 + (N - df + 0.5) / (df + 0.5)) as BM25 weighs it; a term
        no unit holds (a misspelling, a word the captions never use) weighs most, so it lowers every coverage."""
        n = len(self.unit_ids)
        vocab, indptr = self.model.vocab_dict, self.model.scores["indptr"]
        df = {t: int(indptr[vocab[t] + 1] - indptr[vocab[t]]) if t in vocab else 0 for t in wanted}
        return {t: float(np.log(1 + (n - d + 0.5) / (d + 0.5))) for t, d in df.items()}

    # -- the saved copy -----------------------------------------------------
    def save(self, index_dir: Path) -> None:
        """Written beside the old copy, then swapped in, so a reader finds a whole index or none."""
        final = index_dir / KEYWORD_DIR
        fresh = index_dir / f"{KEYWORD_DIR}.new-{os.getpid()}"
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir()
        np.save(fresh / "units.npy", self.unit_ids)
        if self.model is not None:
            self.model.save(str(fresh / "bm25"))
        state = {"format": FORMAT, "units": self.stamp.units, "digest": self.stamp.digest,
                 "described": self.stamp.described}
        (fresh / "state.json").write_text(json.dumps(state))
        old = index_dir / f"{KEYWORD_DIR}.old-{os.getpid()}"
        if final.exists():
            final.rename(old)
        fresh.rename(final)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, index_dir: Path) -> KeywordIndex:
        """The saved copy (OSError, ValueError or KeyError when it is missing or unreadable)."""
        folder = index_dir / KEYWORD_DIR
        state = json.loads((folder / "state.json").read_text())
        if state["format"] != FORMAT:
            raise OlderFormat(f"format {state['format']}, not {FORMAT}")
        import bm25s

        model = bm25s.BM25.load(str(folder / "bm25")) if (folder / "bm25").is_dir() else None
        ids = np.load(folder / "units.npy")
        return cls(ids, Stamp(state["units"], state["digest"], state["described"]), model)
