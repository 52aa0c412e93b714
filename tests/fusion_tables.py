"""Synthetic rated pairs whose human score is a known linear function of the signals, and a small
release-format folder of them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bench.fusion_train import PairTable
from bench.loaders import SIMILARITIES_SUFFIX

TRUTH = {"s1": 0.5, "s2": 0.3, "s3": 0.1, "s4": 0.0}


def linear_table(n: int = 500, seed: int = 0, noise: float = 0.2) -> PairTable:
    """Independent N(0, 1) signals; human score = 3 + sum(TRUTH[j] * s_j) + noise."""
    rng = np.random.default_rng(seed)
    cols = {name: rng.standard_normal(n) for name in TRUTH}
    y = 3 + sum(w * cols[name] for name, w in TRUTH.items()) + noise * rng.standard_normal(n)
    pairs = [(f"v{i}a.mp4", f"v{i}b.mp4") for i in range(n)]
    return PairTable(pairs, {"location": y}, {"location": cols})


def shared_video_pairs(n: int = 300, videos: int = 120, seed: int = 0) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    return [tuple(f"{v}.mp4" for v in rng.choice(videos, 2, replace=False)) for _ in range(n)]


def write_release(root: Path, n: int = 120, seed: int = 0) -> Path:
    """A small release-format folder: GT, one global file and one LMM per concept."""
    rng = np.random.default_rng(seed)
    pairs = [(f"videos_trimmed/{a}.mp4", f"videos_trimmed/{b}.mp4") for a, b in shared_video_pairs(n, 80, seed)]
    truth = rng.uniform(1, 5, n)
    keys = {"main-action": "MainAction", "location": "Location"}
    gt = [{"video1": a, "video2": b, "conditioned_similarity": {k: float(truth[i]) for k in keys.values()}}
          for i, (a, b) in enumerate(pairs)]
    (root / "gt.json").write_text(json.dumps(gt))
    glob_dir = root / "computed_similarities" / "dinov2-large"
    glob_dir.mkdir(parents=True)
    dino = 0.5 + 0.1 * truth + 0.1 * rng.standard_normal(n)
    write_scores(glob_dir / f"dinov2-large{SIMILARITIES_SUFFIX}", pairs, dino)
    for folder in ("Main_Action", "Location"):
        lmm_dir = root / "computed_conditioned_similarities" / folder / "LLaVA-OneVision-Qwen2-7B"
        lmm_dir.mkdir(parents=True)
        answers = np.clip(np.round(truth + rng.standard_normal(n)), 1, 5)
        write_scores(lmm_dir / f"LLaVA-OneVision-Qwen2-7B_{folder}{SIMILARITIES_SUFFIX}", pairs, answers)
    return root


def write_scores(path: Path, pairs, values) -> None:
    path.write_text(json.dumps([{"video1": a, "video2": b, "similarity": float(v)}
                                for (a, b), v in zip(pairs, values, strict=False)]))
