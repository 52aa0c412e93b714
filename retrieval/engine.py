"""The engine: ``Engine(index_dir).index(folder)`` and ``.query(QueryRequest(anchor, concepts))``.

An Engine is an index folder and the models it keeps between requests (``ModelCache``); each verb takes one
request value (``retrieval.search.requests``) and returns a result that carries its own notices, so one Engine
answers any number of requests, at the same time too.  The CLI and the server are thin layers over it; they, and
a user's script, import it with the request values, results and errors from ``retrieval.api``, the public face.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

# What a query, `info` and `ls` need is imported here; what only indexing, describing, reranking, text search
# or building a model needs is imported where it is used, so that a query whose anchor is indexed imports no
# model code (torch, transformers) and no decoder (`convis bench perf` measures the CLI's start-up).
from retrieval.core.concepts import Concept
from retrieval.core.errors import one_line
from retrieval.model_cache import ModelCache
from retrieval.pipeline.settings import IndexSettings
from retrieval.search.compare import run_compare
from retrieval.search.query import run_query
from retrieval.search.requests import (
    CompareRequest,
    DiffRequest,
    DupesRequest,
    QueryRequest,
    SearchRequest,
    as_concepts,
)
from retrieval.search.results import CompareResult, QueryResult
from retrieval.store import index_dir as store
from retrieval.store.catalog import Catalog, FileListing
from retrieval.store.catalog.removed import RemovedFile, Undone
from retrieval.store.repair import Restored
from retrieval.store.snapshots import CATALOG_NAME

if TYPE_CHECKING:
    from indexers.base import Indexer
    from retrieval.analysis.diff import DiffRanking
    from retrieval.analysis.dupes import DupesResult
    from retrieval.lmm.differences import DiffResult
    from retrieval.pipeline.describe_run import DescribeReport
    from retrieval.pipeline.distribute import Distributor
    from retrieval.pipeline.progress import Progress
    from retrieval.pipeline.run import IndexReport


TEXT_TOWER, INDEXER = "text tower", "indexer"  # what a WarmStep builds


@dataclass(frozen=True)
class WarmStep:
    """One model a request over an index may build: a signal's text tower (text search, a query's change) or its
    indexer (an anchor the index lacks, or a time window of one)."""

    kind: str  # TEXT_TOWER or INDEXER
    name: str  # the signal's name in the index
    spec: str  # the model id the index stored: what a request builds it by
    protocol: str  # the index's: a request builds the model as the index did

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


class Engine:
    def __init__(self, index_dir: str | Path | None, device: str | None = None, trust_remote_code: bool = False,
                 rerank_batch: int | None = None, share: bool = True, captioner_backend: str = "hf"):
        # index_dir None: no index (``compare`` and ``diff`` need none; the score cache then lives in the user
        # cache); ``rerank_batch``: pairs per LMM forward pass (None: the family's default); ``share``: pairs of one
        # anchor share its vision output and the prompt prefix (False: every pair a whole clip);
        # ``captioner_backend``: who generates captions, "hf" (transformers) or "vllm"
        self.index_dir = Path(index_dir) if index_dir is not None else None
        self.models = ModelCache(device, trust_remote_code, rerank_batch, self.index_dir, share=share,
                                 captioner_backend=captioner_backend)

    @property
    def catalog_path(self) -> Path | None:
        return self.index_dir / CATALOG_NAME if self.index_dir is not None else None

    @property
    def has_index(self) -> bool:
        return store.has_index(self.index_dir)

    @property
    def root(self) -> Path:
        """The folder the index covers (paths in the catalog are relative to it)."""
        return store.index_root(self.index_dir)

    # -- the verbs ----------------------------------------------------------
    def query(self, request: QueryRequest) -> QueryResult:
        """The clips like ``request.anchor`` under its concepts, best first (see ``QueryRequest``)."""
        self.models.check_lmms(request.lmms)
        return run_query(request, self.index_dir, self.models)

    def search(self, request: SearchRequest) -> QueryResult:
        """Indexed units ranked by how well they match ``request.text`` (see ``retrieval.search.text_query``)."""
        from retrieval.search import text_query

        return text_query.run_search(request.text_query(), self.index_dir, self.models)

    def compare(self, request: CompareRequest) -> CompareResult:
        """Per-concept similarity of one pair of clips (0-1), and their Eq. 2 combination (see CompareRequest)."""
        self.models.check_lmms(request.lmms)
        return run_compare(request, self.index_dir, self.models)

    def diff(self, request: DiffRequest, progress=None) -> DiffResult | DiffRanking:
        """What differs between the pair ``request.a``, ``request.b`` (a DiffResult), or the candidates ranked by
        how much each differs from ``request.a`` (a DiffRanking; ``progress("candidate", {done, total})`` after
        each)."""
        from retrieval.analysis.diff_verb import run_diff

        self.models.check_lmms(request.lmms)
        return run_diff(request, self.index_dir, self.models, progress)

    def dupes(self, request: DupesRequest) -> DupesResult:
        """The index's near-duplicate files or units in groups, each with the one to keep (see DupesRequest)."""
        from retrieval.analysis.dupes import run_dupes  # FAISS range search and SciPy's graphs: this verb's alone

        return run_dupes(request, self.index_dir)

    # -- indexing and describing -------------------------------------------
    def index(self, folder: str | Path, indexers: Sequence[str] = (), settings: IndexSettings | None = None, *,
              progress: Progress | None = None, distributor: Distributor | None = None,
              notices: list[str] | None = None) -> IndexReport:
        """Index ``folder`` with ``indexers`` (specs; default: the index's own, else the default indexer) as
        ``settings`` say (segments, captions, frames, workers, Ray, FAISS, protocol: see IndexSettings);
        ``distributor`` decodes instead of this machine's worker processes.  The report's ``seconds`` is this
        call's wall time.  A folder without videos changes nothing: no index is created, an existing one is left
        as it was, and the report says ``found`` 0.  What the user should know goes to ``notices``."""
        from retrieval.pipeline.index_folder import index_folder

        if settings is not None and settings.captioner:
            self.models.check_captioner_backend(settings.ray_address)
        if settings is not None and settings.captioner and not settings.ray_address:
            self.models.check_lmms([settings.captioner])  # on Ray the actors load it, where its weights may be
        return index_folder(self.index_dir, self.models, folder, indexers, settings, progress, distributor,
                            notices)

    def describe(self, concepts: Sequence[str] | Sequence[Concept] = (), captioner: str | None = None,
                 progress: Progress | None = None, caption_only: bool = False) -> DescribeReport:
        """Have a video LMM describe every indexed unit once for ``concepts`` (ConViS or free text; none: the
        caption and the five ConViS concepts; ``caption_only``: the caption alone), and embed each concept's
        descriptions into its own signal. ``captioner``: any reranker spec; default the last one
        ``index --captioner`` used."""
        from retrieval.pipeline.describe_folder import describe_folder

        store.require_index(self.index_dir)
        self.models.check_captioner_backend()
        self.models.check_lmms([captioner] if captioner else [])  # the index's own is checked as it is built
        wanted = as_concepts(concepts) if concepts else ()
        return describe_folder(self.index_dir, self.models, wanted, captioner, progress, caption_only)

    # -- the models ---------------------------------------------------------
    def indexer(self, spec: str) -> Indexer:
        """The indexer for ``spec``, built once, as the index's protocol builds it."""
        return self.models.indexer(spec, self._protocol())

    def reranker(self, spec):
        """A Reranker built once per engine (specs are names, hub ids or folders)."""
        return self.models.reranker(spec)

    def warm_plan(self, notices: list[str] | None = None) -> list[WarmStep]:
        """The models a request over this index may build, in the order to build them ahead of it: first the text
        tower of each signal that reads text (every text search and composed query asks them), then each
        indexer."""
        from indexers.factory import has_text_tower  # the registry's cards: no family's module is imported

        with self.open_catalog(notices) as catalog:
            rows, protocol = catalog.indexers(), store.protocol_of(catalog)
        towers = [WarmStep(TEXT_TOWER, r.name, r.indexer, protocol) for r in rows
                  if r.kind == "text" or has_text_tower(r.indexer)]
        return towers + [WarmStep(INDEXER, r.name, r.indexer, protocol) for r in rows]

    def warm(self, steps: Sequence[WarmStep], notices: list[str],
             done: Callable[[WarmStep, bool], None] = lambda step, built: None) -> None:
        """Build the model of each step into this engine's cache, one after another, as the request that needs it
        would (that request then finds it built); ``done(step, built)`` after each.  A model that cannot be built
        (its weights missing) is a line in ``notices``, not an error: the request that needs it says why."""
        for step in steps:
            try:
                if step.kind == TEXT_TOWER:  # its ONNX export when there is one: no torch for a text search
                    self.models.text_tower(step.spec, step.protocol, notices)
                else:
                    self.models.indexer(step.spec, step.protocol)
            except Exception as exc:  # anything a build raises: warming ahead of a request must not end the caller
                notices.append(f"{step.label} not warmed: {one_line(exc, 200)}")
                done(step, False)
            else:
                done(step, True)

    def _protocol(self) -> str:
        if not self.has_index:
            return "fast"
        catalog, _ = store.open_catalog(self.index_dir)
        with catalog:
            return store.protocol_of(catalog)

    # -- the index folder ---------------------------------------------------
    def remove(self, paths: Sequence[str | Path]) -> list[str]:
        """Take indexed files out of the index (rows, vectors; the files stay on disk) and have later runs skip
        them; ``paths`` relative to the root or absolute inside it.  Their root-relative paths, or
        NotIndexedError naming those the index does not list (then nothing is removed)."""
        from retrieval.store import operations  # the writers' modules: imported by the verbs that change the index

        return operations.remove(self.index_dir, paths)

    def unremove(self, paths: Sequence[str | Path]) -> Undone:
        """Undo ``remove``: the files' kept rows and vectors are back, searchable at once with nothing embedded (and
        a file removed before rows were kept is indexed by the next run); or NotIndexedError naming those that were
        not removed (then nothing changes)."""
        from retrieval.store import operations

        return operations.restore(self.index_dir, paths)

    def tag(self, paths: Sequence[str | Path], assignments: Sequence[str] = (), unset: Sequence[str] = ()) -> list[str]:
        """Set (``assignments``: ``key=value``) and remove (``unset``: names) user fields of indexed files; their
        root-relative paths, or NotIndexedError naming those the index does not list (then nothing changes)."""
        from retrieval.store import operations

        return operations.tag(self.index_dir, paths, assignments, unset)

    def read_metadata(self, file: str | Path | None, notices: list[str]) -> int | None:
        """Read the user fields of ``file`` (CSV or JSON Lines keyed by root-relative path; None: the file an
        earlier run read, if it changed since); how many files have fields from it (None: nothing read).  Each
        kind of problem in it is one line of ``notices``."""
        from retrieval.store import operations

        return operations.read_metadata(self.index_dir, None if file is None else Path(file), notices)

    def fields(self, notices: list[str] | None = None) -> dict[str, str]:
        """Every field a ``where`` filter may name in this index, and its kind (number or text)."""
        from retrieval.search.filters import fields

        with self.open_catalog(notices) as catalog:
            return fields(catalog)

    def removed(self, notices: list[str] | None = None) -> list[RemovedFile]:
        """Every file taken out of the index, with when (what `convis ls --removed` lists)."""
        return store.removed(self.index_dir, [] if notices is None else notices)

    def info(self, notices: list[str] | None = None) -> dict:
        """What ``convis info`` shows; reading a snapshot instead of the catalog adds a line to ``notices``."""
        return store.info(self.index_dir, [] if notices is None else notices)

    def files(self, notices: list[str] | None = None) -> list[FileListing]:
        """Every file the index knows, ok or failed, with its units (what `convis ls` lists)."""
        return store.files(self.index_dir, [] if notices is None else notices)

    def open_catalog(self, notices: list[str] | None = None) -> Catalog:
        """The catalog, read-only (see ``retrieval.store.index_dir``); why a snapshot is read goes to ``notices``."""
        return store.reading(self.index_dir, [] if notices is None else notices)

    def export(self, out: Path, fmt: str = "parquet", force: bool = False, notices: list[str] | None = None) -> dict:
        """Write the index's files, units, descriptions and vectors to the folder ``out`` as ``fmt`` (parquet or
        jsonl) files with a manifest, which is returned; only reads the index (its snapshot while a writer holds
        it: why goes to ``notices``)."""
        from retrieval.store.export.tables import export_index  # pyarrow: only an export pays for it

        return export_index(self.index_dir, out, fmt, force, [] if notices is None else notices)

    def repair(self) -> Restored | None:
        """Restore a damaged catalog from its snapshot (the damaged file is kept aside); None when it is whole."""
        return store.repair(self.index_dir)

