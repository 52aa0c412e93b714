"""Running a transformers video LMM as a reranker: load a checkpoint, ask, read the next token.

Family modules subclass :class:`HFVideoReranker` and set which checkpoints they load
(``model_classes``), where the prompt pieces go (``layout``, see rerankers.prompts.similarity) and, where
the reference prepares frames itself, ``_video_inputs``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar

import numpy as np

from rerankers.base import RERANKERS, LetterOdds, NextToken, Reranker, RerankerError, RerankerUnavailable
from rerankers.frames import processor_frame_size
from rerankers.generation import VLLM_REQUIREMENT, GenerationSettings
from rerankers.paper_captions import CHECKPOINT, GENERATE_TOKENS, GREEDY, CaptionRule
from rerankers.prompts.describe import describe_chat, text_chat
from rerankers.prompts.diff import LETTERS
from rerankers.prompts.similarity import ANSWER_TOKENS, build_chat
from rerankers.prompts.vqascore import YES
from rerankers.sharing import first_token_processors
from retrieval.core.device import pick_device
from retrieval.core.pixels import FixedResize
from retrieval.core.weights import quiet_loading

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".index.json")

Row = TypeVar("Row")
Out = TypeVar("Out")


def resolve_dtype(dtype, device, *, fp16_safe: bool = True, family: str = "this model", notices=None):
    """bf16 on GPUs that have it, else fp16 on GPU; fp32 on CPU (half precision is slow there).

    A family that overflows in fp16 (``fp16_safe=False``) never gets it: asking for it is an
    error, and a GPU without bf16 runs it in fp32, with a line saying so added to ``notices``.
    Half precision asked for on the CPU (the paper protocol's fp16, say) runs in fp32, with a line
    in ``notices``: many CPUs lack half-precision kernels, and the paper's half-precision numbers
    came from GPU kernels that a CPU would not reproduce anyway.
    """
    import torch

    if dtype is None or dtype == "auto":
        return _auto_dtype(device, fp16_safe, family, notices)
    resolved = _named_dtype(dtype)
    if resolved == torch.float16 and not fp16_safe:
        raise RerankerError(f"{family} overflows in float16 (its scores come out NaN); use dtype bf16 or fp32")
    if device.type == "cpu" and resolved in (torch.float16, torch.bfloat16):
        if notices is not None:
            notices.append(f"{family}: {str(resolved).removeprefix('torch.')} is for GPUs; on the CPU it runs "
                           "in float32")
        return torch.float32
    return resolved


def _auto_dtype(device, fp16_safe: bool, family: str, notices) -> Any:
    import torch

    if device.type != "cuda":
        return torch.float32
    if torch.cuda.is_bf16_supported():
        return torch.bfloat16
    if fp16_safe:
        return torch.float16
    if notices is not None:
        notices.append(f"{family}: no bfloat16 on this GPU and float16 overflows this model; running in float32")
    return torch.float32


def _named_dtype(dtype) -> Any:
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    names = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    resolved = getattr(torch, names.get(str(dtype), str(dtype)), None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return resolved


def looks_like_path(source: str) -> bool:
    # hub ids are "owner/name"; anything absolute, relative-dotted, home-based or deeper is a path
    return source.startswith(("/", "./", "../", "~", "\\")) or source.count("/") > 1 or Path(source).is_dir()


def unavailable(family: str, source: str, reason: str) -> RerankerUnavailable:
    where = (
        f"download {source!r} into the Hugging Face cache (HF_HOME), e.g. `hf download {source}` while online"
        if not looks_like_path(source)
        else "check the path"
    )
    return RerankerUnavailable(
        f"{family}: cannot load {source!r} ({reason}); give a local weights folder "
        f"({family}:/path/to/folder) or {where}{cpu_hint(family)}"
    )


def cpu_hint(family: str | None) -> str:
    # a user without these weights may well have no GPU either: name the one model that answers on a CPU
    small = cpu_release()
    return "" if small is None or small.name == family else \
        f"; on a CPU, try {small.name}, the smallest model ({small.default})"


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _config_file(source: str, family: str) -> Path:
    """config.json of a local folder or of the cached hub snapshot (respects HF_HUB_OFFLINE)."""
    if looks_like_path(source):
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise unavailable(family, source, "no such folder")
        if not (folder / "config.json").is_file():
            raise unavailable(family, source, "the folder has no config.json")
        return folder / "config.json"
    from transformers.utils import cached_file

    try:
        path = cached_file(source, "config.json")
    except (OSError, ValueError) as err:
        raise unavailable(family, source, _first_line(err)) from err
    if path is None:
        raise unavailable(family, source, "no config.json")
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
    notices: list[str] = field(default_factory=list)


def _placement(device, notices: list[str]) -> dict:
    """from_pretrained kwargs that load the weights straight onto ``device``.

    A device_map makes transformers fill each weight on the card as it reads it; without one the
    whole model is first built in host memory (too much for a 7-8B model on many machines).
    transformers requires accelerate for any device_map, so without it loading goes through host
    memory and says so.
    """
    if device.type == "cpu":
        return {}
    from transformers.utils import is_accelerate_available

    if is_accelerate_available():
        return {"device_map": str(device)}
    notices.append(f"accelerate is not installed: the weights pass through host memory on the way to {device}")
    return {}


def attention_choice(device, dtype) -> str | None:
    """The attention kernels a load asks for: FlashAttention-2 on CUDA in half precision where ``flash_attn`` is
    installed (long video prompts are attention-bound); None elsewhere: transformers' default (SDPA where the
    family supports it). The kernel changes no input the model sees, only how attention is computed."""
    import importlib.util

    import torch

    half = dtype in (torch.float16, torch.bfloat16)
    if getattr(device, "type", str(device)) == "cuda" and half and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return None


def _with_attention(model_class, source: str, kwargs: dict, device, notices: list[str]):
    """``from_pretrained`` with ``attention_choice``'s kernels, or the default ones where this family or build
    refuses them (said once in the notices)."""
    choice = attention_choice(device, kwargs.get("dtype"))
    if choice is None:
        return model_class.from_pretrained(source, **kwargs)
    try:
        return model_class.from_pretrained(source, attn_implementation=choice, **kwargs)
    except (ImportError, ValueError) as err:
        notices.append(f"{choice} unavailable here ({_first_line(err)}); loading with the default attention")
        return model_class.from_pretrained(source, **kwargs)


def load_checkpoint(source: str, model_classes: Mapping[str, str], *, family: str, dtype, device) -> Checkpoint:
    """Model (on ``device``, eval mode) + processor for ``source``; RerankerUnavailable if impossible."""
    config_path = _config_file(source, family)
    model_type = json.loads(config_path.read_text()).get("model_type", "")
    if model_type not in model_classes:
        raise unavailable(
            family,
            source,
            f"it is a {model_type or 'untyped'!r} checkpoint; {family} loads transformers-native "
            f"{' / '.join(sorted(model_classes))} checkpoints",
        )
    import transformers

    model_class = getattr(transformers, model_classes[model_type])
    notices: list[str] = []
    placement = _placement(device, notices)
    try:
        with quiet_loading():
            model = _with_attention(model_class, source, dict(dtype=dtype, **placement), device, notices)
            processor = transformers.AutoProcessor.from_pretrained(source)
    except (OSError, ValueError) as err:
        raise unavailable(family, source, _first_line(err)) from err
    check_processors_agree(processor, family)
    if "device_map" not in placement:  # a device_map has already put every weight on the device
        model = model.to(device)
    return Checkpoint(model.eval(), processor, revision_of(config_path), notices)


def check_processors_agree(processor, family: str) -> None:
    """The video processor must prepare frames as the image processor does: same size, same normalisation.

    Both feed the same vision encoder, so a checkpoint whose video config disagrees (InternVL3.5-HF
    ships one) would hand the encoder frames it was not trained on.
    """
    image, video = getattr(processor, "image_processor", None), getattr(processor, "video_processor", None)
    if image is None or video is None:
        return
    image_settings, video_settings = _frame_settings(image), _frame_settings(video)
    for what, image_value in image_settings.items():
        video_value = video_settings[what]
        if image_value is not None and video_value is not None and not np.allclose(image_value, video_value):
            raise RerankerError(
                f"{family}: the checkpoint's video processor {what} {video_value} differs from its image "
                f"processor {what} {image_value}; make its video processor config match the image one"
            )


def _frame_settings(proc) -> dict[str, tuple | None]:
    """What decides the pixels the encoder sees; None where the processor has no such setting."""
    return {
        "image_mean": _floats(proc, "image_mean"),
        "image_std": _floats(proc, "image_std"),
        "size": _frame_size(proc),
    }


def _floats(proc, name: str) -> tuple[float, ...] | None:
    value = getattr(proc, name, None)
    return None if value is None else tuple(float(v) for v in np.atleast_1d(value))


def _frame_size(proc) -> tuple[int, int] | None:
    """(height, width) of a frame after resizing and any centre crop; None for pixel-budget sizes (Qwen)."""
    size = getattr(proc, "crop_size" if getattr(proc, "do_center_crop", False) else "size", None)
    if size is None:
        return None
    height, width = size.get("height"), size.get("width")
    return (int(height), int(width)) if height and width else None


def answer_token_ids(tokenizer) -> list[int]:
    """Vocabulary ids of "1".."5"; each must be one token, or the expected score is meaningless."""
    return [single_token_id(tokenizer, answer) for answer in ANSWER_TOKENS]


def single_token_id(tokenizer, answer: str) -> int:
    """The vocabulary id of ``answer``, which must be one token: its probability is read at that id alone."""
    encoded = tokenizer.encode(answer, add_special_tokens=False)
    if len(encoded) != 1:
        raise RerankerError(f"the tokenizer splits the answer {answer!r} into {len(encoded)} tokens")
    return encoded[0]


class HFVideoReranker(Reranker):
    """A transformers image-text-to-text model fed the pair as one video."""

    layout: ClassVar[str]  # key of rerankers.prompts.similarity.CHAT_LAYOUTS
    model_classes: ClassVar[Mapping[str, str]]  # config model_type -> transformers class name
    fp16_safe: ClassVar[bool] = True  # False where activations overflow float16 (never run such a family in it)
    frames_per_video = 16  # the reference feeds LLaVA and InternVL 16 frames a video; Qwen sets its own
    size_text: ClassVar[str] = "full-size decode, bicubic straight to the video processor's square"  # frame_resize

    def __init__(
        self,
        source: str,
        *,
        name: str,
        device=None,
        dtype=None,
        frames_per_video: int | None = None,
        batch_size: int | None = None,
        share: bool = True,
    ):
        self.name, self.source = name, source
        self.share = bool(share)
        self.notices: list[str] = []  # one-line messages for the user: fallbacks taken, settings changed
        self.device = pick_device(device)
        self.dtype = resolve_dtype(
            dtype, self.device, fp16_safe=self.fp16_safe, family=name, notices=self.notices
        )
        checkpoint = load_checkpoint(
            source, self.model_classes, family=name, dtype=self.dtype, device=self.device
        )
        self.notices.extend(checkpoint.notices)
        self.model = checkpoint.model
        self.processor = checkpoint.processor
        self.revision = checkpoint.revision
        self.answer_ids = answer_token_ids(self.processor.tokenizer)
        self._yes_id: int | None = None  # looked up on first use: a model that is never asked yes/no needs none
        self._letter_ids: dict[str, list[int]] | None = None  # likewise for which-video questions
        if frames_per_video is not None:
            if frames_per_video < 1:
                raise ValueError("frames_per_video must be >= 1")
            self.frames_per_video = frames_per_video
        if batch_size is not None:
            self.batch_size = max(1, int(batch_size))
        self._generation_config = self._greedy_config()

    def frame_resize(self) -> FixedResize:
        """Full-size decode, then bicubic straight to the square the checkpoint's video processor uses
        (the reference hands PIL frames to the processor at that size); Qwen's pixel budget overrides it."""
        return FixedResize(*processor_frame_size(self.processor))

    def render_prompt(self, concept_words: str) -> str:
        """The exact text the model reads, before the video placeholder is expanded."""
        chat = build_chat(self.layout, concept_words)
        return self.processor.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)

    def _video_inputs(self, clips: list[np.ndarray]) -> tuple[list[np.ndarray], dict]:
        """Videos and extra processor kwargs; frames are already sampled, so never resample."""
        return clips, {"do_sample_frames": False}

    def _greedy_config(self, checkpoint_config=None):
        # the checkpoint's own generation config, as the reference's generate() used it (so a
        # repetition penalty it sets still applies), made deterministic and one token long
        config = copy.deepcopy(checkpoint_config if checkpoint_config is not None else self.model.generation_config)
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
                # asynchronous from pinned host memory (retrieval.lmm.feed pins a batch made ahead); the same as a
                # blocking copy otherwise: CUDA orders it before the kernels that read it
                value = value.to(device=self.device, dtype=dtype, non_blocking=True)
            moved[key] = value
        return moved

    def _next_tokens(self, clips: list[np.ndarray], concept_words: str) -> list[NextToken]:
        prompt = self.render_prompt(concept_words)
        return self._fitted(lambda batch: self._run(batch, prompt), clips)

    def _fitted(self, run: Callable[[list[Row]], list[Out]], rows: list[Row], unit: str = "pair") -> list[Out]:
        """``run(rows)``, one output a row, halving the batch each time the GPU runs out of memory.

        ``unit`` names what a row is (a pair, a video) in the messages.
        """
        import torch

        size = max(1, self.batch_size)
        if len(rows) > size:  # an earlier batch already found this many rows too many
            chunks = [rows[start : start + size] for start in range(0, len(rows), size)]
            return [out for chunk in chunks for out in self._fitted(run, chunk, unit)]
        try:
            return run(rows)
        except torch.cuda.OutOfMemoryError as err:
            if len(rows) == 1:
                raise RerankerError(
                    f"out of GPU memory even for one {unit} at {self.frames_per_video} frames a video; "
                    "use fewer frames or a smaller model"
                ) from err
        # past the except block the failed batch's tensors are unreferenced, so the cache can let them go
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        half = (len(rows) + 1) // 2
        self._shrink_batch(half, unit)
        return self._fitted(run, rows[:half], unit) + self._fitted(run, rows[half:], unit)

    def _shrink_batch(self, size: int, unit: str = "pair") -> None:
        # later batches start at the size that fitted, instead of running out of memory again
        if size < self.batch_size:
            self.notices.append(
                f"{self.name}: out of GPU memory at {self.batch_size} {unit}s a batch; continuing with {size}"
            )
            self.batch_size = size

    def _first_token(self, clips: list[np.ndarray], texts: list[str]):
        """One greedy step over the batch, each clip with its own text; ``out.logits[0]`` holds the
        raw (unprocessed) logits of each row's first new token: the model's own answer distribution."""
        import torch

        videos, video_kwargs = self._video_inputs(clips)
        inputs = self.processor(
            text=texts,
            videos=videos,
            padding=True,
            padding_side="left",  # generation reads the last position of every row
            return_tensors="pt",
            **video_kwargs,
        )
        with torch.inference_mode():
            return self.model.generate(
                **self._to_device(inputs),
                generation_config=self._generation_config,
            )

    def _answers(self, logits, input_ids, attention_mask) -> list[NextToken]:
        """Each row's answer from the raw logits of its first new token (rows, vocabulary), as ``_run`` reads
        generate's: the answer tokens' raw logits, and the token generate picks (its logits processors applied)."""
        import torch

        answer_logits = logits[:, self.answer_ids].float().cpu().numpy()
        processors = first_token_processors(self.model, self._generation_config, input_ids, attention_mask)
        greedy = torch.argmax(processors(input_ids, logits.float()), dim=-1).tolist()
        decode = self.processor.tokenizer.decode
        return [self._read(row, decode([token], skip_special_tokens=True))
                for row, token in zip(answer_logits, greedy, strict=False)]

    def _run(self, clips: list[np.ndarray], prompt: str) -> list[NextToken]:
        return self._generated_answers(self._first_token(clips, [prompt] * len(clips)))

    def _generated_answers(self, out) -> list[NextToken]:
        """Each row's answer from a one-step ``generate`` output: raw logits of "1".."5" and the greedy token."""
        answer_logits = out.logits[0][:, self.answer_ids].float().cpu().numpy()
        greedy = out.sequences[:, -1].tolist()
        decode = self.processor.tokenizer.decode
        texts = [decode([token], skip_special_tokens=True) for token in greedy]
        return [self._read(logits, text) for logits, text in zip(answer_logits, texts, strict=False)]

    # -- describing one clip -------------------------------------------------------------------------
    def render_request(self, request: str, processor=None) -> str:
        """The exact text the model reads when asked ``request`` about one video (placeholder unexpanded), rendered
        by ``processor`` (default: the model's own)."""
        chat = describe_chat(self.layout, request)
        return (processor or self.processor).apply_chat_template(chat, tokenize=False, add_generation_prompt=True)

    def _generate_text(self, clip: np.ndarray, prompt: str, max_new_tokens: int) -> str:
        return self._generate_texts([clip], prompt, max_new_tokens)[0]

    def _generate_texts(self, clips: list[np.ndarray], prompt: str, max_new_tokens: int) -> list[str]:
        return self._generate_with(clips, prompt, self._text_config(max_new_tokens))

    def describe_each(self, videos: Sequence[np.ndarray], questions: Sequence[Sequence[tuple[str, int]]],
                      prepared: bool = False, ready=None) -> list[list[str]]:
        """Each video asked its own questions ((request, max new tokens) each), every question of ``batch_size``
        videos in one greedy generation (rerankers.bulk); the answers equal ``describe_many``'s, one request at a
        time. ``prepared`` as for ``describe``; ``ready``: ``describe_inputs`` of the same videos and questions."""
        from rerankers.bulk import describe_units

        return describe_units(self, [self._one_clip(v, prepared) for v in videos], questions, ready)

    def describe_inputs(self, videos: Sequence[np.ndarray], questions: Sequence[Sequence[tuple[str, int]]],
                        prepared: bool = False):
        """``describe_each``'s processor work, done ahead in another thread (``retrieval.lmm.feed``) with that
        thread's own copy of the processor; its tensors stay on the host."""
        from rerankers.bulk import unit_inputs

        if getattr(self, "share", False) and all(self._split_request(request) is not None
                                                 for asked in questions for request, _ in asked):
            return None  # the units go through one pass over each video (rerankers.unit_prefix): no rows to make
        if getattr(self, "_feed_processor", None) is None:
            self._feed_processor = copy.deepcopy(self.processor)
        return unit_inputs(self, [self._one_clip(v, prepared) for v in videos], questions, self._feed_processor)

    # a unit's questions after one pass over its video (rerankers.unit_prefix): families that can cut their describe
    # prompt after the video say where (``_split_request``) and run a prefix (``_unit_prefix``, ``_prefix_forward``)
    def _split_request(self, request: str) -> tuple[str, str] | None:
        """``request``'s describe prompt cut after its video: (the text up to the video's end, the rest); None: this
        family asks each question with its own pass over the video."""
        return None

    def _tail_ids(self, tail: str):
        """The token ids of a describe prompt's rest after its video (a special token ends the video, so the text
        after it is tokenized as it is within the whole prompt)."""
        import torch

        return torch.tensor(self.processor.tokenizer(tail, add_special_tokens=False)["input_ids"], device=self.device)

    def _generate_with(self, clips: list[np.ndarray], prompt: str, config) -> list[str]:
        """One generation for every clip under ``config``: rows padded on the left, so each one's answer starts
        where the prompt ends; padding and end tokens are dropped from the text."""
        import torch

        videos, video_kwargs = self._video_inputs(clips)
        inputs = self.processor(text=[self.render_request(prompt)] * len(clips), videos=videos, padding=True,
                                padding_side="left", return_tensors="pt", **video_kwargs)
        with torch.inference_mode():
            out = self.model.generate(**self._to_device(inputs), generation_config=config)
        start = inputs["input_ids"].shape[1]
        decode = self.processor.tokenizer.decode
        return [decode(row[start:].tolist(), skip_special_tokens=True).strip() for row in out]

    def generation_settings(self, max_new_tokens: int) -> GenerationSettings:
        """What a fast caption or description of up to ``max_new_tokens`` decodes with: another backend is handed
        these (``rerankers.vllm_captioner``)."""
        return GenerationSettings.of(self._text_config(max_new_tokens))

    def _text_config(self, max_new_tokens: int):
        # as the score's config (the checkpoint's own, greedy), but free text of up to ``max_new_tokens``
        config = copy.deepcopy(self._generation_config)
        config.max_new_tokens = int(max_new_tokens)
        config.output_logits = False
        config.return_dict_in_generate = False
        return config

    # -- captions as the ConViS-Bench reference made them (rerankers.paper_captions) -------------------
    caption_text: ClassVar[str] = ("fast: its reranking frames, greedy, 256 new tokens, batched; paper: the same "
                                   "frames, greedy, 256 new tokens (the reference's generate()), one video at a time")

    @classmethod
    def card(cls) -> dict[str, str]:
        if cls.caption_text.startswith("none"):  # a pair scorer that never captions has no captioning backend
            return super().card()
        return {**super().card(), "backends": f"captions on hf (transformers, default), hf-static, or vllm "
                f"({VLLM_REQUIREMENT}; fast protocol; the same generation settings)"}

    def paper_caption_rule(self) -> CaptionRule:
        """The family's own frames and pixels, greedy, 256 new tokens: the reference's LLaVA generate()."""
        return CaptionRule(self.frame_spec, GENERATE_TOKENS, GREEDY)

    def generate_caption(self, clip: np.ndarray, prompt: str, max_new_tokens: int, rule: CaptionRule) -> str:
        import torch

        torch.manual_seed(rule.seed)  # a sampled caption then depends on its video alone (every device is seeded)
        return self._generate_with([clip], prompt, self._caption_config(rule, max_new_tokens))[0]

    def _caption_config(self, rule: CaptionRule, max_new_tokens: int):
        """The generation config ``rule`` decodes with, for up to ``max_new_tokens`` new tokens."""
        from transformers import GenerationConfig

        if rule.decoding == GREEDY:
            return self._text_config(max_new_tokens)
        if rule.decoding == CHECKPOINT:
            config = copy.deepcopy(self.model.generation_config)
            if config.pad_token_id is None:
                config.pad_token_id = self.processor.tokenizer.pad_token_id
        else:
            # every sampling setting named: generate() fills what is left unset (end and pad tokens) from the
            # checkpoint's config, which must not choose how this samples
            config = GenerationConfig(do_sample=True, num_beams=1, **dict(rule.sampling))
        config.max_new_tokens = int(max_new_tokens)
        return config

    def _read(self, answer_logits: np.ndarray, text: str) -> NextToken:
        if np.all(np.isfinite(answer_logits)):
            return NextToken(answer_logits, text)
        # a numerical overflow in this row only: it scores as unreadable, the rest of the batch stands
        self._notice(f"{self.name}: some pairs gave non-finite answer logits ({self.dtype}); scored as unreadable")
        return unreadable()

    def _notice(self, notice: str) -> None:
        # said once, not once a batch
        if notice not in self.notices:
            self.notices.append(notice)

    # -- yes/no questions about one clip (VQAScore) ---------------------------------------------------
    @property
    def yes_id(self) -> int:
        """The vocabulary id of "Yes"; RerankerError if the tokenizer splits it."""
        if self._yes_id is None:
            self._yes_id = single_token_id(self.processor.tokenizer, YES)
        return self._yes_id

    def _yes_probabilities(self, clips: list[np.ndarray], questions: list[str]) -> list[float | None]:
        return self._fitted(self._run_yes, list(zip(clips, questions, strict=False)), unit="video")

    def _run_yes(self, rows: list[tuple[np.ndarray, str]]) -> list[float | None]:
        """Each clip asked its own question in the family's one-video chat; P("Yes") over the whole vocabulary."""
        import torch

        yes_id = self.yes_id  # before the forward pass: a tokenizer that splits "Yes" costs no GPU time
        out = self._first_token([clip for clip, _ in rows], [self.render_request(q) for _, q in rows])
        logits = out.logits[0].float()
        finite = torch.isfinite(logits).all(dim=-1).tolist()
        probs = torch.softmax(logits, dim=-1)[:, yes_id].tolist()
        if not all(finite):
            # a numerical overflow in a row costs that video's answer only, never the batch
            self._notice(f"{self.name}: some videos gave non-finite logits ({self.dtype}); "
                         "their yes/no answers are unreadable")
        return [p if ok else None for p, ok in zip(probs, finite, strict=False)]

    # -- which video a statement fits more, what differs (VidDiff) ------------------------------------
    @property
    def letter_ids(self) -> dict[str, list[int]]:
        """Vocabulary ids of each answer letter's spellings; RerankerError if the tokenizer splits a bare letter."""
        if self._letter_ids is None:
            self._letter_ids = {letter: letter_token_ids(self.processor.tokenizer, letter) for letter in LETTERS}
        return self._letter_ids

    def _letter_odds(self, clips: list[np.ndarray], questions: list[str]) -> list[LetterOdds]:
        return self._fitted(self._run_letters, list(zip(clips, questions, strict=False)), unit="pair")

    def _run_letters(self, rows: list[tuple[np.ndarray, str]]) -> list[LetterOdds]:
        """Each pair clip asked its own question in the family's one-video chat; P(a), P(b) over the vocabulary."""
        import torch

        ids = self.letter_ids
        out = self._first_token([clip for clip, _ in rows], [self.render_request(q) for _, q in rows])
        logits = out.logits[0].float()
        finite = torch.isfinite(logits).all(dim=-1).tolist()
        probs = torch.softmax(logits, dim=-1)
        p_a, p_b = (probs[:, ids[letter]].sum(dim=-1).tolist() for letter in LETTERS)
        decode = self.processor.tokenizer.decode
        texts = [decode([token], skip_special_tokens=True) for token in out.sequences[:, -1].tolist()]
        if not all(finite):
            self._notice(f"{self.name}: some pairs gave non-finite logits ({self.dtype}); their answers are unreadable")
        return [LetterOdds(a if ok else float("nan"), b if ok else float("nan"), text, ok)
                for a, b, text, ok in zip(p_a, p_b, texts, finite, strict=False)]

    def answer_text(self, prompt: str, max_new_tokens: int) -> str:
        """A text-only question in the family's chat (its default system message), answered greedily."""
        import torch

        if max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")
        text = self.processor.apply_chat_template(text_chat(prompt), tokenize=False, add_generation_prompt=True)
        inputs = self.processor(text=[text], return_tensors="pt")
        with torch.inference_mode():
            out = self.model.generate(**self._to_device(inputs), generation_config=self._text_config(max_new_tokens))
        start = inputs["input_ids"].shape[1]
        return self.processor.tokenizer.decode(out[0][start:].tolist(), skip_special_tokens=True).strip()


