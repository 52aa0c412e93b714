"""Decoder-level parity: each reranker family sees the frames, pixel size and normalisation its
reference feeds it (ConViS-Bench reference, commit b8fa4ef; ../shared/convis-bench "Per-family
preprocessing").

Synthetic clips carry their frame number (and which video they belong to) in their pixels. They go
through the real path, FrameCache -> reranker -> processor, with tiny random checkpoints; a spy on
the processor reads back which frames arrived, in which order, at which size. The expected frames
are the reference's formulas, written out here independently of convis.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.tiny import vlm as tiny_vlm
from rerankers.factory import create_reranker
from retrieval.core.concepts import parse_concepts
from retrieval.lmm.clips import ClipRef, FrameCache
from retrieval.lmm.similarity import PairScorer
from retrieval.media.video_decoder import VideoDecoder
from tests import media
from tests.rerankers.spies import ProcessorSpy

SIGLIP = ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))  # LLaVA-OneVision's SigLIP processor
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))  # InternVL's build_transform


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity-vlms")
    return {
        "qwen": tiny_vlm.build_qwen_vl(root / "qwen", model_type="qwen2_5_vl"),
        "llava": tiny_vlm.build_llava_onevision(root / "llava", mean=SIGLIP[0], std=SIGLIP[1]),
        "internvl": tiny_vlm.build_internvl(root / "internvl", mean=IMAGENET[0], std=IMAGENET[1]),
    }


# --------------------------------------------------------------------------- the reference, written out

def reference_indices(family: str, n: int, fps: float, per_video: int) -> list[int]:
    if family == "llava":  # llavaov_model.load_video
        return np.linspace(0, n - 1, per_video, dtype=int).tolist()
    if family == "internvl":  # internvl2_5_model.get_video_index(bound=None, max_frame=n-1)
        start_idx, end_idx = max(0, round(-100000 * fps)), min(round(100000 * fps), n - 1)
        seg = float(end_idx - start_idx) / per_video
        return [int(start_idx + seg / 2 + np.round(seg * k)) for k in range(per_video)]
    idx = per_second_taken(n, fps, per_video)
    return idx + [idx[-1]] * (per_video - len(idx))


def per_second_taken(n: int, fps: float, per_video: int) -> list[int]:
    """encode_concat_video_Qwen's frames before padding (fps_factor=1): its pixel budget counts these."""
    step = max(1, round(fps / 1))
    idx = list(range(0, n, step))
    if len(idx) > per_video:
        gap = len(idx) / per_video
        idx = [idx[int(i * gap + gap / 2)] for i in range(per_video)]
    return idx


