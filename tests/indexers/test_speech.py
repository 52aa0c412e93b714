"""The speech indexer's voice detection on generated sound (espeak-ng speech, silence, tones) with the real
silero-vad weights, and Whisper's plumbing with a tiny random checkpoint."""

import numpy as np
import pytest

from bench.tiny.speech import tiny_whisper
from indexers.speech import SAMPLE_RATE, SpeechRecognizer
from tests.media import silence, spoken, tone


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    return spoken("the quick brown fox jumps over the lazy dog near the river bank", tmp_path_factory.mktemp("say"))


@pytest.fixture(scope="module")
def whisper(tmp_path_factory):
    return tiny_whisper(tmp_path_factory.mktemp("whisper") / "tiny")


def test_voiced_spans_are_within_a_fifth_of_a_second_of_the_speech(speech):
    said = len(speech) / SAMPLE_RATE
    audio = np.concatenate([silence(1.0), speech, silence(2.0), tone(2.0), silence(1.5), speech, silence(1.0)])
    second = 1.0 + said + 2.0 + 2.0 + 1.5
    found = SpeechRecognizer().voiced(audio)
    assert len(found) == 2
    for (start, end), (true_start, true_end) in zip(found, [(1.0, 1.0 + said), (second, second + said)], strict=True):
        assert abs(start - true_start) <= 0.2 and abs(end - true_end) <= 0.2, (found, true_start, true_end)


def test_silence_and_tones_never_reach_the_recogniser(whisper):
    recognizer = SpeechRecognizer(str(whisper))
    for audio in (silence(5.0), np.concatenate([tone(2.0), silence(1.0), tone(2.0, 880.0)]), silence(0.0)):
        spans = recognizer.voiced(audio)
        assert spans == [] and recognizer.transcribe(audio, spans) == []
    assert recognizer.calls == 0 and recognizer._asr is None  # Whisper was not even loaded


def test_whisper_lines_lie_within_their_voiced_span(speech, whisper):
    recognizer = SpeechRecognizer(str(whisper))
    audio = np.concatenate([silence(1.0), speech, silence(1.0)])
    spans = recognizer.voiced(audio)
    lines = recognizer.transcribe(audio, spans)
    assert recognizer.calls == len(spans) == 1
    assert all(spans[0][0] <= x.start <= x.end <= spans[0][1] and x.text for x in lines)
    assert recognizer.stamp == f"{whisper}@local"


def test_a_voiced_span_longer_than_whispers_window_is_heard_in_pieces(whisper):
    recognizer = SpeechRecognizer(str(whisper))
    audio = np.random.default_rng(0).standard_normal(int(65 * SAMPLE_RATE)).astype(np.float32) * 0.1
    lines = recognizer.transcribe(audio, [(0.0, 65.0)])
    assert recognizer.calls == 3  # 65 s: three pieces of 21.7 s, each within Whisper's 30 s
    assert all(0.0 <= x.start <= x.end <= 65.0 for x in lines)
