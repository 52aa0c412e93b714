"""A tiny randomly initialised Whisper saved as a real checkpoint (builds offline in about a second): a byte-level
tokenizer with Whisper's special and timestamp tokens, so transformers' speech-recognition pipeline runs its real
code, timestamps included, with no downloaded weights."""

from __future__ import annotations

from pathlib import Path

from bench.tiny.seed import seed_torch

LANGUAGES = ("en", "de", "fr")
TIMESTAMPS = 1501  # <|0.00|> ... <|30.00|>, one every 20 ms, as Whisper has


def tiny_whisper(folder: Path) -> Path:
    from transformers import GenerationConfig, WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration

    tokenizer = _tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _specials()}
    end, start = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    seed_torch(0)
    config = WhisperConfig(vocab_size=len(tokenizer), num_mel_bins=80, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                           decoder_ffn_dim=32, d_model=16, max_source_positions=1500, max_target_positions=64,
                           pad_token_id=end, bos_token_id=end, eos_token_id=end, decoder_start_token_id=start)
    model = WhisperForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=start, eos_token_id=end, pad_token_id=end, bos_token_id=end, max_length=64,
        no_timestamps_token_id=ids["<|notimestamps|>"], is_multilingual=True,
        lang_to_id={f"<|{lang}|>": ids[f"<|{lang}|>"] for lang in LANGUAGES},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        prev_sot_token_id=ids["<|startofprev|>"], begin_suppress_tokens=[end], suppress_tokens=[])
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    WhisperFeatureExtractor(feature_size=80).save_pretrained(folder)
    return folder


def _specials() -> list[str]:
    return ["<|endoftext|>", "<|startoftranscript|>", *(f"<|{lang}|>" for lang in LANGUAGES), "<|translate|>",
            "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"]


def _tokenizer():
    from transformers import WhisperTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}  # every byte a token, no merges
    tokenizer = WhisperTokenizer(vocab=vocab, merges=[])
    tokenizer.add_special_tokens({"additional_special_tokens": _specials()[1:]})
    tokenizer.add_tokens([f"<|{i * 0.02:.2f}|>" for i in range(TIMESTAMPS)])
    return tokenizer
