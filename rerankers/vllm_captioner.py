"""Captions on vLLM (``--captioner-backend vllm``): the family's prompts and frames, vLLM's engine generating.

For users describing large collections: vLLM batches every row it is handed continuously and pages its KV cache,
so the GPU stays full across units. What the model reads is what the transformers captioner hands it: the
family's own chat with one video and the request (``HFVideoReranker.render_request``, the placeholder unexpanded,
which vLLM expands), the family's frames at its size (``Reranker._one_clip``) with the processor settings the
family passes (``_video_inputs``: frames never resampled, Qwen's never resized), and the generation settings the
transformers captioner decodes with (``HFVideoReranker.generation_settings``: greedy, the checkpoint's repetition
penalty and end tokens, each request's token budget), mapped onto vLLM's ``SamplingParams``. vLLM's kernels are
not transformers', so its answers are stored under their own key: the transformers captioner's prompt version
followed by the backend and those settings; a vLLM caption never stands in for a transformers one. Only the fast
protocol: the paper protocol's captions are the reference's own generation, one video at a time. The supported
vLLM releases are ``rerankers.generation.VLLM_REQUIREMENT``; another refuses at load in one line.
"""

from __future__ import annotations

import importlib.util
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from rerankers.base import RERANKERS, RerankerUnavailable
from rerankers.generation import VLLM_REQUIREMENT, installed_vllm, sampling_params, vllm_version_problem
from rerankers.hf import FAMILIES, HFVideoReranker, _config_file, revision_of

BACKENDS = ("hf", "vllm")
BACKEND = "vllm"  # what the stored answers' key names


def require_vllm() -> None:
    """RerankerUnavailable in one line when vLLM cannot be imported here, or is not a supported release."""
    if importlib.util.find_spec("vllm") is None:
        raise RerankerUnavailable(f"--captioner-backend vllm needs vLLM ({VLLM_REQUIREMENT}), which is not "
                                  "installed: pip install vllm (a CUDA machine), or use --captioner-backend hf")
    problem = vllm_version_problem(installed_vllm())
    if problem is not None:
        raise RerankerUnavailable(f"--captioner-backend vllm: {problem}, or use --captioner-backend hf")


def checkpoint_generation_config(source: str):
    """The checkpoint's generation config as transformers loads it beside the weights (its
    ``generation_config.json``, else the one the model's config implies), without loading the weights."""
    from transformers import AutoConfig, GenerationConfig

    try:
        return GenerationConfig.from_pretrained(source)
    except OSError:  # no generation_config.json: transformers derives one from the model's config
        return GenerationConfig.from_model_config(AutoConfig.from_pretrained(source))


def prompt_view(spec: str) -> HFVideoReranker:
    """The family of ``spec`` with its processor and no weights: what builds its prompts and frames."""
    from transformers import AutoProcessor

    resolved = RERANKERS.resolve(spec)
    name = resolved.entry.name
    family = FAMILIES.get(name)
    if family is None:
        raise RerankerUnavailable(f"{name} cannot caption on vLLM; use --captioner-backend hf")
    source = resolved.source or resolved.entry.source_for(None)
    view = family.__new__(family)  # the family's methods, without loading its weights: vLLM holds those
    view.name, view.source, view.notices, view.model = name, source, [], None
    view.revision = revision_of(_config_file(source, name))
    view.processor = AutoProcessor.from_pretrained(source)
    view._generation_config = view._greedy_config(checkpoint_generation_config(source))  # as the weights' own
    return view


