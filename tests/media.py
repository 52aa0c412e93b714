"""Synthetic video clips for tests, written with PyAV.

Frame ``i`` is filled with a grey level that encodes ``i``, so a test can tell from
the decoded pixels which frame a decoder returned.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from tests.paths import DATA

LEVEL_STEP = 4  # grey levels between consecutive frames: survives lossy coding


def frame_level(i: int) -> int:
    return (16 + i * LEVEL_STEP) % 240


def make_clip(path: Path, frames: int = 50, fps: int = 10, size: tuple[int, int] = (64, 48),
              codec: str = "libx264", pixels=None, gop: int = 10) -> Path:
    """Write ``frames`` frames, a keyframe every ``gop``; ``pixels(i)`` may return an (H, W, 3) uint8 image."""
    width, height = size
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": "10", "g": str(gop), "keyint_min": str(gop)}
        for i in range(frames):
            image = pixels(i) if pixels else np.full((height, width, 3), frame_level(i), np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def decoded_frame_number(image: np.ndarray) -> int:
    """Inverse of ``frame_level`` for an unwrapped level (frames < 56)."""
    return int(round((float(image.mean()) - 16) / LEVEL_STEP))


def make_audio_only(path: Path, seconds: float = 1.0) -> Path:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        samples = int(16000 * seconds)
        for start in range(0, samples, 1024):
            frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            frame.sample_rate, frame.pts = 16000, start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def make_empty_video(path: Path) -> Path:
    """A container with a video stream and no frames at all."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        out.start_encoding()  # write the header although no frame follows
    return path


def make_vfr_clip(path: Path, times: list[float], pixels=None) -> Path:
    """Frames shown at the given (irregular) times; frame i's grey level encodes i (or ``pixels(i)``)."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=1000)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.time_base = Fraction(1, 1000)
        stream.options = {"crf": "10"}  # near-lossless: the grey levels must read back
        for i, t in enumerate(times):
            image = pixels(i) if pixels else np.full((48, 64, 3), frame_level(i), np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = int(t * 1000), Fraction(1, 1000)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


# A 64x32 clip (left half white) whose container asks players to turn it 90 degrees.
ROTATED = DATA / "media" / "rotated90.mp4"


# Frames numbered past 56 and tagged with their video: the top half's grey level encodes
# ``i % 50``, the bottom half's ``i // 50 + 8 * video``. Both survive lossy coding and resizing.
def numbered_frame(i: int, video: int = 0, size: tuple[int, int] = (64, 48)) -> np.ndarray:
    width, height = size
    image = np.empty((height, width, 3), np.uint8)
    image[: height // 2] = 16 + LEVEL_STEP * (i % 50)
    image[height // 2:] = 16 + LEVEL_STEP * (i // 50 + 8 * video)
    return image


def read_numbered_frame(image: np.ndarray) -> tuple[int, int]:
    """(video, frame number) of a ``numbered_frame``, read away from the edge between the halves."""
    height = image.shape[0]
    top = image[height // 10: height * 4 // 10].mean()
    bottom = image[height * 6 // 10: height * 9 // 10].mean()
    low, high = (int(round((float(v) - 16) / LEVEL_STEP)) for v in (top, bottom))
    return high // 8, (high % 8) * 50 + low


# Damaged copies of a real clip whose index (moov) comes before its video data (mdat), as cup.mp4's does: the
# damage falls on the video data, the index stays whole, as on a disk or a download that went wrong.
def _video_data(data: bytes) -> tuple[int, int]:
    """(first, stop) byte offsets of an MP4's video data (its mdat box's payload, after its index)."""
    start = data.index(b"mdat") + 4
    assert data.index(b"moov") < start, "the clip's index must come before its video data"
    return start, len(data)


def overwritten(source: Path, path: Path, share: float = 0.10, seed: int = 0) -> Path:
    """``source`` with ``share`` of its video data's bytes overwritten with random ones (seeded)."""
    data = bytearray(source.read_bytes())
    first, stop = _video_data(bytes(data))
    rng = np.random.default_rng(seed)
    at = rng.integers(first, stop, int((stop - first) * share))
    for offset, value in zip(at, rng.integers(0, 256, len(at)), strict=True):
        data[offset] = int(value)
    path.write_bytes(bytes(data))
    return path


def holed(source: Path, path: Path, size: int = 200_000, at: float = 1 / 3) -> Path:
    """``source`` with ``size`` bytes of its video data zeroed, starting ``at`` of the way into it."""
    data = bytearray(source.read_bytes())
    first, stop = _video_data(bytes(data))
    start = first + int((stop - first) * at)
    data[start:start + size] = bytes(min(size, stop - start))
    path.write_bytes(bytes(data))
    return path


def cut_short(source: Path, path: Path, keep: float = 2 / 3) -> Path:
    """The first ``keep`` of ``source``'s bytes: a download or a copy that stopped."""
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def zeroed(source: Path, path: Path) -> Path:
    """``source`` with all its video data zeroed: the index is whole, no frame decodes."""
    data = bytearray(source.read_bytes())
    first, stop = _video_data(bytes(data))
    data[first:stop] = bytes(stop - first)
    path.write_bytes(bytes(data))
    return path


def frames_that_decode(path: Path) -> tuple[int, list[int], float]:
    """(frames the container lists, numbers of the frames a decode from the start gives, frame rate), by FFmpeg's
    own rule: every packet is handed to the decoder, one it refuses is passed over; a frame's number is the place
    of its time among the packets' times."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        packets, decoded = [], []
        for packet in container.demux(stream):
            if packet.size:
                packets.append(packet.pts)
            try:
                decoded += [frame.pts for frame in packet.decode()]
            except av.error.FFmpegError:
                pass  # on to the next packet
        listed, fps = max(len(packets), stream.frames), float(stream.average_rate)
    order = sorted(packets)
    return listed, sorted(order.index(pts) for pts in decoded), fps


SPEECH_RATE = 16_000


def spoken(text: str, folder: Path) -> np.ndarray:
    """``text`` said by espeak-ng, as 16 kHz mono float32 samples trimmed to where its voice is (|x| > 0.01)."""
    import subprocess

    from retrieval.media.audio import decode_audio

    wav = folder / "spoken.wav"
    subprocess.run(["espeak-ng", "-w", str(wav), text], check=True)
    samples = decode_audio(wav)
    loud = np.flatnonzero(np.abs(samples) > 0.01)
    return samples[loud[0]:loud[-1] + 1]


def tone(seconds: float, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * SPEECH_RATE)) / SPEECH_RATE
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SPEECH_RATE), np.float32)


def with_sound(video: Path, samples: np.ndarray, out: Path) -> Path:
    """``video`` with ``samples`` (16 kHz mono) as its AAC sound track."""
    import subprocess
    import wave

    wav = out.with_suffix(".wav")
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(SPEECH_RATE)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(video), "-i", str(wav), "-c:v", "copy",
                    "-c:a", "aac", str(out)], check=True)
    wav.unlink()
    return out
