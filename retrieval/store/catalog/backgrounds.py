"""The catalog's backgrounds: per signal, quantiles of the similarity of random pairs of distinct units
(``retrieval.store.backgrounds`` samples them; ``retrieval.search.calibration`` reads scores against them)."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from retrieval.store.catalog.connection import Connection
from retrieval.store.catalog.folders import available_only
from retrieval.store.catalog.records import BACKGROUND_QUANTILES, BackgroundRow

_COLUMNS = ", ".join(f"q{round(q * 100):02d}" for q in BACKGROUND_QUANTILES)


class BackgroundRows(Connection):
    def backgrounds(self) -> dict[str, BackgroundRow]:
        """Signal -> its background."""
        rows = self.db.execute(f"SELECT signal, units, pairs, {_COLUMNS}, generation FROM backgrounds").fetchall()
        return {r[0]: BackgroundRow(r[0], int(r[1]), int(r[2]), tuple(float(x) for x in r[3:-1]), int(r[-1]))
                for r in rows}

    def put_background(self, row: BackgroundRow) -> None:
        """Set one signal's background; it changes no vector, so the generation stays (FAISS stays current)."""
        self._dirty = True
        marks = ", ".join("?" * len(BACKGROUND_QUANTILES))
        with self._transaction(bump=False):
            self.db.execute("DELETE FROM backgrounds WHERE signal = ?", [row.signal])
            self.db.execute(f"INSERT INTO backgrounds (signal, units, pairs, {_COLUMNS}, generation) "
                            f"VALUES (?, ?, ?, {marks}, ?)",
                            [row.signal, row.units, row.pairs, *row.quantiles, row.generation])

    def keep_backgrounds(self, signals: Iterable[str]) -> None:
        """Forget the backgrounds of signals other than ``signals`` (a signal with too few units has none)."""
        keep = list(signals)
        stale = [s for s in self.backgrounds() if s not in keep]
        if stale:
            self._dirty = True
            self.db.execute("DELETE FROM backgrounds WHERE signal IN (SELECT unnest(?::VARCHAR[]))", [stale])

    def vector_ids(self, indexer: str) -> np.ndarray:
        """The unit ids recall searches that have a vector from ``indexer`` (``vectors``' ids), ascending."""
        rows = self.db.execute(f"SELECT unit_id FROM embeddings WHERE indexer = ? AND "
                               f"{available_only(self, 'unit_id')} ORDER BY unit_id", [indexer]).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)
