"""``convis index`` and ``convis describe``: the runs that write to the index."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from retrieval.cli.options import (
    DEFAULT_SHOT_MAX_SECONDS,
    DEFAULT_SHOT_MIN_SECONDS,
    INDEX_DIRNAME,
    MAX_SEGMENT_SECONDS,
    MIN_SEGMENT_SECONDS,
    WINDOW_FRAMES,
    WORKER_MEMORY_MB,
    DeviceOpt,
    FreeTextOpt,
    IndexDirOpt,
    RunJsonOpt,
    UserError,
    WhereArg,
    resolve_index_dir,
    units_option,
)
from retrieval.cli.present.index_report import describe_summary, index_progress, index_summary

FolderArg = Annotated[Path, typer.Argument(metavar="FOLDER", help="Folder of videos (searched recursively).")]
IndexerOpt = Annotated[List[str], typer.Option(
    "--indexer", "-i", help="Indexer name, name:weights, hub id or local folder; repeat for several. Default: what "
    "the index already uses, else dinov2 when its weights are available, else efficientnet-lite0. 'speech' (or "
    "speech:<Whisper checkpoint>, default openai/whisper-small) also writes down what is said in files without "
    "subtitles (silero-vad, then Whisper on the voiced spans), kept for later runs. 'ocr' reads on-screen text "
    "(RapidOCR, about 1 frame a second), kept for later runs too; 'fingerprint' makes the copy-detection vectors "
    "`convis dupes` prefers. Subtitle files beside a video (talk.srt, talk.en.vtt) and text subtitle streams are "
    "always read.")]
NewIndexDirOpt = Annotated[Optional[Path], typer.Option(help="Where the index lives (default FOLDER/.convis); "
                                                        "FOLDER/.convis-index then holds its path, so commands run "
                                                        "in FOLDER find it.")]
SegmentOpt = Annotated[Optional[str], typer.Option(
    help=f"Split videos into units: fixed-length, e.g. 10s or 1m ({MIN_SEGMENT_SECONDS:g}s to "
    f"{MAX_SEGMENT_SECONDS:g}s); 'shots' (shot units: TransNetV2 on a CUDA GPU, else PySceneDetect's content "
    "detector), 'shots:transnet' or 'shots:content'; 'off': one unit per file. Kept for later runs; a new way "
    "re-indexes the files whose units change (each keeps its old units until then).")]
ShotMinOpt = Annotated[Optional[float], typer.Option(
    min=0, max=MAX_SEGMENT_SECONDS, help="With --segment shots: shots shorter than this many seconds are merged into "
    f"the previous one (default {DEFAULT_SHOT_MIN_SECONDS:g}).")]
ShotMaxOpt = Annotated[Optional[float], typer.Option(
    min=0, max=MAX_SEGMENT_SECONDS, help="With --segment shots: shots longer than this many seconds are split into "
    f"equal parts, at least {MIN_SEGMENT_SECONDS:g} (default {DEFAULT_SHOT_MAX_SECONDS:g}; 0: never split).")]
CaptionsOpt = Annotated[Optional[Path], typer.Option(help="Folder of <video stem>.txt captions for the text "
                                                     "indexer.")]
WorkersOpt = Annotated[Optional[int], typer.Option(
    min=1, help=f"Decoder processes (default: half the cores; at most one per core and per {WORKER_MEMORY_MB} MB of "
    "available memory).")]
TimeoutOpt = Annotated[float, typer.Option(
    min=1, help=f"Seconds one decode task may take before its file is skipped; a task reads a window of at most "
    f"{WINDOW_FRAMES} sampled frames of one file, so a long video gets one such limit per window.")]
PublishEveryOpt = Annotated[float, typer.Option(min=0, help="Seconds between snapshots a long run publishes, so "
                                                "queries made while it runs see its progress.")]
RemoteCodeOpt = Annotated[bool, typer.Option(help="Allow checkpoints that ship their own code (internvideo).")]
RayOpt = Annotated[Optional[str], typer.Option(help="Decode and embed on Ray: 'auto' (the running cluster), "
                                               "HOST:PORT, or 'local' (start one here). Needs the ray extra.")]
FaissIndexOpt = Annotated[Optional[str], typer.Option(
    help="FAISS factory string for recall, e.g. 'HNSW32,Flat' or 'IVF4096,Flat'; kept for later runs. Default "
    "'auto': exact below 100k vectors, IVF above.")]
FaissParamsOpt = Annotated[Optional[str], typer.Option(help="FAISS search parameters, e.g. 'nprobe=32' or "
                                                       "'efSearch=128'; kept for later runs ('auto' resets).")]
StoreOpt = Annotated[Optional[str], typer.Option(
    help="Where recall searches vectors: 'faiss' (default: in RAM, rebuilt at each publish) or 'lance' (tables on "
    "disk beside the index, appended at each publish), 'lance:FOLDER' or 'lance:s3://bucket/prefix' (AWS settings "
    "from the environment). Kept for later runs; 'lance' on a FAISS index moves it (resumable).")]
ProtocolOpt = Annotated[Optional[str], typer.Option(
    help="How indexers see videos: 'fast' (default: about 1 frame a second, 8 a unit, decoder-scaled) or 'paper' "
    "(the ConViS-Bench reference's frames, pixels, weights and fp32). Kept in the index.")]
MoveRootOpt = Annotated[bool, typer.Option(help="The indexed videos moved to FOLDER: index them there (an index "
                                           "covers one folder; another is refused without this).")]
PruneOpt = Annotated[bool, typer.Option(help="Forget every indexed file that is gone from FOLDER, however many, "
                                        "unavailable ones too (their folder missing or not mounted: without it they "
                                        "are kept with their vectors, and a run that would forget more than half of "
                                        "the files is refused).")]
RetryFailedOpt = Annotated[bool, typer.Option(
    help="Try again every file that failed before, unchanged since; without it only failures that may pass (timed "
    "out, decoder crashed, disk full, model error) are retried, not files that are not videos.")]
CaptionerOpt = Annotated[Optional[str], typer.Option(
    help="Video LMM (any --reranker spec) that describes every unit once: a caption and one description per ConViS "
    "concept, 6 model calls a unit, stored in the index and never asked again for the same bytes; a text indexer "
    "embeds the captions. Fast protocol: the family's reranking frames, greedy, 256 tokens a caption; --protocol "
    "paper: the ConViS-Bench reference's (Qwen: 1 fps, at most 360*420 px, its checkpoint's decoding, 1024 tokens; "
    "InternVL: sampled, seeded, 1024 tokens), in the family's paper precision; it refuses llava-video.")]
CaptionerBackendOpt = Annotated[str, typer.Option(
    metavar="hf|hf-static|vllm", help="Who generates the captions: 'hf' (default: transformers, every question "
    "of several units in one generation), 'hf-static' (the same with transformers' static KV cache and compiled "
    "decode step on CUDA: minutes of compiling before the first caption) or 'vllm' (the vLLM serving engine, for "
    "large collections; pip install vllm; the same prompts, frames and stored answers; fast protocol, not on "
    "Ray).")]
DecodeDeviceOpt = Annotated[Optional[str], typer.Option(
    metavar="cpu|cuda|cuda:N", help="Decode on the GPU with torchcodec (NVDEC); without one, decoding stays on the "
    "CPU and a notice says why.")]

IndexConceptOpt = Annotated[List[str], typer.Option(
    "--concept", "-c", metavar="CONCEPT", help="A concept (ConViS or your own: 'camera angle') each "
    "concept-conditioned indexer (qwen3-vl-embedding) embeds every unit under, one vector a unit, beside the five "
    "ConViS concepts it embeds anyway; repeatable; kept for later runs. Needs such an indexer in the index.")]


MetadataOpt = Annotated[Optional[Path], typer.Option(
    "--metadata", metavar="FILE", help="User fields per video for --where filters: a CSV file with a 'path' column "
    "or JSON Lines with a \"path\" key (paths relative to FOLDER), every other column a field; later runs re-read "
    "it when it changes. Fields set by `convis tag` win over the file's.")]


def index(folder: FolderArg, indexer: IndexerOpt = None, index_dir: NewIndexDirOpt = None, segment: SegmentOpt = None,
          shot_min: ShotMinOpt = None, shot_max: ShotMaxOpt = None, captions: CaptionsOpt = None,
          workers: WorkersOpt = None, timeout: TimeoutOpt = 300.0, publish_every: PublishEveryOpt = 60.0,
          device: DeviceOpt = None, trust_remote_code: RemoteCodeOpt = False, ray: RayOpt = None,
          faiss_index: FaissIndexOpt = None, faiss_params: FaissParamsOpt = None, protocol: ProtocolOpt = None,
          store: StoreOpt = None, move_root: MoveRootOpt = False, prune: PruneOpt = False,
          retry_failed: RetryFailedOpt = False, captioner: CaptionerOpt = None,
          captioner_backend: CaptionerBackendOpt = "hf", decode_device: DecodeDeviceOpt = None,
          metadata: MetadataOpt = None, concept: IndexConceptOpt = None, as_json: RunJsonOpt = False):
    """Index the videos in FOLDER: sample frames, embed them, store vectors (re-runs resume, skip unchanged files)."""
    from retrieval.api import Engine, IndexSettings, remember_index

    if captions is not None and not captions.is_dir():
        raise UserError(f"captions folder not found: {captions}")
    if metadata is not None and not metadata.is_file():  # said now, not after the run
        raise UserError(f"metadata file not found: {metadata}")
    seconds, shots = units_option(segment, shot_min, shot_max)
    settings = IndexSettings(segment_seconds=seconds, shots=shots, captions=captions, workers=workers,
                             timeout=timeout, publish_every=publish_every, ray_address=ray, faiss_index=faiss_index,
                             faiss_params=faiss_params, protocol=protocol, move_root=move_root, prune=prune,
                             store=store, retry_failed=retry_failed, captioner=captioner, decode_device=decode_device,
                             concepts=tuple(concept or ()))
    engine = Engine(index_dir or folder / INDEX_DIRNAME, device=device, trust_remote_code=trust_remote_code,
                    captioner_backend=captioner_backend)
    notices: list[str] = []
    with index_progress(disable=as_json) as progress:
        report = engine.index(folder, indexer or [], settings, progress=progress, notices=notices)
    if engine.has_index:  # the file given, else the one read before if it changed: after the run, every path known
        read = engine.read_metadata(metadata, notices)
        if read is not None:
            source = metadata.name if metadata is not None else "the metadata file (re-read: it changed)"
            notices.append(f"metadata: {read} file(s) have fields from {source}")
    report.seconds = command_seconds(report.seconds)
    if index_dir is not None and report.found:  # found from the folder later, without --index-dir
        notices += filter(None, [remember_index(folder, engine.index_dir)])
    index_summary(report, notices, progress, folder, as_json)
    if not report.indexed and not report.unchanged:
        raise typer.Exit(1)  # nothing usable came out of this folder


def command_seconds(fallback: float) -> float:
    """Seconds since this process started (the whole command, start-up included), where /proc says; else
    ``fallback``."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, in ticks after boot
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        return fallback


