"""Rerankers at run time: dtype choice, unreadable rows, out-of-memory batches, weight placement and
checkpoints whose video and image processors disagree.

No GPU is needed: CUDA facts are monkeypatched and the tiny checkpoints of bench/tiny/vlm.py run on CPU.
"""

from __future__ import annotations

import importlib
import json
import math
import shutil

import numpy as np
import pytest
import torch
import transformers

from rerankers.base import RerankerError
from rerankers.factory import create_reranker
from rerankers.hf import HFVideoReranker, load_checkpoint, resolve_dtype
from rerankers.qwen import QwenReranker


def frames(n: int, seed: int, height: int = 48, width: int = 64) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)


def pairs(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(frames(2, seed=2 * i), frames(2, seed=2 * i + 1)) for i in range(count)]


def one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert message and "\n" not in message
    return message


# --------------------------------------------------------------------------- dtype


def no_bf16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)


def test_fp16_unsafe_family_falls_back_to_fp32_on_a_gpu_without_bf16(monkeypatch):
    no_bf16(monkeypatch)
    notices: list[str] = []
    cuda = torch.device("cuda:0")
    dtype = resolve_dtype(None, cuda, fp16_safe=False, family="qwen2.5-vl", notices=notices)
    assert dtype == torch.float32
    (notice,) = notices
    assert "qwen2.5-vl" in notice and "float32" in notice and "\n" not in notice
    assert resolve_dtype("auto", cuda, fp16_safe=False, family="qwen2.5-vl") == torch.float32
    # families that are fine in fp16 still get it, silently
    assert resolve_dtype(None, cuda, fp16_safe=True, notices=notices) == torch.float16
    assert len(notices) == 1


