"""How a family decodes its free-text answers, as one value every captioning backend is handed.

transformers' ``generate`` reads a ``GenerationConfig`` (the checkpoint's own, made greedy by the family: Qwen's
repetition penalty of 1.05 stays); vLLM reads ``SamplingParams``. ``GenerationSettings`` is what both must agree
on, read from the config the transformers path really generates with, and mapped onto vLLM's names by
``sampling_kwargs``: a setting the mapping cannot carry (beam search, say) refuses rather than being dropped. The
supported vLLM releases are named here too, so ``convis models`` can say them without importing vLLM.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any, Callable

VLLM_REQUIREMENT = "vllm>=0.19.1,<0.34"  # the extra in pyproject.toml: transformers 5 support, today's prompt inputs
INSTALL = f"pip install '{VLLM_REQUIREMENT}'"

# generate options that change an answer and that vLLM's SamplingParams has no name for: (name, inert values)
UNMAPPED_OPTIONS: tuple[tuple[str, tuple], ...] = (
    ("num_beams", (None, 1)), ("no_repeat_ngram_size", (None, 0)), ("bad_words_ids", (None,)),
    ("encoder_repetition_penalty", (None, 1.0)), ("penalty_alpha", (None,)), ("typical_p", (None, 1.0)),
    ("epsilon_cutoff", (None, 0.0)), ("eta_cutoff", (None, 0.0)), ("sequence_bias", (None,)),
    ("suppress_tokens", (None,)), ("begin_suppress_tokens", (None,)), ("forced_bos_token_id", (None,)),
    ("forced_eos_token_id", (None,)), ("min_new_tokens", (None, 0)),
)


@dataclass(frozen=True)
class GenerationSettings:
    """Every setting of one answer's decoding that changes the answer, besides the prompt and the pixels."""

    max_new_tokens: int
    do_sample: bool = False
    temperature: float | None = None  # sampling only: greedy ignores it
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float = 1.0  # transformers' and vLLM's alike: over the prompt's and the answer's tokens
    stop_token_ids: tuple[int, ...] = ()  # the checkpoint's end tokens
    unmapped: tuple[str, ...] = ()  # settings in force that ``sampling_kwargs`` cannot carry ("num_beams=4")

    @classmethod
    def of(cls, config) -> GenerationSettings:
        """The settings a transformers ``GenerationConfig`` decodes with."""
        sampled = bool(config.do_sample)
        eos = config.eos_token_id
        stops = () if eos is None else tuple(int(t) for t in (eos if isinstance(eos, (list, tuple)) else [eos]))
        unmapped = tuple(f"{name}={getattr(config, name, None)}" for name, inert in UNMAPPED_OPTIONS
                         if getattr(config, name, None) not in inert)
        return cls(
            max_new_tokens=int(config.max_new_tokens), do_sample=sampled,
            temperature=_number(config.temperature) if sampled else None,
            top_p=_number(config.top_p) if sampled else None,
            top_k=int(config.top_k) if sampled and config.top_k is not None else None,
            repetition_penalty=float(config.repetition_penalty if config.repetition_penalty is not None else 1.0),
            stop_token_ids=stops, unmapped=unmapped)

    def sampling_kwargs(self) -> dict[str, Any]:
        """vLLM's ``SamplingParams`` keywords for these settings; ValueError naming what vLLM cannot be told."""
        if self.unmapped:
            raise ValueError(f"vLLM cannot decode as transformers does here: {', '.join(self.unmapped)}")
        kwargs: dict[str, Any] = {"max_tokens": self.max_new_tokens, "repetition_penalty": self.repetition_penalty}
        if self.stop_token_ids:
            kwargs["stop_token_ids"] = list(self.stop_token_ids)
        if not self.do_sample:
            return {"temperature": 0.0, **kwargs}  # greedy: vLLM ignores top_p and top_k at temperature 0
        sampled = {"temperature": 1.0 if self.temperature is None else self.temperature}
        if self.top_p is not None:
            sampled["top_p"] = self.top_p
        if self.top_k is not None:
            sampled["top_k"] = self.top_k
        return {**sampled, **kwargs}

    def describe(self) -> str:
        """What a stored answer's key says of these settings (the budget is the request's, keyed with it)."""
        if self.do_sample:
            mode = f"sample(t={self.temperature},top_p={self.top_p},top_k={self.top_k})"
        else:
            mode = "greedy"
        return f"{mode},repetition_penalty={self.repetition_penalty:g}"


def sampling_params(settings: GenerationSettings, factory: Callable[..., Any]) -> Any:
    """``factory`` (vLLM's ``SamplingParams``) built from ``settings``."""
    return factory(**settings.sampling_kwargs())


def installed_vllm() -> str | None:
    """The installed vLLM's version, None where the package has no metadata."""
    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return None


def vllm_version_problem(version: str | None) -> str | None:
    """Why ``version`` of vLLM cannot caption here (one line), None when it is a supported release."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    supported = VLLM_REQUIREMENT.removeprefix("vllm")
    if version is None:
        return f"cannot tell which vLLM is installed (no package metadata); it needs {VLLM_REQUIREMENT}: {INSTALL}"
    try:
        if SpecifierSet(supported).contains(Version(version), prereleases=True):  # a nightly of a supported line
            return None
    except InvalidVersion:
        pass
    return f"vLLM {version} is installed, the vllm captioner supports {VLLM_REQUIREMENT}: {INSTALL}"


def _number(value) -> float | None:
    return None if value is None else float(value)
