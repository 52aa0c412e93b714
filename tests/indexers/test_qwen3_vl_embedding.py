"""Qwen3-VL-Embedding: the reference's pixels, prompt and pooling, and one vector per instruction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from indexers.conditioned import is_conditioned
from indexers.factory import create_indexer
from indexers.instructions import QWEN3_VL_EMBEDDING
from indexers.qwen3_vl_embedding import MAX_FRAMES, clip_size, reference_clip, smart_resize

LOCATION = QWEN3_VL_EMBEDDING.concepts["location"]


def noise_clip(frames: int, height: int, width: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, height, width, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def indexer(qwen3_vl_embedding_tiny):
    return create_indexer(f"qwen3-vl-embedding:{qwen3_vl_embedding_tiny}", device="cpu")


@pytest.fixture()
def seen(indexer):
    """The input ids of every forward pass the model makes, decoded."""
    texts: list[str] = []

    def hook(module, args, kwargs):
        texts.extend(indexer.processor.tokenizer.decode(row) for row in kwargs["input_ids"])

    handle = indexer.model.register_forward_pre_hook(hook, with_kwargs=True)
    yield texts
    handle.remove()


@pytest.mark.parametrize("height, width", [(90, 150), (720, 1280), (480, 640), (17, 3000), (2000, 40)])
def test_smart_resize_is_the_processors(height, width):
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as theirs

    bounds = (128 * 32 * 32, 245760)
    assert smart_resize(height, width, *bounds) == theirs(height, width, 32, *bounds)


def test_frames_are_the_reference_frame_list():
    assert len(reference_clip(noise_clip(70, 40, 60))) == MAX_FRAMES  # linspace down to 64
    clip = reference_clip(noise_clip(5, 100, 150))
    assert clip.shape == (6, 3, *clip_size(96, 160, 6))  # padded to pairs; 100x150 rounds to 96x160 first
    assert torch.equal(clip[5], clip[4])


def test_pixels_equal_the_processor_called_as_the_reference_calls_it(indexer):
    """A textured non-square clip: PIL then torchvision resizing (qwen-vl-utils), then the model's processor."""
    from PIL import Image
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as tvf
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as theirs

    frames = noise_clip(5, 90, 150)
    h, w = theirs(90, 150, 32, 4 * 32 * 32, 16384 * 32 * 32)
    images = [np.asarray(Image.fromarray(f).resize((w, h))) for f in frames]  # PIL's default: bicubic
    video = torch.from_numpy(np.stack([*images, images[-1]])).permute(0, 3, 1, 2)
    size = theirs(h, w, 32, 128 * 32 * 32, max(min(768 * 32 * 32, 7864320 / 6 * 2), int(128 * 32 * 32 * 1.05)))
    video = tvf.resize(video, list(size), interpolation=InterpolationMode.BICUBIC, antialias=True).float()
    theirs_in = indexer.processor(text=["<|video_pad|>"], videos=[video], do_resize=False, do_sample_frames=False,
                                  video_metadata=[{"fps": 2.0, "frames_indices": list(range(6)),
                                                   "total_num_frames": 6}], return_tensors="pt")
    ours = indexer.unit_inputs([frames], LOCATION)
    assert torch.equal(ours["video_grid_thw"], theirs_in["video_grid_thw"])
    assert torch.allclose(ours["pixel_values_videos"], theirs_in["pixel_values_videos"], rtol=0, atol=1e-6)


def test_the_instruction_reaches_the_model_as_the_system_message(indexer, seen):
    indexer.embed_units([noise_clip(5, 90, 150)], "Represent the weather in this video")
    (text,) = seen
    assert text.startswith("<|im_start|>system\nRepresent the weather in this video.<|im_end|>\n<|im_start|>user\n")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    # the reference's frames: a stamp, then each pair of frames wrapped once (no wrapper around the clip)
    assert "<0.2 seconds><|vision_start|><|video_pad|>" in text and "<1.2 seconds><|vision_start|>" in text
    assert "<|vision_start|><0" not in text and text.count("<|vision_start|>") == 3
    seen.clear()
    indexer.embed_units([noise_clip(5, 90, 150)])
    assert seen[0].startswith(f"<|im_start|>system\n{QWEN3_VL_EMBEDDING.generic}<|im_end|>")


