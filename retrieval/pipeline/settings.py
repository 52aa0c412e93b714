"""What one indexing run is asked to do, in one value: ``Engine.index`` and the CLI build it, the run reads it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from retrieval.core.defaults import MAX_SEGMENT_SECONDS, MIN_SEGMENT_SECONDS
from retrieval.core.ranges import in_range
from retrieval.core.segmentation import ShotRule
from retrieval.store.errors import IndexSettingsError
from retrieval.store.vectors.faiss_index import check_factory
from retrieval.store.vectors.lance_sync import check_store

PUBLISH_EVERY = 60.0  # seconds between snapshots during a run, so queries see progress
# seconds one decode task may take before its file is skipped: a task reads one window of a file's units
# (at most ``stages.WINDOW_FRAMES`` sampled frames), so a long file has as many limits as windows
DECODE_TIMEOUT = 300.0


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
    videos moved, index them at the new folder; ``prune``: forget however many files are gone,
    unavailable ones too (``pipeline.availability``; a run that would forget more than half of them is refused
    without it); ``retry_failed``: try again every
    file that failed before and has not changed since (by default only those whose failure may have passed);
    ``captioner``: a video LMM spec (any reranker) that describes every unit once, a caption and one answer
    per ConViS concept, stored in the catalog (a text indexer embeds the captions); ``decode_device``: where
    videos are decoded, "cuda" or "cuda:N" for NVDEC through torchcodec (None or "cpu": the CPU; an unusable GPU
    falls back to the CPU, said once), passed to ``retrieval.media.video_decoder.VideoDecoder(device=...)``;
    ``shots``: units follow shots (``retrieval.core.segmentation.ShotRule``; detector "auto": TransNetV2 on a
    CUDA GPU, PySceneDetect's content detector otherwise), kept for later runs as a unit length is;
    ``concepts``: concepts beyond the ConViS five that every concept-conditioned indexer embeds each unit under
    (``pipeline.concept_index``), kept for later runs.
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
    store: str | None = None  # "faiss" or "lance[:FOLDER|s3://bucket/prefix]" (lance_sync), kept for later runs
    protocol: str | None = None
    move_root: bool = False
    prune: bool = False
    retry_failed: bool = False
    captioner: str | None = None
    decode_device: str | None = None
    shots: ShotRule | None = None
    concepts: tuple[str, ...] = ()  # concepts (free text allowed) each conditioned indexer adds a vector per unit of

    def __post_init__(self) -> None:
        if self.shots is not None and self.segment_seconds:
            raise IndexSettingsError("units follow either shots or a fixed length, not both")
        if self.decode_device is not None and not re.fullmatch(r"cpu|cuda(:\d+)?", self.decode_device):
            raise IndexSettingsError(f"decode device must be cpu, cuda or cuda:N, not {self.decode_device!r}")
        # a str from a script names a folder all the same; an empty one names none
        object.__setattr__(self, "captions", Path(self.captions) if self.captions else None)
        if self.faiss_index and self.faiss_index.strip().lower() != "auto":
            try:  # the sizes it asks for, before a model loads; configure_faiss then builds it empty per indexer
                check_factory(self.faiss_index)
            except ValueError as exc:
                raise IndexSettingsError(f"--faiss-index {self.faiss_index!r}: {exc}") from None
        object.__setattr__(self, "store", check_store(self.store))  # a wrong one fails before anything is indexed
        if self.shots is not None:
            self.shots.check_lengths()
        if self.segment_seconds and self.segment_seconds < MIN_SEGMENT_SECONDS:
            raise IndexSettingsError(f"segments must be at least {MIN_SEGMENT_SECONDS:g} s long, not "
                                     f"{self.segment_seconds:g} s: shorter units hold a frame or two each")
        if self.segment_seconds and not in_range(self.segment_seconds, MIN_SEGMENT_SECONDS, MAX_SEGMENT_SECONDS):
            raise IndexSettingsError(f"segments must be at most {MAX_SEGMENT_SECONDS:g} s long, not "
                                     f"{self.segment_seconds:g} s ('off': one unit per file)")
