"""Speech: the speech indexer's seconds of sound a second, voice detection alone and with Whisper."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Section, one_table, ratio, rounded


@dataclass(frozen=True)
class SpeechResult:
    """The speech indexer on one generated sound track: voice detection alone, then with Whisper on the voiced
    spans; seconds of sound each gets through a second."""

    model: str
    device: str
    track: str  # what the track holds: "speech, silence and tones", "silence"
    audio_s: float
    voiced_s: float
    spans: int
    calls: int  # voiced spans handed to Whisper
    lines: int
    vad_s: float  # wall seconds of voice detection
    total_s: float  # wall seconds of detection and recognition

    @property
    def vad_audio_per_s(self) -> float:
        return ratio(self.audio_s, self.vad_s)

    @property
    def audio_per_s(self) -> float:
        return ratio(self.audio_s, self.total_s)


HEAD = ["model", "device", "track", "sound s", "voiced s", "spans", "Whisper calls", "lines", "sound s/s, VAD",
        "sound s/s, VAD + Whisper"]


def _row(r: SpeechResult) -> list:
    return [r.model, r.device, r.track, f"{r.audio_s:g}", f"{r.voiced_s:g}", r.spans, r.calls, r.lines,
            f"{r.vad_audio_per_s:.1f}", f"{r.audio_per_s:.1f}"]


SECTION = Section(
    "speech", "the speech indexer on a generated minute of sound (espeak-ng speech, silences, tones; and silence "
              "alone): seconds of sound a second for silero-vad alone and with a tiny random Whisper on the voiced "
              "spans, and the spans it was handed",
    SpeechResult, "bench.perf.speech:run_speech", one_table("Speech", HEAD, _row),
    derived=rounded(audio_per_s=2, vad_audio_per_s=2), needs_clips=False)