def test_an_instruction_changes_the_vector(indexer):
    clip = noise_clip(5, 90, 150)
    generic, location = indexer.embed_units([clip]), indexer.embed_units([clip], LOCATION)
    action = indexer.embed_units([clip], QWEN3_VL_EMBEDDING.concepts["main-action"])
    assert np.abs(generic - location).max() > 1e-3 and np.abs(location - action).max() > 1e-3
    np.testing.assert_array_equal(indexer.embed_units([clip], LOCATION), location)  # and only the instruction


def test_texts_and_clips_share_one_space(indexer, seen):
    texts = indexer.embed_texts(["a dog runs on a beach", "a kitchen"])
    assert seen[0].startswith(f"<|im_start|>system\n{QWEN3_VL_EMBEDDING.query}<|im_end|>\n<|im_start|>user\n"
                              "a dog runs on a beach<|im_end|>")
    clips = indexer.embed_units([noise_clip(3, 64, 96)])
    assert texts.shape == (2, indexer.dim) and clips.shape == (1, indexer.dim)
    np.testing.assert_allclose(np.linalg.norm(np.vstack([texts, clips]), axis=1), 1.0, atol=1e-6)
    assert is_conditioned(indexer) and indexer.kind == "video"


def test_a_batch_embeds_as_one_unit_at_a_time(indexer):
    """Padding is on the right and attention causal, so a unit's tokens see only their own: what differs is the
    order of fp32 sums in kernels of another shape (under 1e-7 here; 1e-5 leaves room across CPUs)."""
    units = [noise_clip(5, 90, 150, seed=1), noise_clip(2, 120, 64, seed=2), noise_clip(3, 64, 64, seed=3)]
    batch = indexer.embed_units(units, LOCATION)
    one_by_one = np.vstack([indexer.embed_units([unit], LOCATION) for unit in units])
    np.testing.assert_allclose(batch, one_by_one, atol=1e-5)
    texts = ["a dog", "a much longer sentence about a kitchen"]
    np.testing.assert_allclose(indexer.embed_texts(texts), np.vstack([indexer.embed_texts([t]) for t in texts]),
                               atol=1e-5)


def test_a_checkpoint_loads_with_or_without_the_hub_prefix(indexer, qwen3_vl_embedding_tiny, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    from indexers.errors import ModelUnavailableError

    bare = shutil.copytree(qwen3_vl_embedding_tiny, tmp_path / "bare")
    state = load_file(str(bare / "model.safetensors"))
    assert all(name.startswith(("model.language_model.", "model.visual.")) for name in state)
    save_file({name.removeprefix("model."): t for name, t in state.items()}, str(bare / "model.safetensors"))
    clip = noise_clip(3, 64, 96)
    again = create_indexer(f"qwen3-vl-embedding:{bare}", device="cpu")
    np.testing.assert_array_equal(again.embed_units([clip]), indexer.embed_units([clip]))
    save_file({n: t for n, t in state.items() if "visual.merger" not in n}, str(bare / "model.safetensors"))
    with pytest.raises(ModelUnavailableError, match="weights missing"):
        create_indexer(f"qwen3-vl-embedding:{bare}", device="cpu")


def test_models_full_shows_the_instructions_and_their_version(capsys):
    from retrieval.cli.present.models import model_rows, print_instructions

    (row,) = [r for r in model_rows("fast") if r["name"] == "qwen3-vl-embedding"]
    assert row["instructions"]["version"] == QWEN3_VL_EMBEDDING.version
    print_instructions(model_rows("paper"))
    shown = " ".join(capsys.readouterr().out.split())  # as read, whatever width the console wraps at
    assert f"version {QWEN3_VL_EMBEDDING.version}" in shown and f"query: {QWEN3_VL_EMBEDDING.query}" in shown
    assert f"location: {LOCATION}" in shown and "any other concept: Represent the {concept}" in shown


@pytest.mark.parametrize("name, width", [("qwen3-vl-embedding-2b", 2048), ("qwen3-vl-embedding-8b", 4096)])
def test_the_real_shape_configs_give_the_published_widths(qwen3_vl_embedding_tiny, name, width):
    from bench.perf.conditioned_embed import REAL_DIMENSIONS
    from bench.perf.real_shape import real_config

    config = real_config(qwen3_vl_embedding_tiny, REAL_DIMENSIONS[name])
    assert config.text_config.hidden_size == config.vision_config.out_hidden_size == width
    assert sum(config.text_config.rope_parameters["mrope_section"]) * 2 == config.text_config.head_dim
