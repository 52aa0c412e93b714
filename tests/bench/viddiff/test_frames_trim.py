"""VidDiff's ``frames_trim`` reaches the decoder as frame numbers: over many (start, end, fps) the frames a
`bench viddiff run` asks the LMM about are the ones VidDiff's own loader keeps.

The reference rule, re-implemented here from jmhb0/viddiff (``data/load_viddiff_dataset.py``): ``_load_video``
reads ``vid[slice(*frames_trim)]`` (decord's slice: ``range(*slice.indices(len))``, the end excluded), then
``_subsample_video`` keeps every ``int(fps / rate)``-th frame from the first kept one (every frame when the rate
is above the file's).
"""

import numpy as np
import pytest

from bench.viddiff import run
from bench.viddiff.data import DOMAIN_FPS, VidDiffSample
from retrieval.core.sampling import FrameSpec
from retrieval.lmm.clips import ClipRef, FrameCache
from retrieval.lmm.differences import MAX_RATE_FRAMES
from retrieval.media.frames import Frames, VideoInfo
from retrieval.media.video_decoder import VideoDecoder


def viddiff_frames(count: int, fps: float, trim, rate: float) -> list[int]:
    kept = list(range(count))[slice(*trim)]
    stride = fps / rate
    return kept[::1 if stride < 1 else int(stride)]


class CountingBackend:
    """A file of ``count`` frames at ``fps``: hands back the frame numbers it is asked for."""

    name = "counting"

    def __init__(self, count: int, fps: float):
        self.count, self.fps = count, fps

    def probe(self, path):
        return VideoInfo(self.count, self.fps, self.count / self.fps, 8, 8, self.name)

    def read(self, path, info, indices, resize):
        indices = list(indices)
        return Frames(np.zeros((len(indices), 1, 1, 3), np.uint8), np.asarray(indices) / info.fps, tuple(indices))


class Recorder:
    """An engine that keeps each DiffRequest and answers nothing."""

    def __init__(self):
        self.requests = []

    def diff(self, request):
        self.requests.append(request)
        raise run.SampleSkipped("recorded")


def _asked(tmp_path, monkeypatch, count, fps, trim, domain):
    """The frame numbers of video a a closed run asks about, through the run, the request and the frame cache."""
    path = tmp_path / "clip.mp4"
    path.write_bytes(b"\0")
    decoder = VideoDecoder(backends=["pyav"])
    decoder.backends = [CountingBackend(count, fps)]
    monkeypatch.setattr("retrieval.media.video_decoder.VideoDecoder", lambda *a, **k: decoder)
    sample = VidDiffSample("s", "easy", domain, f"{domain}_0", "an action", ((path, trim), (path, None)),
                           {"0": "wider stance"}, {"0": "a"}, 1)
    engine = Recorder()
    out = run.run_samples(engine, [sample], run.Asking("closed", "qwen2-vl"))
    if not engine.requests:
        return None, out.skipped["s"]
    request = engine.requests[0]
    clip = ClipRef(str(path), "h", *request.a_span, frames=request.a_frames)
    spec = FrameSpec.at_rate(request.fps, MAX_RATE_FRAMES)
    return list(FrameCache(decoder).get(clip, spec).indices), None


def _cases(n: int):
    rng = np.random.default_rng(8)
    for _ in range(n):
        fps = float(rng.choice([30.0, 30000 / 1001, 25.0, 24.0, 60.0, 12.0, 8.0]))
        domain = str(rng.choice(list(DOMAIN_FPS)))
        count = int(rng.integers(40, 4000))
        start = int(rng.integers(0, count - 1))
        # at most MAX_RATE_FRAMES frames at the domain's rate: past that convis widens the stride (said in
        # retrieval.core.sampling), where VidDiff refuses the clip
        longest = MAX_RATE_FRAMES * max(1, int(fps / DOMAIN_FPS[domain]))
        end = int(rng.integers(start + 1, min(count, start + longest) + 1))
        yield count, fps, (start, end), domain


def test_frame_ranges_pass_through_as_frame_numbers(tmp_path, monkeypatch):
    wrong = []
    for count, fps, trim, domain in _cases(400):
        asked, skipped = _asked(tmp_path, monkeypatch, count, fps, trim, domain)
        assert skipped is None, skipped
        expected = viddiff_frames(count, fps, trim, DOMAIN_FPS[domain])
        if asked != expected:
            wrong.append((count, fps, trim, domain, asked[:2], expected[:2], asked[-1:], expected[-1:]))
    assert not wrong, f"{len(wrong)} of 400 differ, e.g. {wrong[:3]}"


@pytest.mark.parametrize("trim", [(None, 50), (10, None), (-60, -5), (0, 10_000)])
def test_open_and_negative_bounds_read_as_a_python_slice(tmp_path, monkeypatch, trim):
    asked, _ = _asked(tmp_path, monkeypatch, 300, 30.0, trim, "ballsports")
    assert asked == viddiff_frames(300, 30.0, trim, DOMAIN_FPS["ballsports"])


@pytest.mark.parametrize("trim", [(40, 40), (50, 10), (300, 310)])
def test_an_empty_trim_skips_its_sample_with_the_reason(tmp_path, monkeypatch, trim):
    asked, skipped = _asked(tmp_path, monkeypatch, 300, 30.0, trim, "ballsports")
    assert asked is None and "holds no frame" in skipped
