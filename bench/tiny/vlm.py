"""Tiny, randomly initialised video LMM checkpoints built offline, for exercising the rerankers.

Each builder writes a real transformers checkpoint folder (config, safetensors weights,
tokenizer, processor configs, chat template) so the code under test loads it through the same
``from_pretrained`` / processor / chat-template / ``generate`` paths as a hub model.

The tokenizer is byte-level: every byte is one token (so "1".."5" are single tokens and any text
encodes), plus merges that make "Yes" one token as real vocabularies do (a VQAScore is read at its
id), plus the special tokens the processors and templates use.
"""

from __future__ import annotations

from pathlib import Path

from bench.tiny.seed import seed_torch

# the chat templates the hub checkpoints ship (Qwen2-VL-Instruct; llava-hf llava-onevision)
QWEN_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: "
    "{% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

LLAVA_OV_CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n'}}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'video') %}{{ '<video>\n' }}{% endfor %}"
    "{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] }}{% endfor %}"
    "{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{% generation %}{{ content['text'] }}{% endgeneration %}{% endfor %}{% endif %}"
    "{{'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<image>",
    "<video>",
]


# words that must be single tokens beyond the bytes: each is built by merging its bytes left to right
WORD_TOKENS = ("Yes",)


def _word_merges(words) -> list[tuple[str, str]]:
    """BPE merges that join each word's bytes left to right ("Y"+"e", then "Ye"+"s")."""
    merges: list[tuple[str, str]] = []
    for word in words:
        for end in range(2, len(word) + 1):
            pair = (word[: end - 1], word[end - 1])
            if pair not in merges:
                merges.append(pair)
    return merges


