"""What `--protocol paper` changes for the LMM rerankers: each family's precision as its reference ran it, and the
one checkpoint whose visual-token layout transformers cannot reproduce (llava-video) refused.

The reference values are read from its code (benedettaliberatori/convisbench @ b8fa4ef and its LLaVA-NeXT pin):
LLaVA-NeXT's load_pretrained_model loads in float16 and models/llavaov_model.py casts the pixels with .half();
models/qwen2_vl_model.py and models/internvl2_5_model.py load with torch_dtype=torch.bfloat16.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from rerankers.base import RERANKERS, RerankerError
from rerankers.factory import check_protocol, create_reranker, paper_dtype, paper_refusal
from rerankers.hf import resolve_dtype
from rerankers.internvl import InternVLReranker
from rerankers.llava import LlavaReranker
from rerankers.qwen import QwenReranker

REFERENCE_DTYPES = {  # the reference's torch dtype for each model the paper ran
    "llava-onevision": torch.float16, "llava-onevision-0.5b": torch.float16, "llava-video": torch.float16,
    "qwen2.5-vl": torch.bfloat16, "qwen2.5-vl-3b": torch.bfloat16,
    "internvl": torch.bfloat16, "internvl2.5": torch.bfloat16,
}
TORCH_NAMES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def frames(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, 48, 64, 3), dtype=np.uint8)


def pixel_dtypes(reranker) -> list[torch.dtype]:
    """Spy on the inputs the model receives: the dtype of every pixel tensor of every forward pass."""
    seen: list[torch.dtype] = []
    to_device = reranker._to_device

    def spy(inputs):
        moved = to_device(inputs)
        seen.extend(v.dtype for k, v in moved.items() if k.startswith("pixel_values"))
        return moved

    reranker._to_device = spy
    return seen


# --------------------------------------------------------------------------- dtype


@pytest.mark.parametrize("spec", sorted(REFERENCE_DTYPES))
def test_paper_dtype_is_the_reference_dtype_of_each_model(spec):
    assert TORCH_NAMES[paper_dtype(spec)] == REFERENCE_DTYPES[spec]


def test_paper_dtype_follows_hub_ids_folders_and_the_family_class(tiny_folders):
    assert paper_dtype("llava-hf/llava-onevision-qwen2-7b-ov-hf") == "fp16"
    assert paper_dtype(str(tiny_folders["llava"])) == "fp16"
    assert paper_dtype(f"llava-onevision:{tiny_folders['llava']}") == "fp16"
    assert paper_dtype(str(tiny_folders["qwen2_5_vl"])) == "bf16"
    assert (LlavaReranker.paper_dtype, QwenReranker.paper_dtype, InternVLReranker.paper_dtype) == ("fp16", "bf16",
                                                                                                   "bf16")
    assert paper_dtype("no-such-model") == "auto"


def test_each_paper_dtype_is_accepted_by_its_family_on_a_gpu(monkeypatch):
    # the LLaVA family runs in fp16 (fp16_safe); Qwen's bf16 is not the fp16 it refuses
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    cuda = torch.device("cuda:0")
    for family in (LlavaReranker, QwenReranker, InternVLReranker):
        notices: list[str] = []
        resolved = resolve_dtype(family.paper_dtype, cuda, fp16_safe=family.fp16_safe, notices=notices)
        assert resolved == TORCH_NAMES[family.paper_dtype] and notices == []


def test_on_a_cpu_the_paper_dtype_runs_in_fp32_and_says_so(tiny_folders):
    spec = str(tiny_folders["llava"])
    reranker = create_reranker(spec, device="cpu", dtype=paper_dtype(spec), frames_per_video=2)
    assert reranker.dtype == torch.float32
    assert {p.dtype for p in reranker.model.parameters()} == {torch.float32}
    (notice,) = reranker.notices
    assert "float16" in notice and "CPU" in notice and "float32" in notice and "\n" not in notice
    seen = pixel_dtypes(reranker)
    (score,) = reranker.score_pairs([(frames(2, 0), frames(2, 1))], "Location")
    assert 1.0 <= score.score <= 5.0 and seen == [torch.float32]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="half precision is a GPU's")
def test_on_a_gpu_the_paper_protocol_runs_llava_in_fp16_weights_and_pixels(tiny_folders):
    spec = str(tiny_folders["llava"])
    reranker = create_reranker(spec, device="cuda", dtype=paper_dtype(spec), frames_per_video=2)
    assert reranker.dtype == torch.float16 and reranker.notices == []
    assert {p.dtype for p in reranker.model.parameters()} == {torch.float16}
    seen = pixel_dtypes(reranker)
    (score,) = reranker.score_pairs([(frames(2, 0), frames(2, 1))], "Location")
    (yes,) = reranker.yes_probabilities([frames(2, 2)], ["Is this video showing a cup?"])
    assert 1.0 <= score.score <= 5.0 and 0.0 <= yes <= 1.0
    assert seen == [torch.float16, torch.float16]  # the pair's pixels and the VQAScore clip's


def test_the_card_says_the_paper_precision_and_the_usual_one():
    llava = RERANKERS.entry("llava-onevision").card["dtype"]
    assert llava.startswith("fp16 under --protocol paper on a GPU (as LLaVA-NeXT ran it); otherwise bf16")
    assert "fp32 on CPU" in llava
    qwen = RERANKERS.entry("qwen2.5-vl").card["dtype"]
    assert qwen.startswith("bf16 under --protocol paper") and "fp16 overflows" in qwen
    assert RERANKERS.entry("internvl").card["dtype"].startswith("bf16 under --protocol paper")
    # the paper protocol refuses llava-video (below): its card gives the usual precision only
    assert RERANKERS.entry("llava-video").card["dtype"] == LlavaReranker.dtype_text


# --------------------------------------------------------------------------- llava-video's layout


def llava_next_video_tokens(frames: int, side: int, position: str) -> int:
    """LLaVA-NeXT's visual tokens for one video (prepare_inputs_labels_for_multimodal, mm_patch_merge_type
    spatial_unpad): each frame pooled to ceil(side/2) squared features, then its mm_newline_position's newlines."""
    pooled = -(-side // 2)
    per_frame = pooled * pooled
    return {"grid": frames * (per_frame + pooled),  # one newline closing every row of every frame
            "frame": frames * (per_frame + 1),
            "one_token": frames * per_frame + 1,
            "no_token": frames * per_frame}[position]


def test_transformers_lays_out_a_video_as_one_token_and_never_as_grid(tiny_folders):
    reranker = create_reranker(str(tiny_folders["llava"]), device="cpu", frames_per_video=2)
    vision = reranker.model.config.vision_config
    side = vision.image_size // vision.patch_size
    clip = frames(4, 3)
    inputs = reranker.processor(text=[reranker.render_request("Describe.")], videos=[clip], do_sample_frames=False,
                                return_tensors="pt")
    video_tokens = int((inputs["input_ids"] == reranker.model.config.video_token_id).sum())
    assert video_tokens == llava_next_video_tokens(4, side, "one_token")
    assert video_tokens != llava_next_video_tokens(4, side, "grid")


@pytest.mark.parametrize("spec", ["llava-video", "llava-video-7b", "llava-video:/models/llava-video",
                                  "llava-hf/LLaVA-Video-7B-Qwen2-hf",
                                  # its weights named under the family that loads them are LLaVA-Video all the same
                                  "llava-onevision:llava-hf/LLaVA-Video-7B-Qwen2-hf",
                                  "llava-onevision:Isotr0py/LLaVA-Video-7B-Qwen2-hf",
                                  "llava-onevision:/models/LLaVA-Video-7B-Qwen2-hf"])
def test_the_paper_protocol_refuses_llava_video_in_one_line(spec):
    refusal = paper_refusal(spec)
    assert refusal and "\n" not in refusal and refusal.startswith("llava-video: ")
    assert "mm_newline_position 'grid'" in refusal and "--protocol fast" in refusal
    with pytest.raises(RerankerError) as err:
        check_protocol([None, spec], "paper")
    assert str(err.value) == refusal and err.value.exit_code == 2
    check_protocol([spec], "fast")  # users keep it


@pytest.mark.parametrize("spec", ["llava-onevision", "llava-onevision-0.5b", "qwen2.5-vl", "internvl",
                                  "llava-onevision:llava-hf/llava-onevision-qwen2-7b-ov-hf",
                                  "llava-onevision:/models/llava-onevision-7b", "no-such-model", "/no/such/folder"])
def test_the_paper_protocol_runs_every_other_model(spec):
    assert paper_refusal(spec) is None
    check_protocol([spec, None], "paper")


def test_a_llava_video_folder_is_refused_for_the_paper_and_scores_otherwise(tiny_folders, tmp_path):
    folder = tmp_path / "LLaVA-Video-7B-Qwen2-hf"  # a local conversion, claimed by its name
    shutil.copytree(tiny_folders["llava"], folder)
    assert RERANKERS.resolve(str(folder)).entry.name == "llava-video"
    with pytest.raises(RerankerError, match="grid"):
        check_protocol([str(folder)], "paper")
    check_protocol([str(folder)], "fast")
    reranker = create_reranker(str(folder), device="cpu", frames_per_video=2)
    (score,) = reranker.score_pairs([(frames(2, 0), frames(2, 1))], "Location")
    assert 1.0 <= score.score <= 5.0


def test_a_llava_video_conversion_in_the_hub_cache_is_refused_by_its_repository(tiny_folders, tmp_path):
    """A cache snapshot's folder is its commit and its config is LLaVA-OneVision's: the repository names the weights."""
    repo = tmp_path / "hub" / "models--llava-hf--LLaVA-Video-7B-Qwen2-hf"
    snapshot = repo / "snapshots" / "0123abcd"
    shutil.copytree(tiny_folders["llava"], snapshot)
    assert RERANKERS.resolve(str(snapshot)).entry.name == "llava-onevision"  # the family that loads it
    for spec in (str(snapshot), f"llava-onevision:{snapshot}"):
        with pytest.raises(RerankerError, match="grid"):
            check_protocol([spec], "paper")
        check_protocol([spec], "fast")
    other = tmp_path / "hub" / "models--llava-hf--llava-onevision-qwen2-7b-ov-hf" / "snapshots" / "0123abcd"
    shutil.copytree(tiny_folders["llava"], other)
    check_protocol([str(other)], "paper")


def test_the_cards_say_how_frames_become_tokens():
    assert "'one_token'" in RERANKERS.entry("llava-onevision").card["pooling"]
    video = RERANKERS.entry("llava-video").card["pooling"]
    assert "mm_newline_position 'grid'" in video and "--protocol paper refuses" in video
    assert RERANKERS.entry("qwen2.5-vl").card["pooling"] == "-"
