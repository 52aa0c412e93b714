"""Pixel parity: the tensor each paper-protocol LMM family is handed equals the ConViS reference's, value for value.

Textured clips (gradients, a checkerboard, text: what a resize filter changes) of different sizes go through the
real path, FrameCache -> PairScorer -> reranker -> processor, with tiny checkpoints whose processors have the real
ones' sizes and normalisation; a spy at ``model.generate`` takes the pixels there. The expected tensor is the
reference's (benedettaliberatori/convisbench b8fa4ef) computed here without convis: its decord reads, its resize
rules, then transformers' PIL processors (the reference's transformers processed with PIL).

How the reference sizes video 2 against video 1:
* Qwen2.5-VL: each video resized to its own pixel budget and snapped by qwen-vl-utils; then the processor (the
  slow Qwen2VLImageProcessor of the transformers commit its requirements_qwen.txt pins, 4.50 development, given
  one frame list) sizes every frame to the FIRST frame's grid, so video 2 is resized (PIL bicubic) to video 1's;
* LLaVA-OneVision / LLaVA-Video and InternVL: every frame goes to the model's square on its own; no frame is sized
  against the other video.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from PIL import Image

from bench.tiny import vlm as tiny_vlm
from rerankers.factory import create_reranker
from rerankers.qwen import QwenPixelBudget
from retrieval.core.concepts import parse_concepts
from retrieval.lmm.clips import ClipRef, FrameCache
from retrieval.lmm.similarity import PairScorer
from retrieval.media.video_decoder import VideoDecoder
from tests import media
from tests.rerankers.spies import GenerateSpy, ModelCalled
from tests.rerankers.test_frame_parity import IMAGENET, SIGLIP, per_second_taken, reference_indices
from tests.textured import SOURCE_SIZES, textured_frame, textured_pixels

decord = pytest.importorskip("decord")  # the reference's decoder

ATOL = 1e-6
# video 1 larger than video 2, then smaller and of another aspect ratio (sizes differ, so Qwen resizes video 2)
PAIRS = [((1280, 720), (320, 180)), ((640, 480), (1280, 720))]
# every pair with the reference's decoder; the HD pair also with convis's default CPU decoder
CASES = [(pair, "decord") for pair in PAIRS] + [(PAIRS[0], "pyav")]
PIXELS_KEY = {"qwen": "pixel_values_videos", "llava": "pixel_values_videos", "internvl": "pixel_values"}


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """One 8-frame, 1 fps textured clip a source size (few frames: HD decodes cost)."""
    root = tmp_path_factory.mktemp("textured-clips")
    return {size: media.make_clip(root / f"{size[0]}x{size[1]}.mp4", frames=8, fps=1, size=size,
                                  pixels=textured_pixels(size), gop=4)
            for size in SOURCE_SIZES}


@pytest.fixture(scope="module")
def rerankers(tmp_path_factory):
    """Tiny checkpoints at the real processors' sizes (Qwen's 28-px grid, SigLIP 384, InternVL 448), built on use."""
    root = tmp_path_factory.mktemp("pixel-vlms")
    builders = {
        "qwen": lambda: tiny_vlm.build_qwen_vl(root / "qwen", model_type="qwen2_5_vl"),
        "llava": lambda: tiny_vlm.build_llava_onevision(root / "llava", image_size=384, mean=SIGLIP[0],
                                                        std=SIGLIP[1]),
        "internvl": lambda: tiny_vlm.build_internvl(root / "internvl", image_size=448, mean=IMAGENET[0],
                                                    std=IMAGENET[1]),
    }
    built = {}

    def get(family: str):
        if family not in built:
            built[family] = create_reranker(str(builders[family]()))
        return built[family]

    return get


def handed_to_model(reranker, pairs, backend: str, monkeypatch):
    """The pixel tensor ``generate`` receives when the pairs are scored (one batch), in the model's dtype."""
    spy = GenerateSpy()
    monkeypatch.setattr(reranker.model, "generate", spy)
    scorer = PairScorer(reranker, None, FrameCache(VideoDecoder(backends=[backend])))
    refs = [(ClipRef(str(a), a.name), ClipRef(str(b), b.name)) for a, b in pairs]
    with pytest.raises(ModelCalled):
        scorer.score(refs, parse_concepts(["location"])[0])
    (inputs,) = spy.calls
    return inputs[PIXELS_KEY[reranker.layout]]


