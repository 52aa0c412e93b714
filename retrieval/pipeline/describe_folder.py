"""Describing an index's units with a video LMM: which captioner, which questions, which text models embed the
answers (see ``retrieval.pipeline.describe_run`` for the run itself)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from indexers.factory import has_text_tower
from retrieval.core.concepts import Concept
from retrieval.pipeline.catalog_settings import CAPTIONER
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import IndexerRow
from retrieval.store.index_dir import protocol_of, require_index

if TYPE_CHECKING:
    from indexers.base import Indexer
    from retrieval.model_cache import ModelCache
    from retrieval.pipeline.describe_run import DescribeReport
    from retrieval.pipeline.progress import Progress


def describe_folder(index_dir: Path | None, models: ModelCache, concepts: Sequence[Concept] = (),
                    captioner: str | None = None, progress: Progress | None = None,
                    caption_only: bool = False) -> DescribeReport:
    """Have ``captioner`` (default: the last one the index used) describe every indexed unit once for
    ``concepts`` (none: the caption and the five ConViS concepts; ``caption_only``: the caption alone), and
    embed each concept's descriptions into its own signal."""
    from rerankers.prompts import describe as describe_prompt
    from retrieval.pipeline.describe_run import NoCaptionerError, describe_index

    catalog_path = require_index(index_dir)
    with Catalog(catalog_path) as catalog:
        spec = captioner or catalog.setting(CAPTIONER)
        if not spec:
            raise NoCaptionerError("this index has no captioner yet: name one with --captioner (any --reranker "
                                   "spec, e.g. qwen2-vl)")
        protocol = protocol_of(catalog)
        model = models.captioner(spec, protocol)  # the paper protocol captions as the reference did
        catalog.set_setting(CAPTIONER, spec)
        requests = describe_prompt.concept_requests({c.key: c.words for c in concepts}) if concepts \
            else describe_prompt.caption_requests(model.caption_tokens) if caption_only \
            else describe_prompt.describe_requests(model.caption_tokens)
        embedders = _text_indexers(catalog, models, protocol) + _caption_towers(catalog, models, protocol)
        root = Path(catalog.setting("root") or index_dir.parent)
        return describe_index(catalog, index_dir, root, model, requests, embedders, progress)


def _text_indexers(catalog: Catalog, models: ModelCache, protocol: str) -> list[Indexer]:
    """The index's text indexers (built when first used), or the default one, registered now: descriptions
    are searched through one."""
    from retrieval.pipeline.models import run_indexers

    rows = [r for r in catalog.indexers() if r.kind == "text"]
    if rows:
        return run_indexers([r.indexer for r in rows], rows, protocol, lambda spec: models.indexer(spec, protocol))
    model = models.indexer("text", protocol)
    catalog.register_indexer(IndexerRow(model.model_id, model.name, model.source, model.kind, model.dim,
                                        model.frames_per_unit, None))
    return [model]


def _caption_towers(catalog: Catalog, models: ModelCache, protocol: str) -> list[Indexer]:
    """The index's CLIP-family indexers (built when first used): they embed the captions for CLIPScore."""
    from retrieval.pipeline.models import run_indexers

    rows = [r for r in catalog.indexers() if r.kind != "text" and has_text_tower(r.name)]
    return run_indexers([r.indexer for r in rows], rows, protocol, lambda spec: models.indexer(spec, protocol))
