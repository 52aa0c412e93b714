"""The units a request's ``where`` conditions keep: read from the catalog before anything is ranked, so each
signal's FAISS index searches only them (``retrieval.store.vectors.filtered_search``)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from retrieval.store.catalog import Catalog
from retrieval.store.where import BUILTIN, compares_numbers, compile_all, known_fields, parse


def allowed_units(catalog: Catalog, where: Sequence[str]) -> np.ndarray | None:
    """The sorted unit ids every condition of ``where`` keeps; None without conditions (every unit)."""
    if not where:
        return None
    conditions = [parse(text) for text in where]
    return catalog.matching_units(compile_all(conditions, catalog.field_kinds()))


def notices(catalog: Catalog, where: Sequence[str]) -> list[str]:
    """One line for each user field that ``where`` compares with a number while some of its files hold a value
    that is not one: those files match no such comparison (``where.py`` on mixed fields)."""
    if not where:
        return []
    counts, out = catalog.field_counts(), []
    for condition in (parse(text) for text in where):
        files, texts = counts.get(condition.field, (0, 0))
        line = (f"{condition.field}: {texts:,} of {files:,} files {'holds' if texts == 1 else 'hold'} a value that "
                "is not a number; compared as numbers where they parse")
        if 0 < texts < files and compares_numbers(condition) and line not in out:
            out.append(line)
    return out


def fields(catalog: Catalog) -> dict[str, str]:
    """Every field a filter may name here and its kind (number, text, or mixed: a user field of both)."""
    kinds = {name: kind for name, (_, kind) in BUILTIN.items()}
    users = catalog.field_kinds()
    return {name: kinds.get(name) or users[name] for name in known_fields(users)}


def none_kept(where: Sequence[str]) -> str:
    """Why a filtered request has no results."""
    return f"no indexed unit matches {' and '.join(repr(w) for w in where)}"