def assert_same_pixels(got, expected: np.ndarray) -> None:
    """Equal within float32 rounding. In a half-precision model the reference's values are cast as the reference
    cast them, and one rounding step of that precision is allowed (float32 noise can round either way)."""
    import torch

    assert tuple(got.shape) == expected.shape
    expected = torch.from_numpy(np.ascontiguousarray(expected)).to(got.dtype).float().numpy()
    rtol = 0.0 if got.dtype == torch.float32 else torch.finfo(got.dtype).eps
    np.testing.assert_allclose(got.float().numpy(), expected, rtol=rtol, atol=ATOL)


# --------------------------------------------------------------------------- the reference, written out

def _reader(path, **kwargs):
    return decord.VideoReader(str(path), ctx=decord.cpu(0), **kwargs)


def qwen_frames(path) -> list[Image.Image]:
    """encode_concat_video_Qwen for one video, then qwen-vl-utils 0.0.10's fetch_video on the frame list."""
    vr = _reader(path)
    taken = per_second_taken(len(vr), vr.get_avg_fps(), 8)
    frames = [Image.fromarray(f) for f in vr.get_batch(taken).asnumpy()]
    width, height = frames[0].size
    frames = [f.resize(approximate_smart_resize(height, width, qwen_max_pixels(len(frames))), Image.BICUBIC)
              for f in frames]
    frames += [frames[-1]] * (8 - len(frames))
    return [qwen_vl_utils_fetch_image(f) for f in frames]


def qwen_max_pixels(taken: int) -> float:
    """encode_concat_video_Qwen's max_pixels for the frames taken from one video."""
    return max(min(768 * 28 * 28, 640 * 360 * 28 * 28 / taken * 2), int(128 * 28 * 28 * 1.05))


