"""``python -m bench.tiny OUT [CLIPS]``: a ConViS-Bench-shaped folder of the example clips and the tiny models
that run every Table 3 family on it (a CLIP with a text tower, a Qwen2-VL captioner, a LLaVA-OneVision for
VQAScore), for ``make bench-demo``."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.tiny.dataset import build_dataset
from bench.tiny.embedding import build_qwen3_vl_embedding
from bench.tiny.vision import tiny_open_clip, tiny_pe, tiny_siglip2
from bench.tiny.vlm import build_llava_onevision, build_qwen3_vl, build_qwen3_vl_reranker, build_qwen_vl

OPEN_CLIP_VOCAB = 49408  # open_clip's tokenizer: the text tower must know every id it gives


def main(out: Path, clips: Path) -> None:
    pairs = build_dataset(out / "dataset", clips)
    models = out / "models"
    # each in a folder named "tiny": results name a local model by its family and folder (clip-tiny)
    tiny_open_clip(models / "clip" / "tiny", vocab=OPEN_CLIP_VOCAB)
    tiny_pe(models / "pe" / "tiny")
    tiny_siglip2(models / "siglip2" / "tiny")
    build_qwen_vl(models / "qwen2-vl" / "tiny")
    build_llava_onevision(models / "llava-onevision" / "tiny")
    build_qwen3_vl_embedding(models / "qwen3-vl-embedding" / "tiny")
    build_qwen3_vl(models / "qwen3-vl" / "tiny")
    build_qwen3_vl_reranker(models / "qwen3-vl-reranker" / "tiny")
    print(f"wrote {out / 'dataset'} ({pairs} rated pairs) and tiny models in {models}")


if __name__ == "__main__":
    here = Path(__file__).resolve().parents[2]
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else here / "examples" / "videos")
