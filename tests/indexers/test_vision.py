import numpy as np
import pytest

from bench.tiny.vision import tiny_open_clip
from indexers import available_indexers, create_indexer
from indexers.errors import ModelUnavailableError
from indexers.vision import frame_batches
from retrieval.core.registry import UnknownModelError
from retrieval.media.video_decoder import VideoDecoder

rng = np.random.default_rng(0)


def units(n=3, frames=4, size=(48, 64)):
    return [rng.integers(0, 255, (frames, *size, 3), dtype=np.uint8) for _ in range(n)]


def test_registry_lists_every_family():
    assert {"dinov2", "clip", "videomae", "internvideo", "efficientnet-lite0", "text"} <= set(available_indexers())


@pytest.mark.parametrize("key, name, dim", [("dinov2", "dinov2", 32), ("hf_clip", "clip", 16),
                                             ("open_clip", "clip", 16)])
def test_image_indexers_from_local_folders(tiny_models, key, name, dim):
    folder = str(tiny_models[key])
    for spec in (folder, f"{name}:{folder}"):  # a bare folder is recognised from its config
        ix = create_indexer(spec)
        assert (ix.name, ix.kind, ix.dim) == (name, "image", dim)
        batch = units()
        out = ix.embed_units(batch)
        assert out.shape == (3, dim) and out.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
        # mean pooling over frames: the same frames in another order give the same vector
        np.testing.assert_allclose(ix.embed_units([batch[0][::-1]])[0], out[0], atol=1e-5)


def test_batching_does_not_change_vectors(tiny_models):
    ix = create_indexer(str(tiny_models["dinov2"]))
    batch = units(4)
    together = ix.embed_units(batch)
    ix.batch_size = 3  # frames split across batches unevenly
    np.testing.assert_allclose(ix.embed_units(batch), together, atol=1e-5)


def test_units_of_different_sizes_batch_like_one_by_one(tiny_models):
    assert frame_batches([3, 5, 0, 2], 4) == [[(0, 0, 3), (1, 0, 1)], [(1, 1, 5)], [(3, 0, 2)]]
    ix = create_indexer(str(tiny_models["dinov2"]))
    rng = np.random.default_rng(0)
    mixed = [rng.integers(0, 255, shape, dtype=np.uint8) for shape in [(3, 64, 80, 3), (5, 48, 64, 3), (2, 90, 40, 3)]]
    ix.batch_size = 4  # every batch mixes units of different picture sizes
    one_by_one = np.concatenate([ix.embed_units([u]) for u in mixed])
    np.testing.assert_allclose(ix.embed_units(mixed), one_by_one, atol=1e-5)


def test_video_indexer_takes_its_clip_length_from_the_model(tiny_models):
    ix = create_indexer(f"videomae:{tiny_models['videomae']}")
    assert (ix.kind, ix.frames_per_unit, ix.dim) == ("video", 4, 32)
    clips = units(2, frames=4)
    out = ix.embed_units(clips)
    assert out.shape == (2, 32)
    # a video model sees order: reversing the clip changes the vector (unlike mean pooling)
    assert not np.allclose(ix.embed_units([clips[0][::-1]])[0], out[0], atol=1e-4)


def test_efficientnet_real_weights_separate_scenes(example_videos):
    ix = create_indexer("efficientnet-lite0")
    assert ix.dim == 1280
    decoder = VideoDecoder()
    clips = [decoder.sample(example_videos / n, 8)[1][0][1].pixels
             for n in ("campus_01.mp4", "campus_02.mp4", "bigbuckbunny.mp4")]
    a, b, bunny = ix.embed_units(clips)
    assert a @ b > 0.9 > a @ bunny  # same camera, same square vs an animated meadow


def test_open_clip_folder_without_weights_is_refused(tmp_path):
    folder = tiny_open_clip(tmp_path / "no-weights", with_weights=False)
    with pytest.raises(ModelUnavailableError, match="no weights"):
        create_indexer(f"clip:{folder}")


@pytest.mark.parametrize("spec", ["dinov2:/nonexistent/dinov2", "facebook/dinov2-giant-not-cached"])
def test_missing_weights_offline_say_how_to_provide_them(spec):
    with pytest.raises(ModelUnavailableError, match="local weights folder"):
        create_indexer(spec)


def test_unknown_indexer_names_the_known_ones():
    with pytest.raises(UnknownModelError, match="dinov2"):
        create_indexer("resnet-9000")


def test_internvideo_needs_explicit_trust():
    with pytest.raises(ModelUnavailableError, match="trust-remote-code"):
        create_indexer("internvideo")
