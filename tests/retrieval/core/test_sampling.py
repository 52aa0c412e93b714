import pytest

from retrieval.core.sampling import per_second_indices, sample_frame_indices, uniform_indices
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
