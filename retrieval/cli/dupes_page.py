"""``dupes --html``: the groups side by side, a strip of frames a member (ffmpeg), in one self-contained page."""

from __future__ import annotations

import base64
import html
import subprocess
from pathlib import Path

STRIP = 4  # frames a member
MOST_GROUPS = 100  # a page of thousands of strips would take minutes of ffmpeg; the JSON holds every group
WIDTH = 160


def write_page(result, page: Path) -> Path:
    """Write the page of ``result`` (a DupesResult) to ``page``; its path."""
    root = Path(result.root)
    rows = []
    for number, group in enumerate(result.groups[:MOST_GROUPS], 1):
        cells = "".join(_member(root, m) for m in sorted(group.members, key=lambda m: not m.keep))
        rows.append(f"<h2>group {number}: similarity &ge; {group.similarity:.4f}</h2><div class=row>{cells}</div>")
    more = len(result.groups) - MOST_GROUPS
    tail = f"<p>{more} more group(s): see --json</p>" if more > 0 else ""
    title = (f"{len(result.groups)} group(s) of near-duplicate {result.level}s, threshold {result.threshold:.4f} "
             f"({result.chosen})")
    page.write_text(f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title><style>{STYLE}</style>"
                    f"<h1>{html.escape(title)}</h1>{''.join(rows)}{tail}", encoding="utf-8")
    return page


STYLE = ("body{font-family:sans-serif;margin:1em}.row{display:flex;gap:1em;flex-wrap:wrap}.m{border:2px solid #ccc;"
         "padding:4px}.keep{border-color:#2a2}.m img{width:160px;margin-right:2px}")


def _member(root: Path, member) -> str:
    label = "keep" if member.keep else "drop"
    frames = "".join(f'<img src="data:image/jpeg;base64,{b}" alt="">' for b in _strip(root / member.path, member))
    return (f'<div class="m {label}"><b>{label}</b> {html.escape(member.path)} {member.start:.1f}-{member.end:.1f} s, '
            f"{member.similarity:.4f}<br>{frames}</div>")


def _strip(path: Path, member) -> list[str]:
    """``STRIP`` frames spread over the member's span, as base64 JPEGs (none where ffmpeg cannot read it)."""
    span = max(member.end - member.start, 0.0)
    shots = []
    for k in range(STRIP):
        at = member.start + span * (k + 0.5) / STRIP
        try:
            jpeg = subprocess.run(["ffmpeg", "-v", "error", "-ss", f"{at:.3f}", "-i", str(path), "-frames:v", "1",
                                   "-vf", f"scale={WIDTH}:-2", "-f", "image2pipe", "-vcodec", "mjpeg", "-"],
                                  capture_output=True, timeout=30, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            continue  # no ffmpeg, or a file that went away: the member is shown without frames
        if jpeg:
            shots.append(base64.b64encode(jpeg).decode("ascii"))
    return shots
