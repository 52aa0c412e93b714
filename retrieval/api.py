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
