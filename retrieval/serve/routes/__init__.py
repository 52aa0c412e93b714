"""The server's routes, one module a verb group; each module's ``*_routes(state)`` makes its ``APIRouter``."""

from __future__ import annotations

from retrieval.serve.routes.collection import collection_routes
from retrieval.serve.routes.compare import compare_routes
from retrieval.serve.routes.dupes import dupes_routes
from retrieval.serve.routes.evidence import evidence_routes
from retrieval.serve.routes.files import write_routes
from retrieval.serve.routes.index import index_routes
from retrieval.serve.routes.lines import transcript_routes
from retrieval.serve.routes.media import media_routes
from retrieval.serve.routes.pages import page_routes
from retrieval.serve.routes.query import query_routes
from retrieval.serve.routes.search import search_routes

ROUTES = (page_routes, index_routes, collection_routes, query_routes, search_routes, dupes_routes, compare_routes,
          media_routes, evidence_routes, transcript_routes, write_routes)