def byte_tokenizer(chat_template: str, named_tokens: dict[str, str] | None = None, words=WORD_TOKENS):
    """A byte-level BPE tokenizer whose only merges make ``words`` single tokens, wrapped for transformers.

    ``named_tokens`` become tokenizer attributes (``tokenizer.video_token`` etc.), as processors
    such as InternVL's read them.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    named_tokens = named_tokens or {}
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = _word_merges(words)  # the words are ASCII letters: their byte-level form is themselves
    vocab = {token: i for i, token in enumerate([*alphabet, *(a + b for a, b in merges)])}
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    specials = dict.fromkeys([*SPECIAL_TOKENS, *named_tokens.values()])
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        extra_special_tokens=named_tokens,
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def _ids(tokenizer, *tokens: str) -> list[int]:
    return [tokenizer.convert_tokens_to_ids(t) for t in tokens]


def _random_model(model_class, config, seed: int, pad_id: int, eos_id: int):
    """``model_class`` built from ``config`` with seeded random weights, padding and ending as the tokenizer does."""
    seed_torch(seed)
    model = model_class(config).eval()
    model.generation_config.pad_token_id = pad_id
    model.generation_config.eos_token_id = eos_id
    return model


def _saved(folder: Path, model, processor) -> Path:
    """The checkpoint folder, written as a hub checkpoint is: weights and config, processor, tokenizer, template."""
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _vocab_size(tokenizer) -> int:
    return len(tokenizer) + (-len(tokenizer) % 8)


_QWEN_VISION = {
    # Qwen2-VL: embed_dim is the ViT width, hidden_size the language width the merger maps to
    "qwen2_vl": {"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2},
    # Qwen2.5-VL: hidden_size is the ViT width, out_hidden_size the language width
    "qwen2_5_vl": {
        "depth": 2,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_heads": 2,
        "out_hidden_size": 32,
        "window_size": 56,
        "fullatt_block_indexes": [1],
    },
}


def build_qwen_vl(folder: Path, *, model_type: str = "qwen2_vl", seed: int = 0) -> Path:
    """A tiny Qwen2-VL (``model_type="qwen2_vl"``) or Qwen2.5-VL (``"qwen2_5_vl"``) checkpoint."""
    import transformers

    classes = {
        "qwen2_vl": ("Qwen2VLConfig", "Qwen2VLForConditionalGeneration", "Qwen2VLProcessor"),
        "qwen2_5_vl": ("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLProcessor"),
    }
    config_class, model_class, processor_class = (getattr(transformers, n) for n in classes[model_type])
    tokenizer = byte_tokenizer(QWEN_CHAT_TEMPLATE)
    image_id, video_id, start_id, end_id, pad_id, eos_id = _ids(
        tokenizer, "<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>", "<|endoftext|>", "<|im_end|>"
    )
    config = config_class(
        text_config={
            "vocab_size": _vocab_size(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]},
            "bos_token_id": pad_id,
            "eos_token_id": eos_id,
            "pad_token_id": pad_id,
        },
        vision_config={
            **_QWEN_VISION[model_type],
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=image_id,
        video_token_id=video_id,
        vision_start_token_id=start_id,
        vision_end_token_id=end_id,
    )
    seed_torch(seed)
    model = model_class(config).eval()
    model.generation_config.pad_token_id = pad_id
    model.generation_config.eos_token_id = eos_id
    processor = processor_class(
        image_processor=transformers.Qwen2VLImageProcessor(),
        video_processor=transformers.Qwen2VLVideoProcessor(),
        tokenizer=tokenizer,
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    return _saved(folder, model, processor)


def _qwen2_text(tokenizer, pad_id: int, eos_id: int, **extra) -> dict:
    """The tiny Qwen2 language model the LLaVA-OneVision and InternVL builders share."""
    return {"model_type": "qwen2", "vocab_size": _vocab_size(tokenizer), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
            "max_position_embeddings": 4096, "bos_token_id": pad_id, "eos_token_id": eos_id, "pad_token_id": pad_id,
            **extra}


def _norm(mean, std) -> dict:
    # None keeps the processor class defaults; real checkpoints set their own in their configs
    return {} if mean is None else {"image_mean": list(mean), "image_std": list(std)}


def build_llava_onevision(folder: Path, *, seed: int = 0, image_size: int = 28, mean=None, std=None) -> Path:
    """A tiny LLaVA-OneVision checkpoint (SigLIP 28px, 2x2 patches a frame) saved to ``folder``."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    tokenizer = byte_tokenizer(LLAVA_OV_CHAT_TEMPLATE)
    image_id, video_id, pad_id, eos_id = _ids(tokenizer, "<image>", "<video>", "<|endoftext|>", "<|im_end|>")
    patch = 14
    config = LlavaOnevisionConfig(
        text_config=_qwen2_text(tokenizer, pad_id, eos_id),
        vision_config={
            "model_type": "siglip_vision_model",
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": image_size,
            "patch_size": patch,
            "vision_use_head": False,
        },
        image_token_id=image_id,
        video_token_id=video_id,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_grid_pinpoints=[[image_size, image_size]],
    )
    seed_torch(seed)
    model = LlavaOnevisionForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = pad_id
    model.generation_config.eos_token_id = eos_id
    size = {"height": image_size, "width": image_size}
    processor = LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(size=size, image_grid_pinpoints=[[image_size, image_size]],
                                                     **_norm(mean, std)),
        video_processor=LlavaOnevisionVideoProcessor(size=size, **_norm(mean, std)),
        tokenizer=tokenizer,
        num_image_tokens=(image_size // patch) ** 2,
        vision_feature_select_strategy="full",
        chat_template=LLAVA_OV_CHAT_TEMPLATE,
    )
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


INTERNVL_CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n'}}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'image' %}{{ '<image>\n' }}"
    "{% elif content['type'] == 'video' %}{{ '<video>\n' }}"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{'<|im_end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\n' }}{% endif %}"
)

INTERNVL_TOKENS = {
    "start_image_token": "<img>",
    "end_image_token": "</img>",
    "context_image_token": "<IMG_CONTEXT>",
    "video_token": "<video>",
}


