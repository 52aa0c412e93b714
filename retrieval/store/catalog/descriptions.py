"""The catalog's descriptions: what a captioner (or a text file) said of each unit, keyed by its bytes and span.

No generation bump when they are written: descriptions change no vector, so the FAISS indices stay current.
"""

from __future__ import annotations

from typing import Sequence

from retrieval.core.signal_kinds import CAPTION
from retrieval.store.catalog.connection import Connection
from retrieval.store.catalog.records import FILE_KEY, DescriberKey, Description, UnitRow, span_key


class DescriptionRows(Connection):
    # -- descriptions (index-time captions) ---------------------------------
    def write_descriptions(self, rows: Sequence[Description]) -> None:
        """Store one unit's answers in one transaction (replacing any under the same key).

        No generation bump: descriptions change no vector, so the FAISS indices stay current.
        """
        with self._transaction(bump=False):
            self._dirty = True
            for d in rows:
                self.db.execute(
                    "INSERT OR REPLACE INTO descriptions (content_hash, start_s, end_s, concept, model, revision, "
                    "prompt_version, text, status, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [d.content_hash, span_key(d.start), span_key(d.end), d.concept, d.key.model, d.key.revision,
                     d.key.prompt_version, d.text, d.status, d.error])

    def undescribed_units(self, key: DescriberKey, concepts: Sequence[str]) -> list[UnitRow]:
        """Units of indexed files lacking any of ``concepts`` from ``key``: one per distinct bytes and span (none of
        an unavailable file, which cannot be decoded)."""
        rows = self.db.execute(
            """SELECT u.unit_id, f.path, u.segment, u.start_s, u.end_s, f.content_hash, u.frame_times
               FROM units u JOIN files f USING (file_id)
               WHERE f.status = 'ok' AND f.content_hash IS NOT NULL
                 AND NOT coalesce(f.unavailable, false) AND (
                   SELECT count(DISTINCT d.concept) FROM descriptions d
                   WHERE d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3) AND d.model = ? AND d.revision = ?
                     AND d.prompt_version = ? AND d.concept IN (SELECT unnest(?::VARCHAR[]))) < ?
               ORDER BY f.path, u.segment""",
            [key.model, key.revision, key.prompt_version, list(concepts), len(set(concepts))]).fetchall()
        seen, units = set(), []
        for r in rows:
            span = (r[5], span_key(r[3]), span_key(r[4]))
            if span not in seen:  # the same bytes under two names are described once
                seen.add(span)
                units.append(UnitRow(unit_id=r[0], path=r[1], segment=r[2], start=r[3], end=r[4],
                                     content_hash=r[5], frame_times=tuple(r[6] or ())))
        return units

    def unit_descriptions(self, unit_id: int, key: DescriberKey | None = None) -> list[Description]:
        """Every stored answer about one unit (``key``: only that model's, asked that way)."""
        where, args = "u.unit_id = ?", [int(unit_id)]
        return self._descriptions(where, args, key)

    def concept_descriptions(self, concept: str, key: DescriberKey | None = None) -> dict[int, Description]:
        """unit_id -> the stored answer about ``concept`` of every unit that has one (``key``: from that model)."""
        found = self._descriptions("d.concept = ?", [concept], key, with_units=True)
        return dict(found)

    def descriptions_of(self, concept: str, units: Sequence[int] | None = None) -> list[tuple[int, Description]]:
        """(unit id, answer) for every stored answer about ``concept`` (of ``units`` only, when given), by unit,
        oldest answer first."""
        if units is None:
            return self._descriptions("d.concept = ?", [concept], None, with_units=True)
        ids = [int(u) for u in units]
        if not ids:
            return []
        return self._descriptions(f"d.concept = ? AND u.unit_id IN ({', '.join('?' * len(ids))})", [concept, *ids],
                                  None, with_units=True)

    def file_descriptions(self, path: str, concept: str, key: DescriberKey) -> list[Description | None]:
        """One file's units in segment order, each with its answer about ``concept`` from ``key`` (None: none)."""
        rows = self.db.execute(
            f"""SELECT {_DESCRIPTION_COLUMNS} FROM units u JOIN files f USING (file_id)
                LEFT JOIN descriptions d ON d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3) AND d.concept = ? AND d.model = ? AND d.revision = ?
                     AND d.prompt_version = ?
                WHERE f.path = ? ORDER BY u.segment""",
            [concept, key.model, key.revision, key.prompt_version, path]).fetchall()
        return [_description(r) if r[3] is not None else None for r in rows]

    def _descriptions(self, where: str, args: list, key: DescriberKey | None, with_units: bool = False):
        if key is not None:
            where += " AND d.model = ? AND d.revision = ? AND d.prompt_version = ?"
            args = [*args, key.model, key.revision, key.prompt_version]
        rows = self.db.execute(
            f"""SELECT {_DESCRIPTION_COLUMNS}, u.unit_id FROM units u JOIN files f USING (file_id)
                JOIN descriptions d ON d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3)
                WHERE {where} ORDER BY u.unit_id, d.concept, d.created_at""", args).fetchall()
        if with_units:
            return [(r[-1], _description(r[:-1])) for r in rows]
        return [_description(r[:-1]) for r in rows]

    def chosen_texts(self, concept: str, prefer: Sequence[DescriberKey] = (),
                     units: Sequence[int] | None = None) -> dict[int, str]:
        """unit id -> the one readable description of ``concept`` (``caption``: the caption) that stands for the
        unit (each of ``units`` only, when given), when several sources describe it: a file (a person's own
        words), then the models in ``prefer`` (a run's captioner), then the latest stored answer."""
        order = [FILE_KEY, *prefer]
        best: dict[int, tuple[int, str]] = {}
        for unit_id, d in self.descriptions_of(concept, units):  # oldest first: a later answer of equal rank wins
            if d.status != "ok" or not d.text:
                continue
            rank = order.index(d.key) if d.key in order else len(order)
            if unit_id not in best or rank <= best[unit_id][0]:
                best[unit_id] = (rank, d.text)
        return {unit_id: text for unit_id, (_, text) in best.items()}

    def described_concepts(self) -> list[str]:
        """The concepts some unit has a readable description of (the caption is no concept)."""
        rows = self.db.execute("SELECT DISTINCT concept FROM descriptions WHERE status = 'ok' AND concept <> ? "
                               "ORDER BY concept", [CAPTION]).fetchall()
        return [r[0] for r in rows]

    def described_units(self) -> list[tuple[str, str, int]]:
        """(concept, model, units) for every concept and model with readable descriptions of indexed units (the
        caption included; model "file" for a person's own text files)."""
        return [tuple(r) for r in self.db.execute(
            """SELECT d.concept, d.model, count(DISTINCT u.unit_id) FROM units u JOIN files f USING (file_id)
                JOIN descriptions d ON d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3)
                     AND d.end_s = round(u.end_s, 3)
                WHERE d.status = 'ok' GROUP BY d.concept, d.model ORDER BY d.concept, d.model""").fetchall()]

    def description_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM descriptions").fetchone()[0]


_DESCRIPTION_COLUMNS = ("d.content_hash, d.start_s, d.end_s, d.concept, d.model, d.revision, d.prompt_version, "
                        "d.text, d.status, d.error")


def _description(r) -> Description:
    return Description(r[0], r[1], r[2], r[3], DescriberKey(r[4], r[5], r[6]), r[7], r[8], r[9])
