"""Clips the LMM is shown: a file's span (``ClipRef``), each decoded once per command (``FrameCache``)."""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.core.sampling import FrameSpec
from retrieval.media.frames import Frames
from retrieval.media.video_decoder import VideoDecoder


@dataclass(frozen=True)
class ClipRef:
    """A clip to compare: a file (by path and content hash) and a time span (end None = to the end), or a range
    of frame numbers ``frames`` = (first, stop), stop excluded, which then decides alone."""

    path: str
    content_hash: str
    start: float = 0.0
    end: float | None = None
    frames: tuple[int, int] | None = None

    @property
    def key(self) -> str:
        if self.frames is not None:
            return f"{self.content_hash}@frames{self.frames[0]}-{self.frames[1]}"
        end = "end" if self.end is None else f"{self.end:.3f}"
        return f"{self.content_hash}@{self.start:.3f}-{end}"


class FrameCache:
    """Decode each (clip, frame spec) once per command."""

    def __init__(self, decoder: VideoDecoder | None = None):
        self._decoder = decoder
        self._frames: dict[tuple[str, FrameSpec], Frames] = {}
        self.decodes = 0

    @property
    def decoder(self) -> VideoDecoder:
        """Made at the first decode: making one imports the decoders (PyAV, decord), which a command that
        decodes nothing (a query whose anchor is indexed) never needs."""
        if self._decoder is None:
            self._decoder = VideoDecoder()
        return self._decoder

    def has(self, clip: ClipRef, spec: FrameSpec | int) -> bool:
        """Whether ``get`` would return without decoding."""
        return (f"{clip.path}|{clip.key}", spec) in self._frames

    def get(self, clip: ClipRef, spec: FrameSpec | int) -> Frames:
        key = (f"{clip.path}|{clip.key}", spec)
        if key not in self._frames:
            self._frames[key] = (self.decoder.sample_span(clip.path, spec, clip.start, clip.end)
                                 if clip.frames is None else self.decoder.sample_frames(clip.path, spec, *clip.frames))
            self.decodes += 1
        return self._frames[key]


def seen(frames: Frames) -> dict:
    """The frames a model was shown: frame numbers in the file and their timestamps (s)."""
    return {"indices": [int(i) for i in frames.indices],
            "timestamps": [round(float(t), 3) for t in frames.timestamps]}
