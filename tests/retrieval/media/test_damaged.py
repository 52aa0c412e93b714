"""A damaged video (bytes overwritten, a hole, a file cut short) is read from the frames that decode, its gaps said.

The frames that decode are found here by FFmpeg's own rule, independently of convis (``media.frames_that_decode``).
"""

import math

import numpy as np
import pytest

from retrieval.core.sampling import FrameSpec
from retrieval.core.segmentation import ShotRule
from retrieval.media.damaged import describe_gaps
from retrieval.media.frames import DecodeError
from retrieval.media.pyav_backend import PyAVBackend
from retrieval.media.shot_units import cut_shots
from retrieval.media.video_decoder import VideoDecoder
from tests import media
from tests.media import frames_that_decode

SEGMENT = 2.0


def per_second(n: int, fps: float, wanted: int) -> list[int]:
    """The reference's per-second rule: every round(fps)-th frame, then int(i*gap + gap/2) of them, padded."""
    seconds = list(range(0, n, max(1, round(fps))))
    if len(seconds) < wanted:
        return seconds + [seconds[-1]] * (wanted - len(seconds))
    gap = len(seconds) / wanted
    return [seconds[int(i * gap + gap / 2)] for i in range(wanted)]


def expected_units(listed: int, decodes: list[int], fps: float, duration: float, wanted: int = 8):
    """Units of SEGMENT seconds cut as an intact file's (a last piece under half a unit joins the one before; the
    last runs to the end), numbered so; each samples the rule over its frames that decode, as if the others were
    not there; a unit where none decodes is left out."""
    count = max(1, int(duration // SEGMENT))
    count += duration - count * SEGMENT >= SEGMENT / 2
    bounds = [i * SEGMENT for i in range(count)] + [duration]
    units = []
    for i in range(count):
        first = math.floor(bounds[i] * fps)
        stop = listed if i == count - 1 else math.ceil(bounds[i + 1] * fps)
        kept = [n for n in decodes if first <= n < stop]
        if kept:
            units.append((i, bounds[i], bounds[i + 1], [kept[k] for k in per_second(len(kept), fps, wanted)]))
    return units


@pytest.fixture(scope="module")
def cup(example_videos):
    return example_videos / "cup.mp4"


@pytest.mark.parametrize("damage", [media.holed, media.overwritten, media.cut_short])
def test_a_damaged_video_is_sampled_from_the_frames_that_decode(tmp_path, cup, damage):
    clip = damage(cup, tmp_path / "damaged.mp4")
    listed, decodes, fps = frames_that_decode(clip)
    assert 0 < len(decodes) < listed  # damaged, not destroyed
    info, units = VideoDecoder(threads=1).sample(clip, 8, SEGMENT)
    missing = {n for a, b in info.gaps for n in range(a, b)}
    assert info.frame_count == listed and sorted(set(range(listed)) - missing) == decodes
    want = expected_units(listed, decodes, fps, info.duration)
    assert [(s.segment, round(s.start, 6), round(s.end, 6), list(f.indices)) for s, f in units] == [
        (segment, round(start, 6), round(end, 6), indices) for segment, start, end, indices in want]
    assert all(f.pixels.shape[0] == 8 for _, f in units)


def test_what_decodes_before_the_damage_is_read_as_from_the_intact_file(tmp_path, cup):
    clip = media.holed(cup, tmp_path / "hole.mp4")
    info, units = VideoDecoder(threads=1).sample(clip, 8, SEGMENT)
    _, intact = VideoDecoder(threads=1).sample(cup, 8, SEGMENT)
    assert info.gaps[0][0] > SEGMENT * info.fps  # the first unit ends before the hole
    assert units[0][1].indices == intact[0][1].indices
    np.testing.assert_array_equal(units[0][1].pixels, intact[0][1].pixels)


def test_the_gaps_are_said_in_frames_and_seconds(tmp_path, cup):
    clip = media.cut_short(cup, tmp_path / "cut.mp4")
    listed, decodes, fps = frames_that_decode(clip)
    info, _ = VideoDecoder(threads=1).sample(clip, 8)
    last = decodes[-1] + 1
    assert describe_gaps(info) == (f"{listed - last} of {listed} frames could not be decoded: frames {last}-"
                                   f"{listed - 1} ({last / fps:.2f}-{listed / fps:.2f} s); indexed from the rest")


def test_a_cut_short_video_is_cut_into_shots_up_to_where_it_ends(tmp_path, cup):
    clip = media.cut_short(cup, tmp_path / "cut.mp4")
    listed, decodes, fps = frames_that_decode(clip)
    found = cut_shots(clip, ShotRule("content"), [FrameSpec(count=8)], threads=1)
    assert found.info.gaps == ((decodes[-1] + 1, listed),)
    assert found.units[-1].frames[1] == decodes[-1] + 1 and found.units[-1].end == pytest.approx(len(decodes) / fps)
    sampled = [i for frames in found.frames[FrameSpec(count=8)] for i in frames.indices]
    assert set(sampled) <= set(decodes)


def test_shots_of_a_video_with_a_hole_are_placed_at_their_frames(tmp_path, cup):
    clip = media.holed(cup, tmp_path / "hole.mp4")
    listed, decodes, _ = frames_that_decode(clip)
    found = cut_shots(clip, ShotRule("content"), [FrameSpec(count=8)], threads=1)
    missing = {n for a, b in found.info.gaps for n in range(a, b)}
    assert sorted(set(range(listed)) - missing) == decodes
    for unit, frames in zip(found.units, found.frames[FrameSpec(count=8)], strict=True):
        inside = [n for n in decodes if unit.frames[0] <= n < unit.frames[1]]
        assert list(frames.indices) == [inside[k] for k in per_second(len(inside), found.info.fps, 8)]


def test_a_time_range_of_a_damaged_video_is_read_from_what_decodes(tmp_path, cup):
    clip = media.holed(cup, tmp_path / "hole.mp4")
    _, decodes, _ = frames_that_decode(clip)
    frames = VideoDecoder(threads=1).sample_span(clip, 8, 1.0, 5.0)
    assert set(frames.indices) <= set(decodes) and len(frames.indices) == 8


def test_a_video_of_which_nothing_decodes_fails_in_one_line(tmp_path, cup):
    clip = media.zeroed(cup, tmp_path / "zeroed.mp4")
    assert frames_that_decode(clip)[1] == []
    for read in (lambda: VideoDecoder(threads=1).sample(clip, 8, SEGMENT),
                 lambda: cut_shots(clip, ShotRule("content"), [FrameSpec(count=8)], threads=1)):
        with pytest.raises(DecodeError, match=r"^no frame of the video could be decoded \(its video data is "
                                              r"damaged\)$"):
            read()


def test_intact_videos_are_never_surveyed(example_videos, monkeypatch):
    def survey(*args):
        raise AssertionError("an intact video was read as a damaged one")

    monkeypatch.setattr(PyAVBackend, "survey", survey)
    decoder = VideoDecoder(threads=1)
    for clip in sorted(example_videos.glob("*.mp4")):  # box.mp4 among them: one frame of it never decodes
        info, _ = decoder.sample(clip, 8, SEGMENT)
        assert info.gaps == () and not decoder.damaged(clip), clip.name
