"""The store under readers, damage, a full disk and flipped bits: the catalog stays the source of truth."""

import errno
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from retrieval.api import Engine, QueryRequest
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from retrieval.store.errors import CatalogBusy, CatalogDamaged, DiskFull
from retrieval.store.vectors.faiss_index import VectorIndex, index_path

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def videos(three_clips_indexed, tmp_path) -> Path:
    copy = tmp_path / "videos"
    shutil.copytree(three_clips_indexed, copy, symlinks=True)
    return copy


def hold(code: str, ready: Path) -> subprocess.Popen:
    """Run ``code`` in another process (DuckDB locks are per process) until the test ends it."""
    script = textwrap.dedent(code) + f"\nopen({str(ready)!r}, 'w').close()\nimport time\ntime.sleep(60)\n"
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the holder did not start"
        time.sleep(0.1)
    return proc


def test_a_reader_holding_the_index_open_does_not_keep_a_writer_out(videos, tmp_path):
    reader = hold(f"""
        from retrieval.api import Engine
        catalog = Engine({str(videos / '.convis')!r}).open_catalog()
        catalog.file_states()
    """, tmp_path / "ready")
    try:
        with Catalog(videos / ".convis" / "catalog.duckdb") as catalog:
            assert len(catalog.file_states()) == 3
    finally:
        reader.kill()
        reader.wait()


def test_a_read_while_this_process_writes_the_catalog_reads_the_snapshot(videos):
    """A server reading its index while it removes a file from it: DuckDB refuses a read-only connection beside
    this process's writing one, so the read turns to the published snapshot, as it does for another writer."""
    from retrieval.store.index_dir import open_catalog
    from retrieval.store.snapshots import clock

    index = videos / ".convis"
    with Catalog(index / "catalog.duckdb") as writing:
        writing.set_setting("probe", "changed")  # the snapshot is no longer current: a reader would open the file
        writing.db.execute("CHECKPOINT")
        catalog, notices = open_catalog(index)
        with catalog:
            assert catalog.path.name == "snapshot.duckdb" and catalog.setting("probe") is None
        published = clock(index / "snapshot.duckdb")  # closing the writer publishes a new one
    assert notices == [f"an index run is in progress; results reflect its state at {published}"]


def test_a_writer_kept_out_is_told_which_process_holds_the_catalog(videos, tmp_path):
    holder = hold(f"""
        from retrieval.store.catalog import Catalog
        catalog = Catalog({str(videos / '.convis' / 'catalog.duckdb')!r})
    """, tmp_path / "ready")
    try:
        with pytest.raises(CatalogBusy) as busy:
            Catalog(videos / ".convis" / "catalog.duckdb")
    finally:
        holder.kill()
        holder.wait()
    assert f"(pid {holder.pid})" in str(busy.value)
    assert "python" in str(busy.value)


