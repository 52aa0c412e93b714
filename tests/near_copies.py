"""A folder of near-duplicate clips made from the example clips with ffmpeg, and which pairs are copies.

Each source is cut to its first few seconds (the "original"); five of them get one edit each (a quarter of the
bitrate, half the size, a 10% crop, 1 s trimmed at each end, a logo over 5% of the frame) and campus_01 two (the
crop and the logo). The other campus pieces stay: distinct footage of the same place, which must not be grouped
with campus_01 or its copies.
"""

from __future__ import annotations

import subprocess
from itertools import combinations
from pathlib import Path

from tests.paths import EXAMPLES

SECONDS = 5  # each original: short keeps the fixture cheap, long enough to trim 1 s at each end
LOGO = "drawbox=x=iw*0.05:y=ih*0.05:w=iw*0.224:h=ih*0.224:color=white@1:t=fill"  # 0.224^2: 5% of the frame
EDITS = {
    "quarter_bitrate": ["-b:v", "{quarter}"],
    "half_scale": ["-vf", "scale=trunc(iw/4)*2:trunc(ih/4)*2"],
    "crop": ["-vf", "crop=trunc(iw*0.9/2)*2:trunc(ih*0.9/2)*2"],
    "trimmed": ["-ss", "1", "-t", str(SECONDS - 2)],
    "logo": ["-vf", LOGO],
}
COPIES = (("bikes.mp4", "quarter_bitrate"), ("cup.mp4", "half_scale"), ("box.mp4", "crop"),
          ("bigbuckbunny.mp4", "trimmed"), ("carphone_pristine.mp4", "logo"), ("campus_01.mp4", "crop"),
          ("campus_01.mp4", "logo"))
SMALL = "scale='min(320,iw)':-2"  # originals at most 320 pixels wide: cheap to write and to decode
FAST = ["-preset", "ultrafast"]
DISTINCT = ("campus_02.mp4", "campus_03.mp4", "campus_04.mp4")


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)


def _bitrate(path: Path) -> int:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=bit_rate",
                          "-of", "csv=p=0", str(path)], check=True, capture_output=True, text=True).stdout
    return int(out.strip())


def _edited(source: Path, dest: Path, edit: str) -> None:
    args = [a.format(quarter=_bitrate(source) // 4) for a in EDITS[edit]]
    _ffmpeg("-i", str(source), *args, "-an", "-c:v", "libx264", *FAST, str(dest))


def make_set(folder: Path) -> set[frozenset[str]]:
    """Write the originals and their copies into ``folder``; the file pairs that are copies of one another."""
    folder.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[str]] = {}
    for name in dict.fromkeys([name for name, _ in COPIES] + list(DISTINCT)):
        _ffmpeg("-i", str(EXAMPLES / name), "-t", str(SECONDS), "-vf", SMALL, "-an", "-c:v", "libx264",
                "-crf", "18", *FAST, str(folder / name))
        groups[name] = [name]
    for name, edit in COPIES:
        copy = f"{Path(name).stem}_{edit}.mp4"
        _edited(folder / name, folder / copy, edit)
        groups[name].append(copy)
    return pairs_of(list(groups.values()))


def pairs_of(groups: list[list[str]]) -> set[frozenset[str]]:
    """Every file pair two groups' members make (a group of n names n(n-1)/2 pairs)."""
    return {frozenset(p) for group in groups for p in combinations(group, 2)}
