"""Which store an index serves its vectors from, as its catalog records it (read without loading either store)."""

from __future__ import annotations

from retrieval.store.catalog import Catalog

STORE = "vector_store"  # catalog setting: "faiss" (or unset), or a Lance location as --store wrote it
FAISS = "faiss"


def store_of(catalog: Catalog) -> str:
    """``faiss``, or the Lance location as ``--store`` wrote it (``lance``, ``lance:FOLDER``, ``lance:s3://b/p``)."""
    return catalog.setting(STORE) or FAISS
