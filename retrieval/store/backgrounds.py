"""Each signal's background, kept at index time: how alike two random units of this index are.

For every signal a query can be scored by (each indexer's vectors, each description signal, CLIPScore), random
pairs of distinct units are drawn (seeded, so a run over the same units keeps the same background; every pair
when there are at most ``MAX_PAIRS``) and their similarity, ``(q . s + 1) / 2`` as a query scores a candidate,
is summarised by its quantiles (``BACKGROUND_QUANTILES``) in the catalog's ``backgrounds`` table.  A signal's
background is drawn again whenever the catalog's generation moved (units or vectors were added or removed), and
forgotten when the signal has fewer than two units.  ``retrieval.search.calibration`` reads scores against it.
"""

from __future__ import annotations

import numpy as np

from retrieval.core.scores import unit_similarity
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import BACKGROUND_QUANTILES, BackgroundRow
from retrieval.store.vectors import signals as signal_vectors
from retrieval.store.vectors.policy import index_signals

MAX_PAIRS = 2000  # enough for the 1st and 99th percentiles to be read from ~20 pairs each; cheap at any size
SEED = 0


def refresh(catalog: Catalog) -> None:
    """Draw the background of every signal whose vectors changed since its background was drawn."""
    signals, stored, generation = index_signals(catalog), catalog.backgrounds(), catalog.generation
    kept = []
    for signal in signals:
        row = stored.get(signal)
        if row is None or row.generation != generation:
            row = drawn(catalog, signal, generation)
            if row is not None:
                catalog.put_background(row)
        if row is not None:
            kept.append(signal)
    catalog.keep_backgrounds(kept)


def drawn(catalog: Catalog, signal: str, generation: int) -> BackgroundRow | None:
    """``signal``'s background from the catalog's vectors now; None below two units."""
    ids = signal_vectors.ids_of(catalog, signal)
    first, second = pairs(len(ids))
    if not len(first):
        return None
    wanted = np.unique(np.concatenate([first, second]))
    query, stored = signal_vectors.sides_of(catalog, signal, ids[wanted].tolist())
    a = np.stack([query[int(u)] for u in ids[first]])
    b = np.stack([stored[int(u)] for u in ids[second]])
    similarity = unit_similarity(np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64)))
    quantiles = tuple(float(q) for q in np.quantile(similarity, BACKGROUND_QUANTILES))
    return BackgroundRow(signal, len(ids), len(first), quantiles, generation)


def pairs(n: int, cap: int = MAX_PAIRS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Positions (first, second) of the pairs of distinct units among ``n``: each unordered pair once when there
    are at most ``cap``, else ``cap`` ordered pairs drawn uniformly (with replacement) by a seeded generator."""
    if n * (n - 1) // 2 <= cap:
        return np.triu_indices(n, 1)
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, cap)
    second = rng.integers(0, n - 1, cap)
    return first, second + (second >= first)  # never the unit itself
