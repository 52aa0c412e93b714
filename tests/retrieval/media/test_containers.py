"""Containers decoders seek in inexactly (MPEG-TS, WMV): the frames asked for, at times counted from the first."""

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from retrieval.core.pixels import DecoderScaled
from retrieval.media.pyav_backend import PyAVBackend, inexact_seek_container
from retrieval.media.video_decoder import VideoDecoder
from tests.media import make_clip, numbered_frame, read_numbered_frame

FPS, FRAMES = 25, 300
WANTED = [0, 50, 120, 170, 230, 299]


def make_numbered(path: Path, container: str, codec: str, b_frames: int) -> Path:
    """Long keyframe intervals and B-frames, as broadcast recordings have: seeks land far from their target."""
    with av.open(str(path), "w", format=container) as out:
        stream = out.add_stream(codec, rate=Fraction(FPS))
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.bit_rate = 2_000_000
        stream.codec_context.gop_size = 100
        stream.codec_context.max_b_frames = b_frames
        for i in range(FRAMES):
            for packet in stream.encode(av.VideoFrame.from_ndarray(numbered_frame(i), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


@pytest.fixture(params=[("clip.ts", "mpegts", "mpeg2video", 2), ("clip.wmv", "asf", "wmv2", 0)],
                ids=["mpeg2-ts", "wmv2"])
def broadcast_clip(request, tmp_path) -> Path:
    name, container, codec, b_frames = request.param
    return make_numbered(tmp_path / name, container, codec, b_frames)


def frame_numbers(pixels) -> list[int]:
    return [read_numbered_frame(image)[1] for image in pixels]


def test_the_frames_asked_for_come_back_with_their_own_times(broadcast_clip):
    _, units = VideoDecoder().sample(broadcast_clip, 6, segment_seconds=4)
    for _, sampled in units:
        assert frame_numbers(sampled.pixels) == list(sampled.indices)
        np.testing.assert_allclose(sampled.timestamps, np.array(sampled.indices) / FPS, atol=1e-6)


def test_pyav_reads_transport_streams_exactly_and_counts_time_from_their_first_frame(tmp_path):
    clip = make_numbered(tmp_path / "clip.ts", "mpegts", "mpeg2video", 2)
    with av.open(str(clip)) as container:
        assert container.streams.video[0].start_time > 0  # the stream's clock does not start at 0
    backend = PyAVBackend()
    frames = backend.read(clip, backend.probe(clip), WANTED, DecoderScaled(48))
    assert frame_numbers(frames.pixels) == WANTED
    np.testing.assert_allclose(frames.timestamps, np.array(WANTED) / FPS, atol=1e-6)


def test_containers_are_told_apart_by_their_first_bytes(tmp_path, broadcast_clip):
    assert inexact_seek_container(broadcast_clip)
    mp4 = make_clip(tmp_path / "clip.mp4", frames=5)
    assert not inexact_seek_container(mp4)
    renamed = broadcast_clip.rename(broadcast_clip.with_suffix(".mp4"))  # the bytes say what it is, not the name
    assert inexact_seek_container(renamed)
