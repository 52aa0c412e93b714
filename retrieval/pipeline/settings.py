"""What one indexing run is asked to do, in one value: ``Engine.index`` and the CLI build it, the run reads it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PUBLISH_EVERY = 60.0  # seconds between snapshots during a run, so queries see progress
DECODE_TIMEOUT = 300.0  # seconds one file may take to decode before it is skipped


@dataclass(frozen=True)
class IndexSettings:
    """An indexing run's settings (``None``: the index's own, or the default).

    ``segment_seconds``: fixed-length units (None: one unit per file); ``captions``: folder of
    ``<stem>.txt`` captions for the text indexer; ``frames``: frames per unit for image models
    that sample (see ``indexers.base.apply_frames``); ``workers``/``timeout``: decode processes
    and the seconds one file may take; ``ray_address``: decode and embed on Ray ("auto",
    HOST:PORT, "local"), None to do both on this machine; ``faiss_index``/``faiss_params``:
    the FAISS factory string and search parameters, kept for later runs ("auto" resets);
    ``protocol``: "fast" or "paper", fixed when the index is first built; ``move_root``: the
    videos moved, index them at the new folder; ``prune``: forget however many files are gone
    (a run that would forget more than half of them is refused without it).
    """

    segment_seconds: float | None = None
    captions: Path | None = None
    frames: int | None = None
    publish_every: float = PUBLISH_EVERY
    workers: int | None = None
    timeout: float = DECODE_TIMEOUT
    ray_address: str | None = None
    faiss_index: str | None = None
    faiss_params: str | None = None
    protocol: str | None = None
    move_root: bool = False
    prune: bool = False

    def __post_init__(self) -> None:
        # a str from a script names a folder all the same; an empty one names none
        object.__setattr__(self, "captions", Path(self.captions) if self.captions else None)
