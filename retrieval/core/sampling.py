"""Which frames to decode: the ConViS reference's per-family sampling rules, as pure index arithmetic.

Each rule maps a unit's frame count ``n`` (and frame rate) to the frame numbers a model sees.
The rules are the reference's (benedettaliberatori/convisbench, commit b8fa4ef):

* ``per-second`` (Qwen2.5-VL, mPLUG-Owl3; convis's fast image indexers): every round(fps)-th
  frame, then uniformly ``int(i*gap + gap/2)`` down to N, padded by repeating the last frame;
* ``linspace`` (LLaVA-OneVision, LLaVA-Video): ``np.linspace(0, n-1, N, dtype=int)`` over the whole
  clip (a short clip repeats frames, no padding needed);
* ``linspace-pad`` (VideoMAE features): ``linspace`` when ``n >= N``, else every frame then the
  last one repeated;
* ``midpoints`` (InternVL ``get_index``): ``seg = (n-1)/N``, frame ``int(seg/2 + round(seg*k))``;
* ``every`` (DINOv2 and CLIP features in the paper): every frame of the unit;
* ``rate`` (VidDiff's baselines, ``data/load_viddiff_dataset._subsample_video``): a fixed frame rate, every
  ``int(fps / rate)``-th frame from the first (every frame when the rate is above the file's), at most N:
  past N the stride grows until N fit, so the rate stays fixed (VidDiff refuses such a clip instead);
* ``qwen-fps`` (the reference's Qwen2.5-VL captions: a video file handed to qwen-vl-utils 0.0.10 at
  ``fps`` = rate): ``k = n / fps * rate`` clamped to [4, min(N, n)] and floored to even (``smart_nframes``),
  then ``torch.linspace(0, n-1, k).round()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def uniform_indices(n: int, wanted: int) -> list[int]:
    """Pick ``wanted`` of ``n`` items as the ConViS reference does.

    ``gap = n / wanted``; item ``i`` is ``int(i * gap + gap / 2)``.  When there are
    fewer items than wanted, every item is taken and the last one repeated (padding).
    """
    _check_wanted(wanted)
    if n <= 0:
        return []
    if n < wanted:
        return _padded(n, wanted)
    gap = n / wanted
    return [int(i * gap + gap / 2) for i in range(wanted)]


def per_second_indices(frame_count: int, fps: float) -> list[int]:
    """About one frame a second: every round(fps)-th frame, as the reference's first pass."""
    step = max(1, int(round(fps))) if fps and math.isfinite(fps) and fps > 0 else 1
    return list(range(0, max(frame_count, 0), step))


def sample_frame_indices(frame_count: int, fps: float, wanted: int) -> list[int]:
    """Frame numbers to decode for one unit: 1 fps, then uniformly down (or padded) to ``wanted``."""
    seconds = per_second_indices(frame_count, fps)
    return [seconds[i] for i in uniform_indices(len(seconds), wanted)]


def linspace_indices(frame_count: int, wanted: int) -> list[int]:
    """``np.linspace(0, n - 1, wanted, dtype=int)``: LLaVA's frames spread over the whole clip."""
    _check_wanted(wanted)
    if frame_count <= 0:
        return []
    return [int(i) for i in np.linspace(0, frame_count - 1, wanted, dtype=int)]


def linspace_padded_indices(frame_count: int, wanted: int) -> list[int]:
    """VideoMAE's clip: ``linspace`` over the clip, or every frame padded with the last when shorter."""
    _check_wanted(wanted)
    if 0 < frame_count < wanted:
        return _padded(frame_count, wanted)
    return linspace_indices(frame_count, wanted)


def midpoint_indices(frame_count: int, wanted: int) -> list[int]:
    """InternVL's ``get_index`` without a time bound: midpoints of ``wanted`` segments of the clip."""
    _check_wanted(wanted)
    if frame_count <= 0:
        return []
    seg = (frame_count - 1) / wanted  # max_frame = n - 1 in the reference
    # np.round rounds halves to even, as the reference's np.round does (Python's round would too)
    return [int(seg / 2 + np.round(seg * k)) for k in range(wanted)]