def approximate_smart_resize(height: int, width: int, max_pixels: float) -> tuple[int, int]:
    """The reference's own function (its ``// 28``, not ``// 28**2``, kept); returns (width, height)."""
    target_pixels = max(128 * 28 * 28, min(max_pixels, height * width // 28))
    aspect_ratio = width / height
    new_height = int((target_pixels / aspect_ratio) ** 0.5)
    return int(new_height * aspect_ratio), new_height


def qwen_vl_utils_fetch_image(image: Image.Image) -> Image.Image:
    """fetch_image with the default bounds (4*28*28 .. 16384*28*28) and PIL's default filter."""
    width, height = image.size
    h_bar, w_bar = max(28, round(height / 28) * 28), max(28, round(width / 28) * 28)
    assert 4 * 28 * 28 <= h_bar * w_bar <= 16384 * 28 * 28  # the rescaling branches never apply at these sizes
    return image.resize((w_bar, h_bar))


def qwen_processor(frames: list[Image.Image]) -> np.ndarray:
    """The reference's slow Qwen2VLImageProcessor (transformers 4.50 development) on one frame list: every frame
    to the first frame's smart_resize size (transformers' PIL resize), rescale, normalise, then its temporal
    patches."""
    from transformers import Qwen2VLImageProcessorPil
    from transformers.image_transforms import resize
    from transformers.image_utils import ChannelDimension, PILImageResampling
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    proc = Qwen2VLImageProcessorPil()  # Qwen2.5-VL's settings: CLIP mean/std, 56*56 .. 28*28*1280 pixels
    first = np.asarray(frames[0])
    height, width = smart_resize(*first.shape[:2], factor=28, min_pixels=proc.size.shortest_edge,
                                 max_pixels=proc.size.longest_edge)
    chw = ChannelDimension.FIRST
    done = []
    for frame in frames:
        image = resize(np.asarray(frame).transpose(2, 0, 1), (height, width), resample=PILImageResampling.BICUBIC,
                       data_format=chw, input_data_format=chw)
        done.append(proc.normalize(proc.rescale(image, 1 / 255), proc.image_mean, proc.image_std))
    patches = np.array(done)
    t, c = len(patches) // 2, patches.shape[1]
    gh, gw = height // 14, width // 14
    patches = patches.reshape(t, 2, c, gh // 2, 2, 14, gw // 2, 2, 14).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return patches.reshape(t * gh * gw, c * 2 * 14 * 14)


@cache  # a pair's reference serves every decoder's test
def qwen_reference(path_a, path_b) -> np.ndarray:
    return qwen_processor(qwen_frames(path_a) + qwen_frames(path_b))


@cache  # a pair's reference serves every decoder's test
def llava_reference(path_a, path_b) -> np.ndarray:
    """load_video (decord get_batch at linspace) + SigLIP's processor on each video, the tensors concatenated."""
    from transformers import SiglipImageProcessorPil
    from transformers.image_utils import PILImageResampling

    proc = SiglipImageProcessorPil(size={"height": 384, "width": 384}, resample=PILImageResampling.BICUBIC,
                                   image_mean=SIGLIP[0], image_std=SIGLIP[1])
    videos = []
    for path in (path_a, path_b):
        vr = _reader(path)
        frames = [Image.fromarray(f) for f in vr.get_batch(reference_indices("llava", len(vr), 0, 16)).asnumpy()]
        videos.append(np.stack(proc(frames, return_tensors="np")["pixel_values"]))
    return np.concatenate(videos)[None]


@cache  # a pair's reference serves every decoder's test
def internvl_reference(path_a, path_b) -> np.ndarray:
    """load_video(max_num=1): each frame through dynamic_preprocess (one 448 tile, no thumbnail), then
    build_transform (Resize((448, 448), BICUBIC), ToTensor, ImageNet Normalize)."""
    import torch
    import torchvision.transforms as T
    from torchvision.transforms.functional import InterpolationMode

    transform = T.Compose([T.Resize((448, 448), interpolation=InterpolationMode.BICUBIC), T.ToTensor(),
                           T.Normalize(mean=IMAGENET[0], std=IMAGENET[1])])
    tiles = []
    for path in (path_a, path_b):
        vr = _reader(path, num_threads=1)
        indices = reference_indices("internvl", len(vr), float(vr.get_avg_fps()), 16)
        read = {i: vr[i].asnumpy() for i in sorted(set(indices))}  # a repeated index is the same frame, read once
        for i in indices:
            image = Image.fromarray(read[i]).convert("RGB")
            tiles.append(transform(image.resize((448, 448)).crop((0, 0, 448, 448))))  # the (1, 1) grid's one tile
    return torch.stack(tiles).numpy()


REFERENCE = {"qwen": qwen_reference, "llava": llava_reference, "internvl": internvl_reference}


# --------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("sizes, backend", CASES,
                         ids=[f"{a[0]}x{a[1]}+{b[0]}x{b[1]}-{backend}" for (a, b), backend in CASES])
@pytest.mark.parametrize("family", ["qwen", "llava", "internvl"])
def test_each_family_is_handed_the_reference_pixels(clips, rerankers, monkeypatch, family, sizes, backend):
    path_a, path_b = clips[sizes[0]], clips[sizes[1]]
    got = handed_to_model(rerankers(family), [(path_a, path_b)], backend, monkeypatch)
    assert_same_pixels(got, REFERENCE[family](path_a, path_b))


def test_a_batch_of_differently_sized_qwen_pairs_keeps_each_pairs_pixels(clips, rerankers, monkeypatch):
    # one processor call for both pairs: each video 2 is sized to its own video 1, not to the batch's first
    pairs = [(clips[a], clips[b]) for a, b in PAIRS[:2]]
    got = handed_to_model(rerankers("qwen"), pairs, "decord", monkeypatch)
    assert_same_pixels(got, np.concatenate([qwen_reference(a, b) for a, b in pairs]))


@pytest.mark.parametrize("size", [(2560, 1440), (3840, 2160), (1080, 1920)])
def test_qwen_pixel_budget_is_the_reference_resize_for_large_sources(size):
    # past 2.8 MP the budget leaves its floor (h*w // 28 > 128*28*28): the clamp's middle, and a portrait clip
    frame = textured_frame(3, size)
    width, height = size
    expected = qwen_vl_utils_fetch_image(Image.fromarray(frame).resize(
        approximate_smart_resize(height, width, qwen_max_pixels(8)), Image.BICUBIC))
    np.testing.assert_array_equal(QwenPixelBudget(8).apply(frame), np.asarray(expected))