def test_bf16_and_cpu_choices_are_unchanged_for_unsafe_families(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    notices: list[str] = []
    assert resolve_dtype(None, torch.device("cuda"), fp16_safe=False, notices=notices) == torch.bfloat16
    assert resolve_dtype(None, torch.device("cpu"), fp16_safe=False, notices=notices) == torch.float32
    assert resolve_dtype("bf16", torch.device("cuda"), fp16_safe=False) == torch.bfloat16
    assert resolve_dtype("fp32", torch.device("cuda"), fp16_safe=False) == torch.float32
    assert notices == []


@pytest.mark.parametrize("dtype", ["fp16", "half", "float16", torch.float16])
def test_explicit_fp16_for_an_unsafe_family_is_a_clear_error(monkeypatch, dtype):
    no_bf16(monkeypatch)
    with pytest.raises(RerankerError) as err:
        resolve_dtype(dtype, torch.device("cuda:0"), fp16_safe=False, family="qwen2.5-vl")
    message = one_line(err)
    assert "qwen2.5-vl" in message and "float16" in message and "bf16" in message
    assert resolve_dtype(dtype, torch.device("cuda:0"), fp16_safe=True) == torch.float16


def test_the_family_flag_reaches_the_dtype_choice(tiny_folders):
    assert HFVideoReranker.fp16_safe is True
    unsafe = type("UnsafeQwen", (QwenReranker,), {"fp16_safe": False})
    with pytest.raises(RerankerError, match="float16"):
        unsafe(str(tiny_folders["qwen2_vl"]), name="qwen2-vl", dtype="fp16")
    reranker = unsafe(str(tiny_folders["qwen2_vl"]), name="qwen2-vl", device="cpu")
    assert reranker.dtype == torch.float32 and reranker.notices == []


# --------------------------------------------------------------------------- non-finite answer logits


class RowHead(torch.nn.Module):
    """An lm_head giving one known logit vector everywhere, except ``value`` on the given batch rows."""

    def __init__(self, logits: torch.Tensor, rows: list[int], value: float):
        super().__init__()
        self.register_buffer("logits", logits)
        self.rows, self.value = rows, value
        self.out_features = len(logits)

    def forward(self, hidden):
        out = self.logits.to(hidden.dtype).expand(*hidden.shape[:-1], -1).clone()
        out[self.rows] = self.value
        return out


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_row_with_non_finite_logits_is_unreadable_and_the_batch_stands(tiny_folders, value):
    reranker = create_reranker(str(tiny_folders["qwen2_vl"]), device="cpu", frames_per_video=2, batch_size=3)
    digits = [math.log(k) for k in range(1, 6)]
    logits = torch.full((reranker.model.lm_head.out_features,), -20.0)
    logits[reranker.answer_ids] = torch.tensor(digits)
    reranker.model.lm_head = RowHead(logits, rows=[1], value=value)
    batches = []
    next_tokens = reranker._next_tokens
    reranker._next_tokens = lambda clips, words: batches.append(next_tokens(clips, words)) or batches[-1]
    # greedy scoring reads an unreadable row as no score without any help
    greedy = reranker.score_pairs(pairs(3), "Location", mode="greedy")
    assert [s.score for s in greedy] == [5.0, None, 5.0]
    (tokens,) = batches
    assert tokens[1].text == "" and tokens[1].answer_logits.shape == (5,)
    assert np.isnan(tokens[1].answer_logits).all()
    for token in (tokens[0], tokens[2]):
        assert token.text == "5" and token.answer_logits == pytest.approx(digits, abs=1e-5)
    reranker.score_pairs(pairs(3), "Location", mode="greedy")
    (notice,) = reranker.notices  # said once, not once a batch
    assert "non-finite" in notice and "\n" not in notice


# --------------------------------------------------------------------------- out of GPU memory


def fail_above(reranker, monkeypatch, rows: int) -> list[int]:
    """Make generate run out of memory on batches of more than ``rows`` pairs; returns the batch sizes tried."""
    tried: list[int] = []
    generate = reranker.model.generate

    def limited(**kwargs):
        tried.append(kwargs["input_ids"].shape[0])
        if tried[-1] > rows:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return generate(**kwargs)

    monkeypatch.setattr(reranker.model, "generate", limited)
    return tried


def test_out_of_memory_halves_the_batch_and_keeps_the_results(tiny_folders, monkeypatch):
    reranker = create_reranker(str(tiny_folders["qwen2_vl"]), device="cpu", frames_per_video=2, batch_size=4)
    with torch.no_grad():
        reranker.model.lm_head.weight.mul_(10.0)  # spread the answers, so equality means something
    unconstrained = reranker.score_pairs(pairs(4), "Location")
    assert np.ptp(np.array([s.probs for s in unconstrained]), axis=0).max() > 5e-4

    emptied: list[bool] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    tried = fail_above(reranker, monkeypatch, rows=2)
    constrained = reranker.score_pairs(pairs(4), "Location")
    assert tried == [4, 2, 2]
    assert emptied == [True]
    assert reranker.batch_size == 2
    for got, want in zip(constrained, unconstrained, strict=True):
        assert got.probs == pytest.approx(want.probs, abs=1e-5)
        assert got.score == pytest.approx(want.score, abs=1e-5)
    (notice,) = reranker.notices
    assert "out of GPU memory" in notice and "continuing with 2" in notice

    # later batches start at the size that fitted
    tried.clear()
    reranker.score_pairs(pairs(4), "Location")
    assert tried == [2, 2]


def test_no_pair_is_dropped_when_the_batch_shrinks_mid_way(tiny_folders, monkeypatch):
    reranker = create_reranker(str(tiny_folders["qwen2_vl"]), device="cpu", frames_per_video=2, batch_size=4)
    unconstrained = reranker.score_pairs(pairs(8), "Location")
    tried = fail_above(reranker, monkeypatch, rows=2)
    constrained = reranker.score_pairs(pairs(8), "Location")
    assert len(constrained) == 8 and tried == [4, 2, 2, 2, 2]
    for got, want in zip(constrained, unconstrained, strict=True):
        assert got.score == pytest.approx(want.score, abs=1e-5)


def test_out_of_memory_for_one_pair_is_a_clear_error(tiny_folders, monkeypatch):
    reranker = create_reranker(str(tiny_folders["qwen2_vl"]), device="cpu", frames_per_video=2, batch_size=4)
    tried = fail_above(reranker, monkeypatch, rows=0)
    with pytest.raises(RerankerError) as err:
        reranker.score_pairs(pairs(4), "Location")
    assert one_line(err) == (
        "out of GPU memory even for one pair at 2 frames a video; use fewer frames or a smaller model"
    )
    assert tried == [4, 2, 1] and reranker.batch_size == 1


# --------------------------------------------------------------------------- weight placement


class RecordingModel:
    """Stands in for a loaded model: remembers any .to() it is given."""

    def __init__(self):
        self.moved_to: list = []

    def to(self, device):
        self.moved_to.append(device)
        return self

    def eval(self):
        return self


@pytest.fixture
def from_pretrained_calls(monkeypatch) -> list[dict]:
    """Keyword arguments of every Qwen2-VL from_pretrained call; nothing is loaded."""
    calls: list[dict] = []

    def record(cls, source, **kwargs):
        calls.append(kwargs)
        return RecordingModel()

    # patched on the class: the ``transformers`` module object itself can be swapped on first import
    monkeypatch.setattr(transformers.Qwen2VLForConditionalGeneration, "from_pretrained", classmethod(record))
    return calls


def with_accelerate(monkeypatch, available: bool) -> None:
    utils = importlib.import_module("transformers.utils")
    monkeypatch.setattr(utils, "is_accelerate_available", lambda *args, **kwargs: available)


def load(folder, device: str, dtype):
    classes = {"qwen2_vl": "Qwen2VLForConditionalGeneration"}
    return load_checkpoint(str(folder), classes, family="qwen2-vl", dtype=dtype, device=torch.device(device))


def test_gpu_weights_load_straight_onto_the_device(tiny_folders, from_pretrained_calls, monkeypatch):
    with_accelerate(monkeypatch, True)
    checkpoint = load(tiny_folders["qwen2_vl"], "cuda:0", torch.bfloat16)
    assert from_pretrained_calls == [{"dtype": torch.bfloat16, "device_map": "cuda:0"}]
    assert checkpoint.model.moved_to == []  # placed already: no second copy
    assert checkpoint.notices == []


def test_gpu_loading_without_accelerate_goes_through_host_memory_and_says_so(
    tiny_folders, from_pretrained_calls, monkeypatch
):
    # transformers needs accelerate for any device_map; asking for one without it would fail
    with_accelerate(monkeypatch, False)
    checkpoint = load(tiny_folders["qwen2_vl"], "cuda:0", torch.bfloat16)
    assert from_pretrained_calls == [{"dtype": torch.bfloat16}]
    assert checkpoint.model.moved_to == [torch.device("cuda:0")]
    (notice,) = checkpoint.notices
    assert "accelerate" in notice and "\n" not in notice


def test_cpu_loading_passes_no_device_map(tiny_folders, from_pretrained_calls, monkeypatch):
    with_accelerate(monkeypatch, True)
    checkpoint = load(tiny_folders["qwen2_vl"], "cpu", torch.float32)
    assert from_pretrained_calls == [{"dtype": torch.float32}]
    assert checkpoint.notices == []


def test_cpu_loading_still_gives_a_working_model(tiny_folders):
    reranker = create_reranker(str(tiny_folders["qwen2_vl"]), device="cpu", frames_per_video=2)
    assert next(reranker.model.parameters()).device == torch.device("cpu")
    assert reranker.notices == []
    assert len(reranker.score_pairs(pairs(1), "Location")) == 1


# --------------------------------------------------------------------------- processor configs


def copy_of(tiny_folders, family: str, tmp_path):
    return shutil.copytree(tiny_folders[family], tmp_path / family)


def edit_processor(folder, part: str, **changes):
    path = folder / "processor_config.json"
    config = json.loads(path.read_text())
    config[part].update(changes)
    path.write_text(json.dumps(config))


def split_like_the_hub(folder):
    """Image and video processor configs in their own files, as InternVL3.5-HF ships them."""
    path = folder / "processor_config.json"
    config = json.loads(path.read_text())
    (folder / "preprocessor_config.json").write_text(json.dumps(config.pop("image_processor")))
    (folder / "video_preprocessor_config.json").write_text(json.dumps(config.pop("video_processor")))
    path.write_text(json.dumps(config))


@pytest.mark.parametrize(
    "family, changes, named",
    [
        ("internvl", {"size": {"height": 24, "width": 24}}, ["size", "(24, 24)", "(28, 28)"]),
        ("internvl", {"image_mean": [0.5, 0.5, 0.5]}, ["image_mean", "(0.5, 0.5, 0.5)", "0.4814"]),
        ("llava", {"image_std": [0.25, 0.25, 0.25]}, ["image_std", "(0.25, 0.25, 0.25)", "0.2686"]),
    ],
)
def test_video_processor_disagreeing_with_the_image_processor_is_a_clear_error(
    tiny_folders, tmp_path, family, changes, named
):
    folder = copy_of(tiny_folders, family, tmp_path)
    edit_processor(folder, "video_processor", **changes)
    with pytest.raises(RerankerError) as err:
        create_reranker(str(folder))
    message = one_line(err)
    for text in named:
        assert text in message


def test_hub_layout_with_a_disagreeing_video_config_is_caught(tiny_folders, tmp_path):
    folder = copy_of(tiny_folders, "internvl", tmp_path)
    edit_processor(folder, "video_processor", size={"height": 24, "width": 24})
    split_like_the_hub(folder)
    assert (folder / "video_preprocessor_config.json").is_file()
    with pytest.raises(RerankerError, match=r"video processor size \(24, 24\).*\(28, 28\)"):
        create_reranker(str(folder))


def test_processors_that_agree_load(tiny_folders, tmp_path):
    folder = copy_of(tiny_folders, "internvl", tmp_path)
    # a field that does not change the pixels the encoder sees, in the hub's file layout
    edit_processor(folder, "video_processor", do_sample_frames=True)
    split_like_the_hub(folder)
    reranker = create_reranker(str(folder), frames_per_video=2)
    assert len(reranker.score_pairs(pairs(1), "Location")) == 1
    # Qwen sizes are pixel budgets, different for images and videos by design: not compared
    qwen = create_reranker(str(tiny_folders["qwen2_vl"]))
    assert qwen.processor.image_processor.size != qwen.processor.video_processor.size


def test_loading_a_reranker_draws_no_progress_bar(tiny_folders, capfd):
    from transformers.utils import logging as hf_logging

    from rerankers.factory import create_reranker

    capfd.readouterr()
    create_reranker(f"internvl:{tiny_folders['internvl']}", device="cpu")
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # switched off for the load only
