"""The fingerprint indexer: the same moving scene rescaled, cropped by 10% or under a small logo stays close; the
same background with something moving elsewhere does not; frames of any size or content give a unit vector."""

import numpy as np
import pytest

from indexers.factory import create_indexer
from indexers.fingerprint import DIM


def scene(path_x: float, frames: int = 16, size: tuple[int, int] = (120, 160), seed: int = 0) -> np.ndarray:
    """A textured still background with a bright square walking along row ``path_x`` of the frame."""
    h, w = size
    rng = np.random.default_rng(seed)
    background = (rng.random((h // 8, w // 8)) * 200).repeat(8, 0).repeat(8, 1)
    video = np.repeat(background[None, :, :, None], frames, 0).repeat(3, 3)
    for t in range(frames):
        y, x = int(path_x * h), int((0.1 + 0.8 * t / frames) * w)
        video[t, max(y - 8, 0):y + 8, max(x - 8, 0):x + 8] = 255
    return video.astype(np.uint8)


@pytest.fixture(scope="module")
def indexer():
    return create_indexer("fingerprint")


def similarity(indexer, a: np.ndarray, b: np.ndarray) -> float:
    va, vb = indexer.embed_units([a, b])
    return float((va @ vb + 1) / 2)


def test_edits_stay_close_and_other_motion_does_not(indexer):
    original = scene(0.5)
    half = original[:, ::2, ::2]
    cropped = original[:, 6:-6, 8:-8]  # 10% off each dimension
    logo = original.copy()
    logo[:, 5:32, 5:40] = 255  # about 5% of the frame
    other = scene(0.8)  # the same place, something moving elsewhere
    for copy in (half, cropped, logo):
        assert similarity(indexer, original, copy) > similarity(indexer, original, other) + 0.05
    assert similarity(indexer, original, half) > 0.95


@pytest.mark.parametrize("frames", [
    np.zeros((1, 4, 4, 3), np.uint8),  # one tiny black frame: no motion, every cell tied
    np.full((5, 1, 1, 3), 128, np.uint8),  # 1x1 frames
    np.random.default_rng(0).integers(0, 256, (4, 2160, 3840, 3), dtype=np.uint8),  # 4K noise
])
def test_any_frames_give_a_unit_vector(indexer, frames):
    vector = indexer.embed_units([frames])
    assert vector.shape == (1, DIM) and np.all(np.isfinite(vector))
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5) or np.linalg.norm(vector) == 0


def test_the_card_says_the_share_of_the_dot_product_each_half_has():
    import re

    model = create_indexer("fingerprint")
    look_share, motion_share = map(float, re.search(r"([\d.]+) / ([\d.]+) of the dot product", model.pooling).groups())
    vector = model.embed_units([scene(0.5)])[0].astype(np.float64)
    half = len(vector) // 2
    # each half is a unit-length ordinal signature scaled by the root of its share: its squared length is the share
    assert float(vector[:half] @ vector[:half]) == pytest.approx(look_share, abs=1e-5)
    assert float(vector[half:] @ vector[half:]) == pytest.approx(motion_share, abs=1e-5)
