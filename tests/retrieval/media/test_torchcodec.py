import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.core.pixels import DecoderScaled, FixedResize
from retrieval.media import frames, torchcodec_backend
from retrieval.media.frames import DecodeError
from retrieval.media.video_decoder import VideoDecoder
from tests.media import ROTATED, decoded_frame_number, make_clip

# box.mp4 has a damaged IDR slice: decord and PyAV disagree on its pixels today, so it is left out of identity
AGREED = ["bigbuckbunny.mp4", "bikes.mp4", "campus_01.mp4", "carphone_pristine.mp4", "cup.mp4"]


class FullSize:
    """Frames at their decoded size: the decoders' own pixels, compared as they are."""

    in_decoder = False

    def apply(self, frame):
        return frame


@pytest.fixture(scope="module")
def torchcodec():
    try:
        return torchcodec_backend.TorchCodecBackend()
    except ImportError as exc:
        pytest.skip(f"torchcodec unavailable here: {exc}")


@pytest.fixture(scope="module")
def pyav():
    return VideoDecoder(backends=["pyav"]).backends[0]


@pytest.fixture
def notices(monkeypatch):
    """The notices said during the test (each once), from a clean slate."""
    said: list[str] = []
    monkeypatch.setattr(frames, "_NOTICES", said)
    return said


