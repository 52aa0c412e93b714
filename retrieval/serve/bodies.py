"""The JSON bodies of the asking routes (``/query``, ``/export/gallery``, ``/compare``, ``/diff``), each made into
the engine's request value by ``to_request``: the request checks the rest, as it does for the CLI.

A body's fields shared with a request value take their description and bounds from it (see fields.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Callable, Literal

from pydantic import Field, StringConstraints
from starlette.exceptions import HTTPException

from retrieval.api import (
    DEFAULT_K,
    MAX_CONCEPT_WEIGHT,
    MAX_K,
    MAX_TEXT_CHARS,
    MIN_CONCEPT_WEIGHT,
    Change,
    CompareRequest,
    Concept,
    DiffRequest,
    QueryRequest,
    parse_concepts,
)
from retrieval.api import request_fields as spec
from retrieval.serve.errors import RequestBody, Whole
from retrieval.serve.fields import MAX_CONCEPTS, NOT_BLANK, ConceptText, Ref, Seconds, WhereText, body_field

# what one /diff may ask: each statement is a model call (two when symmetric), as in `convis diff`
MAX_DIFF_STATEMENTS = 20
MAX_DIFF_PROPOSALS = 10
MAX_DIFF_ACTION_CHARS = 1000  # VidDiff's action descriptions are a few hundred characters at most
MAX_DIFF_STATEMENT_CHARS = 500
RerankMode = Literal[spec.RERANK_MODE.choices]  # type: ignore[valid-type]  # the choices the request declares


class ConceptIn(RequestBody):
    name: ConceptText = Field(..., examples=["location", "main-action", "camera angle"])
    weight: float = Field(1.0, ge=MIN_CONCEPT_WEIGHT, le=MAX_CONCEPT_WEIGHT, allow_inf_nan=False)


class QueryIn(RequestBody):
    # at least one concept, or a change (the schema says so too, so clients and checkers can know it)
    model_config = {"json_schema_extra": {"anyOf": [{"required": ["change"], "properties": {"change": {
                                                        "type": "string", "pattern": NOT_BLANK}}},
                                                    {"required": ["concepts"], "properties": {"concepts": {
                                                        "minItems": 1}}}]}}
    anchor: Ref = Field(..., description="Indexed path relative to the index root, or an upload ref.",
                        examples=["campus_01.mp4"])
    concepts: list[ConceptIn | ConceptText] = Field(
        [], max_length=MAX_CONCEPTS, description="Concepts with weights, or strings such as 'location=0.7'; at "
                                                 "least one unless `change` is given (then: the five ConViS ones).")
    change: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="Clips like the anchor but changed as "
                               "this says, e.g. 'a cup instead of a box' (a composed query).")
    change_weight: float = body_field(spec.CHANGE_WEIGHT, 1.0)
    most_different: bool = body_field(spec.MOST_DIFFERENT, False)
    k: Whole = body_field(spec.K, DEFAULT_K)
    start: Seconds | None = Field(None, ge=0, description="Use only the anchor from this second.")
    end: Seconds | None = Field(None, gt=0, description="Use only the anchor up to this second.")
    rerank: bool = Field(False, description="Rescore the top candidates with the server's --reranker.")
    rerank_top: Whole = body_field(spec.RERANK_TOP, 20, le=500)
    mode: RerankMode = body_field(spec.RERANK_MODE, "expected")
    symmetric: bool = body_field(spec.SYMMETRIC, False)
    free_text: bool = body_field(spec.FREE_TEXT, False)
    where: list[WhereText] = body_field(spec.WHERE, [], examples=[["duration > 10", "tags has goal"]])

    def to_request(self, resolve: Callable[[str], Path], reranker_for: Callable[[bool], str | None]) -> QueryRequest:
        """The query this body asks, its anchor's ref resolved to a file (``resolve``) and its ``rerank`` to the
        server's reranker (``reranker_for``); the request checks the rest."""
        if not self.concepts and not (self.change or "").strip():
            raise HTTPException(422, "give at least one concept, or a change")
        anchor = resolve(self.anchor)
        concepts = parsed_concepts(self.concepts, self.free_text) if self.concepts else ()
        return QueryRequest(anchor, concepts, self.k, self.start, self.end, reranker=reranker_for(self.rerank),
                            rerank_top=self.rerank_top, mode=self.mode, symmetric=self.symmetric,
                            change=None if self.change is None else Change(self.change, self.change_weight),
                            most_different=self.most_different, where=self.where)


