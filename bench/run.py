"""Run convis end to end on a ConViS-Bench folder and write its scores in the released formats.

A dataset folder holds the videos (anywhere below it, matched by base name), the pair
ratings ``gt_conditioned_similarities.json``, optionally the retrieval split
(``to_be_ranked.json``), the human partial orders (``ranked.json``) and a caption folder.
The run indexes the videos with convis, scores every rated pair (global cosine per
indexer; per-concept LMM scores with a reranker) and every split anchor's candidates,
and writes

    OUT/computed_similarities/<model>/<model>_similarities.json
    OUT/computed_conditioned_similarities/<Concept>/<model>/<model>_<Concept>_similarities.json
    OUT/computed_retrieval_scores/<Concept>/<model>/<model>_<Concept>_ranking.json

which ``convis bench correlation`` / ``retrieval`` (and this command) then evaluate.
Unreadable greedy answers are written as 0.0, the release's convention; the metrics
treat them as the paper does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from bench.loaders import (
    BenchDataError,
    GtPair,
    PairKey,
    ScoreFile,
    base_name,
    load_gt_pairs,
    load_ranked,
    ranked_from_data,
)
from bench.split import make_split
from indexers.base import INDEXERS, takes_frame_count
from rerankers.base import RERANKERS
from rerankers.factory import create_reranker
from retrieval.core.concepts import CONVIS_CONCEPTS, Concept
from retrieval.core.scores import unit_similarity
from retrieval.engine import Engine
from retrieval.media.scan import find_videos
from retrieval.pipeline.settings import IndexSettings
from retrieval.search.rerank import ClipRef

GT_NAME = "gt_conditioned_similarities.json"
SPLIT_NAME = "to_be_ranked.json"
RANKED_NAME = "ranked.json"
CONCEPT_FOLDERS = {c: w.replace(" ", "_") for c, w in CONVIS_CONCEPTS.items()}  # Main_Action, ...

# hub ids whose rows the paper reports, so results print next to the paper's value
PAPER_FOLDERS = {
    "facebook/dinov2-large": "dinov2-large",
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": "LLaVA-OneVision-Qwen2-7B",
    "llava-hf/llava-onevision-qwen2-0.5b-ov-hf": "LLaVA-OneVision-Qwen2-0.5B",
    "Qwen/Qwen2.5-VL-7B-Instruct": "Qwen2.5-VL-7B-Instruct",
}


@dataclass(frozen=True)
class Dataset:
    root: Path
    pairs: dict[PairKey, GtPair]
    videos: dict[str, Path]  # base name -> file
    split: dict[str, list[str]]  # anchor base name -> candidate base names
    human: dict  # concept -> anchor -> candidate -> rank (HumanRanks)
    human_source: str
    captions: Path | None


@dataclass
class RunResult:
    files: list[ScoreFile] = field(default_factory=list)
    missing_videos: list[str] = field(default_factory=list)
    failed_videos: list[tuple[str, str]] = field(default_factory=list)


def load_dataset(root: Path, captions: Path | None = None) -> Dataset:
    gt_path = root / GT_NAME
    if not gt_path.is_file():
        raise BenchDataError(f"{root}: no {GT_NAME} (the pair ratings) in the dataset folder")
    pairs = load_gt_pairs(gt_path)
    videos = _find_videos(root)
    human, source = _human_ranks(root, pairs)
    split = _split(root, human)
    return Dataset(root, pairs, videos, split, human, source, captions or _caption_dir(root))


def _find_videos(root: Path) -> dict[str, Path]:
    found, _ = find_videos(root)
    return {base_name(f.rel): Path(f.path) for f in found}


def _human_ranks(root: Path, pairs) -> tuple[dict, str]:
    if (root / RANKED_NAME).is_file():
        return load_ranked(root / RANKED_NAME), RANKED_NAME
    # without the official partial orders, rank each video's rated partners by their ratings
    return ranked_from_data(make_split(pairs), "make-split"), "split made from the pair ratings (make-split)"


def _split(root: Path, human: dict) -> dict[str, list[str]]:
    if (root / SPLIT_NAME).is_file():
        data = json.loads((root / SPLIT_NAME).read_text())
        return {base_name(a): [base_name(c) for c in cands] for a, cands in data.items()}
    anchors: dict[str, set[str]] = {}
    for ranks in human.values():
        for anchor, cands in ranks.items():
            anchors.setdefault(anchor, set()).update(cands)
    return {a: sorted(c) for a, c in anchors.items()}


def _caption_dir(root: Path) -> Path | None:
    folder = root / "captions"
    if not folder.is_dir():
        return None
    subdirs = [d for d in sorted(folder.iterdir()) if d.is_dir()]
    return subdirs[0] if subdirs and not any(folder.glob("*.txt")) else folder


def model_folder(registry, name: str, source: str, frames: int, default_frames: int, suffix: str = "") -> str:
    """The folder a model's scores go in: the paper's name when it has one (plus ``suffix`` when not run
    as the paper ran it), else the registry name (plus the weights' name when they are not the default);
    a non-default frame count is added."""
    label = PAPER_FOLDERS.get(source)
    if label is not None:
        label += suffix
    else:
        plain = source == registry.entry(name).default_source
        label = name if plain else re.sub(r"[^A-Za-z0-9._-]+", "_", f"{name}-{Path(source).name}")
    return label if frames == default_frames else f"{label}-f{frames}"


class BenchRun:
    def __init__(self, dataset: Dataset, out: Path, indexers: list[str], reranker: str | None, frames: int | None,
                 mode: str = "expected", symmetric: bool = False, workers: int | None = None,
                 device: str | None = None, note: Callable[[str], None] = lambda m: None, protocol: str = "fast"):
        self.dataset, self.out, self.frames, self.protocol = dataset, out, frames, protocol
        self.indexers, self.reranker_spec = indexers, reranker
        self.mode, self.symmetric, self.workers, self.note = mode, symmetric, workers, note
        # one index per protocol and frame count: an index keeps the protocol it was built with
        self.engine = Engine(out / f"index-{protocol}-f{frames or 'default'}", device=device)
        self.result = RunResult()

    def run(self) -> RunResult:
        settings = IndexSettings(captions=self.dataset.captions, workers=self.workers, frames=self.frames,
                                 protocol=self.protocol)
        report = self.engine.index(self.dataset.root, self.indexers, settings)
        self.result.failed_videos = report.failed
        vectors = self._vectors()
        for model_id, by_video in vectors.items():
            self._write_global(model_id, by_video)
        if self.reranker_spec:
            self._write_conditioned()
        return self.result

    # -- global signals -----------------------------------------------------
    def _vectors(self) -> dict[tuple[str, str, int], dict[str, np.ndarray]]:
        """(name, source, frames) of each indexer -> base name -> the video's vector."""
        with self.engine.open_catalog() as catalog:
            rows = catalog.indexers()
            paths = [p for p, s in catalog.file_states().items() if s.status == "ok"]
            return {
                (r.name, r.source, r.frames): {base_name(p): v[0] for p in paths
                                               if len(v := catalog.unit_vectors(p, r.indexer))}
                for r in rows
            }

    def _write_global(self, model: tuple[str, str, int], by_video: dict[str, np.ndarray]) -> None:
        name, source, frames = model
        indexer = self.engine.indexer(f"{name}:{source}")
        overridden = self.frames is not None and takes_frame_count(indexer)  # the run's --frames applied to it
        folder = model_folder(INDEXERS, name, source, frames, -1 if overridden else frames, self._suffix())
        def sim(a: str, b: str) -> float:
            return float(unit_similarity(by_video[a] @ by_video[b]))

        pairs = [(g, sim(*k)) for k, g in self.dataset.pairs.items() if k[0] in by_video and k[1] in by_video]
        self._note_missing(len(pairs), folder)
        path = self.out / "computed_similarities" / folder / f"{folder}_similarities.json"
        _write(path, [{"video1": g.video1, "video2": g.video2, "similarity": s} for g, s in pairs])
        self.result.files.append(ScoreFile(path, folder, None))
        ranking = {a: {c: sim(a, c) for c in cands if c in by_video} for a, cands in self.dataset.split.items()
                   if a in by_video}
        for concept in self.dataset.human:
            self._write_ranking(folder, concept, ranking)

    def _suffix(self) -> str:
        # the paper's folder names are for its protocol; convis's fast frames are marked as such
        return "" if self.protocol == "paper" else "-fast"

    # -- LMM reranker -------------------------------------------------------
    def _write_conditioned(self) -> None:
        reranker = create_reranker(self.reranker_spec, device=self.engine.device, frames_per_video=self.frames)
        scorer = self.engine.pair_scorer(reranker, self.mode, self.symmetric, [])
        # the class attribute is the family's own frame count (the paper's setting)
        folder = model_folder(RERANKERS, reranker.name, reranker.source, reranker.frames_per_video,
                              type(reranker).frames_per_video)
        clips = self._clips()
        for key, words in CONVIS_CONCEPTS.items():
            concept = Concept(key, words)
            pairs = [(g, (clips[k[0]], clips[k[1]])) for k, g in self.dataset.pairs.items()
                     if k[0] in clips and k[1] in clips]
            scores = scorer.score([p for _, p in pairs], concept)
            cfolder = CONCEPT_FOLDERS[key]
            path = (self.out / "computed_conditioned_similarities" / cfolder / folder
                    / f"{folder}_{cfolder}_similarities.json")
            _write(path, [{"video1": g.video1, "video2": g.video2, "similarity": _released(s.score)}
                          for (g, _), s in zip(pairs, scores)])
            self.result.files.append(ScoreFile(path, folder, key))
            if key in self.dataset.human:
                self._write_ranking(folder, key, self._rank_scores(scorer, clips, concept))
        self.note(f"{reranker.model_id}: {scorer.model_pairs} pairs sent to the model, "
                  f"{scorer.frames.decodes} clips decoded")

    def _rank_scores(self, scorer, clips, concept) -> dict[str, dict[str, float]]:
        out = {}
        for anchor, cands in self.dataset.split.items():
            cands = [c for c in cands if c in clips]
            if anchor in clips and cands:
                scores = scorer.score([(clips[anchor], clips[c]) for c in cands], concept)
                out[anchor] = {c: _released(s.score) for c, s in zip(cands, scores)}
        return out

    def _clips(self):
        with self.engine.open_catalog() as catalog:
            states = catalog.file_states()
        root = self.engine.root
        return {base_name(p): ClipRef(str(root / p), s.content_hash) for p, s in states.items() if s.status == "ok"}

    # -- output -------------------------------------------------------------
    def _write_ranking(self, folder: str, concept: str, ranking: dict) -> None:
        cfolder = CONCEPT_FOLDERS[concept]
        path = self.out / "computed_retrieval_scores" / cfolder / folder / f"{folder}_{cfolder}_ranking.json"
        _write(path, ranking)
        self.result.files.append(ScoreFile(path, folder, concept))

    def _note_missing(self, scored: int, folder: str) -> None:
        if scored < len(self.dataset.pairs):
            self.note(f"{folder}: {len(self.dataset.pairs) - scored} of {len(self.dataset.pairs)} rated pairs "
                      "lack a video (missing or unreadable) and are not scored")


def _released(score: float | None) -> float:
    return 0.0 if score is None else float(score)  # the release writes unreadable answers as 0.0


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))

