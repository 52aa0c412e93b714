"""Textured clips in every source size pixel tests cover, written and decoded once for the indexer tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np
import pytest

from tests import media
from tests.textured import SOURCE_SIZES, textured_pixels

# few frames for the large sizes: each is decoded and resized at full size on a small CPU. 3 frames at 1280x720
# also exercise VideoMAE's padding (a clip shorter than its 4), 12 at 320x180 its linspace and the fast rule
CLIP_FRAMES = {(1280, 720): 3, (640, 480): 4, (320, 180): 12}
CLIP_FPS = 6


@dataclass(frozen=True)
class TexturedClip:
    path: Path
    frames: list[np.ndarray]  # every frame decoded at full size, as decord's get_batch(range(n)) gives them


def decode_every_frame(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


@pytest.fixture(scope="session")
def textured_clips(tmp_path_factory) -> dict[tuple[int, int], TexturedClip]:
    folder = tmp_path_factory.mktemp("textured-clips")
    clips = {}
    for width, height in SOURCE_SIZES:
        path = media.make_clip(folder / f"{width}x{height}.mp4", frames=CLIP_FRAMES[width, height], fps=CLIP_FPS,
                               size=(width, height), pixels=textured_pixels((width, height)), gop=4)
        clips[width, height] = TexturedClip(path, decode_every_frame(path))
    return clips


@pytest.fixture(scope="session")
def qwen3_vl_embedding_tiny(tmp_path_factory) -> Path:
    """A tiny Qwen3-VL-Embedding checkpoint stored as the hub stores the real one, built once a session."""
    from bench.tiny.embedding import build_qwen3_vl_embedding

    return build_qwen3_vl_embedding(tmp_path_factory.mktemp("qwen3-vl-embedding") / "tiny")