class VllmCaptioner:
    """A ``retrieval.lmm.captioning.Describer`` whose answers vLLM generates (``describe_each``: every question of
    every unit handed over at once)."""

    batch_size = 64  # units a call of the describe pass: vLLM schedules their rows itself

    def __init__(self, view: HFVideoReranker, llm: Any, vllm_module: Any):
        self.view, self.llm, self._vllm = view, llm, vllm_module
        self.model_id, self.revision = view.model_id, view.revision
        self.frame_spec, self.caption_tokens = view.frame_spec, view.caption_tokens
        self.notices: list[str] = []

    @cached_property
    def describe_version(self) -> str:
        """The transformers captioner's version, then the backend and every generation setting besides the budget:
        an answer generated here is found only by a request on this backend with these settings."""
        return f"{self.view.describe_version}|backend={BACKEND}|{self.view.generation_settings(1).describe()}"

    def describe(self, frames: np.ndarray, prompt: str, max_new_tokens: int, prepared: bool = False) -> str:
        return self.describe_each([frames], [[(prompt, max_new_tokens)]], prepared)[0][0]

    def describe_many(self, videos: Sequence[np.ndarray], prompt: str, max_new_tokens: int,
                      prepared: bool = False) -> list[str]:
        return [texts[0] for texts in self.describe_each(videos, [[(prompt, max_new_tokens)]] * len(videos), prepared)]

    def describe_each(self, videos: Sequence[np.ndarray], questions: Sequence[Sequence[tuple[str, int]]],
                      prepared: bool = False) -> list[list[str]]:
        if len(videos) != len(questions):
            raise ValueError(f"{len(videos)} videos but {len(questions)} question lists")
        rows = self.requests([self.view._one_clip(v, prepared) for v in videos], questions)
        if not rows:
            return [[] for _ in questions]
        params = [self.sampling_params(tokens) for _, tokens in rows]
        outputs = iter(self.llm.generate([prompt for prompt, _ in rows], sampling_params=params, use_tqdm=False))
        return [[next(outputs).outputs[0].text.strip() for _ in asked] for asked in questions]

    def sampling_params(self, max_new_tokens: int) -> Any:
        """vLLM's ``SamplingParams`` for one request: the transformers captioner's settings, this budget."""
        return sampling_params(self.view.generation_settings(max_new_tokens), self._vllm.SamplingParams)

    def requests(self, clips: list[np.ndarray], questions: Sequence[Sequence[tuple[str, int]]]
                 ) -> list[tuple[dict, int]]:
        """vLLM's prompt (text, the video and the processor settings) and token budget for every question."""
        rows = []
        for clip, asked in zip(clips, questions, strict=True):
            video = self._video(clip)
            rows += [(self._prompt(request, video), int(tokens)) for request, tokens in asked]
        return rows

    def _video(self, clip: np.ndarray) -> tuple[Any, dict]:
        """The video as vLLM takes it (frames, with the family's metadata where it has some) and the processor
        settings the family passes the transformers processor."""
        videos, kwargs = self.view._video_inputs([clip])
        kwargs = dict(kwargs)
        metadata = kwargs.pop("video_metadata", None)
        return (videos[0] if metadata is None else (videos[0], metadata[0])), kwargs

    def _prompt(self, request: str, video: tuple[Any, dict]) -> dict:
        frames, kwargs = video
        return {"prompt": self.view.render_request(request), "multi_modal_data": {"video": frames},
                "mm_processor_kwargs": kwargs}

    def __repr__(self) -> str:
        return f"VllmCaptioner({self.model_id!r}, revision={self.revision!r})"


def vllm_captioner(spec: str, protocol: str = "fast") -> VllmCaptioner:
    """``spec`` captioning on vLLM; RerankerUnavailable in one line without vLLM or under the paper protocol."""
    if protocol != "fast":
        raise RerankerUnavailable("--captioner-backend vllm captions under the fast protocol only; the paper "
                                  "protocol's captions are the reference's own generation (use --captioner-backend hf)")
    require_vllm()
    import vllm

    view = prompt_view(spec)
    try:
        view.generation_settings(1).sampling_kwargs()
    except ValueError as err:  # a setting transformers applies that vLLM cannot be told: refused, never dropped
        raise RerankerUnavailable(f"{view.name} cannot caption on vLLM: {err}; use --captioner-backend hf") from None
    llm = vllm.LLM(model=view.source, dtype="auto", seed=0, limit_mm_per_prompt={"video": 1})
    return VllmCaptioner(view, llm, vllm)
