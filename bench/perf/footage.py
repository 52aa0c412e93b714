"""The clips a run measures: found in a folder, linked into another, or generated."""

from __future__ import annotations

import os
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np

from retrieval.media.scan import find_videos


def list_clips(folder: Path) -> list[Path]:
    found, _ = find_videos(Path(folder))
    return [Path(f.path) for f in found]


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link, or a copy on another file system (a symlink would be refused: it points outside
    the folder being indexed)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy(source, target)


def hard_link_copies(source: Path, folder: Path, copies: int) -> Path:
    """``copies`` hard links (or copies) of every clip: a longer run of the same footage."""
    folder.mkdir()
    for clip in list_clips(source):
        for i in range(copies):
            link_or_copy(clip, folder / f"{i:02d}_{clip.name}")
    return folder


def write_test_video(path: Path, width: int, height: int, seconds: float, fps: int = 25,
                     bitrate: int = 2_000_000, preset: str = "ultrafast") -> Path:
    """H.264 footage of a moving pattern (PyAV, libx264), cheap to generate at any size.

    Frames are built directly in YUV 4:2:0 from a few shifted planes so that writing a long 4K
    file costs about the encoder's time, not numpy's.  Keyframes follow x264's default (every
    250 frames), as in typical camera or web footage.
    """
    import av  # av: ~15 MB resident; only processes that handle video load it, so search rows' peak RSS stays clean

    y0 = _pattern(width, height)
    chroma = np.full((height // 2, width), 128, np.uint8)  # U then V plane, packed as yuv420p rows
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.bit_rate = bitrate
        stream.options = {"preset": preset}
        for i in range(int(seconds * fps)):
            luma = np.roll(y0, (i * 4) % width, axis=1)  # a pan: every frame differs
            frame = av.VideoFrame.from_ndarray(np.concatenate([luma, chroma]), format="yuv420p")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def _pattern(width: int, height: int) -> np.ndarray:
    x = np.arange(width, dtype=np.float32)[None, :]
    y = np.arange(height, dtype=np.float32)[:, None]
    return (128 + 60 * np.sin(x / 37) * np.cos(y / 23) + 40 * np.sin((x + y) / 97)).astype(np.uint8)


def make_clips(folder: Path, count: int = 2, seconds: float = 4.0) -> list[Path]:
    """Small synthetic clips (smoke runs and machines without footage)."""
    folder.mkdir(parents=True, exist_ok=True)
    return [write_test_video(folder / f"synthetic_{i:02d}.mp4", 160 + 32 * i, 96, seconds, fps=10,
                             bitrate=200_000) for i in range(count)]