def every_index(frame_count: int, wanted: int | None = None) -> list[int]:
    """Every frame of the unit (``wanted`` is ignored: the count follows the clip)."""
    return list(range(max(frame_count, 0)))


def rate_stride(fps: float, rate: float) -> int:
    """VidDiff's stride for sampling at ``rate`` frames a second: ``int(fps / rate)``, 1 when the rate is higher."""
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"a frame rate must be a positive number, got {rate!r}")
    if not (fps and math.isfinite(fps) and fps > 0):
        return 1
    return max(1, int(fps / rate))


def rate_indices(frame_count: int, fps: float, rate: float, wanted: int) -> list[int]:
    """Every ``rate_stride``-th frame from the first; past ``wanted`` frames the stride grows until they fit."""
    _check_wanted(wanted)
    stride = rate_stride(fps, rate)
    if frame_count > stride * wanted:
        stride = math.ceil(frame_count / wanted)
    return list(range(0, max(frame_count, 0), stride))


QWEN_MIN_FRAMES = 4  # qwen-vl-utils' FPS_MIN_FRAMES
QWEN_FRAME_FACTOR = 2  # its FRAME_FACTOR: the vision tower merges frames in pairs


def qwen_frame_count(frame_count: int, fps: float, rate: float, most: int) -> int:
    """qwen-vl-utils' ``smart_nframes`` for a file read at ``rate`` frames a second, at most ``most`` frames."""
    factor = QWEN_FRAME_FACTOR
    least = math.ceil(QWEN_MIN_FRAMES / factor) * factor
    top = math.floor(min(most, frame_count) / factor) * factor
    # a file without a usable rate is read as if it had the asked one: every frame counts
    wanted = frame_count / fps * rate if fps and math.isfinite(fps) and fps > 0 else frame_count
    return math.floor(min(max(wanted, least), top, frame_count) / factor) * factor


def qwen_fps_indices(frame_count: int, fps: float, rate: float, most: int) -> list[int]:
    """The frames qwen-vl-utils reads of a file at ``rate`` a second: ``qwen_frame_count`` of them, at
    ``torch.linspace(0, n-1, k).round()``. A clip of one frame (which qwen-vl-utils refuses) keeps it."""
    _check_wanted(most)
    if frame_count <= 0:
        return []
    count = qwen_frame_count(frame_count, fps, rate, most)
    if count < QWEN_FRAME_FACTOR:
        return list(range(frame_count))
    import torch  # torch's own float32 linspace: a float64 one rounds some halves the other way

    return torch.linspace(0, frame_count - 1, count).round().long().tolist()


def _check_wanted(wanted: int) -> None:
    if wanted <= 0:
        raise ValueError("wanted must be positive")


def _padded(n: int, wanted: int) -> list[int]:
    return list(range(n)) + [n - 1] * (wanted - n)


# rule name -> (frame_count, fps, wanted) -> frame numbers
FRAME_RULES: dict[str, Callable[[int, float, int], list[int]]] = {
    "per-second": sample_frame_indices,
    "linspace": lambda n, fps, wanted: linspace_indices(n, wanted),
    "linspace-pad": lambda n, fps, wanted: linspace_padded_indices(n, wanted),
    "midpoints": lambda n, fps, wanted: midpoint_indices(n, wanted),
    "every": lambda n, fps, wanted: every_index(n),
}
RATE = "rate"  # the fixed-rate rule: it needs ``FrameSpec.rate`` besides the count, so it is not in FRAME_RULES
QWEN_FPS = "qwen-fps"  # qwen-vl-utils reading a file at a rate: it needs ``FrameSpec.rate`` too
RATED = (RATE, QWEN_FPS)  # the rules that take a frame rate

RULE_TEXT = {
    "per-second": "1 frame a second, then uniformly int(i*gap + gap/2) to N, padded with the last",
    "linspace": "linspace(0, n-1, N) over the whole clip",
    "linspace-pad": "linspace(0, n-1, N) over the whole clip; shorter clips: every frame padded with the last",
    "midpoints": "midpoints of N equal segments: int(seg/2 + round(seg*k)), seg = (n-1)/N",
    "every": "every frame",
    RATE: "every int(fps/rate)-th frame (a fixed rate), at most N (the stride grows past N)",
    QWEN_FPS: "qwen-vl-utils at a rate: k = n/fps*rate clamped to [4, N] and floored to even, "
              "linspace(0, n-1, k) rounded",
}


