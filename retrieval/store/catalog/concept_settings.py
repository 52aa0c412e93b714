"""What an index records of its concept-conditioned indexers, as catalog settings: which indexers take an
instruction, and which concepts beyond the ConViS five each unit is embedded under (``convis index --concept``).
Index runs write them (``retrieval.pipeline.concept_index``); queries read them to embed an anchor as the units
were."""

from __future__ import annotations

import json

CONDITIONED = "conditioned_indexers"  # JSON list of the conditioned indexers' model ids
ADDED = "concept_vectors"  # JSON {concept key: its words} of the concepts added with --concept


def _json_setting(catalog, key: str, empty):
    text = catalog.setting(key)
    return json.loads(text) if text else empty


def conditioned_ids(catalog) -> list[str]:
    """Model ids of the index's conditioned indexers."""
    return list(_json_setting(catalog, CONDITIONED, []))


def added_concepts(catalog) -> dict[str, str]:
    """concept key -> its words, of every concept added with ``--concept``."""
    return dict(_json_setting(catalog, ADDED, {}))
