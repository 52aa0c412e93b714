"""The DuckDB catalog: the source of truth for files, units and their vectors.

Everything else (FAISS indices, reports) is derived from it.  Each file's rows and
vectors are written in one transaction, so a run killed at any point leaves either
the whole file or nothing, and the next run resumes from there.  ``Catalog`` is the
file (``catalog_connection``) with the methods of what it keeps: files, units,
descriptions, vectors, folders, backgrounds, files taken out of the index, user fields, timed text lines
(``catalog_files``, ``catalog_units``, ``catalog_descriptions``, ``catalog_vectors``, ``catalog_folders``,
``catalog_backgrounds``, ``catalog_removed``, ``catalog_fields``, ``catalog_lines``); its rows are values
(``catalog_records``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.store.catalog.backgrounds import BackgroundRows
from retrieval.store.catalog.descriptions import DescriptionRows
from retrieval.store.catalog.fields import FieldRows
from retrieval.store.catalog.folders import FolderRows
from retrieval.store.catalog.lines import LineRows
from retrieval.store.catalog.removed import RemovedRows
from retrieval.store.catalog.units import UnitRows
from retrieval.store.catalog.vectors import VectorRows


class Catalog(RemovedRows, UnitRows, DescriptionRows, VectorRows, FolderRows, BackgroundRows, FieldRows, LineRows):
    """One index's catalog file, open for reading or writing (``Connection``), with the methods of every kind of
    row it keeps."""


@dataclass(frozen=True)
class FileListing:
    """One file as the index knows it: what `convis ls` and the web app's collection show."""

    path: str
    status: str  # ok, failed, or unavailable (its folder offline at the last run: vectors kept, not searched)
    error: str | None  # why it failed; status "ok": what of it could not be decoded (a damaged file)
    duration: float | None
    width: int | None
    height: int | None
    units: tuple[tuple[int, float, float], ...]  # (segment, start, end) in seconds
    captioned: bool  # a text indexer holds a vector for it
    cuts: tuple[tuple[str | None, float | None], ...] = ()  # per unit: what starts it and the cut's confidence
    units_by: str | None = None  # how its units were cut (a ``retrieval.core.segmentation`` label)
    size: int | None = None  # bytes
    mtime: float | None = None  # seconds since 1970
    fps: float | None = None
    codec: str | None = None
    fields: dict = field(default_factory=dict)  # user fields (`convis tag`, --metadata): name -> value
    lines: tuple = ()  # its timed lines (``TimedLine``: on screen, subtitles, speech) by time


def list_files(catalog: Catalog, with_lines: bool = True) -> list[FileListing]:
    """Every file of ``catalog`` by path, with its units and whether a caption was embedded for it (``with_lines``:
    and its timed lines, which only a listing shows)."""
    rows = catalog.db.execute(
        """SELECT f.path, CASE WHEN coalesce(f.unavailable, false) THEN 'unavailable' ELSE f.status END,
                  f.error, f.duration, f.width, f.height,
                  list((u.segment, u.start_s, u.end_s, u.boundary, u.confidence) ORDER BY u.segment)
                      FILTER (WHERE u.unit_id IS NOT NULL),
                  bool_or(e.unit_id IS NOT NULL), any_value(f.units_by), f.size, f.mtime, f.fps, any_value(f.codec)
           FROM files f
           LEFT JOIN units u USING (file_id)
           LEFT JOIN embeddings e ON e.unit_id = u.unit_id
                AND e.indexer IN (SELECT indexer FROM indexers WHERE kind = 'text')
           GROUP BY ALL ORDER BY f.path""").fetchall()
    fields, lines = catalog.file_fields(), catalog.lines_by_path() if with_lines else {}
    return [FileListing(path, status, error, duration, width, height,
                        tuple((seg, start, end) for seg, start, end, _, _ in (units or [])), bool(captioned),
                        tuple((boundary, confidence) for _, _, _, boundary, confidence in (units or [])), units_by,
                        size, mtime, fps, codec, fields.get(path, {}), tuple(lines.get(path, ())))
            for path, status, error, duration, width, height, units, captioned, units_by, size, mtime, fps, codec
            in rows]
