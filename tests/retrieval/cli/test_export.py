"""`convis export`: an index's files, units, descriptions and vectors, and a query's or a search's results, written as
parquet or JSONL files that read back (pyarrow, DuckDB) to the catalog's own values; the index is only read, also
while another process holds its catalog for writing."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.store.export import files as export_files
from retrieval.store.snapshots import CATALOG_NAME
from tests.locks import writer_holding
from tests.permissions import convis_as_user, needs_permissions, read_only, writable

runner = CliRunner()


def convis(*args):
    return runner.invoke(app, [*map(str, args)])


def exported(*args) -> dict:
    """The manifest `convis export ... --json` prints, checked against the manifest.json it wrote."""
    result = convis("export", *args, "--json")
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    out = Path(args[list(args).index("--out") + 1])
    assert json.loads((out / "manifest.json").read_text()) == manifest
    return manifest


def read(path: Path) -> list[dict]:
    """A written table's rows as dicts, whatever its format (parquet through pyarrow, JSONL line by line)."""
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text().splitlines()]


def catalog_rows(index: Path, sql: str, params=()) -> list[tuple]:
    with duckdb.connect(str(index / CATALOG_NAME), read_only=True) as db:
        return db.execute(sql, list(params)).fetchall()


@pytest.fixture
def index(demo_index, tmp_path) -> Path:
    copy = tmp_path / "index" / ".convis"
    shutil.copytree(demo_index, copy)
    return copy


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_the_export_reads_back_to_the_catalogs_files_units_descriptions_and_vectors(index, tmp_path, fmt,
                                                                                     monkeypatch):
    monkeypatch.setattr("retrieval.store.export.tables.VECTOR_BATCH", 4)  # each signal's 9 vectors in three batches
    out = tmp_path / "out"
    manifest = exported(index, "--out", out, "--format", fmt)
    tables = {t["name"]: t for t in manifest["tables"]}
    for table in tables.values():  # every row count is the file's
        assert len(read(out / table["file"])) == table["rows"]

    files = read(out / tables["files"]["file"])
    assert [(f["file_id"], f["path"], f["duration"], f["width"], f["status"]) for f in files] == catalog_rows(
        index, "SELECT file_id, path, duration, width, status FROM files ORDER BY path")
    units = read(out / tables["units"]["file"])
    assert [(u["unit_id"], u["path"], u["segment"], u["start_s"], u["end_s"], u["duration"], u["width"])
            for u in units] == catalog_rows(
        index, "SELECT u.unit_id, f.path, u.segment, u.start_s, u.end_s, f.duration, f.width FROM units u "
        "JOIN files f USING (file_id) ORDER BY f.path, u.segment")  # each unit with its file's columns

    described = read(out / tables["descriptions"]["file"])
    assert described and {(d["unit_id"], d["concept"], d["text"]) for d in described} == set(catalog_rows(
        index, "SELECT u.unit_id, d.concept, d.text FROM descriptions d JOIN files f USING (content_hash) JOIN units "
        "u ON u.file_id = f.file_id AND d.start_s = round(u.start_s, 3) AND d.end_s = round(u.end_s, 3)"))

    stored = catalog_rows(index, "SELECT indexer, unit_id, vector FROM embeddings")
    vector_tables = [t for t in tables.values() if "signal" in t]
    assert {t["signal"] for t in vector_tables} == {signal for signal, _, _ in stored}
    for table in vector_tables:
        rows = read(out / table["file"])
        mine = {u: np.frombuffer(v, np.float32) for signal, u, v in stored if signal == table["signal"]}
        assert table["rows"] == len(mine) and {r["unit_id"] for r in rows} == set(mine)
        for row in rows:  # float32 exactly, through parquet's floats and JSON's shortest decimals alike
            assert len(row["vector"]) == table["dim"]
            assert np.array_equal(np.array(row["vector"], np.float32), mine[row["unit_id"]])
    assert ".parquet" not in json.dumps(manifest) if fmt == "jsonl" else ".jsonl" not in json.dumps(manifest)