def build_internvl(folder: Path, *, seed: int = 0, image_size: int = 28, mean=None, std=None) -> Path:
    """A tiny transformers-native InternVL checkpoint (one image token a frame) saved to ``folder``."""
    import transformers

    tokenizer = byte_tokenizer(INTERNVL_CHAT_TEMPLATE, INTERNVL_TOKENS)
    context_id, pad_id, eos_id = _ids(tokenizer, "<IMG_CONTEXT>", "<|endoftext|>", "<|im_end|>")
    patch = 14
    seq_length = int((image_size // patch) ** 2 * 0.25)
    config = transformers.InternVLConfig(
        text_config=_qwen2_text(tokenizer, pad_id, eos_id, tie_word_embeddings=False),
        vision_config={
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": [image_size, image_size],
            "patch_size": [patch, patch],
        },
        image_token_id=context_id,
        image_seq_length=seq_length,
        tie_word_embeddings=False,
    )
    model = _random_model(transformers.InternVLForConditionalGeneration, config, seed, pad_id, eos_id)
    size = {"height": image_size, "width": image_size}
    processor = transformers.InternVLProcessor(
        image_processor=transformers.GotOcr2ImageProcessor(size=size, **_norm(mean, std)),
        video_processor=transformers.InternVLVideoProcessor(size=size, **_norm(mean, std)),
        tokenizer=tokenizer,
        image_seq_length=seq_length,
        chat_template=INTERNVL_CHAT_TEMPLATE,
    )
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


# The chat template of the Qwen3-VL Instruct checkpoints (their chat_template.json), without its tool-calling and
# reasoning branches: no default system message, each image or video as vision start, its pad, vision end.
QWEN3_VL_CHAT_TEMPLATE = (
    "{%- set image_count = namespace(value=0) %}{%- set video_count = namespace(value=0) %}"
    "{%- for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{%- if message['content'] is string %}{{ message['content'] }}{%- else %}"
    "{%- for content in message['content'] %}"
    "{%- if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{%- set image_count.value = image_count.value + 1 %}{%- if add_vision_id %}Picture {{ image_count.value }}: "
    "{%- endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif content['type'] == 'video' or 'video' in content %}{%- set video_count.value = video_count.value + 1 %}"
    "{%- if add_vision_id %}Video {{ video_count.value }}: {%- endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif 'text' in content %}{{ content['text'] }}{%- endif %}{%- endfor %}{%- endif %}<|im_end|>\n"
    "{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def build_qwen3_vl(folder: Path, *, seed: int = 0, words=WORD_TOKENS) -> Path:
    """A tiny Qwen3-VL checkpoint: Qwen3-VL-8B-Instruct's config shrunk (2 text layers of width 32, a 2-block vision
    tower of width 16 whose both blocks feed deepstack), patch 16, temporal patch 2, merge 2, as the real one.
    ``words``: the words its tokenizer keeps whole."""
    import transformers

    tokenizer = byte_tokenizer(QWEN3_VL_CHAT_TEMPLATE, words=words)
    image_id, video_id, start_id, end_id, pad_id, eos_id = _ids(
        tokenizer, "<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>", "<|endoftext|>", "<|im_end|>"
    )
    config = transformers.Qwen3VLConfig(
        text_config={
            "vocab_size": _vocab_size(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [4, 2, 2],
                                "mrope_interleaved": True},
            "bos_token_id": pad_id, "eos_token_id": eos_id, "pad_token_id": pad_id,
        },
        vision_config={
            "depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 32,
            "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2, "num_position_embeddings": 64,
            "deepstack_visual_indexes": [0, 1],
        },
        image_token_id=image_id,
        video_token_id=video_id,
        vision_start_token_id=start_id,
        vision_end_token_id=end_id,
    )
    model = _random_model(transformers.Qwen3VLForConditionalGeneration, config, seed, pad_id, eos_id)
    processor = transformers.Qwen3VLProcessor(
        image_processor=transformers.Qwen2VLImageProcessor(patch_size=16, merge_size=2, image_mean=[0.5] * 3,
                                                           image_std=[0.5] * 3),  # as the real one
        video_processor=transformers.Qwen3VLVideoProcessor(),
        tokenizer=tokenizer,
        chat_template=QWEN3_VL_CHAT_TEMPLATE,
    )
    return _saved(folder, model, processor)


def build_qwen3_vl_reranker(folder: Path, *, seed: int = 0) -> Path:
    """A tiny Qwen3-VL-Reranker checkpoint: a tiny Qwen3-VL whose tokenizer keeps "yes" and "no" whole (the reranker
    reads P(yes) from those two logits), as Qwen3-VL-Reranker-2B is a Qwen3-VL checkpoint."""
    return build_qwen3_vl(folder, seed=seed, words=(*WORD_TOKENS, "yes", "no"))
