"""The keyword index: BM25 over each unit's stored text (``unit_texts``), with the bm25s library.

Words are lower-cased and split so that names with hyphens, dots and digits stay one term ("F-16", "PS-2",
"3.5"), each part of such a name a term too; English stop words are dropped and nothing is stemmed, so a term
matches as written. The index is derived from the catalog, like the FAISS indices: it is saved in the index
folder (``keyword/``) with the stamp of the texts it was built from, and used only while that stamp is the
catalog's (``current``).
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

from retrieval.store.catalog import Catalog
from retrieval.store.keyword.unit_texts import Stamp, stamp, unit_texts

if TYPE_CHECKING:
    import bm25s  # imported where an index is built or loaded: scipy with it, which a vector search never needs

KEYWORD_DIR = "keyword"  # in the index folder
FORMAT = 1  # of the tokeniser and the saved files: another format is rebuilt
_TERM = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_STOP = frozenset((  # English stop words (bm25s's list, which importing bm25s for would bring scipy)
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will",
    "with"))


def terms(text: str) -> list[str]:
    """The index terms of ``text``: each word as written (lower case), and the parts of a hyphenated or dotted one."""
    out = []
    for word in _TERM.findall(text.lower()):
        parts = _PART.findall(word)
        out += [t for t in ([word] + (parts if len(parts) > 1 else [])) if t not in _STOP]
    return out


@dataclass(frozen=True)
class KeywordHit:
    unit_id: int
    score: float  # BM25
    matched: tuple[str, ...]  # the query's terms the unit's text holds


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
        wanted = list(dict.fromkeys(terms(text)))
        ids = [] if self.model is None else self.model.get_tokens_ids(wanted)
        if not ids:
            return []
        kept = None if allowed is None else np.fromiter(allowed, np.int64, count=len(allowed))  # a set or an array
        mask = None if kept is None else np.isin(self.unit_ids, kept).astype(np.float32)
        scores = self.model.get_scores_from_ids(ids, weight_mask=mask)
        order = [i for i in np.lexsort((self.unit_ids, -scores)) if scores[i] > 0][:k]
        held = {term: self.model.get_scores_from_ids([i])[order] > 0
                for term, i in zip([w for w in wanted if w in self.model.vocab_dict], ids, strict=True)}
        return [KeywordHit(int(self.unit_ids[doc]), float(scores[doc]),
                           tuple(term for term, has in held.items() if has[n]))
                for n, doc in enumerate(order)]

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
            raise ValueError(f"format {state['format']}")
        import bm25s

        model = bm25s.BM25.load(str(folder / "bm25")) if (folder / "bm25").is_dir() else None
        ids = np.load(folder / "units.npy")
        return cls(ids, Stamp(state["units"], state["digest"], state["described"]), model)
