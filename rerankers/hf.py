"""Running a transformers video LMM as a reranker: load a checkpoint, ask, read the next token.

Family modules subclass :class:`HFVideoReranker` and set which checkpoints they load
(``model_classes``), where the prompt pieces go (``layout``, see rerankers.prompt) and, where
the reference prepares frames itself, ``_video_inputs``.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np

from rerankers.base import NextToken, Reranker, RerankerError, RerankerUnavailable
from rerankers.prompt import ANSWER_TOKENS, build_chat

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".index.json")


def resolve_device(device=None):
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype, device):
    """bf16 on GPUs that have it, else fp16 on GPU; fp32 on CPU (half precision is slow there)."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    names = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    resolved = getattr(torch, names.get(str(dtype), str(dtype)), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return resolved


def _looks_like_path(source: str) -> bool:
    # hub ids are "owner/name"; anything absolute, relative-dotted, home-based or deeper is a path
    return source.startswith(("/", "./", "../", "~", "\\")) or source.count("/") > 1 or Path(source).is_dir()


def _unavailable(family: str, source: str, reason: str) -> RerankerUnavailable:
    where = (
        f"download {source!r} into the Hugging Face cache (HF_HOME), e.g. `hf download {source}` while online"
        if not _looks_like_path(source)
        else "check the path"
    )
    return RerankerUnavailable(
        f"{family}: cannot load {source!r} ({reason}); give a local weights folder "
        f"({family}:/path/to/folder) or {where}"
    )


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _config_file(source: str, family: str) -> Path:
    """config.json of a local folder or of the cached hub snapshot (respects HF_HUB_OFFLINE)."""
    if _looks_like_path(source):
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise _unavailable(family, source, "no such folder")
        if not (folder / "config.json").is_file():
            raise _unavailable(family, source, "the folder has no config.json")
        return folder / "config.json"
    from transformers.utils import cached_file

    try:
        path = cached_file(source, "config.json")
    except (OSError, ValueError) as err:
        raise _unavailable(family, source, _first_line(err)) from err
    if path is None:
        raise _unavailable(family, source, "no config.json")
    return Path(path)


def revision_of(config_path: Path) -> str:
    """The hub commit of a cached snapshot, else a hash of the folder's config and weight files."""
    if config_path.parent.parent.name == "snapshots":
        return config_path.parent.name
    digest = hashlib.sha256(config_path.read_bytes())
    for item in sorted(config_path.parent.iterdir()):
        if item.is_file() and item.name.endswith(_WEIGHT_SUFFIXES):
            digest.update(f"{item.name}:{item.stat().st_size};".encode())
    return "local-" + digest.hexdigest()[:16]


@dataclass
class Checkpoint:
    model: Any
    processor: Any
    revision: str


def _placement(device) -> dict:
    # with accelerate, GPU weights load straight onto the card instead of through CPU memory
    if device.type != "cpu" and importlib.util.find_spec("accelerate") is not None:
        return {"device_map": str(device)}
    return {}


def load_checkpoint(source: str, model_classes: Mapping[str, str], *, family: str, dtype, device) -> Checkpoint:
    """Model (on ``device``, eval mode) + processor for ``source``; RerankerUnavailable if impossible."""
    config_path = _config_file(source, family)
    model_type = json.loads(config_path.read_text()).get("model_type", "")
    if model_type not in model_classes:
        raise _unavailable(
            family,
            source,
            f"it is a {model_type or 'untyped'!r} checkpoint; {family} loads transformers-native "
            f"{' / '.join(sorted(model_classes))} checkpoints",
        )
    import transformers

    model_class = getattr(transformers, model_classes[model_type])
    try:
        model = model_class.from_pretrained(source, dtype=dtype, **_placement(device))
        processor = transformers.AutoProcessor.from_pretrained(source)
    except (OSError, ValueError) as err:
        raise _unavailable(family, source, _first_line(err)) from err
    return Checkpoint(model.to(device).eval(), processor, revision_of(config_path))


