"""A small, real concept-conditioned indexer for tests, registered as ``toy-conditioned`` while a test asks for it.

Its vector of a unit is two parts, weighted by the instruction: the unit's colour (mean RGB) and its motion (how
the brightness changes over the frames, relative to its mean, so the same change in another colour reads alike).
An instruction about the location weighs the colour, one about the action the motion, the generic one both, any
other a mix read from the instruction's bytes: the same clip gives another vector under another instruction, and
similar clips are near under the instruction that names what they share.  A fixed orthogonal projection spreads
the parts over all of ``DIM`` dimensions, as a real model's vectors are.  Texts name colours ("red", "blue").
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from typing import ClassVar, Sequence

import numpy as np

from indexers.base import INDEXERS, l2_normalise
from indexers.conditioned import ConditionedIndexer, Instructions
from retrieval.core.sampling import FrameSpec

NAME = "toy-conditioned"
DIM = 16
INSTRUCTIONS = Instructions(
    generic="Represent this clip.",
    query="Find a clip that looks like this.",
    concepts={"location": "Represent the location of this clip.", "main-action": "Represent the action in this clip.",
              "main-subjects": "Represent the subjects of this clip.", "main-objects": "Represent the objects.",
              "order-of-actions": "Represent the order of the actions."},
    template="Represent the {concept} of this clip.",
)
COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255), "grey": (128, 128, 128)}
_PROJECTION = np.linalg.qr(np.random.default_rng(7).normal(size=(DIM, DIM)))[0].astype(np.float32)


def weights(instruction: str) -> tuple[float, float]:
    """(colour weight, motion weight) of an instruction."""
    if "location" in instruction:
        return 1.0, 0.05
    if "action" in instruction:
        return 0.05, 1.0
    if instruction == INSTRUCTIONS.generic:
        return 1.0, 1.0
    byte = hashlib.sha1(instruction.encode()).digest()[0] / 255
    return 0.2 + byte, 1.2 - byte


def colour(rgb) -> np.ndarray:
    return np.asarray(rgb, np.float32) / 255 - 0.5


def motion(frames: np.ndarray) -> np.ndarray:
    bright = frames.astype(np.float32).mean(axis=(1, 2, 3)) + 1e-3
    rel = bright / bright.mean()
    return np.array([3 * rel.std(), 3 * np.abs(np.diff(rel)).mean() if len(rel) > 1 else 0.0], np.float32)


def place(colour_part: np.ndarray, motion_part: np.ndarray, instruction: str) -> np.ndarray:
    wc, wm = weights(instruction)
    raw = np.zeros(DIM, np.float32)
    raw[:3], raw[3:5] = wc * colour_part, wm * motion_part
    return raw @ _PROJECTION


class ToyConditioned(ConditionedIndexer):
    name, dim, instructions = NAME, DIM, INSTRUCTIONS
    calls: ClassVar[list[tuple[str, str, int]]] = []  # (what, instruction, rows) of every call, for tests

    def __init__(self, source: str | None = None, **_kwargs):
        self.source = source or "toy"
        self.frame_spec = FrameSpec("linspace", 8)

    def embed_units(self, units: Sequence[np.ndarray], instruction: str | None = None) -> np.ndarray:
        said = instruction if instruction is not None else self.instructions.generic
        ToyConditioned.calls.append(("units", said, len(units)))
        rows = [place(colour(u.reshape(-1, 3).mean(axis=0)), motion(u), said) for u in units]
        return l2_normalise(np.stack(rows)).astype(np.float32)

    def embed_texts(self, texts: Sequence[str], instruction: str | None = None) -> np.ndarray:
        said = instruction if instruction is not None else self.instructions.query
        ToyConditioned.calls.append(("texts", said, len(texts)))
        rows = []
        for text in texts:
            named = [rgb for word, rgb in COLOURS.items() if word in text.lower()] or [COLOURS["grey"]]
            rows.append(place(colour(np.mean(named, axis=0)), np.zeros(2, np.float32), self.instructions.generic))
        return l2_normalise(np.stack(rows)).astype(np.float32)


def build_toy(source: str | None = None, **kwargs) -> ToyConditioned:
    return ToyConditioned(source, **kwargs)


@contextmanager
def toy_registered():
    """``toy-conditioned`` in the indexer registry for the block's length (its builder is this module's)."""
    INDEXERS.add(NAME, build_toy, default_source="toy", description="a test's concept-conditioned indexer",
                 weights=lambda source: "none: computed from the pixels", text_tower=True)
    ToyConditioned.calls.clear()
    try:
        yield ToyConditioned
    finally:
        INDEXERS._entries.pop(NAME, None)  # the registry has no removal of its own: tests alone take one away


def index_cli(folder, index_dir, *extra: str):
    """``convis index FOLDER -i toy-conditioned --json`` and more options: (exit code, report or output)."""
    import json

    from typer.testing import CliRunner

    from retrieval.cli.app import app

    result = CliRunner().invoke(app, ["index", str(folder), "-i", NAME, "--workers", "1", "--index-dir",
                                      str(index_dir), "--json", *extra])
    return result.exit_code, (json.loads(result.stdout) if result.exit_code == 0 else result.output)
