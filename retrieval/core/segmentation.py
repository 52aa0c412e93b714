"""How a video is cut into units, as one value and as the label an index records.

Three ways: one unit per file (label ""), fixed-length units (``--segment 10s``, label "10") and shot
units (``--segment shots[:DETECTOR]``, label "shots:content:1:60": the detector that ran, then the
shortest and longest unit in seconds).  A shot rule's detector is "auto" until a run resolves it
(``retrieval.media.shots.choose_detector``); only resolved rules are recorded, so every later run
cuts with the same detector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from retrieval.core.defaults import MAX_SEGMENT_SECONDS, MIN_SEGMENT_SECONDS
from retrieval.core.errors import ConvisError
from retrieval.core.ranges import in_range

DEFAULT_SHOT_MIN_SECONDS = 1.0  # a shorter shot is merged into its neighbour: a flash or a sliver, not a unit
DEFAULT_SHOT_MAX_SECONDS = 60.0  # a longer one is split into equal parts: one unit, one minute at most
SHOT_DETECTORS = ("auto", "content", "transnet")


class SegmentationError(ConvisError, ValueError):
    """A --segment value or shot rule convis cannot cut with; the message is the user-facing reason."""

    exit_code, http_status = 2, 400


@dataclass(frozen=True)
class ShotRule:
    """Units follow shots: ``detector`` finds the cuts, shots shorter than ``min_seconds`` are merged into the
    previous one, shots longer than ``max_seconds`` (None: no limit) split into equal parts."""

    detector: str = "auto"
    min_seconds: float = DEFAULT_SHOT_MIN_SECONDS
    max_seconds: float | None = DEFAULT_SHOT_MAX_SECONDS

    def __post_init__(self) -> None:
        if self.detector not in SHOT_DETECTORS:
            raise SegmentationError(f"unknown shot detector {self.detector!r}: use one of {', '.join(SHOT_DETECTORS)}")
        top = math.inf if self.max_seconds is None else self.max_seconds
        if not (0 <= self.min_seconds <= top) or top <= 0 or math.isnan(self.min_seconds):
            raise SegmentationError(f"shot units need 0 <= min <= max seconds, not {self.min_seconds:g} and "
                                    f"{top:g}")

    def check_lengths(self) -> None:
        """Refuse lengths outside what a user may ask for. Only asked-for rules are checked, never one read
        from an index: an index cut before these bounds keeps its rule, and ``info`` and later runs read it."""
        if not in_range(self.min_seconds, 0, MAX_SEGMENT_SECONDS) or not (
                self.max_seconds is None or in_range(self.max_seconds, MIN_SEGMENT_SECONDS, MAX_SEGMENT_SECONDS)):
            top = "0" if self.max_seconds is None else f"{self.max_seconds:g}"
            raise SegmentationError(f"--shot-max must be {MIN_SEGMENT_SECONDS:g} to {MAX_SEGMENT_SECONDS:g} seconds "
                                    f"(0: never split) and --shot-min 0 to {MAX_SEGMENT_SECONDS:g}, not {top} "
                                    f"and {self.min_seconds:g}")

    @property
    def label(self) -> str:
        top = "" if self.max_seconds is None else f"{self.max_seconds:g}"
        return f"shots:{self.detector}:{self.min_seconds:g}:{top}"

    def resolved(self, detector: str) -> "ShotRule":
        return replace(self, detector=detector)


def parse_segment(text: str) -> ShotRule | None:
    """A --segment value that asks for shots ("shots", "shots:content", "shots:transnet"), as a rule with the
    default lengths; None for anything else (a length or "off", parsed elsewhere)."""
    name, _, detector = text.strip().lower().partition(":")
    if name != "shots":
        return None
    return ShotRule(detector or "auto")


def segmentation_label(seconds: float | None, shots: ShotRule | None) -> str:
    """What the index records: the shot rule's label, else the unit length, else "" (one unit per file)."""
    if shots is not None:
        return shots.label
    return f"{seconds:g}" if seconds else ""


def from_label(label: str | None) -> tuple[float | None, ShotRule | None]:
    """(unit length, shot rule) from a recorded label: "" or None -> one unit per file."""
    if not label:
        return None, None
    if label.startswith("shots:"):
        _, detector, low, high = (label.split(":") + ["", "", ""])[:4]
        return None, ShotRule(detector or "auto", float(low or DEFAULT_SHOT_MIN_SECONDS),
                              float(high) if high else None)
    return float(label), None


def describe(seconds: float | None, shots: ShotRule | None) -> str:
    """The units in words, for notes and ``info``."""
    if shots is not None:
        top = "no longest" if shots.max_seconds is None else f"at most {shots.max_seconds:g} s"
        return f"shot units ({shots.detector}; at least {shots.min_seconds:g} s, {top})"
    return f"{seconds:g} s units" if seconds else "one unit per file"
