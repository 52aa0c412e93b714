"""convis's public Python API: the engine, the request values it takes, the results it returns, the errors it raises.

Everything a face (the command line, the HTTP server, a user's script) needs is named here, and only here::

    from retrieval.api import Engine, QueryRequest
    result = Engine("videos/.convis").query(QueryRequest("videos/a.mp4", concepts=("location",)))

Names not in ``__all__`` are internal and may change between releases.

Importing this module costs no more than the constants, errors and time codes it names directly: every other name
(the engine, the request and result values, the registries) is imported when it is first asked for, so that a
face built at start-up from these names (``convis --help``) loads no DuckDB, FAISS or NumPy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from retrieval.core.concepts import CONVIS_CONCEPTS, RATING, parse_concepts
from retrieval.core.errors import ConvisError, one_line
from retrieval.core.files import too_long
from retrieval.core.segmentation import (
    DEFAULT_SHOT_MAX_SECONDS,
    DEFAULT_SHOT_MIN_SECONDS,
    SegmentationError,
    ShotRule,
    parse_segment,
)
from retrieval.core.timecode import EXAMPLES as TIME_EXAMPLES
from retrieval.core.timecode import TimeFormatError, format_span, format_time, parse_time

# isort: split
# the defaults and limits a request takes, by what they bound: results and concept weights; units and frames;
# the index's folder, uploads and workers; a difference's verdict
from retrieval.core.defaults import DEFAULT_DIFF_MODEL, DEFAULT_K, MAX_CONCEPT_WEIGHT, MAX_K, MIN_CONCEPT_WEIGHT

# isort: split
from retrieval.core.defaults import MAX_SAMPLE_FPS, MAX_SEGMENT_SECONDS, MIN_SEGMENT_SECONDS, WINDOW_FRAMES

# isort: split
from retrieval.core.defaults import INDEX_DIRNAME, MAX_UPLOAD_BYTES, UPLOAD_QUOTA_BYTES, WORKER_MEMORY_MB, MiB

# isort: split
from retrieval.core.defaults import CANT_TELL, CANT_TELL_MARGIN

# isort: split
# each request field's help and bounds, which the CLI's options and the server's schema both read (light modules)
from retrieval.search import request_fields
from retrieval.search.request_fields import MAX_TEXT_CHARS, FieldSpec
from retrieval.store.where import OPERATORS

if TYPE_CHECKING:  # what _LAZY loads on first use, named for readers, type checkers and the import contracts
    from indexers.base import INDEXERS, PROTOCOLS
    from indexers.factory import available_indexers, has_text_tower
    from rerankers.base import MODES, RERANKERS
    from rerankers.factory import available_rerankers
    from rerankers.prompts.describe import CAPTION
    from retrieval.analysis.diff import DiffRanking, gather_statements
    from retrieval.analysis.dupes import DupesResult
    from retrieval.core.concepts import Concept
    from retrieval.core.files import atomic_write
    from retrieval.core.processes import pid_alive
    from retrieval.core.registry import UnknownModelError
    from retrieval.core.sampling import FRAME_RULES, RULE_TEXT, FrameSpec, spoken_frames
    from retrieval.core.signal_kinds import SIGNALS
    from retrieval.core.user_files import UserFileError, parse_json, read_json, read_limited
    from retrieval.engine import INDEXER, TEXT_TOWER, Engine, WarmStep
    from retrieval.lmm.differences import DiffResult
    from retrieval.media.frames import DecodeError, VideoInfo
    from retrieval.media.preview import Playback, PreviewError, Previews, ffmpeg_missing, playback, span_clip
    from retrieval.media.scan import VIDEO_EXTENSIONS, content_hash
    from retrieval.media.unit_frames import describe_sampling, frame_time, nearest_frame, stored_span, unit_frames
    from retrieval.media.video_decoder import VideoDecoder
    from retrieval.pipeline.describe_run import DescribeReport
    from retrieval.pipeline.run import IndexReport
    from retrieval.pipeline.settings import IndexSettings
    from retrieval.search.anchor import AnchorError, AnchorSpanError
    from retrieval.search.compose import Change
    from retrieval.search.fusion import RERANKER_PREFIX
    from retrieval.search.hit_lines import as_dict as line_as_dict
    from retrieval.search.hybrid import RULE as HYBRID_RULE
    from retrieval.search.requests import CompareRequest, DiffRequest, DupesRequest, QueryRequest, SearchRequest
    from retrieval.search.results import CHANGE_KEY, CompareResult, Hit, QueryResult
    from retrieval.search.signals import parse_overrides, scorer_label
    from retrieval.search.text_query import parse_weights
    from retrieval.store.catalog import FileListing
    from retrieval.store.catalog.lines import in_unit
    from retrieval.store.catalog.records import FILE_KEY, Description, IndexerRow, UnitRecord
    from retrieval.store.catalog.removed import RemovedFile, Undone
    from retrieval.store.errors import CatalogBusy, is_damage
    from retrieval.store.export.results import export_results
    from retrieval.store.index_dir import NoIndexError, NotIndexedError, find_index_dir, locate_index, remember_index
    from retrieval.store.repair import Restored
    from retrieval.store.snapshots import CATALOG_NAME, SNAPSHOT_NAME, writer_pid

__all__ = [
    # the engine, and the models a request may build ahead of it (``Engine.warm_plan``)
    "Engine", "WarmStep", "TEXT_TOWER", "INDEXER", "export_results",
    # requests and what builds them from text
    "QueryRequest", "SearchRequest", "CompareRequest", "DiffRequest", "DupesRequest", "IndexSettings", "Change",
    "ShotRule", "RATING", "CONVIS_CONCEPTS", "HYBRID_RULE", "parse_concepts", "parse_segment", "parse_time",
    "parse_overrides", "parse_weights",
    "gather_statements",
    # the defaults and limits a request takes (what the faces' help texts name)
    "DEFAULT_K", "DEFAULT_DIFF_MODEL", "MAX_K", "MIN_CONCEPT_WEIGHT", "MAX_CONCEPT_WEIGHT", "MIN_SEGMENT_SECONDS",
    "MAX_SEGMENT_SECONDS", "DEFAULT_SHOT_MIN_SECONDS", "DEFAULT_SHOT_MAX_SECONDS", "MAX_SAMPLE_FPS", "WINDOW_FRAMES",
    "WORKER_MEMORY_MB", "MAX_UPLOAD_BYTES", "UPLOAD_QUOTA_BYTES", "MiB", "TIME_EXAMPLES", "CANT_TELL_MARGIN",
    # results
    "QueryResult", "CompareResult", "DiffResult", "DiffRanking", "DupesResult", "IndexReport", "DescribeReport",
    "FileListing", "RemovedFile", "Undone", "Restored",
    # reading results as a person does: times, signal names, verdicts, timed lines, the files previews play
    "format_time", "format_span", "spoken_frames", "scorer_label", "RERANKER_PREFIX", "CANT_TELL", "FILE_KEY",
    "in_unit", "line_as_dict", "Previews",
    # the registries: what can be built by name, and how
    "INDEXERS", "RERANKERS", "SIGNALS", "available_indexers", "available_rerankers", "PROTOCOLS", "MODES",
    # finding an index
    "INDEX_DIRNAME", "find_index_dir", "locate_index", "remember_index",
    # errors: one base, each kind with its exit code and HTTP status
    "ConvisError", "AnchorError", "AnchorSpanError", "NoIndexError", "NotIndexedError", "SegmentationError",
    "TimeFormatError", "is_damage", "one_line", "too_long",
    # serving an index: each request field's declaration, its files, uploads, previews, the catalog's state, what
    # pages and evidence show (the server reads these; a script rarely needs them)
    "request_fields", "FieldSpec", "MAX_TEXT_CHARS", "OPERATORS", "Concept", "VIDEO_EXTENSIONS", "VideoDecoder",
    "VideoInfo", "DecodeError", "Playback", "PreviewError", "ffmpeg_missing", "playback", "span_clip",
    "content_hash", "CATALOG_NAME", "SNAPSHOT_NAME", "writer_pid", "pid_alive", "CatalogBusy", "has_text_tower",
    "UserFileError", "read_json", "atomic_write", "Hit", "CHANGE_KEY", "CAPTION", "UnknownModelError",
    "read_limited", "parse_json",
    "FRAME_RULES", "RULE_TEXT", "FrameSpec", "describe_sampling", "frame_time", "nearest_frame", "stored_span",
    "unit_frames", "Description", "IndexerRow", "UnitRecord",
]

# name -> "module" or "module:attribute": loaded on first use (see the module's docstring)
_LAZY = {
    **dict.fromkeys(("Engine", "WarmStep", "TEXT_TOWER", "INDEXER"), "retrieval.engine"),
    "export_results": "retrieval.store.export.results",
    **dict.fromkeys(("QueryRequest", "SearchRequest", "CompareRequest", "DiffRequest", "DupesRequest"),
                    "retrieval.search.requests"),
    "IndexSettings": "retrieval.pipeline.settings",
    "Change": "retrieval.search.compose",
    "parse_overrides": "retrieval.search.signals",
    "HYBRID_RULE": "retrieval.search.hybrid:RULE",
    "scorer_label": "retrieval.search.signals",
    "parse_weights": "retrieval.search.text_query",
    "gather_statements": "retrieval.analysis.diff",
    "DiffRanking": "retrieval.analysis.diff",
    "QueryResult": "retrieval.search.results",
    "CompareResult": "retrieval.search.results",
    "DiffResult": "retrieval.lmm.differences",
    "DupesResult": "retrieval.analysis.dupes",
    "IndexReport": "retrieval.pipeline.run",
    "DescribeReport": "retrieval.pipeline.describe_run",
    "FileListing": "retrieval.store.catalog",
    "RemovedFile": "retrieval.store.catalog.removed",
    "Undone": "retrieval.store.catalog.removed",
    "Restored": "retrieval.store.repair",
    "spoken_frames": "retrieval.core.sampling",
    "RERANKER_PREFIX": "retrieval.search.fusion",
    "FILE_KEY": "retrieval.store.catalog.records",
    "in_unit": "retrieval.store.catalog.lines",
    "line_as_dict": "retrieval.search.hit_lines:as_dict",
    "Previews": "retrieval.media.preview",
    "INDEXERS": "indexers.base",
    "PROTOCOLS": "indexers.base",
    "RERANKERS": "rerankers.base",
    "MODES": "rerankers.base",
    "SIGNALS": "retrieval.core.signal_kinds",
    "available_indexers": "indexers.factory",
    "available_rerankers": "rerankers.factory",
    **dict.fromkeys(("NoIndexError", "NotIndexedError", "find_index_dir", "locate_index", "remember_index"),
                    "retrieval.store.index_dir"),
    "AnchorError": "retrieval.search.anchor",
    "AnchorSpanError": "retrieval.search.anchor",
    "is_damage": "retrieval.store.errors",
    "Concept": "retrieval.core.concepts",
    "VIDEO_EXTENSIONS": "retrieval.media.scan",
    "VideoDecoder": "retrieval.media.video_decoder",
    "VideoInfo": "retrieval.media.frames",
    "DecodeError": "retrieval.media.frames",
    "Playback": "retrieval.media.preview",
    "PreviewError": "retrieval.media.preview",
    "ffmpeg_missing": "retrieval.media.preview",
    "playback": "retrieval.media.preview",
    "span_clip": "retrieval.media.preview",
    "content_hash": "retrieval.media.scan",
    "CATALOG_NAME": "retrieval.store.snapshots",
    "SNAPSHOT_NAME": "retrieval.store.snapshots",
    "writer_pid": "retrieval.store.snapshots",
    "pid_alive": "retrieval.core.processes",
    "CatalogBusy": "retrieval.store.errors",
    "has_text_tower": "indexers.factory",
    "UserFileError": "retrieval.core.user_files",
    "read_json": "retrieval.core.user_files",
    "read_limited": "retrieval.core.user_files",
    "parse_json": "retrieval.core.user_files",
    "atomic_write": "retrieval.core.files",
    "Hit": "retrieval.search.results",
    "CHANGE_KEY": "retrieval.search.results",
    "CAPTION": "rerankers.prompts.describe",
    "UnknownModelError": "retrieval.core.registry",
    "FRAME_RULES": "retrieval.core.sampling",
    "RULE_TEXT": "retrieval.core.sampling",
    "FrameSpec": "retrieval.core.sampling",
    "describe_sampling": "retrieval.media.unit_frames",
    "frame_time": "retrieval.media.unit_frames",
    "nearest_frame": "retrieval.media.unit_frames",
    "stored_span": "retrieval.media.unit_frames",
    "unit_frames": "retrieval.media.unit_frames",
    "Description": "retrieval.store.catalog.records",
    "IndexerRow": "retrieval.store.catalog.records",
    "UnitRecord": "retrieval.store.catalog.records",
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    value = getattr(import_module(module), attribute or name)
    globals()[name] = value  # asked once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
