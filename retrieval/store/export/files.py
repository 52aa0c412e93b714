"""Writing tables out as files any tool reads: the formats, the output folder, DuckDB's ``COPY ... TO`` and the
manifest that lists what was written.

Every table goes out through ``COPY (query) TO file``: a query over the catalog itself, or over an Arrow stream
(vectors, whose stored bytes SQL cannot read as floats; results re-read from JSON) registered on an in-memory
DuckDB that touches nothing else.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from retrieval.core.errors import ConvisError
from retrieval.store.errors import DiskFull, is_disk_full

EXPORT_VERSION = "1"  # the layout of an export (its tables, columns and manifest): bumped when either changes
MANIFEST_NAME = "manifest.json"
# format -> (file extension, COPY options): DuckDB's json format writes one object a line
FORMATS = {"parquet": ("parquet", "(FORMAT parquet)"), "jsonl": ("jsonl", "(FORMAT json)")}


class ExportError(ConvisError, ValueError):
    """An export cannot be written as asked (its folder, its format, its input): nothing was written."""

    exit_code, http_status = 2, 400


@dataclass
class Written:
    """One table written: its name, file (relative to the export folder), row count and columns."""

    name: str
    file: str
    rows: int
    columns: list[tuple[str, str]]  # (name, DuckDB type)
    about: dict = field(default_factory=dict)  # what else a reader needs (a vector table's signal and width)

    def as_dict(self) -> dict:
        return {"name": self.name, "file": self.file, "rows": self.rows, **self.about,
                "columns": [{"name": n, "type": t} for n, t in self.columns]}


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


def prepare_out(out: Path, force: bool, inside: Path | None = None) -> Path:
    """The export folder, made when missing; one that holds anything is written into only with ``force``, and
    never ``inside`` (the index folder: an export leaves the index as it was)."""
    out = Path(out).expanduser()
    if inside is not None and out.resolve().is_relative_to(Path(inside).resolve()):
        raise ExportError(f"--out {out} is inside the index folder {inside}: export somewhere else")
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ExportError(f"--out {out} is not empty: pass --force to write into it (files of the same name are "
                          "replaced)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"cannot make --out {out}: {exc.strerror or exc}") from None
    return out


def file_name(name: str, fmt: str) -> str:
    return f"{name}.{FORMATS[fmt][0]}"


def copy_query(db: duckdb.DuckDBPyConnection, query: str, out: Path, name: str, fmt: str,
               about: dict | None = None) -> Written:
    """``query``'s rows (run on ``db``) written as ``out/name.<ext>``."""
    described = db.execute(f"DESCRIBE {query}").fetchall()
    dest = out / file_name(name, fmt)
    try:
        rows = db.execute(f"COPY ({query}) TO '{_sql_text(dest)}' {FORMATS[fmt][1]}").fetchone()[0]
    except duckdb.Error as exc:
        if is_disk_full(exc):
            raise DiskFull("writing the export", dest) from None
        raise
    return Written(name, dest.name, int(rows), [(r[0], r[1]) for r in described], about or {})


def copy_arrow(stream: pa.RecordBatchReader, out: Path, name: str, fmt: str, about: dict | None = None,
               columns: str = "*") -> Written:
    """An Arrow stream's rows (``columns`` of them, as a SELECT list) written as ``out/name.<ext>`` through an
    in-memory DuckDB (read once, a batch at a time: a large indexer's vectors are never all in memory)."""
    with duckdb.connect() as db:
        db.register("rows", stream)
        return copy_query(db, f"SELECT {columns} FROM rows", out, name, fmt, about)


def write_manifest(out: Path, manifest: dict) -> None:
    """``manifest.json``, written last: an export whose manifest is there is whole."""
    tmp = out / f".{MANIFEST_NAME}.tmp"
    try:
        tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, out / MANIFEST_NAME)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFull("writing the export", out / MANIFEST_NAME) from None
        raise


def _sql_text(path: Path) -> str:
    return str(path).replace("'", "''")