def reference_size(family: str, width: int, height: int) -> tuple[int, int]:
    """(height, width) the processor receives for a full-size frame."""
    if family in ("llava", "internvl"):
        return 28, 28  # the tiny checkpoints' processor square (384 / 448 for the real ones)
    # approximate_smart_resize (its "// 28" kept), then qwen-vl-utils' smart_resize onto the 28 grid
    target = max(128 * 28 * 28, min(768 * 28 * 28, height * width // 28))
    new_h = int((target / (width / height)) ** 0.5)
    new_w = int(new_h * (width / height))
    return max(28, round(new_h / 28) * 28), max(28, round(new_w / 28) * 28)


PER_VIDEO = {"qwen": 8, "llava": 16, "internvl": 16}

# (frames, fps): the issue's 10 s 30 fps clip, a 4 s clip, clips shorter than 16 frames and than 8 seconds
CASES = [(300, 30), (40, 10), (10, 25), (12, 3)]


def _clip(path, frames, fps, video):
    return media.make_clip(path, frames=frames, fps=fps, pixels=lambda i: media.numbered_frame(i, video), gop=12)


def _shown(spy) -> list[tuple[int, int]]:
    (kwargs, out), = spy.calls
    (video,) = kwargs["videos"]
    return [media.read_numbered_frame(f) for f in video], video, out


def _score(reranker_folder, clip_a, clip_b, backend):
    reranker = create_reranker(str(reranker_folder))
    spy = reranker.processor = ProcessorSpy(reranker.processor)
    frames = FrameCache(VideoDecoder(backends=[backend]))
    scorer = PairScorer(reranker, None, frames)
    (score,) = scorer.score([(ClipRef(str(clip_a), "a"), ClipRef(str(clip_b), "b"))], parse_concepts(["location"])[0])
    return score, spy, frames


@pytest.mark.parametrize("backend", ["decord", "pyav"])
@pytest.mark.parametrize("frames, fps", CASES)
@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
def test_each_family_sees_its_reference_frames(tmp_path, families, family, frames, fps, backend):
    clip_a = _clip(tmp_path / "a.mp4", frames, fps, video=0)
    clip_b = _clip(tmp_path / "b.mp4", 40, 10, video=1)
    score, spy, cache = _score(families[family], clip_a, clip_b, backend)
    shown, video, _ = _shown(spy)
    per_video = PER_VIDEO[family]
    expected = [(0, i) for i in reference_indices(family, frames, fps, per_video)] + \
        [(1, i) for i in reference_indices(family, 40, 10, per_video)]
    assert shown == expected  # the frames, in order, video 1 first
    assert video.shape[1:3] == reference_size(family, 64, 48)
    assert score.evidence["a"]["indices"] == [i for _, i in expected[:per_video]]
    assert score.evidence["b"]["indices"] == [i for _, i in expected[per_video:]]
    assert score.evidence["size"] == list(video.shape[1:3])
    assert score.evidence["a"]["timestamps"] == pytest.approx([i / fps for _, i in expected[:per_video]], abs=1e-3)
    assert cache.decodes == 2


def test_the_issue_example_llava_spreads_16_frames_over_a_10_s_clip(tmp_path, families):
    clip = _clip(tmp_path / "a.mp4", 300, 30, video=0)
    score, _, _ = _score(families["llava"], clip, clip, "decord")
    assert score.evidence["a"]["indices"] == [0, 19, 39, 59, 79, 99, 119, 139, 159, 179, 199, 219, 239, 259,
                                              279, 299]


@pytest.mark.parametrize("backend", ["decord", "pyav"])
@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
def test_variable_frame_rate_clips_are_indexed_by_frame_number(tmp_path, families, family, backend):
    gaps = [0.04 if i % 3 else 0.2 for i in range(30)]  # bursts and pauses
    times = np.cumsum([0.0, *gaps[:-1]]).tolist()
    clip_a = media.make_vfr_clip(tmp_path / "vfr.mp4", times, pixels=lambda i: media.numbered_frame(i, 0))
    clip_b = _clip(tmp_path / "b.mp4", 40, 10, video=1)
    _, spy, cache = _score(families[family], clip_a, clip_b, backend)
    shown, _, _ = _shown(spy)
    info = cache.decoder.backends[0].probe(clip_a)
    assert info.frame_count == 30
    expected = reference_indices(family, 30, info.fps, PER_VIDEO[family])
    assert [i for v, i in shown if v == 0] == expected


@pytest.mark.parametrize("family, norm, key", [("llava", SIGLIP, "pixel_values_videos"),
                                               ("internvl", IMAGENET, "pixel_values")])
def test_pixels_reach_the_model_with_the_reference_normalisation(tmp_path, families, family, norm, key):
    clip = _clip(tmp_path / "a.mp4", 40, 10, video=0)
    _, spy, _ = _score(families[family], clip, clip, "pyav")
    _, video, out = _shown(spy)
    pixels = out[key].reshape(-1, 3, 28, 28).float().numpy()
    assert len(pixels) == 2 * PER_VIDEO[family]
    mean, std = (np.array(v).reshape(1, 3, 1, 1) for v in norm)
    raw = video.transpose(0, 3, 1, 2).astype(np.float64) / 255.0
    assert np.abs(pixels - (raw - mean) / std).max() < 0.02  # uint8 in, normalised once, by the processor
