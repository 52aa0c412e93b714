"""The words the catalog holds of each searchable unit: what the keyword index is built from.

A unit's text is its file's path (split into words: ``match/kipchoge_final.mp4`` says kipchoge) and every
readable description stored for its bytes and span: the caption and each concept's description, from text files
or a captioner, whichever model wrote them; then every timed line (on screen, subtitles, speech) overlapping it.
Units of unavailable files are left out, as recall leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.store.catalog import Catalog
from retrieval.store.catalog.folders import available_only
from retrieval.store.catalog.lines import OVERLAPS


@dataclass(frozen=True)
class Stamp:
    """What the texts were when read: how many units, and a hash of every (unit, path, text) row. The keyword
    index is current while the catalog's stamp equals the one it was built from."""

    units: int
    digest: str
    described: bool  # some unit has a readable description (not only its path)


def _texts_sql(catalog: Catalog) -> str:
    """One row a searchable unit: (unit id, path, its descriptions and then its timed lines joined, how many)."""
    join = ("LEFT JOIN descriptions d ON d.content_hash = f.content_hash AND d.start_s = round(u.start_s, 3) "
            "AND d.end_s = round(u.end_s, 3) AND d.status = 'ok' AND d.text IS NOT NULL "
            f"LEFT JOIN ({_LINES_SQL}) l ON l.unit_id = u.unit_id")
    # concat_ws skips what is NULL: a unit without lines reads as its descriptions alone
    return ("SELECT u.unit_id, f.path, concat_ws(' ', nullif(coalesce(string_agg(d.text, ' ' ORDER BY d.concept, "
            "d.model, d.text), ''), ''), any_value(l.text)) AS text, count(d.text) + coalesce(any_value(l.n), 0) AS n "
            f"FROM units u JOIN files f USING (file_id) {join} "
            f"WHERE f.status = 'ok' AND {available_only(catalog, 'u.unit_id')} GROUP BY u.unit_id, f.path")


# each unit's timed lines (on-screen text, subtitles, speech) joined by time
_LINES_SQL = (f"SELECT u.unit_id, string_agg(l.text, ' ' ORDER BY l.start_s, l.source, l.origin, l.seq) AS text, "
              f"count(*) AS n FROM units u JOIN files f USING (file_id) "
              f"JOIN text_lines l ON l.content_hash = f.content_hash AND {OVERLAPS} GROUP BY u.unit_id")


def unit_texts(catalog: Catalog) -> tuple[list[int], list[str]]:
    """(unit ids, their texts), by unit id: the path's words, then the descriptions."""
    rows = catalog.db.execute(_texts_sql(catalog) + " ORDER BY u.unit_id").fetchall()
    return [r[0] for r in rows], [f"{r[1]} {r[2]}" for r in rows]


def stamp(catalog: Catalog) -> Stamp:
    """The catalog's texts as a Stamp, computed inside DuckDB (no text is read out)."""
    count, digest, described = catalog.db.execute(
        f"SELECT count(*), coalesce(sum(hash(unit_id, path, text)::HUGEINT), 0), coalesce(sum(n), 0) > 0 "
        f"FROM ({_texts_sql(catalog)})").fetchone()
    return Stamp(int(count), str(digest), bool(described))