def test_the_manifest_names_the_index_its_state_and_the_schema(index, tmp_path):
    manifest = exported("--index-dir", index, "--out", tmp_path / "out")
    (generation,), = catalog_rows(index, "SELECT CAST(value AS BIGINT) FROM settings WHERE key = 'generation'")
    (schema,), = catalog_rows(index, "SELECT value FROM settings WHERE key = 'schema_version'")
    assert manifest["convis_export"] == "1" and manifest["format"] == "parquet"
    assert manifest["index"]["index_dir"] == str(index.resolve())
    assert (manifest["index"]["generation"], manifest["index"]["schema_version"]) == (generation, schema)
    files = {t["name"]: t for t in manifest["tables"]}["files"]
    assert {"name": "duration", "type": "DOUBLE"} in files["columns"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        ["manifest.json", *(t["file"] for t in manifest["tables"])])


def fingerprint(folder: Path) -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_export_leaves_the_index_as_it_was(index, tmp_path):
    before = fingerprint(index)
    exported(index, "--out", tmp_path / "out")
    exported(index, "--out", tmp_path / "out2", "--format", "jsonl")
    assert fingerprint(index) == before


def test_an_export_reads_the_snapshot_while_another_process_holds_the_catalog_for_writing(index, tmp_path):
    catalog = index / CATALOG_NAME
    (units,), = catalog_rows(index, "SELECT count(*) FROM units")
    later = catalog.stat().st_mtime + 60
    os.utime(catalog, (later, later))  # a write since the snapshot: the reader must try the catalog first
    with writer_holding(catalog):
        result = convis("export", index, "--out", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    assert manifest["index"]["read_from"] == "snapshot"
    assert manifest["notices"] and "in progress" in manifest["notices"][0]
    assert len(read(tmp_path / "out" / "units.parquet")) == units


def test_tables_and_columns_a_catalog_keeps_of_its_files_or_units_are_exported_as_kept(index, tmp_path):
    # what a later catalog may keep (per-file fields, per-unit notes), written after the snapshot: read from the file
    with duckdb.connect(str(index / CATALOG_NAME)) as db:
        db.execute("ALTER TABLE files ADD COLUMN rating INTEGER")
        db.execute("UPDATE files SET rating = length(path)")
        db.execute("CREATE TABLE file_notes (file_id BIGINT, key VARCHAR, value VARCHAR)")
        db.execute("INSERT INTO file_notes SELECT file_id, 'camera', 'cam-' || file_id FROM files")
        db.execute("CREATE TABLE unit_notes (unit_id BIGINT, note VARCHAR)")
        db.execute("INSERT INTO unit_notes SELECT unit_id, 'seen' FROM units WHERE segment = 0")
        db.execute("CREATE TABLE cache_stats (name VARCHAR, hits BIGINT)")  # nothing of files: not exported
    manifest = exported(index, "--out", tmp_path / "out")
    tables = {t["name"] for t in manifest["tables"]}
    assert {"file_notes", "unit_notes"} <= tables and "cache_stats" not in tables
    assert not tables & {"settings", "indexers", "embeddings", "removed_files", "excluded", "folders"}
    files = read(tmp_path / "out" / "files.parquet")
    assert all(f["rating"] == len(f["path"]) for f in files)
    assert all(u["rating"] == len(u["path"]) for u in read(tmp_path / "out" / "units.parquet"))
    fields = read(tmp_path / "out" / "file_notes.parquet")
    assert sorted((f["path"], f["value"]) for f in fields) == sorted(
        (f["path"], f"cam-{f['file_id']}") for f in files)
    notes = read(tmp_path / "out" / "unit_notes.parquet")
    assert {(n["path"], n["segment"], n["note"]) for n in notes} == {(f["path"], 0, "seen") for f in files
                                                                    if f["status"] == "ok"}


def test_user_fields_set_by_tag_are_exported(index, tmp_path):
    with duckdb.connect(str(index / CATALOG_NAME), read_only=True) as db:
        first = db.execute("SELECT path FROM files WHERE status = 'ok' ORDER BY path LIMIT 1").fetchone()[0]
    tagged = convis("tag", first, "--set", "camera=cam-a", "--set", "rating=4", "--index-dir", index)
    assert tagged.exit_code == 0, tagged.output
    exported(index, "--out", tmp_path / "out")
    fields = read(tmp_path / "out" / "file_fields.parquet")
    assert sorted((f["path"], f["key"], f["value"]) for f in fields) == [(first, "camera", "cam-a"),
                                                                          (first, "rating", "4")]


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and result.stdout == ""
    return lines[0]


def test_a_folder_that_holds_anything_needs_force(index, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert "--force" in one_line_error(convis("export", index, "--out", out))
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    exported(index, "--out", out, "--force")
    assert (out / "notes.txt").read_text() == "mine" and (out / "units.parquet").is_file()


@pytest.mark.parametrize("args, says", [
    (["--format", "csv"], "--format must be one of parquet, jsonl, got 'csv'"),
    (["--format", "JSONL"], "--format must be one of parquet, jsonl"),
])
def test_an_unknown_format_is_one_line_and_writes_nothing(index, tmp_path, args, says):
    assert says in one_line_error(convis("export", index, "--out", tmp_path / "out", *args))
    assert not (tmp_path / "out").exists()


def test_an_out_folder_inside_the_index_or_a_file_is_refused(index, tmp_path):
    before = fingerprint(index)
    assert "inside the index folder" in one_line_error(convis("export", index, "--out", index / "export"))
    assert fingerprint(index) == before
    taken = tmp_path / "a-file"
    taken.write_text("x")
    assert "is a file" in one_line_error(convis("export", index, "--out", taken))


def test_no_index_is_one_line(tmp_path):
    assert "no index" in one_line_error(convis("export", "--index-dir", tmp_path, "--out", tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def results_of(*args, path: Path) -> dict:
    result = convis(*args, "--json")
    assert result.exit_code == 0, result.output
    path.write_text(result.stdout)
    return json.loads(result.stdout)


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_querys_json_reads_back_as_its_hits(index, example_videos, tmp_path, fmt):
    answer = results_of("query", "-a", example_videos / "cup.mp4", "-c", "location", "-c", "main-action=0.5",
                        "--index-dir", index, path=tmp_path / "query.json")
    manifest = exported("--results", tmp_path / "query.json", "--out", tmp_path / "out", "--format", fmt)
    (table,) = manifest["tables"]
    rows = read(tmp_path / "out" / table["file"])
    assert table["rows"] == len(rows) == len(answer["hits"]) > 0
    for row, hit in zip(rows, answer["hits"], strict=True):
        scores = dict(row["scores"]) if fmt == "parquet" else row["scores"]  # pyarrow reads a map as pairs
        assert (row["rank"], row["path"], row["segment"], row["start"], row["end"], row["total"], scores) == (
            hit["rank"], hit["path"], hit["segment"], hit["start"], hit["end"], hit["total"], hit["scores"])
        assert row["confidence"] == hit.get("confidence") and row["anchor"] == "cup.mp4" and row["text"] is None
        assert (json.loads(row["hit"]) if isinstance(row["hit"], str) else row["hit"]) == hit
    assert manifest["results"]["concepts"] == ["location", "main-action"]


def test_a_searchs_json_keeps_its_text(index, tmp_path):
    answer = results_of("search", "a person riding a bike", "--index-dir", index, "-k", "3",
                        path=tmp_path / "search.json")
    manifest = exported("--results", tmp_path / "search.json", "--out", tmp_path / "out")
    rows = read(tmp_path / "out" / "results.parquet")
    assert [(r["path"], r["text"]) for r in rows] == [(h["path"], "a person riding a bike") for h in answer["hits"]]
    assert manifest["results"]["text"] == "a person riding a bike"


@pytest.mark.parametrize("content, says", [
    (b"not json", "is not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[" * 100 + b"]" * 100, "nests more than"),
    (b"[1, 2]", "it lacks"),
    (b'{"files": []}', "it lacks"),
    (b'{"anchor": "a", "concepts": [], "scored_by": "x", "hits": [{"rank": 1}]}', "hit 1 lacks"),
    (b'{"anchor": "a", "concepts": [], "scored_by": "x", "hits": [{"rank": "first", "path": "a.mp4", "segment": 0, '
     b'"start": 0, "end": 1, "total": 0.5}]}', "not of its column's type"),
    (b'{"anchor": "a", "concepts": [], "scored_by": "x", "hits": [{"rank": 1000000000000000000000000000000, '
     b'"path": "a.mp4", "segment": 0, "start": 0, "end": 1, "total": 0.5}]}', "not of its column's type"),
    (b'{"anchor": "a", "concepts": [], "scored_by": "x", "hits": [{"rank": 1, "path": "\\ud800.mp4", '
     b'"segment": 0, "start": 0, "end": 1, "total": 0.5}]}', "half of a surrogate pair"),
])
def test_a_results_file_that_is_not_convis_json_is_one_line(tmp_path, content, says):
    source = tmp_path / "results.json"
    source.write_bytes(content)
    line = one_line_error(convis("export", "--results", source, "--out", tmp_path / "out"))
    assert says in line
    assert not (tmp_path / "out").exists()


def test_results_and_an_index_together_are_a_usage_error(index, tmp_path):
    (tmp_path / "r.json").write_text("{}")
    assert "--results" in one_line_error(convis("export", index, "--results", tmp_path / "r.json", "--out",
                                                tmp_path / "out"))


def test_a_signal_without_vectors_is_an_empty_table_of_its_columns(index, tmp_path):
    with duckdb.connect(str(index / CATALOG_NAME)) as db:  # registered, nothing embedded yet
        db.execute("INSERT INTO indexers VALUES ('blank:none', 'blank', 'none', 'image', 8, 1, 'Flat')")
    manifest = exported(index, "--out", tmp_path / "out")
    (blank,) = [t for t in manifest["tables"] if t.get("signal") == "blank:none"]
    assert (blank["file"], blank["rows"], blank["dim"]) == ("vectors.blank.parquet", 0, 8)
    read_back = pq.read_table(tmp_path / "out" / blank["file"])
    assert read_back.num_rows == 0 and str(read_back.schema.field("vector").type) == "list<element: float>"


def test_a_results_pipe_or_device_is_refused_without_reading(tmp_path):
    os.mkfifo(tmp_path / "results.json")  # no writer: reading it would wait for ever
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for name, says in (("results.json", "it is a pipe, not a file"), ("zero.json", "it is a device, not a file")):
        line = one_line_error(convis("export", "--results", tmp_path / name, "--out", tmp_path / "out"))
        assert line.endswith(says)
    assert not (tmp_path / "out").exists()


@needs_permissions
def test_an_out_folder_this_user_cannot_write_is_one_line_and_reads_nothing(index, tmp_path):
    out = tmp_path / "locked"
    out.mkdir()
    read_only(out)
    try:
        result = convis_as_user("export", index, "--out", out, "--force")
    finally:
        writable(out)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: cannot write into --out {out}: Permission denied"], result.stderr
    assert list(out.iterdir()) == []


def test_a_disk_that_fills_mid_export_says_the_export_is_incomplete_and_leaves_no_manifest(index, tmp_path,
                                                                                          monkeypatch):
    out = tmp_path / "out"
    exported(index, "--out", out)  # an earlier, whole export: its manifest must not vouch for the next one
    copies = []

    def copy(db, statement):
        copies.append(statement)
        if len(copies) == 2:
            raise duckdb.IOException("Could not write file: No space left on device")
        return real_copy(db, statement)

    real_copy = export_files._copy
    monkeypatch.setattr(export_files, "_copy", copy)
    line = one_line_error(convis("export", index, "--out", out, "--force"), code=1)
    assert "no space left on device while writing the export" in line
    assert f"the export in {out} is incomplete (it has no manifest.json); the index is unchanged" in line
    assert "intact as of its last committed file" not in line
    assert not (out / "manifest.json").exists()