def damage(path: Path, how: str) -> None:
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        os.truncate(path, path.stat().st_size // 2)
    elif how == "zeroed block":
        with open(path, "r+b") as fh:
            fh.seek(8192)
            fh.write(bytes(262144))
    else:
        path.write_bytes(os.urandom(100_000))


DAMAGE = ["empty", "truncated", "zeroed block", "random bytes"]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_catalog_is_named_and_readers_read_the_snapshot(videos, how):
    catalog = videos / ".convis" / "catalog.duckdb"
    damage(catalog, how)
    with pytest.raises(CatalogDamaged, match="is damaged.*`convis repair` restores the snapshot of"):
        Catalog(catalog, read_only=True)
    notices: list[str] = []
    assert Engine(videos / ".convis").info(notices)["files_ok"] == 3
    assert any("damaged" in n and "snapshot" in n for n in notices)


@pytest.mark.parametrize("how", DAMAGE)
def test_repair_restores_the_snapshot_and_keeps_the_damaged_file(videos, how):
    catalog = videos / ".convis" / "catalog.duckdb"
    damage(catalog, how)
    damaged = catalog.read_bytes()
    restored = Engine(videos / ".convis").repair()
    assert restored is not None and restored.files == 3
    assert restored.kept_aside.read_bytes() == damaged
    with Catalog(catalog, read_only=True) as whole:
        assert len(whole.file_states()) == 3
    assert Engine(videos / ".convis").repair() is None  # whole now: nothing to do


def test_an_index_run_restores_a_damaged_catalog_and_says_so(videos):
    damage(videos / ".convis" / "catalog.duckdb", "zeroed block")
    notices: list[str] = []
    report = Engine(videos / ".convis").index(videos, settings=IndexSettings(workers=1, move_root=True),
                                              notices=notices)
    assert report.unchanged == 3 and not report.failed
    assert any("restored the snapshot" in n and "3 file(s)" in n for n in notices)


def test_no_snapshot_to_restore_is_said(videos):
    (videos / ".convis" / "snapshot.duckdb").unlink()
    damage(videos / ".convis" / "catalog.duckdb", "random bytes")
    with pytest.raises(CatalogDamaged, match="no snapshot"):
        Engine(videos / ".convis").repair()


def test_stale_temp_files_are_removed_when_a_writer_opens(videos):
    index_dir = videos / ".convis"
    stale = [index_dir / ".snapshot.duckdb.tmp", index_dir / ".snapshot.duckdb.tmp.wal",
             index_dir / "faiss" / ".x.faiss.abc123.tmp"]
    for path in stale:
        path.write_bytes(b"partial")
    Catalog(index_dir / "catalog.duckdb").close()
    assert not any(path.exists() for path in stale)


def test_a_full_disk_while_saving_faiss_is_one_error_and_leaves_no_temp_file(videos, monkeypatch):
    import faiss

    def full(index, path):
        Path(path).write_bytes(b"part")
        raise RuntimeError("Error in faiss::FileIOWriter: No space left on device")

    monkeypatch.setattr(faiss, "write_index", full)
    index = VectorIndex.build(*_vectors(videos), generation=1)
    target = videos / ".convis" / "faiss" / "x.faiss"
    with pytest.raises(DiskFull, match="no space left on device while writing the FAISS index") as exc:
        index.save(target)
    assert exc.value.errno == errno.ENOSPC
    assert not list(target.parent.glob(".*.tmp"))


def test_a_full_disk_during_a_commit_rolls_back_and_keeps_the_catalog(videos, monkeypatch):
    path = videos / ".convis" / "catalog.duckdb"
    with Catalog(path) as catalog:
        before = catalog.summary()
        real_bump = Catalog._bump

        def bump_then_fail(self):
            real_bump(self)
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(Catalog, "_bump", bump_then_fail)
        with pytest.raises(DiskFull, match="while committing to the catalog"):
            catalog.forget(["cup.mp4"])
        monkeypatch.setattr(Catalog, "_bump", real_bump)
        assert catalog.summary() == before


def _vectors(videos: Path):
    with Catalog(videos / ".convis" / "catalog.duckdb", read_only=True) as catalog:
        (row,) = catalog.indexers()
        return catalog.vectors(row.indexer)


def tmpfs(tmp_path: Path, size: str) -> Path:
    mount = tmp_path / f"small-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode:
        pytest.skip(f"mounting a small tmpfs is not permitted here: {done.stderr.decode().strip()}")
    return mount


def test_a_real_full_disk_is_one_line_and_the_catalog_stays_whole(three_clips_indexed, tmp_path):
    mount = tmpfs(tmp_path, "1500k")
    try:
        index_dir = mount / "ix"
        done = subprocess.run([sys.executable, "cli.py", "index", str(three_clips_indexed), "--index-dir",
                               str(index_dir), "--workers", "1"], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert "no space left on device while" in lines[-1] and "Traceback" not in done.stderr
        with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
            assert catalog.summary()["files_ok"] >= 1  # what was committed before the disk filled stays
        assert not list(index_dir.rglob("*.tmp")) and not list(index_dir.rglob("*.tmp.wal"))
    finally:
        subprocess.run(["umount", str(mount)])


def test_a_flipped_bit_in_a_faiss_file_changes_no_score(videos):
    anchor = videos / "cup.mp4"
    clean = Engine(videos / ".convis").query(QueryRequest(anchor, ["location"]))
    faiss_file = next((videos / ".convis" / "faiss").glob("*.faiss"))
    data = bytearray(faiss_file.read_bytes())
    data[len(data) // 2 + 3] ^= 0x40  # the high byte of a float in the vector payload
    faiss_file.write_bytes(bytes(data))
    assert VectorIndex.load(faiss_file) is None
    flipped = Engine(videos / ".convis").query(QueryRequest(anchor, ["location"]))
    assert [(h.path, h.total) for h in flipped.hits] == [(h.path, h.total) for h in clean.hits]
    assert all(0 <= h.total <= 1 for h in flipped.hits)


def test_faiss_folder_replaced_by_a_file(videos):
    shutil.rmtree(videos / ".convis" / "faiss")
    (videos / ".convis" / "faiss").write_text("not a folder")
    result = Engine(videos / ".convis").query(QueryRequest(videos / "cup.mp4", ["location"]))
    assert result.hits  # readers rebuild from the catalog in memory
    with Catalog(videos / ".convis" / "catalog.duckdb") as catalog:
        (row,) = catalog.indexers()
        index = VectorIndex.build(*catalog.vectors(row.indexer), generation=catalog.generation)
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        index.save(index_path(videos / ".convis", row.indexer))


def test_an_index_run_refuses_a_faiss_file_before_it_embeds_anything(videos, example_videos):
    shutil.rmtree(videos / ".convis" / "faiss")
    (videos / ".convis" / "faiss").write_text("not a folder")
    shutil.copy(example_videos / "bikes.mp4", videos / "new.mp4")  # work for the run to do
    engine = Engine(videos / ".convis")
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        before = catalog.generation
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        engine.index(videos, settings=IndexSettings(workers=1), distributor=SerialDistributor())
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        assert catalog.generation == before and "new.mp4" not in catalog.file_states()