def letter_token_ids(tokenizer, letter: str) -> list[int]:
    """Every one-token spelling of an answer letter ("a", "A", " a", " A"): a model may answer in either case, and
    some chat templates end without the newline that makes the bare letter likely. The bare lower-case letter
    must be one token."""
    ids = [single_token_id(tokenizer, letter)]
    for spelling in (letter.upper(), f" {letter}", f" {letter.upper()}"):
        encoded = tokenizer.encode(spelling, add_special_tokens=False)
        if len(encoded) == 1 and encoded[0] not in ids:
            ids.append(encoded[0])
    return ids


def unreadable() -> NextToken:
    """The answer of a pair whose logits are not finite: no score in either mode."""
    return NextToken(np.full(len(ANSWER_TOKENS), np.nan), "")


# -- registering a family's checkpoints --------------------------------------------------------------
CPU_PARAMS = 1.0  # billions of parameters: the largest checkpoint that answers in seconds a pair on a CPU


@dataclass(frozen=True)
class Release:
    """One named checkpoint of a family: its default weights, other names, and the config words it claims."""

    name: str
    default: str
    aliases: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()  # substrings of a local folder's model type that mean this family
    description: str = ""
    params: float | None = None  # billions of parameters of the default weights (None: not told)
    pooling: str | None = None  # the card's pooling line where this checkpoint's differs from its family's
    # why --protocol paper cannot run this checkpoint as the paper did, in one line (None: it can)
    paper_refusal: str | None = None
    license: str = ""  # the weights' license, as their model card states it
    evidence: str = ""  # the published figure that argues for it, with its source


