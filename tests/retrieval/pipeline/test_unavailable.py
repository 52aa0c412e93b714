"""A folder under the indexed root that goes offline (missing, or another device: an unmounted share's empty mount
point) leaves its files unavailable, never forgotten: vectors kept, left out of recall, back as they were."""

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.api import QueryRequest
from retrieval.cli.app import app
from retrieval.store.catalog import Catalog, list_files
from tests.retrieval.pipeline import test_indexing

run = test_indexing.run  # an indexing run with the tiny-model engine (conftest.py)
SHARE = ("nas/box.mp4", "nas/carphone_pristine.mp4")


@pytest.fixture
def library(video_folder, example_videos):
    """Five clips, two of them in ``nas/`` (the share)."""
    (video_folder / "nas").mkdir()
    shutil.move(video_folder / "carphone_pristine.mp4", video_folder / "nas")
    shutil.copy(example_videos / "box.mp4", video_folder / "nas")
    return video_folder


def stored(engine):
    """Each file's units with their vectors, and every file's state: what a run must keep of unavailable files."""
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        vectors = catalog.db.execute(
            "SELECT f.path, list((u.unit_id, e.indexer, md5(e.vector::VARCHAR)) ORDER BY u.unit_id, e.indexer) "
            "FROM files f JOIN units u USING (file_id) JOIN embeddings e USING (unit_id) GROUP BY f.path").fetchall()
        return dict(vectors)


def statuses(engine):
    return {f.path: f.status for f in engine.files()}


def hits(engine, folder):
    result = engine.query(QueryRequest(folder / "campus_01.mp4", ["location"], k=10))
    return {h.path for h in result.hits}, result.notices


def unmount_by_device(monkeypatch, folder):
    """``folder`` empty and on another device than when indexed, as an unmounted share's mount point is."""
    real_stat = os.stat
    target = real_stat(folder)

    def stat(path, *args, **kwargs):
        info = real_stat(path, *args, **kwargs)
        if (info.st_dev, info.st_ino) != (target.st_dev, target.st_ino):
            return info
        fields = list(info)
        fields[2] = info.st_dev + 1  # st_dev
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", stat)


def offline_by_rename(folder, away):
    shutil.move(folder / "nas", away)


def check_unavailable_then_back(engine, library, take_away, bring_back):
    first = run(engine, library)
    assert (first.indexed, first.forgotten) == (5, 0)
    before = stored(engine)
    assert set(before) >= set(SHARE)
    assert hits(engine, library)[0] >= set(SHARE)

    take_away()
    offline = run(engine, library)
    assert offline.forgotten == 0  # before: "forgotten 2", their vectors gone
    assert (offline.unavailable, offline.indexed, offline.unchanged) == (2, 0, 3)
    assert any(n.startswith("2 file(s) unavailable") and "nas/" in n for n in offline.notes)
    assert stored(engine) == before  # units and vectors kept as they were
    assert {statuses(engine)[p] for p in SHARE} == {"unavailable"}
    info = engine.info()
    assert (info["files_ok"], info["files_unavailable"], info["files_failed"]) == (3, 2, 0)
    found, notices = hits(engine, library)
    assert found == {"campus_02.mp4", "cup.mp4"}  # never a hit that cannot be played
    assert any("2 indexed file(s) not searched" in n for n in notices)
    again = run(engine, library)  # still offline: still kept, nothing forgotten
    assert (again.forgotten, again.unavailable) == (0, 2) and stored(engine) == before

    bring_back()
    back = run(engine, library)
    assert (back.indexed, back.unchanged, back.forgotten, back.unavailable) == (0, 5, 0, 0)
    assert any(n.startswith("2 unavailable file(s) found again") for n in back.notes)
    assert stored(engine) == before  # nothing embedded again: the same unit ids and vectors
    assert set(statuses(engine).values()) == {"ok"}
    assert hits(engine, library)[0] >= set(SHARE)


def test_a_missing_folder_leaves_its_files_unavailable_and_they_come_back(engine, library, tmp_path):
    away = tmp_path / "away"
    check_unavailable_then_back(engine, library, lambda: offline_by_rename(library, away),
                                lambda: shutil.move(away, library / "nas"))


def test_a_folder_on_another_device_leaves_its_files_unavailable_and_they_come_back(engine, library, tmp_path,
                                                                                      monkeypatch):
    away = tmp_path / "away"

    def unmount():
        shutil.move(library / "nas", away)
        (library / "nas").mkdir()  # the empty mount point, on the parent's device
        unmount_by_device(monkeypatch, library / "nas")

    def mount():
        monkeypatch.undo()
        (library / "nas").rmdir()
        shutil.move(away, library / "nas")

    check_unavailable_then_back(engine, library, unmount, mount)


