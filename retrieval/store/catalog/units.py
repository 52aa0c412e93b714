"""The catalog's units: the retrievable spans of its files, as recall and the per-file steps read them."""

from __future__ import annotations

from typing import Sequence

from retrieval.store.catalog.connection import Connection
from retrieval.store.catalog.records import UnitRecord, UnitRow


class UnitRows(Connection):
    def unit_spans(self) -> dict[str, tuple[float, list[tuple[float, float]], str]]:
        """Every indexed file's duration, its units' (start, end) seconds in segment order, and how they were cut
        (the label it was indexed with, "" when not recorded)."""
        rows = self.db.execute(
            """SELECT f.path, any_value(f.duration), list(u.start_s ORDER BY u.segment),
                      list(u.end_s ORDER BY u.segment), any_value(coalesce(f.units_by, ''))
               FROM files f JOIN units u USING (file_id) WHERE f.status = 'ok' GROUP BY f.path""").fetchall()
        return {path: (duration, list(zip(starts, ends, strict=False)), by)
                for path, duration, starts, ends, by in rows}

    def file_units(self, path: str) -> list[UnitRecord]:
        """One indexed file's units, in segment order."""
        rows = self.db.execute(
            """SELECT u.segment, u.start_s, u.end_s, u.frame_times, u.boundary, u.confidence
               FROM units u JOIN files f USING (file_id) WHERE f.path = ? ORDER BY u.segment""", [path]).fetchall()
        return [UnitRecord(r[0], r[1], r[2], tuple(r[3] or ()), r[4], r[5]) for r in rows]

    def shot_summary(self) -> dict:
        """Over every unit: how many start at a detected cut, at a split of a long shot, at a file's start, the
        cuts' mean confidence and the units' mean length in seconds."""
        rows = self.db.execute("SELECT u.boundary, count(*), avg(u.confidence) FROM units u GROUP BY 1").fetchall()
        counts = {b: (n, mean) for b, n, mean in rows}
        length = self.db.execute("SELECT avg(end_s - start_s) FROM units").fetchone()[0]
        cut_confidence = counts.get("cut", (0, None))[1]
        return {"cuts": counts.get("cut", (0, None))[0], "splits": counts.get("split", (0, None))[0],
                "file_starts": counts.get("start", (0, None))[0],
                "mean_cut_confidence": None if cut_confidence is None else round(cut_confidence, 4),
                "mean_unit_seconds": None if length is None else round(length, 3)}

    def unit_ids(self, path: str) -> list[int]:
        """One indexed file's unit ids, in segment order."""
        rows = self.db.execute("SELECT u.unit_id FROM units u JOIN files f USING (file_id) WHERE f.path = ? "
                               "ORDER BY u.segment", [path]).fetchall()
        return [int(r[0]) for r in rows]

    def units(self, unit_ids: Sequence[int]) -> dict[int, UnitRow]:
        rows = self.db.execute(
            """SELECT u.unit_id, f.path, u.segment, u.start_s, u.end_s, f.content_hash, u.frame_times
               FROM units u JOIN files f USING (file_id) WHERE u.unit_id IN (SELECT unnest(?::BIGINT[]))""",
            [list(map(int, unit_ids))],
        ).fetchall()
        return {r[0]: UnitRow(unit_id=r[0], path=r[1], segment=r[2], start=r[3], end=r[4], content_hash=r[5],
                              frame_times=tuple(r[6] or ())) for r in rows}
