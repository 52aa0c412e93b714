"""A video's sound track as 16 kHz mono float32 samples (what voice detection and speech recognition take)."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

RATE = 16_000


def decode_audio(path: Path, rate: int = RATE) -> np.ndarray | None:
    """The first audio stream of ``path`` resampled to ``rate`` Hz mono; None when it has none or PyAV cannot
    read it (a file without sound says nothing)."""
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError):
        return None
    with container:
        if not container.streams.audio:
            return None
        resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
        chunks = []
        try:
            for frame in container.decode(container.streams.audio[0]):
                chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
            chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
        except av.FFmpegError:
            pass  # a damaged tail: what decoded before it is kept
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)