RELEASES: list[Release] = []  # every registered checkpoint, in registration order
FAMILIES: dict[str, type[HFVideoReranker]] = {}  # registered name -> the class that builds it


def register_checkpoints(family: type[HFVideoReranker], checkpoints: list[Release], description: str = "") -> None:
    """Register each checkpoint under its name; building it constructs ``family`` with that name."""
    for c in checkpoints:
        card = {**family.card(), **({"pooling": c.pooling} if c.pooling else {})}
        if c.paper_refusal:  # the paper protocol does not build it: its precision is the usual one only
            card["dtype"] = family.dtype_text
        RERANKERS.register(c.name, default_source=c.default, aliases=c.aliases, claims=c.claims,
                           description=c.description or description, card=card, license=c.license,
                           evidence=c.evidence)(_builder(family, c.name))
        RELEASES.append(c)
        FAMILIES[c.name] = family


def cpu_release() -> Release | None:
    """The smallest registered checkpoint, when it is small enough to run on a CPU (None: none is)."""
    sized = [r for r in RELEASES if r.params is not None and r.params <= CPU_PARAMS]
    return min(sized, key=lambda r: r.params, default=None)


def _builder(family: type[HFVideoReranker], name: str):
    def build(source: str, device=None, dtype=None, **kwargs) -> HFVideoReranker:
        return family(source, name=name, device=device, dtype=dtype, **kwargs)

    return build