def rule_indices(rule: str, frame_count: int, fps: float, wanted: int, rate: float | None = None) -> list[int]:
    """Frame numbers (0-based, within the unit) that ``rule`` picks from ``frame_count`` frames."""
    if rule in RATED:
        if rate is None:
            raise ValueError(f"the {rule} rule needs a frame rate")
        pick = rate_indices if rule == RATE else qwen_fps_indices
        return pick(frame_count, fps, rate, wanted)
    try:
        pick = FRAME_RULES[rule]
    except KeyError:
        raise ValueError(f"unknown frame rule {rule!r}; known: {', '.join(FRAME_RULES)}") from None
    return pick(frame_count, fps, wanted)


@dataclass(frozen=True)
class FrameSpec:
    """How one model wants its frames: which (``rule``, ``count``) and at what size (``resize``).

    ``resize`` is a ``retrieval.core.pixels`` policy (decoder-scaled, or decoded full size and resized
    per frame as the model's own preprocessing does); it travels with the model's weights.
    """

    rule: str = "per-second"
    count: int = 8  # frames per unit; ignored by the "every" rule
    resize: object = None  # a retrieval.core.pixels policy; None = the decoder-scaled default
    rate: float | None = None  # frames a second, for the "rate" rule only

    def __post_init__(self):
        if self.rule in RATED:
            rate_stride(1.0, self.rate if self.rate is not None else float("nan"))  # a clear error when unusable
        elif self.rate is not None:
            raise ValueError(f"a frame rate goes with the {' or '.join(map(repr, RATED))} rules, not {self.rule!r}")
        elif self.rule not in FRAME_RULES:
            raise ValueError(f"unknown frame rule {self.rule!r}; known: {', '.join(FRAME_RULES)}")
        if self.rule != "every" and self.count < 1:
            raise ValueError("a frame spec needs at least one frame")

    def indices(self, frame_count: int, fps: float) -> list[int]:
        return rule_indices(self.rule, frame_count, fps, self.count, self.rate)

    @property
    def sized_at_decode(self) -> bool:
        """Frames come out of the decoder already at the model's input size (full-size decode, then resized)."""
        return self.resize is not None and not self.resize.in_decoder

    def with_count(self, count: int) -> "FrameSpec":
        return FrameSpec(self.rule, count, self.resize, self.rate)

    @classmethod
    def at_rate(cls, rate: float, most: int, resize: object = None) -> "FrameSpec":
        """Frames at a fixed ``rate`` a second, at most ``most`` of them."""
        return cls(RATE, most, resize, float(rate))

    def describe(self) -> str:
        """The rule and count in a few characters, for cache keys and reports: "linspace:16", "rate@4:75"."""
        return f"{self.rule}@{self.rate:g}:{self.count}" if self.rule in RATED else f"{self.rule}:{self.count}"


_SPOKEN = {"per-second": "{n} frames a clip (1 a second, then evenly spread)",
           "linspace": "{n} frames a clip, evenly spaced", "linspace-pad": "{n} frames a clip, evenly spaced",
           "midpoints": "{n} frames a clip (segment midpoints)", "every": "every frame",
           RATE: "{rate:g} frames a second (at most {n} a clip)",
           QWEN_FPS: "{rate:g} frames a second (at most {n} a clip)"}


def spoken_frames(described: str) -> str:
    """``FrameSpec.describe()``'s text as a reader says it: "per-second:8" -> "8 frames a clip (1 a second, then
    evenly spread)", "rate@4:75" -> "4 frames a second (at most 75 a clip)"; anything else as given."""
    rule, _, count = described.rpartition(":")
    rule, _, rate = rule.partition("@")
    try:
        return _SPOKEN[rule].format(n=int(count), rate=float(rate) if rate else 0.0)
    except (KeyError, ValueError):
        return described


def as_spec(spec: "FrameSpec | int") -> FrameSpec:
    """A frame count alone means the fast default: 1 fps then uniform, decoder-scaled."""
    return spec if isinstance(spec, FrameSpec) else FrameSpec(count=int(spec))
