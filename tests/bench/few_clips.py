"""bench/tiny's ConViS-Bench folder cut to three clips, for runs whose tests are about how the models are asked,
not about the numbers: an LMM's work grows with the rated pairs (3 here, 15 in the whole folder) and with the
clips' pixels, and each clip is indexed and decoded."""

from __future__ import annotations

import json
from pathlib import Path

from bench.tiny.dataset import build_dataset

# the smallest of them: two clips of one domain and one of another, so pairs are rated alike and apart
FEW_CLIPS = ("box", "cup", "bikes")


def few_clip_dataset(root: Path, videos: Path, names: tuple[str, ...] = FEW_CLIPS) -> Path:
    """The folder at ``root`` with the clips ``names`` alone: their videos, the ratings of their pairs, the
    split's candidates among them."""
    build_dataset(root, videos)
    for path in (root / "videos_trimmed").rglob("*.mp4"):
        if path.stem not in names:
            path.unlink()

    def kept(video: str) -> bool:
        return Path(video).stem in names

    gt_path, split_path = root / "gt_conditioned_similarities.json", root / "to_be_ranked.json"
    gt = json.loads(gt_path.read_text())
    gt_path.write_text(json.dumps([p for p in gt if kept(p["video1"]) and kept(p["video2"])]))
    split = {a: [c for c in cands if kept(c)] for a, cands in json.loads(split_path.read_text()).items() if kept(a)}
    split_path.write_text(json.dumps({a: cands for a, cands in split.items() if cands}))
    return root