class CompareIn(RequestBody):
    a: Ref = Field(..., description="The anchor: indexed path or upload ref.", examples=["campus_01.mp4"])
    b: Ref = Field(..., description="An indexed path.", examples=["campus_02.mp4"])
    concepts: list[ConceptIn | ConceptText] = Field(..., min_length=1, max_length=MAX_CONCEPTS)
    a_start: Seconds | None = Field(None, ge=0)
    a_end: Seconds | None = Field(None, gt=0)
    b_start: Seconds | None = Field(None, ge=0, description="Which unit of a segmented b (its start second).")
    rerank: bool = Field(False, description="Ask the server's --reranker (whole files) instead of the index's "
                                            "signals; either way scores are on the 0-1 scale.")
    mode: RerankMode = body_field(spec.RERANK_MODE, "expected")
    symmetric: bool = body_field(spec.SYMMETRIC, False)
    free_text: bool = body_field(spec.FREE_TEXT, False)
    where: list[WhereText] = body_field(spec.WHERE, [], description=spec.WHERE.help + " b is ranked among the "
                                        "units it keeps (the index's signals only).")

    def to_request(self, resolve: Callable[[str], Path], reranker_for: Callable[[bool], str | None]
                   ) -> CompareRequest:
        """The comparison this body asks (see ``QueryIn.to_request``)."""
        a, b = resolve(self.a), resolve(self.b)
        return CompareRequest(a, b, parsed_concepts(self.concepts, self.free_text), reranker_for(self.rerank),
                              self.mode, self.symmetric, a_span=(self.a_start, self.a_end), b_start=self.b_start,
                              where=self.where)


Statement = Annotated[str, StringConstraints(min_length=1, max_length=MAX_DIFF_STATEMENT_CHARS, pattern=NOT_BLANK)]


class DiffIn(RequestBody):
    a: Ref = Field(..., description="The anchor: indexed path or upload ref.", examples=["box.mp4"])
    b: Ref = Field(..., description="An indexed path.", examples=["cup.mp4"])
    a_start: Seconds | None = Field(None, ge=0)
    a_end: Seconds | None = Field(None, gt=0)
    b_start: Seconds | None = Field(None, ge=0, description="b's span, e.g. the compared unit's (`/compare`'s "
                                                            "`b_start`, `b_end`).")
    b_end: Seconds | None = Field(None, gt=0)
    action: str = Field(..., min_length=1, max_length=MAX_DIFF_ACTION_CHARS, pattern=NOT_BLANK,
                        description="What the clips show, e.g. 'a hand moving a box' (VidDiff's action).")
    statements: list[Statement] = Field(
        [], max_length=MAX_DIFF_STATEMENTS, description="Differences to place ('the box is larger'): the LMM says "
                                                        "which clip each is more true of. None: it proposes them.")
    most: Whole = Field(3, ge=1, le=MAX_DIFF_PROPOSALS, description="Without statements: how many differences the "
                                                                   "LMM may propose (each then placed the same way).")
    mode: RerankMode = "expected"
    symmetric: bool = False

    def to_request(self, resolve: Callable[[str], Path], reranker: str) -> DiffRequest:
        """What ``convis diff A B`` asks for this pair and their spans, of the server's ``reranker``."""
        given = {str(i): text for i, text in enumerate(self.statements)} or None
        return DiffRequest(resolve(self.a), resolve(self.b), action=self.action, statements=given,
                           most=None if given else self.most, reranker=reranker, mode=self.mode,
                           symmetric=self.symmetric, a_span=(self.a_start or 0.0, self.a_end),
                           b_span=(self.b_start or 0.0, self.b_end))


class ShownUnit(RequestBody):
    path: Ref
    start: Seconds = Field(..., ge=0, description="The unit's start second, as the result gives it.")


class GalleryIn(QueryIn):
    shown: list[ShownUnit] | None = Field(
        None, max_length=MAX_K, description="Only these results (by path and start), in their ranks: the ones a "
                                            "client shows after its own filters; none: every result.")


def parsed_concepts(concepts: list[ConceptIn | str], free_text: bool) -> list[Concept]:
    return parse_concepts([c if isinstance(c, str) else f"{c.name}={c.weight}" for c in concepts], free_text)
