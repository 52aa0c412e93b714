"""Stand-ins that record what a reranker hands its processor, or fix what its model answers."""

from __future__ import annotations

import copy

import torch

FAMILIES = ["qwen2_vl", "qwen2_5_vl", "llava", "internvl"]
# the families whose batches must score as their rows one by one (Qwen3-VL's video placeholder carries timestamps,
# so it is not among the FAMILIES whose chats are checked against PLACEHOLDER)
BATCHED = [*FAMILIES, "qwen3_vl"]
# what each family's chat template puts where a video goes
PLACEHOLDER = {"qwen2_vl": "<|vision_start|><|video_pad|><|vision_end|>",
               "qwen2_5_vl": "<|vision_start|><|video_pad|><|vision_end|>",
               "llava": "<video>\n", "internvl": "<video>\n"}


class ProcessorSpy:
    """Stands in for a processor, recording each call's keyword arguments and outputs."""

    def __init__(self, inner):
        self._inner = inner
        self.calls: list[tuple[dict, dict]] = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def __call__(self, *args, **kwargs):
        out = self._inner(*args, **kwargs)
        self.calls.append((kwargs, out))
        return out


class KnownHead(torch.nn.Module):
    """Stands in for an lm_head: one known logit vector at every position, except ``value`` everywhere
    on the batch ``rows`` given (NaN or inf for a row that overflows)."""

    def __init__(self, logits: torch.Tensor, rows: tuple[int, ...] = (), value: float = 0.0):
        super().__init__()
        self.register_buffer("logits", logits)
        self.rows, self.value = list(rows), value
        self.out_features = len(logits)

    def forward(self, hidden):
        out = self.logits.to(hidden.dtype).expand(*hidden.shape[:-1], -1).clone()
        out[self.rows] = self.value
        return out


class ModelCalled(Exception):
    """Raised by ``GenerateSpy`` once it has the model's inputs: nothing is generated."""


class GenerateSpy:
    """Stands in for ``model.generate``: records the keyword arguments of each call (the tensors the model is
    handed), then stops the run, for tests that need the inputs and no answer."""

    def __init__(self):
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        raise ModelCalled


class GenerationConfigSpy:
    """Records the generation config each caption is generated with, and runs it a few tokens long (cheap)."""

    def __init__(self, model, monkeypatch, tokens: int = 4):
        self.configs = []
        real = model.model.generate

        def generate(*args, generation_config=None, **kwargs):
            self.configs.append(copy.deepcopy(generation_config))
            short = copy.deepcopy(generation_config)
            short.max_new_tokens = min(tokens, short.max_new_tokens)
            return real(*args, generation_config=short, **kwargs)

        monkeypatch.setattr(model.model, "generate", generate)
