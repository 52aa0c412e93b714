"""The catalog's timed text lines: what a file shows on screen, its subtitles and its speech, each line with its
time, kept by the file's bytes (the same bytes under another name, or a re-index, find them again).

A unit's lines are those whose time overlaps its span; a line read off one frame (start == end) belongs to the
unit whose span holds that time. ``line_runs`` records every (bytes, source, origin) read, with a stamp of what
was read, so a file with no text is not read again and a changed subtitle file is. No generation bump: lines
change no vector (the keyword index follows them through its stamp).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pyarrow as pa

from retrieval.store.catalog.bulk import all_storable, registered
from retrieval.store.catalog.connection import Connection
from retrieval.store.catalog.records import TimedLine

_COLUMNS = "l.source, l.origin, l.start_s, l.end_s, l.text, l.confidence, l.box, l.language"
# a line overlaps a unit; one of zero length (a frame's) counts from the unit's start up to, not at, its end
OVERLAPS = "l.start_s < u.end_s AND greatest(l.end_s, l.start_s + 1e-6) > u.start_s"


class LineRows(Connection):
    def replace_lines(self, content_hash: str, source: str, origin: str, stamp: str,
                      lines: Sequence[TimedLine], alone: bool = False) -> int:
        """Store what one read of ``source`` by ``origin`` found in a file's bytes (maybe nothing), replacing
        what an earlier read of the same stored (``alone``: any other origin's read of ``source`` too, as a
        reader's new version replaces its old one), in one transaction; how many lines could not be stored."""
        return self.replace_reads(content_hash, source, [(origin, stamp, lines)], alone)

    def replace_reads(self, content_hash: str, source: str, reads: Sequence[tuple[str, str, Sequence[TimedLine]]],
                      alone: bool = False) -> int:
        """Store several reads (origin, stamp, lines) of one file's bytes in one transaction: a run killed
        among them records none, so the next run does not take the first for all of them.  How many lines could
        not be stored (a lone surrogate in the text, a time that is not a number): each costs itself alone."""
        lost = 0
        with self._transaction(bump=False):
            self._dirty = True
            if alone:
                for table in ("text_lines", "line_runs"):
                    self.db.execute(f"DELETE FROM {table} WHERE content_hash = ? AND source = ?",
                                    [content_hash, source])
            for origin, stamp, lines in reads:
                lost += self._replace_read([content_hash, source, origin], stamp, lines)
        return lost

    def _replace_read(self, key: list[str], stamp: str, lines: Sequence[TimedLine]) -> int:
        self.db.execute("DELETE FROM text_lines WHERE content_hash = ? AND source = ? AND origin = ?", key)
        table, lost = line_table(key, lines)
        if table.num_rows:  # one statement for the whole read: a row at a time took minutes for 291k cues
            with registered(self.db, "incoming_lines", table):
                self.db.execute("INSERT INTO text_lines SELECT * FROM incoming_lines")
        self.db.execute("INSERT OR REPLACE INTO line_runs (content_hash, source, origin, stamp, lines) "
                        "VALUES (?, ?, ?, ?, ?)", [*key, stamp, table.num_rows])
        return lost

    def forget_lines(self, content_hash: str, source: str, origin: str) -> None:
        """Drop one read's lines and its record (its subtitle file is gone): the next run reads what is there."""
        with self._transaction(bump=False):
            self._dirty = True
            for table in ("text_lines", "line_runs"):
                self.db.execute(f"DELETE FROM {table} WHERE content_hash = ? AND source = ? AND origin = ?",
                                [content_hash, source, origin])

    def line_stamps(self, content_hash: str, source: str) -> dict[str, str]:
        """origin -> the stamp of its last read, for each read of ``source`` stored for these bytes."""
        return dict(self.db.execute("SELECT origin, stamp FROM line_runs WHERE content_hash = ? AND source = ?",
                                    [content_hash, source]).fetchall())

    def unit_lines(self, unit_ids: Iterable[int], sources: Sequence[str] = ()) -> dict[int, list[TimedLine]]:
        """Each unit's lines by time (``sources``: only those), for the units that have any."""
        ids = [int(i) for i in unit_ids]
        if not ids:
            return {}
        only = "AND l.source IN (SELECT unnest(?::VARCHAR[]))" if sources else ""
        rows = self.db.execute(
            f"""SELECT u.unit_id, {_COLUMNS} FROM units u JOIN files f USING (file_id)
                JOIN text_lines l ON l.content_hash = f.content_hash AND {OVERLAPS}
                WHERE u.unit_id IN (SELECT unnest(?::BIGINT[])) {only}
                ORDER BY u.unit_id, l.start_s, l.source, l.origin, l.seq""",
            [ids, list(sources)] if sources else [ids]).fetchall()
        out: dict[int, list[TimedLine]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(_line(r[1:]))
        return out

    def file_lines(self, path: str, sources: Sequence[str] = (), start: float = 0.0,
                   limit: int | None = None) -> list[TimedLine]:
        """The lines of the file at ``path`` (relative to the index root) by time: those starting at ``start``
        seconds or later, at most ``limit`` of them (None: every one)."""
        only = "AND l.source IN (SELECT unnest(?::VARCHAR[]))" if sources else ""
        params = [path, float(start), *([list(sources)] if sources else [])]
        cap = "" if limit is None else f"LIMIT {int(limit)}"
        rows = self.db.execute(
            f"""SELECT {_COLUMNS} FROM files f JOIN text_lines l ON l.content_hash = f.content_hash
                WHERE f.path = ? AND l.start_s >= ? {only} ORDER BY l.start_s, l.source, l.origin, l.seq {cap}""",
            params).fetchall()
        return [_line(r) for r in rows]

    def line_sources(self) -> list[str]:
        """The sources some stored line is of."""
        return [r[0] for r in self.db.execute("SELECT DISTINCT source FROM text_lines ORDER BY source").fetchall()]

    def source_texts(self, source: str) -> dict[int, str]:
        """unit id -> its lines of ``source`` joined by time, for each indexed unit that has any."""
        rows = self.db.execute(
            f"""SELECT u.unit_id, string_agg(l.text, ' ' ORDER BY l.start_s, l.origin, l.seq) FROM units u
                JOIN files f USING (file_id) JOIN text_lines l ON l.content_hash = f.content_hash AND {OVERLAPS}
                WHERE f.status = 'ok' AND l.source = ? GROUP BY u.unit_id""", [source]).fetchall()
        return dict(rows)

    def lines_by_path(self) -> dict[str, list[TimedLine]]:
        """Every indexed file's lines by time, by path (in one query: `convis ls` lists them all)."""
        rows = self.db.execute(f"""SELECT f.path, {_COLUMNS} FROM files f
                                     JOIN text_lines l ON l.content_hash = f.content_hash
                                     ORDER BY f.path, l.start_s, l.source, l.origin, l.seq""").fetchall()
        out: dict[str, list[TimedLine]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(_line(r[1:]))
        return out

_LINE_SCHEMA = pa.schema([("content_hash", pa.string()), ("source", pa.string()), ("origin", pa.string()),
                          ("seq", pa.int32()), ("start_s", pa.float64()), ("end_s", pa.float64()),
                          ("text", pa.string()), ("confidence", pa.float64()), ("box", pa.list_(pa.float64())),
                          ("language", pa.string())])  # text_lines' columns, in order


def line_table(key: list[str], lines: Sequence[TimedLine]) -> tuple[pa.Table, int]:
    """The rows of ``text_lines`` for one read (``key``: content hash, source, origin) and how many lines were
    left out as unstorable; a line keeps its place in the read as ``seq`` either way."""
    rows, lost = [], 0
    for seq, line in enumerate(lines):
        row = _row(seq, line)
        if row is None:
            lost += 1
        else:
            rows.append(row)
    columns = [[value] * len(rows) for value in key] + [list(c) for c in zip(*rows, strict=True)] if rows else \
        [[] for _ in _LINE_SCHEMA]
    arrays = [pa.array(column, type=f.type) for column, f in zip(columns, _LINE_SCHEMA, strict=True)]
    return pa.Table.from_arrays(arrays, schema=_LINE_SCHEMA), lost


def _row(seq: int, x: TimedLine) -> tuple | None:
    """A line's columns after its key, or None when DuckDB could not take them."""
    try:
        row = (seq, float(x.start), float(x.end), x.text, None if x.confidence is None else float(x.confidence),
               None if x.box is None else [float(b) for b in x.box], x.language)
    except (TypeError, ValueError):
        return None
    return row if x.text is not None and all_storable(x.text, x.language) else None


def in_unit(line: TimedLine, start: float, end: float) -> bool:
    """``OVERLAPS`` in Python: whether ``line`` belongs to the unit from ``start`` to ``end``."""
    return line.start < end and max(line.end, line.start + 1e-6) > start


def _line(r) -> TimedLine:
    return TimedLine(source=r[0], origin=r[1], start=r[2], end=r[3], text=r[4], confidence=r[5],
                     box=tuple(r[6]) if r[6] is not None else None, language=r[7])
