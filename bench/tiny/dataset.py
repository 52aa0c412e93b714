"""A small folder laid out like ConViS-Bench, made from the example clips, with ratings a person would give.

Six clips in three domains (campus, hands, street): clips of one domain are rated alike on action and
subjects, campus clips share a location, clips whose names start alike share objects. It exercises
``convis bench run`` end to end (every file, every table); with tiny models its numbers say nothing about
model quality.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

CLIPS = {"campus_01": "campus", "campus_02": "campus", "campus_03": "campus", "box": "hands", "cup": "hands",
         "bikes": "street"}
SAME_PLACE = {"campus"}


def rating(a: str, b: str) -> dict:
    """The mean human ratings of a pair, as the release stores them (1-5 per concept)."""
    same = CLIPS[a] == CLIPS[b]
    location = 5.0 if same and CLIPS[a] in SAME_PLACE else (3.0 if same else 1.0)
    action = 4.5 if same else 1.5
    return {"MainAction": action, "MainSubjects": action, "MainObjects": 2.0 + (a[0] == b[0]),
            "Location": location, "OrderOfActions": action - 0.5}


def build_dataset(root: Path, clips: Path) -> int:
    """Write the folder (``videos_trimmed/<domain>/<id>.mp4`` copies of ``clips``, the pair ratings of every
    pair, a retrieval split); returns the number of rated pairs."""
    for name, domain in CLIPS.items():
        target = root / "videos_trimmed" / domain / f"{name}.mp4"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(clips / f"{name}.mp4", target)
    names = list(CLIPS)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    gt = [{"video1": f"videos_trimmed/{a}.mp4", "video2": f"videos_trimmed/{b}.mp4",
           "conditioned_similarity": rating(a, b)} for a, b in pairs]
    (root / "gt_conditioned_similarities.json").write_text(json.dumps(gt))
    split = {"campus_01.mp4": ["campus_02.mp4", "box.mp4", "bikes.mp4"], "box.mp4": ["cup.mp4", "campus_03.mp4"]}
    (root / "to_be_ranked.json").write_text(json.dumps(split))
    return len(pairs)
