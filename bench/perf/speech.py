"""The speech indexer's throughput: seconds of sound a second, for voice detection (silero-vad, real weights) and
for detection with Whisper on the voiced spans (a tiny random Whisper: the pipeline's cost, not a real model's),
on generated tracks: espeak-ng speech between silences and tones, and silence alone (no Whisper call)."""

from __future__ import annotations

import subprocess
import time

import numpy as np

from bench.perf.config import Footage, PerfConfig, Progress
from bench.perf.sections.speech import SpeechResult
from bench.tiny.speech import tiny_whisper
from indexers.speech import SAMPLE_RATE, SpeechRecognizer
from retrieval.core.device import pick_device
from retrieval.media.audio import decode_audio

SENTENCES = ("the quick brown fox jumps over the lazy dog", "meet me at the old lighthouse at noon",
             "seventeen ships sailed past the harbour before dawn")
TRACK_S = 60.0  # a full run's track (a smoke run's: a fifth of it)


def run_speech(config: PerfConfig, footage: Footage, progress: Progress) -> list[SpeechResult]:
    seconds = TRACK_S / 5 if config.smoke else TRACK_S
    model = tiny_whisper(footage.scratch / "tiny-whisper")
    device = str(pick_device())
    silence = np.zeros(int(seconds * SAMPLE_RATE), np.float32)
    tracks = {"speech, silence and tones": mixed_track(footage, seconds), "silence": silence}
    rows = []
    for label, audio in tracks.items():
        progress(f"speech: {label}, {seconds:g} s of sound, tiny Whisper on {device}")
        rows.append(measure(SpeechRecognizer(str(model), device), label, audio))
    return rows


def measure(recognizer: SpeechRecognizer, label: str, audio: np.ndarray) -> SpeechResult:
    recognizer.voiced(audio[:SAMPLE_RATE])  # loads the detector: a run pays it once, not per file
    started = time.perf_counter()
    spans = recognizer.voiced(audio)
    vad_s = time.perf_counter() - started
    lines = recognizer.transcribe(audio, spans)
    total_s = time.perf_counter() - started
    return SpeechResult("tiny random Whisper", recognizer.device, label, round(audio.size / SAMPLE_RATE, 2),
                        round(sum(b - a for a, b in spans), 2), len(spans), recognizer.calls, len(lines),
                        round(vad_s, 3), round(total_s, 3))


def mixed_track(footage: Footage, seconds: float) -> np.ndarray:
    """Spoken sentences, each followed by a second of silence and a second of a tone, to ``seconds``."""
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    tone, quiet = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), np.zeros(SAMPLE_RATE, np.float32)
    said = [_spoken(text, footage) for text in SENTENCES]
    parts, total, i = [], 0, 0
    while total < seconds * SAMPLE_RATE:
        piece = np.concatenate([said[i % len(said)], quiet, tone, quiet])
        parts.append(piece)
        total, i = total + piece.size, i + 1
    return np.concatenate(parts)[:int(seconds * SAMPLE_RATE)]


def _spoken(text: str, footage: Footage) -> np.ndarray:
    wav = footage.scratch / "spoken.wav"
    try:
        subprocess.run(["espeak-ng", "-w", str(wav), text], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ValueError(f"the speech section speaks with espeak-ng (apt-get install -y espeak-ng): {exc}") from None
    return decode_audio(wav)
