"""Reranking with the next pairs' clips decoded while the model scores the first ones (``PairScorer._decoded``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from rerankers.base import PairScore
from retrieval.core.concepts import Concept
from retrieval.lmm.clips import ClipRef, FrameCache
from retrieval.lmm.similarity import PairScorer, fed_chunks
from retrieval.media.frames import DecodeError, Frames

WAIT_S = 20.0  # a deadline for an event that must come, not a measured margin


class Decoder:
    """Decodes instantly, except ``held``, whose decode waits until ``release`` is set; ``broken`` fails."""

    def __init__(self, held: str = "", broken: str = ""):
        self.held, self.broken = held, broken
        self.release, self.events = threading.Event(), []

    def sample_span(self, path, spec, start, end):
        if path == self.held:
            self.events.append(("held decode waited", self.release.wait(WAIT_S)))
        if path == self.broken:
            raise DecodeError(f"{path}: no video stream")
        self.events.append(("decoded", path))
        return Frames(np.zeros((2, 4, 4, 3), np.uint8), np.array([0.0, 1.0]), (0, 1))


class Reranker:
    """Scores every pair 3; the first call lets the held decode go on (what a model running meanwhile allows)."""

    cache_tag, frame_spec, batch_size, scale = "fake", 2, 1, "1-5"

    def __init__(self, decoder: Decoder):
        self.decoder, self.calls = decoder, []

    def score_pairs(self, pairs, concept_words, mode, prepared=False):
        self.decoder.events.append(("scored", len(pairs)))
        self.decoder.release.set()
        self.calls.append(len(pairs))
        return [PairScore(3.0, mode) for _ in pairs]


def clips(n: int) -> list[ClipRef]:
    return [ClipRef(f"c{i}.mp4", f"h{i}") for i in range(n)]


def test_the_model_scores_the_first_pairs_before_the_last_clip_is_decoded():
    anchor, *candidates = clips(8)
    decoder = Decoder(held=candidates[-1].path)
    reranker = Reranker(decoder)
    scores = PairScorer(reranker, None, FrameCache(decoder)).score([(anchor, c) for c in candidates],
                                                                   Concept("location", "location"))
    assert [s.score for s in scores] == [3.0] * 7 and reranker.calls == [2, 4, 1]
    first_score = decoder.events.index(("scored", 2))
    # the held clip's decode started before the first score and went on once the model ran: it never timed out
    assert ("held decode waited", True) in decoder.events
    assert first_score < decoder.events.index(("decoded", candidates[-1].path))


def test_clips_decoded_already_go_in_one_call():
    anchor, *candidates = clips(6)
    decoder = Decoder()
    frames = FrameCache(decoder)
    scorer = PairScorer(Reranker(decoder), None, frames)
    scorer.score([(anchor, c) for c in candidates], Concept("location", "location"))
    again = Reranker(decoder)
    PairScorer(again, None, frames).score([(anchor, c) for c in candidates], Concept("main-action", "main action"))
    assert again.calls == [5] and frames.decodes == 6


def test_a_clip_that_fails_to_decode_raises_its_own_error_after_the_pairs_before_it_are_scored():
    anchor, *candidates = clips(6)
    decoder = Decoder(broken=candidates[3].path)
    reranker = Reranker(decoder)
    with pytest.raises(DecodeError, match="c4.mp4: no video stream"):
        PairScorer(reranker, None, FrameCache(decoder)).score([(anchor, c) for c in candidates],
                                                              Concept("location", "location"))
    assert reranker.calls == [2]  # the first chunk scored; the chunk holding the broken clip raised


def test_chunks_grow_from_two_batches():
    assert fed_chunks(list(range(20)), 2) == [list(range(4)), list(range(4, 12)), list(range(12, 20))]
    assert fed_chunks([], 4) == []