DescribeConceptOpt = Annotated[List[str], typer.Option(
    "--concept", "-c", metavar="CONCEPT", help="A concept to describe every unit by, ConViS or your own ('camera "
    "angle'); repeatable. Default: a caption and the five ConViS concepts.")]
DescriberOpt = Annotated[Optional[str], typer.Option(help="Video LMM that writes the descriptions (any --reranker "
                                                     "spec); default: the one the index was described with. It "
                                                     "captions as the index's protocol says (see index --captioner).")]
HubCodeOpt = Annotated[bool, typer.Option(help="Allow custom model code from the hub.")]


def describe(where: WhereArg = None, index_dir: IndexDirOpt = None, concept: DescribeConceptOpt = None,
             captioner: DescriberOpt = None, captioner_backend: CaptionerBackendOpt = "hf",
             free_text: FreeTextOpt = False, device: DeviceOpt = None, trust_remote_code: HubCodeOpt = False,
             as_json: RunJsonOpt = False):
    """Describe every indexed unit by more concepts (one model call a unit and concept, never asked twice) and
    embed each concept's descriptions into its own signal, which `query --concept` and `search --concept` use.
    Resumable: a killed run keeps what it wrote."""
    from retrieval.api import Engine, parse_concepts

    concepts = parse_concepts(concept, free_text) if concept else []
    engine = Engine(resolve_index_dir(index_dir or where), device=device, trust_remote_code=trust_remote_code,
                    captioner_backend=captioner_backend)
    with index_progress(disable=as_json) as progress:
        report = engine.describe(concepts, captioner, progress=progress)
    describe_summary(report, as_json)
    if report.counts.failed:  # left for a later run, which asks for them again
        raise typer.Exit(1)