def test_a_folder_that_cannot_be_listed_leaves_its_files_unavailable(engine, library, monkeypatch):
    run(engine, library)
    before = stored(engine)
    real_scandir, share = os.scandir, library / "nas"

    def scandir(path="."):
        # shutil.rmtree lists folders by file descriptor: those are never the share
        if not isinstance(path, int) and os.fspath(path) == os.fspath(share):
            raise OSError(5, "Input/output error", os.fspath(path))  # a share that stopped answering
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = run(engine, library)
    assert report.forgotten == 0 and report.unavailable == 2 and stored(engine) == before
    monkeypatch.undo()
    assert run(engine, library).unavailable == 0 and stored(engine) == before


def test_files_deleted_from_a_folder_that_is_there_are_forgotten(engine, library):
    run(engine, library)
    (library / "nas" / "box.mp4").unlink()
    report = run(engine, library)
    assert (report.forgotten, report.unavailable) == (1, 0)
    (library / "nas" / "carphone_pristine.mp4").unlink()  # the folder empty, on its own device still
    report = run(engine, library)
    assert (report.forgotten, report.unavailable) == (1, 0)
    assert set(statuses(engine)) == {"campus_01.mp4", "campus_02.mp4", "cup.mp4"}


def test_prune_forgets_unavailable_files(engine, library, tmp_path):
    run(engine, library)
    offline_by_rename(library, tmp_path / "away")
    assert run(engine, library).unavailable == 2
    report = run(engine, library, prune=True)
    assert (report.forgotten, report.unavailable) == (2, 0)
    assert set(stored(engine)) == {"campus_01.mp4", "campus_02.mp4", "cup.mp4"}


def test_unavailable_files_do_not_count_toward_the_prune_refusal(engine, library, tmp_path):
    for name in ("campus_01.mp4", "campus_02.mp4"):
        shutil.move(library / name, library / "nas")  # four of the five on the share
    run(engine, library)
    offline_by_rename(library, tmp_path / "away")
    report = run(engine, library)  # four gone, none of them forgotten: nothing to refuse
    assert (report.forgotten, report.unavailable, report.unchanged) == (0, 4, 1)


def test_a_catalog_from_before_devices_were_recorded_reads_and_gains_them(engine, library, tmp_path):
    run(engine, library)
    with Catalog(engine.catalog_path) as catalog:  # as an older convis wrote it
        catalog.db.execute("ALTER TABLE files DROP COLUMN unavailable")
        catalog.db.execute("DROP TABLE folders")
        catalog.db.execute("UPDATE settings SET value = '1' WHERE key = 'schema_version'")
    with Catalog(engine.catalog_path, read_only=True) as old:
        indexer = old.indexers()[0].indexer
        assert (old.unavailable(), old.folder_devices(), old.summary()["files_unavailable"]) == ([], {}, 0)
        assert len(old.vectors(indexer)[0]) == old.vector_count(indexer) == 5
        assert {f.status for f in list_files(old)} == {"ok"}
    before = stored(engine)
    offline_by_rename(library, tmp_path / "away")  # a missing folder needs no recorded device
    report = run(engine, library)
    assert report.forgotten == 0 and report.unavailable == 2 and stored(engine) == before
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        assert set(catalog.folder_devices()) == {""}  # recorded from now on


def test_cli_says_so_in_one_line_and_ls_lists_them_unavailable(tmp_path, tiny_models, library):
    args = ["index", "-i", f"dinov2:{tiny_models['dinov2']}", "--workers", "1", str(library)]
    assert CliRunner().invoke(app, args).exit_code == 0
    offline_by_rename(library, tmp_path / "away")
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    said = [line for line in done.stderr.splitlines() if "file(s) unavailable" in line]
    assert len(said) == 1 and "nas/" in said[0] and said[0].endswith("--prune forgets them")
    assert "forgotten 0; unavailable 2 (kept, not searched)" in " ".join(done.stdout.split())  # wrapped at 80
    as_json = CliRunner().invoke(app, [*args, "--json"])
    report = json.loads(as_json.stdout)
    assert (report["forgotten"], report["unavailable"]) == (0, 2)
    assert any(n.startswith("2 file(s) unavailable") for n in report["notes"])
    listed = json.loads(CliRunner().invoke(app, ["ls", str(library), "--json"]).stdout)
    assert {f["path"]: f["status"] for f in listed["files"]} == {
        "campus_01.mp4": "ok", "campus_02.mp4": "ok", "cup.mp4": "ok", **dict.fromkeys(SHARE, "unavailable")}
    shown = CliRunner().invoke(app, ["ls", str(library)]).stdout
    assert shown.count("unavailable") == 2 and "failed" not in shown
    assert "unavailable 2" in " ".join(CliRunner().invoke(app, ["info", str(library)]).stdout.split())
