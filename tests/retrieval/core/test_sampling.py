import math

import pytest

from retrieval.core.sampling import FrameSpec, per_second_indices, sample_frame_indices, uniform_indices
from retrieval.media.frames import Span, VideoInfo, span_frame_indices, spans


@pytest.mark.parametrize(
    "n, wanted, expected",
    [
        (16, 8, [1, 3, 5, 7, 9, 11, 13, 15]),  # gap 2: int(2i + 1)
        (10, 4, [1, 3, 6, 8]),  # gap 2.5: int(2.5i + 1.25)
        (8, 8, list(range(8))),
        (3, 8, [0, 1, 2, 2, 2, 2, 2, 2]),  # short clip: padded with the last frame
        (1, 4, [0, 0, 0, 0]),
        (0, 4, []),
    ],
)
def test_uniform_indices_follow_the_reference_formula(n, wanted, expected):
    assert uniform_indices(n, wanted) == expected


def test_uniform_indices_formula_for_many_sizes():
    for n in range(1, 200, 7):
        for wanted in (1, 2, 8, 16):
            got = uniform_indices(n, wanted)
            assert len(got) == wanted
            if n >= wanted:
                gap = n / wanted
                assert got == [int(i * gap + gap / 2) for i in range(wanted)]
                assert got == sorted(set(got))  # distinct, increasing


def test_one_frame_per_second_then_uniform():
    assert per_second_indices(100, 25.0) == [0, 25, 50, 75]
    assert per_second_indices(10, 0) == list(range(10))  # unknown fps: every frame is a candidate
    # 16 s at 30 fps -> 16 one-per-second frames -> the reference's 8
    assert sample_frame_indices(480, 30.0, 8) == [30, 90, 150, 210, 270, 330, 390, 450]


def test_spans_split_long_videos_and_merge_short_tails():
    assert spans(25.0, None) == [Span(0, 0.0, 25.0)]
    assert spans(25.0, 10.0) == [Span(0, 0.0, 10.0), Span(1, 10.0, 20.0), Span(2, 20.0, 25.0)]
    assert spans(23.0, 10.0) == [Span(0, 0.0, 10.0), Span(1, 10.0, 23.0)]  # 3 s tail merged
    assert spans(8.0, 10.0) == [Span(0, 0.0, 8.0)]


def test_span_frame_indices_stay_inside_the_span():
    info = VideoInfo(frame_count=300, fps=10.0, duration=30.0, width=64, height=48, decoder="test")
    idx = span_frame_indices(info, Span(1, 10.0, 20.0), 4)
    assert all(100 <= i < 200 for i in idx)
    assert idx == [100 + 10 * j for j in uniform_indices(10, 4)]


# --------------------------------------------------------------------------- a fixed rate (VidDiff)


def _viddiff_subsample(n: int, fps_original: float, fps_target: float) -> list[int]:
    """data/load_viddiff_dataset._subsample_video, written out on frame numbers."""
    subsample_time = fps_original / fps_target
    if subsample_time < 1:
        return list(range(n))
    return list(range(n))[::int(subsample_time)]


@pytest.mark.parametrize("n, fps, rate", [(300, 30.0, 5.0), (300, 30.0, 4.0), (96, 8.0, 4.0), (120, 12.0, 6.0),
                                          (50, 25.0, 2.0), (40, 8.0, 16.0), (7, 30.0, 1.0), (1, 30.0, 1.0)])
def test_the_rate_rule_is_viddiffs_stride(n, fps, rate):
    spec = FrameSpec.at_rate(rate, 1000)
    assert spec.indices(n, fps) == _viddiff_subsample(n, fps, rate)


def test_past_the_cap_the_stride_grows_so_the_rate_stays_fixed():
    picked = FrameSpec.at_rate(5.0, 10).indices(300, 30.0)  # 50 frames at 5 fps: too many
    assert len(picked) <= 10 and picked[0] == 0
    assert len({b - a for a, b in zip(picked, picked[1:], strict=False)}) == 1  # one stride throughout


def test_a_rate_spec_needs_a_positive_rate_and_only_the_rate_rule_takes_one():
    with pytest.raises(ValueError):
        FrameSpec.at_rate(0.0, 10)
    with pytest.raises(ValueError):
        FrameSpec.at_rate(float("nan"), 10)
    with pytest.raises(ValueError):
        FrameSpec("linspace", 8, None, 4.0)
    assert FrameSpec.at_rate(4, 75).describe() == "rate@4:75" and FrameSpec("linspace", 16).describe() == "linspace:16"


# --------------------------------------------------------------------------- qwen-vl-utils reading a file at a rate


def _qwen_vl_utils_frames(n: int, video_fps: float, fps: float = 1.0) -> list[int]:
    """qwen-vl-utils 0.0.10 ``smart_nframes`` ({"fps": fps}) and ``_read_video_decord``'s indices, written out."""
    import torch

    min_frames = math.ceil(4 / 2) * 2
    max_frames = math.floor(min(768, n) / 2) * 2
    nframes = n / video_fps * fps
    nframes = min(min(max(nframes, min_frames), max_frames), n)
    nframes = math.floor(nframes / 2) * 2
    return torch.linspace(0, n - 1, nframes).round().long().tolist()


@pytest.mark.parametrize("n, fps", [(75, 10.0), (300, 30.0), (299, 29.97), (2000, 25.0), (30000, 30.0), (40, 10.0),
                                    (7, 30.0), (3, 25.0), (123, 2.0), (901, 23.976)])
def test_the_qwen_fps_rule_is_qwen_vl_utils_reading_a_file_at_1_fps(n, fps):
    spec = FrameSpec("qwen-fps", 768, None, 1.0)
    got = spec.indices(n, fps)
    assert got == _qwen_vl_utils_frames(n, fps)
    assert len(got) % 2 == 0 and 2 <= len(got) <= 768


def test_the_qwen_fps_rule_keeps_a_one_frame_clip_and_needs_a_rate():
    assert FrameSpec("qwen-fps", 768, None, 1.0).indices(1, 30.0) == [0]  # qwen-vl-utils refuses it; padded later
    assert FrameSpec("qwen-fps", 768, None, 1.0).describe() == "qwen-fps@1:768"
    with pytest.raises(ValueError):
        FrameSpec("qwen-fps", 768)
