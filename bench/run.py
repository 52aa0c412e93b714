"""Run convis end to end on a ConViS-Bench folder and write its scores in the released formats.

A dataset folder holds the videos (anywhere below it, matched by base name), the pair
ratings ``gt_conditioned_similarities.json``, optionally the retrieval split
(``to_be_ranked.json``), the human partial orders (``ranked.json``) and a caption folder.
The run indexes the videos with convis, captions them (``captioner``, or reads the caption
folder), scores every rated pair and every split anchor's candidates with every Table 3
family -- video-to-video (each indexer's cosine), text-to-text (SBERT over the captions),
cross-modal (CLIPScore of each CLIP-family indexer, VQAScore of an LMM) -- and per concept
with a reranker, and writes

    OUT/captions/<captioner>/<video id>.txt                          (captions it wrote)
    OUT/computed_similarities/<model>/<model>_similarities.json        (video-to-video)
    OUT/computed_similarities/<captions>/<captions>_similarities.json  (SBERT)
    OUT/computed_similarities/<model>_<captions>/<model>_similarities.json   (CLIPScore, VQAScore)
    OUT/computed_conditioned_similarities/<Concept>/<model>/<model>_<Concept>_similarities.json
    OUT/computed_retrieval_scores/<Concept>/<model>/<model>_<Concept>_ranking.json

the release's layout (cross-modal folders carry the caption set's name, as the release's do), which
``convis bench correlation`` / ``retrieval`` (and this command) then evaluate. Unreadable greedy
answers are written as 0.0, the release's convention; the metrics treat them as the paper does. A
concept-conditioned indexer (``qwen3-vl-embedding``) adds, beside its generic vectors' cosine, the cosine of its
per-concept vectors as a conditioned model of its own, ``<model>-concepts`` (``bench.per_concept``).

A folder has the paper's name only for a run as the paper's: its protocol, its weights (transformers' ports
and other checkpoints are named apart, as the release names its own run of the LLaVA port, ``-HF``), and for
a reranker one greedy answer a pair, asked (video 1, video 2), one pair a forward pass, in the family's
``paper_dtype``. Anything else is in the name (``-fast``, ``-expected``, ``-sym``, ``-bf16``, ``-b4``,
``-f8``), so only such a run is printed beside the paper's value.

Each LMM spec is built once a run and shared by the captioner, VQAScore and the reranker (``--frames`` and
``--rerank-batch`` ask the same weights another way); under the paper protocol in its family's ``paper_dtype``, one
request a forward pass.  Cached answers are kept apart by precision and batch size; answers asked after a batch
was lowered for lack of GPU memory are not cached, and the run's notes say so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench import per_concept
from bench.indexed_videos import IndexedVideos, captions_by_video
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
from indexers.text import MINILM
from rerankers.base import RERANKERS
from rerankers.factory import PAPER_BATCH, check_protocol, paper_dtype
from rerankers.prompts.similarity import reference_score
from retrieval.api import Engine
from retrieval.core.concepts import CONVIS_CONCEPTS, Concept
from retrieval.core.scores import clipscore, unit_similarity
from retrieval.core.signal_kinds import caption_signal
from retrieval.lmm.clips import ClipRef
from retrieval.lmm.similarity import PairScorer
from retrieval.lmm.vqascore import Captioned, VqaScorer
from retrieval.media.scan import find_videos
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog.records import IndexerRow

GT_NAME = "gt_conditioned_similarities.json"
SPLIT_NAME = "to_be_ranked.json"
RANKED_NAME = "ranked.json"
CONCEPT_FOLDERS = {c: w.replace(" ", "_") for c, w in CONVIS_CONCEPTS.items()}  # Main_Action, ...

# hub ids (or checkpoint file names) -> the release's folder name for those weights, so a run of the paper's own
# weights lines up with its row. The reference ran LLaVA through the LLaVA-NeXT code (lmms-lab weights) and InternVL
# through its remote code: transformers' ports (llava-hf/*, *-hf) are other weights, named "-HF" as the release
# names its own run of the LLaVA-OneVision-7B port; InternVL2_5-8B-MPO is another checkpoint than InternVL2_5-8B.
PAPER_FOLDERS = {
    "facebook/dinov2-large": "dinov2-large",
    "MCG-NJU/videomae-large": "videomae-large",
    "openai/clip-vit-large-patch14": "clip-vit-large-patch14",
    "InternVideo-MM-L-14.ckpt": "InternVideo-MM-L-14",
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": "LLaVA-OneVision-Qwen2-7B-HF",
    "llava-hf/llava-onevision-qwen2-0.5b-ov-hf": "LLaVA-OneVision-Qwen2-0.5B-HF",
    "llava-hf/LLaVA-Video-7B-Qwen2-hf": "LLaVA-NeXT-Video-7B-HF",
    "Qwen/Qwen2.5-VL-7B-Instruct": "Qwen2.5-VL-7B-Instruct",
    "Qwen/Qwen2.5-VL-3B-Instruct": "Qwen2.5-VL-3B-Instruct",
    "OpenGVLab/InternVL2_5-8B-MPO-hf": "InternVL2_5-8B-MPO-HF",
    "OpenGVLab/InternVL3-8B-hf": "InternVL3-8B-HF",
}
# the release names its VQAScore folder by the model family alone: LLaVA-OneVision_<captions>; its VQAScore asked
# the lmms-lab weights, so transformers' port is "-HF" here too
PAPER_VQA_FOLDERS = {"llava-hf/llava-onevision-qwen2-7b-ov-hf": "LLaVA-OneVision-HF"}
PAPER_MODE = "greedy"  # the reference parses one greedy token (InternVL's chat path sampled it: no mode matches that)
DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


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


def model_folder(registry, name: str, source: str, frames: int, default_frames: int, suffix: str = "",
                 settings: str = "") -> str:
    """The folder a model's scores go in: the paper's name when it has one (plus ``suffix`` when not run
    as the paper ran it), else the registry name (plus the weights' name when they are not the default);
    then ``settings`` (how a reranker was asked, e.g. "-expected-b4", whatever the name) and a non-default
    frame count."""
    label = PAPER_FOLDERS.get(source) or PAPER_FOLDERS.get(Path(source).name)
    if label is not None:
        label += suffix
    else:
        plain = source == registry.entry(name).default_source
        label = name if plain else re.sub(r"[^A-Za-z0-9._-]+", "_", f"{name}-{Path(source).name}")
    label += settings
    return label if frames == default_frames else f"{label}-f{frames}"


def reranker_suffix(mode: str, symmetric: bool, dtype, paper_dtype, batch: int) -> str:
    """What a reranker run does other than the paper: ``-expected`` (not the greedy answer), ``-sym`` (both
    orders averaged), its precision when that is not the family's ``paper_dtype`` (any precision when the family
    names none: it cannot be told to be the paper's), ``-b<N>`` for N pairs a forward pass."""
    name = dtype_name(dtype)
    parts = [mode if mode != PAPER_MODE else "", "sym" if symmetric else "",
             name if name and name != dtype_name(paper_dtype) else "", f"b{batch}" if batch != PAPER_BATCH else ""]
    return "".join(f"-{p}" for p in parts if p)


def dtype_name(dtype) -> str | None:
    """'bf16', 'fp16', 'fp32' for a torch dtype or its name (None for None)."""
    if dtype is None:
        return None
    text = str(dtype).removeprefix("torch.")
    return DTYPE_NAMES.get(text, text)


@dataclass(eq=False)
class BenchRun:
    dataset: Dataset
    out: Path
    indexers: list[str]
    reranker: str | None  # the spec of the conditioned reranker, or None
    frames: int | None
    mode: str | None = None  # None: the paper's greedy answer under its protocol, else expected
    symmetric: bool = False
    workers: int | None = None
    device: str | None = None
    note: Callable[[str], None] = lambda m: None
    protocol: str = "fast"
    captioner: str | None = None
    vqascore: str | None = None
    rerank_batch: int | None = None  # pairs a forward pass; None: one under the paper protocol, else the family's
    engine: Engine = field(init=False)
    result: RunResult = field(init=False, default_factory=RunResult)
    caption_set: str | None = field(init=False, default=None)  # the captions' name: their folder, or the captioner's

    def __post_init__(self) -> None:
        # one index per protocol, frame count and caption source: an index keeps the protocol it was built with,
        # and captions of one source must never stand in for another's (a caption file wins over any captioner)
        by = f"-by-{re.sub(r'[^A-Za-z0-9._-]+', '_', self.captioner).strip('_')}" if self.captioner else ""
        self.engine = Engine(self.out / f"index-{self.protocol}-f{self.frames or 'default'}{by}", device=self.device)

    def run(self) -> RunResult:
        # a refused model ends the run before indexing
        check_protocol([self.reranker, self.captioner, self.vqascore], self.protocol)
        # an LMM that cannot be had (or cannot run here) is one line before the videos are indexed, not after
        self.engine.models.check_lmms([s for s in (self.reranker, self.captioner, self.vqascore) if s])
        # a captioner's captions stand alone: caption files would win over them (a person's words first)
        captions = None if self.captioner else self.dataset.captions
        settings = IndexSettings(captions=captions, workers=self.workers, frames=self.frames, protocol=self.protocol)
        report = self.engine.index(self.dataset.root, self.indexers, settings)
        self.result.failed_videos = report.failed
        self.caption_set = self._caption() if self.captioner else captions and captions.resolve().name
        videos = self._read_index()
        for row in videos.rows:
            self._write_global(row, videos)
            if row.indexer in videos.concepts:
                self._write_per_concept(row, videos)
        if self.vqascore and self.caption_set:
            self._write_vqascore(videos.captions)
        elif self.vqascore:
            self.note("VQAScore needs captions (--captioner or a captions folder): not computed")
        if self.reranker:
            self._write_conditioned()
        return self.result

    # -- captions -----------------------------------------------------------
    def _caption(self) -> str:
        """Caption every video with the captioner (the reference's request); the captions are written in the
        release's layout too. Returns the caption set's name."""
        report = self.engine.describe(captioner=self.captioner, caption_only=True)
        for text in report.notes:
            self.note(text)
        model = self._lmm(self.captioner)  # the model that wrote them
        # the release's folder name for the paper protocol's captions (the reference's rule), marked otherwise; a
        # precision other than the family's paper one (a CPU's fp32) is named, as a reranker's is
        precision = reranker_suffix(PAPER_MODE, False, _dtype(model), paper_dtype(self.captioner), PAPER_BATCH) \
            if self.protocol == "paper" else ""
        name = model_folder(RERANKERS, model.name, model.source, model.frames_per_video,
                            type(model).frames_per_video, self._suffix(), precision)
        with self.engine.open_catalog() as catalog:
            captions = captions_by_video(catalog)
        folder = self.out / "captions" / name
        folder.mkdir(parents=True, exist_ok=True)
        for video, text in captions.items():
            (folder / f"{Path(video).stem}.txt").write_text(text + "\n", encoding="utf-8")
        self.note(f"{len(captions)} captions by {model.model_id} in {folder}")
        return name

    # -- global signals -----------------------------------------------------
    def _read_index(self) -> IndexedVideos:
        with self.engine.open_catalog() as catalog:
            return IndexedVideos.read(catalog)

    def _write_global(self, row: IndexerRow, videos: IndexedVideos) -> None:
        """An indexer's cosine (the text indexer's: SBERT over the captions), and a CLIP-family indexer's
        CLIPScore when it embedded the captions."""
        by_video = videos.vectors[row.indexer]
        label = self._indexer_label(row)
        if row.kind == "text":
            if not self.caption_set:
                return
            label = self.caption_set if row.source == MINILM else f"{label}_{self.caption_set}"
        self._write_signal(label, label, lambda a, b: float(unit_similarity(by_video[a] @ by_video[b])),
                           set(by_video))
        texts = videos.vectors.get(caption_signal(row.indexer), {})
        if texts and self.caption_set:
            both = set(by_video) & set(texts)
            self._write_signal(f"{label}_{self.caption_set}", label,
                               lambda a, b: clipscore(by_video[a], texts[a], by_video[b], texts[b]), both)

    def _indexer_label(self, row: IndexerRow) -> str:
        indexer = self.engine.indexer(f"{row.name}:{row.source}")
        overridden = self.frames is not None and takes_frame_count(indexer)  # the run's --frames applied to it
        return model_folder(INDEXERS, row.name, row.source, row.frames, -1 if overridden else row.frames,
                            self._suffix())

    def _write_per_concept(self, row: IndexerRow, videos: IndexedVideos) -> None:
        """A concept-conditioned indexer's per-concept vectors: each ConViS concept scored by the cosine of the
        vectors made under its instruction, a conditioned file (and ranking) beside the generic vectors' file."""
        folder = per_concept.folder(self._indexer_label(row))
        for key, signal in videos.concepts[row.indexer].items():
            by_video = videos.vectors[signal]
            if key in CONVIS_CONCEPTS and by_video:  # a concept added with --concept has no human ratings
                self._write_concept_cosine(folder, key, by_video)

    def _write_concept_cosine(self, folder: str, concept: str, by_video: dict) -> None:
        def sim(a: str, b: str) -> float:
            return float(unit_similarity(by_video[a] @ by_video[b]))

        pairs = [(g, sim(*k)) for k, g in self.dataset.pairs.items() if k[0] in by_video and k[1] in by_video]
        self._note_missing(len(pairs), f"{folder} ({concept})")
        self._write_concept_file(folder, concept, pairs)
        if concept in self.dataset.human:
            self._write_ranking(folder, concept, {a: {c: sim(a, c) for c in cands if c in by_video}
                                                  for a, cands in self.dataset.split.items() if a in by_video})

    def _write_vqascore(self, captions: dict[str, str]) -> None:
        """VQAScore of every rated pair and split candidate whose videos both have a caption (batched, cached)."""
        model = self._lmm(self.vqascore)
        clips = self._clips()
        have = {v for v in clips if v in captions}
        wanted = list(dict.fromkeys([*((a, b) for a, b in self.dataset.pairs),
                                     *((a, c) for a, cands in self.dataset.split.items() for c in cands)]))
        wanted = [(a, b) for a, b in wanted if a in have and b in have]
        # named by the batch it is asked with (a lower one after running out of memory is noted, not named)
        settings = reranker_suffix(PAPER_MODE, False, _dtype(model), paper_dtype(self.vqascore), model.batch_size)
        label = (PAPER_VQA_FOLDERS.get(model.source) or model_folder(RERANKERS, model.name, model.source,
                                                                     model.frames_per_video,
                                                                     type(model).frames_per_video)) + settings
        scorer = VqaScorer(model, self._settings_cache(model), self.engine.models.frames)
        values = dict(zip(wanted, scorer.score([(Captioned(clips[a], captions[a]), Captioned(clips[b], captions[b]))
                                                for a, b in wanted]), strict=True))
        self._note_batch(label, scorer.cache)
        unreadable = {k for k, v in values.items() if v is None}
        if unreadable:
            self.note(f"VQAScore: {len(unreadable)} pair(s) had unreadable logits and are not scored")
        self._write_signal(f"{label}_{self.caption_set}", label, lambda a, b: values[(a, b)],
                           have, skip=unreadable)
        self.note(f"VQAScore ({model.model_id}): {scorer.questions_asked} questions asked, the rest from the cache")

    def _lmm(self, spec: str):
        """The video LMM ``spec`` as this run's protocol builds it, one for the captioner, VQAScore and the reranker
        alike: in its family's paper precision, one request a forward pass, under the paper protocol (LLaVA in
        fp16, as LLaVA-NeXT and t2v_metrics ran it); the family's defaults under fast."""
        return self.engine.models.reranker(spec, self.protocol)

    def _write_signal(self, folder: str, stem: str, sim: Callable[[str, str], float], have: set[str],
                      skip: set = frozenset()) -> None:
        """One global signal's scores of every rated pair, and of each split anchor's candidates, as released."""
        def ok(a: str, b: str) -> bool:
            return a in have and b in have and (a, b) not in skip

        pairs = [(g, sim(*k)) for k, g in self.dataset.pairs.items() if ok(*k)]
        self._note_missing(len(pairs), folder)
        path = self.out / "computed_similarities" / folder / f"{stem}_similarities.json"
        _write(path, [{"video1": g.video1, "video2": g.video2, "similarity": s} for g, s in pairs])
        self.result.files.append(ScoreFile(path, folder, None))
        ranking = {a: {c: sim(a, c) for c in cands if ok(a, c)} for a, cands in self.dataset.split.items()
                   if a in have}
        for concept in self.dataset.human:
            self._write_ranking(folder, concept, ranking)

    def _suffix(self) -> str:
        # the paper's folder names are for its protocol; convis's fast frames are marked as such
        return "" if self.protocol == "paper" else "-fast"

    # -- LMM reranker -------------------------------------------------------
    def _write_conditioned(self) -> None:
        reranker = self._build_reranker()
        scorer = self._pair_scorer(reranker)
        folder = self._reranker_folder(reranker)
        clips = self._clips()
        for key, words in CONVIS_CONCEPTS.items():
            concept = Concept(key, words)
            pairs = [(g, (clips[k[0]], clips[k[1]])) for k, g in self.dataset.pairs.items()
                     if k[0] in clips and k[1] in clips]
            scores = scorer.score([p for _, p in pairs], concept)
            self._write_concept_file(folder, key, [(g, self._released(s))
                                                   for (g, _), s in zip(pairs, scores, strict=True)])
            if key in self.dataset.human:
                self._write_ranking(folder, key, self._rank_scores(scorer, clips, concept))
        self._note_batch(folder, scorer.cache)
        self.note(f"{reranker.model_id}: {scorer.model_pairs} pairs sent to the model, "
                  f"{scorer.frames.decodes} clips decoded")

    @property
    def scoring(self) -> str:
        """expected or greedy: as asked, else the paper's greedy answer under its protocol."""
        return self.mode or (PAPER_MODE if self.protocol == "paper" else "expected")

    def _build_reranker(self):
        """The reranker as this run asks it: the run's LMM (``_lmm``: one pair a forward pass and the family's paper
        precision under the paper protocol), with --frames and --rerank-batch where they are given (the same
        weights, asked another way)."""
        return self._lmm(self.reranker).asked_with(self.frames, self.rerank_batch)

    def _reranker_folder(self, reranker) -> str:
        # the class attribute is the family's own frame count (the paper's setting)
        settings = reranker_suffix(self.scoring, self.symmetric, _dtype(reranker), paper_dtype(self.reranker),
                                   reranker.batch_size)
        return model_folder(RERANKERS, reranker.name, reranker.source, reranker.frames_per_video,
                            type(reranker).frames_per_video, self._suffix(), settings)

    def _pair_scorer(self, reranker) -> PairScorer:
        return PairScorer(reranker, self._settings_cache(reranker), self.engine.models.frames, self.scoring,
                          self.symmetric)

    def _settings_cache(self, model) -> SettingsCache | None:
        """The score cache as this run's scorers (the reranker's, VQAScore's) read and write it: cached answers are
        found only for the model's precision and the batch size it is asked with; another's are other answers."""
        cache = self.engine.models.score_cache([])
        return None if cache is None else SettingsCache(cache, model)

    def _note_batch(self, folder: str, cache: SettingsCache | None) -> None:
        if cache is not None and cache.lowered:
            self.note(f"{folder}: out of GPU memory at {cache.batch} a forward pass; the rest was asked "
                      f"{cache.model.batch_size} a pass and not cached (the folder keeps -b{cache.batch})")

    def _released(self, score) -> float:
        """A pair's value in the score file. Under the paper protocol a greedy answer is read as the reference
        reads it, so "6".."9" stay 6.0..9.0 there (the metrics then use them as the reference's do); elsewhere the
        1-5 reading, as every other convis command gives it. Unreadable: 0.0, the release's convention."""
        if self.protocol == "paper" and score.mode == "greedy" and not self.symmetric:
            return reference_score(score.raw)
        return _released(score.score)

    def _rank_scores(self, scorer, clips, concept) -> dict[str, dict[str, float]]:
        out = {}
        for anchor, cands in self.dataset.split.items():
            cands = [c for c in cands if c in clips]
            if anchor in clips and cands:
                scores = scorer.score([(clips[anchor], clips[c]) for c in cands], concept)
                out[anchor] = {c: self._released(s) for c, s in zip(cands, scores, strict=True)}
        return out

    def _clips(self):
        with self.engine.open_catalog() as catalog:
            states = catalog.file_states()
        root = self.engine.root
        return {base_name(p): ClipRef(str(root / p), s.content_hash) for p, s in states.items() if s.status == "ok"}

    # -- output -------------------------------------------------------------
    def _write_concept_file(self, folder: str, concept: str, pairs: list[tuple[GtPair, float]]) -> None:
        """One concept's scores of the rated pairs, as the release writes an LMM's."""
        cfolder = CONCEPT_FOLDERS[concept]
        path = (self.out / "computed_conditioned_similarities" / cfolder / folder
                / f"{folder}_{cfolder}_similarities.json")
        _write(path, [{"video1": g.video1, "video2": g.video2, "similarity": s} for g, s in pairs])
        self.result.files.append(ScoreFile(path, folder, concept))

    def _write_ranking(self, folder: str, concept: str, ranking: dict) -> None:
        cfolder = CONCEPT_FOLDERS[concept]
        path = self.out / "computed_retrieval_scores" / cfolder / folder / f"{folder}_{cfolder}_ranking.json"
        _write(path, ranking)
        self.result.files.append(ScoreFile(path, folder, concept))

    def _note_missing(self, scored: int, folder: str) -> None:
        if scored < len(self.dataset.pairs):
            self.note(f"{folder}: {len(self.dataset.pairs) - scored} of {len(self.dataset.pairs)} rated pairs "
                      "lack a video (missing or unreadable) and are not scored")


class SettingsCache:
    """A score cache whose keys also hold the precision of ``model`` and the batch size it is asked with (its
    ``batch_size`` now): batched, left-padded rows and other precisions answer differently, so their answers are
    never read back as this run's.  Once the model lowers its batch (out of GPU memory) its answers are another
    batch size's: they are not kept under this one (``lowered`` says so)."""

    def __init__(self, cache, model):
        self.cache, self.model, self.batch = cache, model, model.batch_size
        self.settings = f"dtype={dtype_name(_dtype(model))}|batch={self.batch}"

    @property
    def lowered(self) -> bool:
        return self.model.batch_size != self.batch

    def get(self, tag: str, *key):
        return self.cache.get(f"{tag}|{self.settings}", *key)

    def put(self, tag: str, *key) -> None:
        if not self.lowered:
            self.cache.put(f"{tag}|{self.settings}", *key)


def _dtype(model):
    return getattr(model, "dtype", None)  # the torch dtype an HF model runs in; None for one that has none


def _released(score: float | None) -> float:
    return 0.0 if score is None else float(score)  # the release writes unreadable answers as 0.0


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))

