import numpy as np
import pytest

from retrieval.core.pixels import FixedResize
from retrieval.core.sampling import FrameSpec
from retrieval.media.frames import DecodeError, output_size
from retrieval.media.video_decoder import VideoDecoder, plain_reason
from tests.media import decoded_frame_number, make_clip

BACKENDS = ["decord", "pyav"]


@pytest.fixture(scope="module")
def counted_clip(tmp_path_factory):
    """5 s at 10 fps; each frame's grey level encodes its number."""
    return make_clip(tmp_path_factory.mktemp("clips") / "counted.mp4", frames=50, fps=10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_decoders_return_the_sampled_frames_with_their_timestamps(counted_clip, backend):
    info, units = VideoDecoder(backends=[backend]).sample(counted_clip, 4)
    assert (info.frame_count, info.fps) == (50, 10.0)
    assert len(units) == 1
    frames = units[0][1]
    # 1 fps -> frames 0,10,20,30,40; uniform 4 of 5 -> positions 0,1,3,4 (gap 1.25)
    assert frames.indices == (0, 10, 30, 40)
    assert [decoded_frame_number(img) for img in frames.pixels] == [0, 10, 30, 40]
    np.testing.assert_allclose(frames.timestamps, [0.0, 1.0, 3.0, 4.0], atol=0.051)
    assert frames.pixels.dtype == np.uint8 and frames.pixels.shape[-1] == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_short_clip_is_padded_with_its_last_frame(tmp_path, backend):
    clip = make_clip(tmp_path / "short.mp4", frames=25, fps=10)  # 2.5 s -> 3 one-per-second frames
    _, units = VideoDecoder(backends=[backend]).sample(clip, 6)
    frames = units[0][1]
    assert frames.indices == (0, 10, 20, 20, 20, 20)
    assert [decoded_frame_number(img) for img in frames.pixels] == [0, 10, 20, 20, 20, 20]


@pytest.mark.parametrize("backend", BACKENDS)
def test_segments_become_units_with_times(counted_clip, backend):
    _, units = VideoDecoder(backends=[backend]).sample(counted_clip, 2, segment_seconds=2.0)
    assert [(s.start, s.end) for s, _ in units] == [(0.0, 2.0), (2.0, 4.0), (4.0, 5.0)]
    for (span, frames) in units:
        assert all(span.start * 10 <= i < span.end * 10 for i in frames.indices)
        assert [decoded_frame_number(img) for img in frames.pixels] == list(frames.indices)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("gop", [1, 7, 100])
def test_one_pass_over_all_units_returns_what_each_unit_alone_would(tmp_path, backend, gop):
    """All units are read in one forward pass (seeking only across keyframes): same frames as unit by unit."""
    clip = make_clip(tmp_path / f"gop{gop}.mp4", frames=55, fps=10, gop=gop)
    decoder = VideoDecoder(backends=[backend])
    _, units = decoder.sample(clip, 3, segment_seconds=1.5)
    assert len(units) == 4
    for span, frames in units:
        alone = decoder.sample_span(clip, 3, span.start, span.end)
        assert frames.indices == alone.indices and np.array_equal(frames.pixels, alone.pixels)
        assert [decoded_frame_number(img) for img in frames.pixels] == list(frames.indices)


def test_frames_are_resized_inside_the_decoder(tmp_path):
    clip = make_clip(tmp_path / "big.mp4", frames=10, fps=10, size=(1280, 720))
    _, units = VideoDecoder(short_side=128).sample(clip, 2)
    assert units[0][1].pixels.shape[1:3] == (128, 228)  # short side 128, aspect kept, even width


def test_output_size_never_upscales():
    assert output_size(176, 144, 256) == (176, 144)
    assert output_size(3840, 2160, 256) == (456, 256)


MOOV = "not a complete video file (moov atom not found)"


@pytest.mark.parametrize("name, content, reason", [
    ("empty.mp4", b"", "empty file (0 bytes)"),
    ("text.mp4", b"not a video at all\n" * 50, MOOV),
    ("bytes.mp4", bytes(range(256)) * 64, MOOV),
    ("text.mkv", b"not a video at all\n" * 50, "not a video file (invalid data)"),
])
def test_non_videos_raise_decode_error_with_plain_reasons(tmp_path, name, content, reason):
    bad = tmp_path / name
    bad.write_bytes(content)
    with pytest.raises(DecodeError) as info:
        VideoDecoder().sample(bad, 4)
    assert str(info.value) == reason  # what the file is, not each decoder's raw words


def test_a_truncated_video_is_reported_as_incomplete(tmp_path, example_videos):
    cut = tmp_path / "cut.mp4"
    cut.write_bytes((example_videos / "cup.mp4").read_bytes()[:3000])  # its header, then almost nothing
    with pytest.raises(DecodeError, match=r"^not a complete video file \(truncated\)$"):
        VideoDecoder().sample(cut, 4)


def test_unknown_failures_keep_each_decoders_words_and_say_a_shared_one_once():
    assert plain_reason([("decord", "boom"), ("pyav", "bang")]) == "decord: boom; pyav: bang"
    assert plain_reason([("decord", "no video stream"), ("pyav", "no video stream")]) == "no video stream"


def test_decord_takes_over_when_pyav_fails(counted_clip, monkeypatch):
    decoder = VideoDecoder()
    assert [b.name for b in decoder.backends] == ["pyav", "decord"]

    def broken(*args, **kwargs):
        raise RuntimeError("pyav cannot read this")

    monkeypatch.setattr(decoder.backends[0], "probe", broken)
    info, units = decoder.sample(counted_clip, 4)
    assert info.decoder == "decord"
    assert [decoded_frame_number(img) for img in units[0][1].pixels] == [0, 10, 30, 40]


def test_full_size_frames_come_from_pyav_first(counted_clip, monkeypatch):
    # decord decodes ahead of a reader that resizes each full-size frame before asking for the next:
    # on a 5 s 4K clip it held 2.2 GB where PyAV held 0.3 GB, so full-size specs start with PyAV

    decoder = VideoDecoder(backends=["decord", "pyav"])
    if sorted(b.name for b in decoder.backends) != ["decord", "pyav"]:
        pytest.skip("needs both decoders")
    monkeypatch.setattr(decoder, "backends", sorted(decoder.backends, key=lambda b: b.name != "decord"))
    info, units = decoder.sample(counted_clip, FrameSpec("linspace", 4, FixedResize(32, 24)))
    assert info.decoder == "pyav" and units[0][1].pixels.shape == (4, 24, 32, 3)
    assert decoder.sample(counted_clip, 4)[0].decoder == "decord"  # decoder-scaled frames keep the given order


def test_pyav_finds_the_exact_frame_when_a_damaged_stream_decodes_out_of_order(example_videos):
    # box.mp4 has a damaged IDR slice: PyAV hands its frames out of order (0.0, 0.101, 0.067, ...);
    # taking the first frame past a target picked a neighbour, the exact time picks the frame itself
    decord_frames = VideoDecoder(backends=["decord"]).sample_span(example_videos / "box.mp4", 8, 0.0, None)
    pyav_frames = VideoDecoder(backends=["pyav"]).sample_span(example_videos / "box.mp4", 8, 0.0, None)
    assert pyav_frames.indices == decord_frames.indices
    np.testing.assert_allclose(pyav_frames.timestamps, decord_frames.timestamps, atol=1e-3)
