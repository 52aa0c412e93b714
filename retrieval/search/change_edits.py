"""The anchor's texts edited by an LMM as a composed query's change says, as CIReVL and CoVRAGE edit a reference's
description: the query's ``--reranker``, else the LMM that captioned the index.

Each of the anchor's texts (its caption, each concept's description) is one text-only request
(``rerankers.prompts.edit``), answered greedily.  Answers are kept in the index's edit cache
(``retrieval.store.caches.edits``), keyed by the anchor, the text, the change, the model and the request's version,
so a repeated query loads and asks no model.  An answer that cannot be the edited text (empty, too long, not
words), or a model that cannot be had or asked, leaves the text to the rule (``change_reading.edit``), with a
notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rerankers.factory import lmm_identity
from rerankers.prompts.edit import EDIT_PROMPT_VERSION, EDIT_TOKENS, edit_request, read_edit
from retrieval.core.errors import ConvisError, one_line
from retrieval.search.change_reading import TextEdit, rule_edit, text_label
from retrieval.store.caches.anchor import span_of
from retrieval.store.caches.edits import EDITS_NAME, EditCache, EditKey


@dataclass
class LmmEditor:
    """Edits the texts of one anchor as one change says, with one LMM (built only when an answer is not cached)."""

    change: str
    model_id: str
    revision: str
    build: Callable[[], object]  # the Reranker, built (or shared) on first need
    cache: EditCache
    anchor: tuple[str, str]  # (content hash, span)
    notices: list[str]
    model_calls: int = 0  # text-only requests this editor sent to the model

    def __call__(self, texts: dict[str, str]) -> dict[str, TextEdit]:
        """name -> text in; name -> the text edited by the LMM, or by the rule where its answer cannot be used."""
        answers = {name: self.cache.get(self._key(name, text), self.notices) for name, text in texts.items()}
        cached = {name for name, answer in answers.items() if answer is not None}
        answers.update(self._asked({n: t for n, t in texts.items() if n not in cached}))
        return {name: self._read(name, text, answers.get(name), name in cached) for name, text in texts.items()}

    def _key(self, name: str, text: str) -> EditKey:
        return EditKey(*self.anchor, name, text, self.change, f"{self.model_id}@{self.revision}", EDIT_PROMPT_VERSION)

    def _asked(self, texts: dict[str, str]) -> dict[str, str]:
        """The model's answer for each of ``texts``, cached as they come; none (with a notice) where it cannot
        be built or asked."""
        if not texts:
            return {}
        answers = {}
        try:
            model = self.build()
            for name, text in texts.items():
                self.model_calls += 1
                answers[name] = str(model.answer_text(edit_request(text, self.change), EDIT_TOKENS))
                self.cache.put(self._key(name, text), answers[name], self.notices)
        except (ConvisError, RuntimeError) as exc:  # RuntimeError: torch's (out of memory, a CUDA fault)
            # an edit only sharpens the query: a model that fails leaves the texts to the rule
            self.notices.append(f"the LMM {self.model_id} could not edit the anchor's texts ({one_line(exc, 160)}); "
                                "the rule edits them")
        return answers

    def _read(self, name: str, text: str, answer: str | None, cached: bool) -> TextEdit:
        if answer is None:  # not asked: the model could not be had (said once)
            return rule_edit(text, self.change)
        edited, why = read_edit(answer, text, self.change)
        if edited is not None:
            return TextEdit(edited, f"lmm:{self.model_id}", cached)
        fallback = rule_edit(text, self.change)
        self.notices.append(f"the LMM's edit of the anchor's {text_label(name)} could not be used ({why}); "
                            + ("the rule edited it" if fallback.text else "it was left unedited"))
        return fallback


def change_editor(spec, change: str, anchor: tuple[str | None, float | None, float | None], index_dir: Path,
                  build: Callable[[object], object], notices: list[str]) -> LmmEditor | None:
    """The LMM editor of ``spec`` (the query's reranker or the index's captioner; None: there is none, and the
    rule edits) for an anchor (content hash, start, end), caching beside the index in ``index_dir``; ``build``
    makes the model from ``spec``.  A spec no family claims is said in a notice, and the rule edits."""
    if not spec:
        return None
    try:
        model_id, revision = lmm_identity(spec)
    except ConvisError as exc:
        notices.append(f"the LMM {spec} could not edit the anchor's texts ({one_line(exc, 160)}); the rule edits them")
        return None
    content_hash, start, end = anchor
    return LmmEditor(change, model_id, revision, lambda: build(spec), EditCache(index_dir / EDITS_NAME),
                     (content_hash or "", span_of(start, end)), notices)
