"""convis's public Python API: the engine, the request values it takes, the results it returns, the errors it raises.

Everything a face (the command line, the HTTP server, a user's script) needs is named here, and only here::

    from retrieval.api import Engine, QueryRequest
    result = Engine("videos/.convis").query(QueryRequest("videos/a.mp4", concepts=("location",)))

Names not in ``__all__`` are internal and may change between releases.
"""

from __future__ import annotations

from indexers.base import PROTOCOLS
from rerankers.base import MODES
from retrieval.analysis.diff import gather_statements
from retrieval.core.concepts import parse_concepts
from retrieval.core.defaults import DEFAULT_DIFF_MODEL, DEFAULT_K
from retrieval.core.errors import ConvisError, one_line
from retrieval.core.segmentation import SegmentationError, ShotRule, parse_segment
from retrieval.core.timecode import TimeFormatError, parse_time
from retrieval.engine import Engine
from retrieval.pipeline.settings import IndexSettings
from retrieval.search.anchor import AnchorError, AnchorSpanError
from retrieval.search.compose import Change
from retrieval.search.requests import CompareRequest, DiffRequest, DupesRequest, QueryRequest, SearchRequest
from retrieval.search.results import CompareResult, QueryResult
from retrieval.search.signals import parse_overrides
from retrieval.search.text_query import parse_weights
from retrieval.store.errors import is_damage
from retrieval.store.index_dir import NoIndexError, NotIndexedError, find_index_dir, locate_index, remember_index

__all__ = [
    # the engine
    "Engine",
    # requests and what builds them
    "QueryRequest", "SearchRequest", "CompareRequest", "DiffRequest", "DupesRequest", "IndexSettings", "Change",
    "ShotRule", "parse_concepts", "parse_segment", "parse_time", "parse_overrides", "parse_weights",
    "gather_statements", "PROTOCOLS", "MODES", "DEFAULT_K", "DEFAULT_DIFF_MODEL",
    # results
    "QueryResult", "CompareResult",
    # finding an index
    "find_index_dir", "locate_index", "remember_index",
    # errors
    "ConvisError", "AnchorError", "AnchorSpanError", "NoIndexError", "NotIndexedError", "SegmentationError",
    "TimeFormatError", "is_damage", "one_line",
]

# isort: split
# What the server (``retrieval.serve``) reads besides the verbs: each request field's help and bounds, the limits
# it applies, the media it serves and the shapes its pages and evidence show. It imports nothing below this face.
from indexers import INDEXERS
from indexers.factory import has_text_tower
from rerankers.prompts.describe import CAPTION
from retrieval.analysis.diff import DiffRanking
from retrieval.core.concepts import Concept
from retrieval.core.defaults import (
    CANT_TELL_MARGIN,
    MAX_CONCEPT_WEIGHT,
    MAX_K,
    MAX_UPLOAD_BYTES,
    MIN_CONCEPT_WEIGHT,
    UPLOAD_QUOTA_BYTES,
)
from retrieval.core.files import atomic_write
from retrieval.core.processes import pid_alive
from retrieval.core.registry import UnknownModelError
from retrieval.core.sampling import FRAME_RULES, RULE_TEXT, FrameSpec
from retrieval.core.timecode import format_span, format_time
from retrieval.core.user_files import UserFileError, read_json
from retrieval.engine import INDEXER, TEXT_TOWER, WarmStep
from retrieval.lmm.differences import DiffResult
from retrieval.media.frames import DecodeError, VideoInfo
from retrieval.media.preview import Playback, PreviewError, Previews, ffmpeg_missing, playback, span_clip
from retrieval.media.scan import VIDEO_EXTENSIONS, content_hash
from retrieval.media.unit_frames import describe_sampling, frame_time, nearest_frame, stored_span, unit_frames
from retrieval.media.video_decoder import VideoDecoder
from retrieval.search import request_fields
from retrieval.search.request_fields import FieldSpec
from retrieval.search.results import CHANGE_KEY, Hit
from retrieval.search.signals import scorer_label
from retrieval.search.text_query import MAX_TEXT_CHARS
from retrieval.store.catalog import FileListing
from retrieval.store.catalog.records import FILE_KEY, Description, IndexerRow, UnitRecord
from retrieval.store.errors import CatalogBusy
from retrieval.store.snapshots import CATALOG_NAME, SNAPSHOT_NAME, writer_pid
from retrieval.store.where import OPERATORS

__all__ += [
    # each request field's help and bounds (the CLI's options and the server's schema read them)
    "request_fields", "FieldSpec", "MAX_K", "MAX_TEXT_CHARS", "MIN_CONCEPT_WEIGHT", "MAX_CONCEPT_WEIGHT",
    "OPERATORS", "Concept", "CANT_TELL_MARGIN",
    # serving an index: its files, uploads, previews, the catalog's state, warming its models
    "FileListing", "VIDEO_EXTENSIONS", "MAX_UPLOAD_BYTES", "UPLOAD_QUOTA_BYTES", "VideoDecoder", "VideoInfo",
    "DecodeError", "Playback", "PreviewError", "Previews", "ffmpeg_missing", "playback", "span_clip",
    "content_hash", "CATALOG_NAME", "SNAPSHOT_NAME", "writer_pid", "pid_alive", "CatalogBusy", "WarmStep", "INDEXER",
    "TEXT_TOWER", "has_text_tower", "UserFileError", "read_json", "atomic_write",
    # what pages and evidence show: results, differences, the frames each signal saw
    "Hit", "CHANGE_KEY", "DiffRanking", "DiffResult", "scorer_label", "format_span", "format_time", "INDEXERS",
    "CAPTION", "UnknownModelError", "FRAME_RULES", "RULE_TEXT", "FrameSpec", "describe_sampling", "frame_time",
    "nearest_frame", "stored_span", "unit_frames", "FILE_KEY", "Description", "IndexerRow", "UnitRecord",
]