def _some_indices(count: int) -> list[int]:
    return [0, count // 3, count // 2 + 1, count - 2, count // 3]  # out of order, one repeated


@pytest.mark.parametrize("name", AGREED)
def test_probe_reports_what_pyav_reports(torchcodec, pyav, example_videos, name):
    ours, theirs = torchcodec.probe(example_videos / name), pyav.probe(example_videos / name)
    assert ours.decoder == "torchcodec"
    assert (ours.frame_count, ours.width, ours.height, ours.rotation) == (
        theirs.frame_count, theirs.width, theirs.height, theirs.rotation)
    assert ours.fps == pytest.approx(theirs.fps, rel=1e-3)
    assert ours.duration == pytest.approx(theirs.duration, abs=1 / theirs.fps)


@pytest.mark.parametrize("name", AGREED)
def test_full_size_frames_are_pixel_identical_to_pyav_and_decord(torchcodec, pyav, example_videos, name):
    path = example_videos / name
    info = pyav.probe(path)
    indices = _some_indices(info.frame_count)
    ours = torchcodec.read(path, torchcodec.probe(path), indices, FullSize())
    assert ours.indices == tuple(indices) and ours.pixels.dtype == np.uint8
    assert np.array_equal(ours.pixels, pyav.read(path, info, indices, FullSize()).pixels)
    np.testing.assert_allclose(ours.timestamps, np.array(indices) / info.fps, atol=0.5 / info.fps)
    decoders = VideoDecoder(backends=["decord"]).backends
    if decoders:
        assert np.array_equal(ours.pixels, decoders[0].read(path, info, indices, FullSize()).pixels)


@pytest.mark.parametrize("name", ["bigbuckbunny.mp4", "cup.mp4"])
def test_resizing_is_the_other_decoders(torchcodec, pyav, example_videos, name):
    path = example_videos / name
    info = pyav.probe(path)
    indices = _some_indices(info.frame_count)
    # a per-frame resize (PIL) of identical frames: identical pixels
    fixed = FixedResize(96, 64)
    ours, theirs = torchcodec.read(path, info, indices, fixed).pixels, pyav.read(path, info, indices, fixed).pixels
    assert np.array_equal(ours, theirs)
    # decoder-scaled: the same size; PyAV scales the YUV picture, torchcodec the RGB one, about a grey level apart
    scaled = DecoderScaled(128)
    ours, theirs = torchcodec.read(path, info, indices, scaled).pixels, pyav.read(path, info, indices, scaled).pixels
    width, height = scaled.decoder_size(info.width, info.height)
    assert ours.shape == theirs.shape == (len(indices), height, width, 3)
    assert np.abs(ours.astype(int) - theirs).mean() < 2.0


def test_sampled_units_are_the_frames_asked_for(torchcodec, tmp_path):
    clip = make_clip(tmp_path / "counted.mp4", frames=55, fps=10, gop=7)
    info, units = VideoDecoder(backends=["torchcodec"]).sample(clip, 3, segment_seconds=1.5)
    assert info.decoder == "torchcodec" and len(units) == 4
    for _, unit in units:
        assert [decoded_frame_number(img) for img in unit.pixels] == list(unit.indices)
    padded = VideoDecoder(backends=["torchcodec"]).sample(make_clip(tmp_path / "short.mp4", frames=25, fps=10), 6)
    assert [decoded_frame_number(img) for img in padded[1][0][1].pixels] == [0, 10, 20, 20, 20, 20]


def test_rotated_video_is_decoded_upright(torchcodec):
    info, units = VideoDecoder(backends=["torchcodec"]).sample(ROTATED, 2)
    pixels = units[0][1].pixels[0]
    assert (info.width, info.height, info.rotation) == (32, 64, 0) and pixels.shape == (64, 32, 3)
    assert pixels[0].mean() < 20 and pixels[-1].mean() > 235


@pytest.mark.parametrize("content", [b"not a video at all\n" * 50, bytes(range(256)) * 64])
def test_a_broken_file_is_a_decode_error_with_a_one_line_reason(torchcodec, tmp_path, example_videos, content):
    for bad in (tmp_path / "bad.mp4", tmp_path / "cut.mp4"):
        bad.write_bytes(content if bad.name == "bad.mp4" else (example_videos / "cup.mp4").read_bytes()[:3000])
        with pytest.raises(DecodeError) as info:
            VideoDecoder(backends=["torchcodec"]).sample(bad, 4)
        reason = str(info.value)
        assert reason and "\n" not in reason and ".cpp" not in reason and str(bad) not in reason


def test_cuda_without_a_gpu_decodes_on_the_cpu_and_says_so_once(torchcodec, notices, monkeypatch, example_videos):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    decoder = VideoDecoder(device="cuda")
    assert [b.name for b in decoder.backends] == ["torchcodec", *[b.name for b in VideoDecoder().backends]]
    assert decoder.backends[0].device == "cpu"
    VideoDecoder(device="cuda")
    assert notices == ["decode on cuda unavailable (torch sees no CUDA device); decoding on cpu"]
    info, units = decoder.sample(example_videos / "cup.mp4", 4)
    assert info.decoder == "torchcodec" and units[0][1].pixels.shape[0] == 4


def test_nvdec_failing_falls_back_to_the_cpu_once(torchcodec, notices, monkeypatch, example_videos):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    backend = torchcodec_backend.TorchCodecBackend(device="cuda")
    assert backend.device == "cuda" and notices == []
    real = backend._decoders.VideoDecoder
    devices = []

    def nvdec_fails(source, **kwargs):
        devices.append(kwargs["device"])
        if kwargs["device"].startswith("cuda"):
            raise RuntimeError("CUDA error: no CUDA-capable device is detected\nmore words")
        return real(source, **kwargs)

    monkeypatch.setattr(backend._decoders, "VideoDecoder", nvdec_fails)
    path = example_videos / "cup.mp4"
    info = backend.probe(path)
    batch = backend.read(path, info, [0, 5], DecoderScaled(64))
    assert batch.pixels.shape[0] == 2 and devices == ["cuda", "cpu", "cpu"] and backend.device == "cpu"
    assert notices == ["decode on cuda unavailable (CUDA error: no CUDA-capable device is detected); decoding on cpu"]


def test_a_broken_file_on_cuda_keeps_the_gpu(torchcodec, notices, monkeypatch, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    backend = torchcodec_backend.TorchCodecBackend(device="cuda:0")
    real = backend._decoders.VideoDecoder
    monkeypatch.setattr(backend._decoders, "VideoDecoder", lambda source, **kw: real(source, **{**kw, "device": "cpu"}))
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all\n" * 50)
    with pytest.raises(DecodeError):
        backend.probe(bad)
    assert backend.device == "cuda:0" and notices == []


def test_without_torchcodec_the_decoders_go_on(notices, monkeypatch, counted_clip_path):
    monkeypatch.setitem(sys.modules, "torchcodec.decoders", None)  # an import of it fails as if not installed
    cpu = VideoDecoder()
    assert "torchcodec" not in [b.name for b in cpu.backends] and notices == []
    gpu = VideoDecoder(device="cuda")
    assert [b.name for b in gpu.backends] == [b.name for b in cpu.backends]
    assert notices == ["decode on cuda unavailable (torchcodec is not installed); decoding on cpu"]
    assert [decoded_frame_number(img) for img in gpu.sample(counted_clip_path, 4)[1][0][1].pixels] == [0, 10, 30, 40]
    with pytest.raises(RuntimeError):
        VideoDecoder(backends=["torchcodec"])


def test_torchcodec_that_cannot_load_its_libraries_is_said_once(notices, monkeypatch):
    def broken():
        raise frames.BackendUnavailable("torchcodec cannot load its FFmpeg libraries: libavutil.so.58")

    monkeypatch.setattr(torchcodec_backend, "_load_torchcodec", broken)
    for _ in range(2):
        assert [b.name for b in VideoDecoder(backends=["torchcodec", "pyav"]).backends] == ["pyav"]
    assert notices == ["torchcodec cannot load its FFmpeg libraries: libavutil.so.58; decoding with the other decoders"]


def test_the_default_order_on_the_cpu_loads_neither_torch_nor_torchcodec():
    code = ("import sys; from retrieval.media.video_decoder import VideoDecoder; d = VideoDecoder(); "
            "print([b.name for b in d.backends], 'torch' in sys.modules, 'torchcodec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3]).stdout.strip()
    assert out.endswith("False False") and "torchcodec" not in out.split("]")[0]


@pytest.fixture(scope="module")
def counted_clip_path(tmp_path_factory):
    return make_clip(tmp_path_factory.mktemp("clips") / "counted.mp4", frames=50, fps=10)