def answer_token_ids(tokenizer) -> list[int]:
    """Vocabulary ids of "1".."5"; each must be one token, or the expected score is meaningless."""
    ids = []
    for answer in ANSWER_TOKENS:
        encoded = tokenizer.encode(answer, add_special_tokens=False)
        if len(encoded) != 1:
            raise RerankerError(f"the tokenizer splits the answer {answer!r} into {len(encoded)} tokens")
        ids.append(encoded[0])
    return ids


class HFVideoReranker(Reranker):
    """A transformers image-text-to-text model fed the pair as one video."""

    layout: ClassVar[str]  # key of rerankers.prompt.CHAT_LAYOUTS
    model_classes: ClassVar[Mapping[str, str]]  # config model_type -> transformers class name

    def __init__(
        self,
        source: str,
        *,
        name: str,
        device=None,
        dtype=None,
        frames_per_video: int | None = None,
        batch_size: int | None = None,
    ):
        self.name, self.source = name, source
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        checkpoint = load_checkpoint(source, self.model_classes, family=name, dtype=self.dtype, device=self.device)
        self.model = checkpoint.model
        self.processor = checkpoint.processor
        self.revision = checkpoint.revision
        self.answer_ids = answer_token_ids(self.processor.tokenizer)
        if frames_per_video is not None:
            if frames_per_video < 1:
                raise ValueError("frames_per_video must be >= 1")
            self.frames_per_video = frames_per_video
        if batch_size is not None:
            self.batch_size = max(1, int(batch_size))
        self._generation_config = self._greedy_config()

    def render_prompt(self, concept_words: str) -> str:
        """The exact text the model reads, before the video placeholder is expanded."""
        chat = build_chat(self.layout, concept_words)
        return self.processor.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)

    def _video_inputs(self, clips: list[np.ndarray]) -> tuple[list[np.ndarray], dict]:
        """Videos and extra processor kwargs; frames are already sampled, so never resample."""
        return clips, {"do_sample_frames": False}

    def _greedy_config(self):
        # the checkpoint's own generation config, as the reference's generate() used it (so a
        # repetition penalty it sets still applies), made deterministic and one token long
        config = copy.deepcopy(self.model.generation_config)
        config.do_sample = False
        config.num_beams = 1
        config.max_new_tokens = 1
        config.temperature = config.top_p = config.top_k = None
        config.output_logits = True  # raw scores of the answer tokens, before any logits processor
        config.return_dict_in_generate = True
        if config.pad_token_id is None:
            config.pad_token_id = self.processor.tokenizer.pad_token_id
        return config

    def _to_device(self, inputs) -> dict:
        import torch

        moved = {}
        for key, value in inputs.items():
            if isinstance(value, torch.Tensor):
                # only pixels take the model dtype; ids, masks, grids and timings keep theirs
                dtype = self.dtype if key.startswith("pixel_values") else None
                value = value.to(device=self.device, dtype=dtype)
            moved[key] = value
        return moved

    def _next_tokens(self, clips: list[np.ndarray], concept_words: str) -> list[NextToken]:
        import torch

        prompt = self.render_prompt(concept_words)
        videos, video_kwargs = self._video_inputs(clips)
        inputs = self.processor(
            text=[prompt] * len(clips),
            videos=videos,
            padding=True,
            padding_side="left",  # generation reads the last position of every row
            return_tensors="pt",
            **video_kwargs,
        )
        with torch.inference_mode():
            out = self.model.generate(
                **self._to_device(inputs),
                generation_config=self._generation_config,
            )
        # raw (unprocessed) logits of the first new token: the model's own answer distribution
        answer_logits = out.logits[0][:, self.answer_ids].float().cpu().numpy()
        greedy = out.sequences[:, -1].tolist()
        decode = self.processor.tokenizer.decode
        return [
            NextToken(answer_logits[i], decode([greedy[i]], skip_special_tokens=True))
            for i in range(len(clips))
        ]
