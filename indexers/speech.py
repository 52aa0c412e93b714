"""Speech to timed text: silero-vad finds where someone speaks, Whisper (transformers' automatic-speech-recognition
pipeline, with timestamps) writes down what is said there. Silence and music find no voice, so they cost the
recogniser nothing: it is not even loaded until a file has a voiced span.

Audio comes in as 16 kHz mono float32 samples (``retrieval.media.audio`` decodes it); lines go out as
(start, end, text) in seconds of the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from indexers.errors import unavailable

SAMPLE_RATE = 16_000  # what both silero-vad and Whisper take
DEFAULT_CHECKPOINT = "openai/whisper-small"  # multilingual, 244M parameters: runs on a CPU, faster on a GPU
MAX_NEW_TOKENS = 200  # a 30 s window says at most a few hundred tokens; a random model must stop somewhere
WINDOW_S = 30.0  # Whisper hears 30 s at a time: a longer voiced span is heard in pieces of at most this
GPU_BATCH = 8  # voiced spans a GPU transcribes at once (bf16); a CPU takes one at a time


@dataclass(frozen=True)
class SpokenLine:
    start: float
    end: float
    text: str


class SpeechRecognizer:
    """Voice activity detection, then Whisper on the voiced spans. ``calls``: spans handed to Whisper so far."""

    def __init__(self, checkpoint: str = DEFAULT_CHECKPOINT, device: str = "cpu"):
        self.checkpoint, self.device = checkpoint, device
        self.calls = 0
        self._vad = None
        self._asr = None

    @property
    def model_id(self) -> str:
        return f"whisper:{self.checkpoint}"

    @property
    def stamp(self) -> str:
        """What a file's speech lines were read with: the checkpoint and, where known, its revision."""
        asr = self._pipeline()
        revision = getattr(asr.model.config, "_commit_hash", None) or "local"
        return f"{self.checkpoint}@{revision}"

    def voiced(self, audio: np.ndarray) -> list[tuple[float, float]]:
        """(start, end) seconds of each span silero-vad hears a voice in."""
        if audio.size == 0:
            return []
        import torch
        from silero_vad import get_speech_timestamps

        found = get_speech_timestamps(torch.from_numpy(np.ascontiguousarray(audio, np.float32)), self._vad_model(),
                                      sampling_rate=SAMPLE_RATE, return_seconds=True)
        return [(float(s["start"]), float(s["end"])) for s in found]

    def transcribe(self, audio: np.ndarray, spans: Sequence[tuple[float, float]]) -> list[SpokenLine]:
        """Whisper's timed lines on each voiced span, in the file's seconds (a chunk's times held to its span)."""
        spans = [piece for span in spans for piece in _pieces(*span)]
        if not spans:
            return []
        asr = self._pipeline()
        inputs = [{"raw": audio[int(a * SAMPLE_RATE):int(b * SAMPLE_RATE)], "sampling_rate": SAMPLE_RATE}
                  for a, b in spans]
        self.calls += len(inputs)
        outputs = asr(inputs, return_timestamps=True,
                      batch_size=GPU_BATCH if self.device.startswith("cuda") else 1,
                      generate_kwargs={"max_new_tokens": self._max_new_tokens(asr)})
        lines = []
        for (a, b), out in zip(spans, outputs, strict=True):
            lines += _span_lines(a, b, out)
        return lines

    @staticmethod
    def _max_new_tokens(asr) -> int:
        # the prompt (start, language, task tokens) and the answer share the decoder's positions
        return max(1, min(MAX_NEW_TOKENS, asr.model.config.max_target_positions - 4))

    def _vad_model(self):
        if self._vad is None:
            from silero_vad import load_silero_vad

            self._vad = load_silero_vad()  # the weights ship in the wheel
        return self._vad

    def _pipeline(self):
        if self._asr is None:
            import torch
            from transformers import pipeline

            on_gpu = self.device.startswith("cuda")
            try:
                self._asr = pipeline("automatic-speech-recognition", model=self.checkpoint, device=self.device,
                                     dtype=torch.bfloat16 if on_gpu else torch.float32)
            except (OSError, ValueError, RuntimeError) as exc:  # not reachable, not a Whisper, not loadable here
                raise unavailable("speech", self.checkpoint, exc) from None
        return self._asr


def _pieces(start: float, end: float) -> list[tuple[float, float]]:
    """A voiced span cut into pieces Whisper hears whole (at most ``WINDOW_S`` each, of equal length)."""
    count = max(1, int(np.ceil((end - start) / WINDOW_S)))
    step = (end - start) / count
    return [(start + i * step, start + (i + 1) * step if i < count - 1 else end) for i in range(count)]


def _span_lines(start: float, end: float, out: dict) -> list[SpokenLine]:
    """A span's chunks as lines: times offset by the span's start and held within it (a chunk Whisper left open
    ends with its span); a span without chunks is one line."""
    chunks = out.get("chunks") or [{"timestamp": (0.0, None), "text": out.get("text", "")}]
    lines = []
    for chunk in chunks:
        a, b = chunk.get("timestamp") or (0.0, None)
        text = " ".join(str(chunk.get("text", "")).split())
        if not text:
            continue
        a = min(start + float(a or 0.0), end)
        b = end if b is None else min(max(start + float(b), a), end)
        lines.append(SpokenLine(round(a, 3), round(b, 3), text))
    return lines
