"""Kill `convis index` at moments spread over a run, resume, and check nothing is lost or duplicated; query while
it runs."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import faiss
import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.api import Engine
from retrieval.cli.app import app
from retrieval.store.catalog import Catalog
from retrieval.store.errors import CatalogEmpty
from retrieval.store.snapshots import SNAPSHOT_NAME
from retrieval.store.vectors.faiss_index import VectorIndex, index_path
from tests.paths import ROOT

GOOD = ["campus_01.mp4", "campus_02.mp4", "bikes.mp4", "box.mp4", "cup.mp4", "carphone_pristine.mp4",
        "bigbuckbunny.mp4"]
# one kill in each tenth of a full run's time, the tenths in shuffled order, so start-up, the files' indexing and
# the final saves are each hit (uniform draws clump and leave gaps); a resumed run after every ROUND kills
TRIALS = 10
ROUND = 5
TIME_BUDGET = 600.0  # at most, for all kill trials together (a sixth of that on an idle machine)


def make_folder(folder: Path, example_videos: Path, copies: int = 1) -> tuple[set[str], set[str]]:
    folder.mkdir()
    good = set()
    for i in range(copies):
        for name in GOOD:
            target = f"c{i}_{name}" if copies > 1 else name
            shutil.copy(example_videos / name, folder / target)
            good.add(target)
    (folder / "broken.mp4").write_bytes(b"\x00" * 5000)
    (folder / "notes.mp4").write_text("not a video")
    return good, {"broken.mp4", "notes.mp4"}


def index_command(folder: Path, index_dir: Path, spec: str) -> list[str]:
    return [sys.executable, str(ROOT / "cli.py"), "index", str(folder), "--index-dir", str(index_dir),
            "-i", spec, "--workers", "1", "--publish-every", "0", "--json"]


def check_consistent(index_dir: Path, good: set[str], broken: set[str], complete: bool) -> None:
    """Each file is whole or absent, once; FAISS on disk matches the catalog it claims to match."""
    try:
        cat = Catalog(index_dir / "catalog.duckdb", read_only=True)
    except CatalogEmpty:
        assert not complete  # killed before the schema was written: nothing to lose yet
        return
    with cat:
        states = cat.file_states()
        rows = cat.db.execute(
            "SELECT f.path, count(DISTINCT u.unit_id), count(e.unit_id) FROM files f "
            "LEFT JOIN units u USING (file_id) LEFT JOIN embeddings e USING (unit_id) "
            "WHERE f.status = 'ok' GROUP BY f.path").fetchall()
        indexers = cat.indexers()
        generation = cat.generation
        vectors = {r.indexer: cat.vectors(r.indexer)[0] for r in indexers}
    ok = {p for p, s in states.items() if s.status == "ok"}
    failed = {p for p, s in states.items() if s.status == "failed"}
    assert ok <= good and failed <= broken
    for path, units, embedded in rows:
        assert units >= 1 and embedded == units * len(indexers), path  # never half a file
    if complete:
        assert ok == good and failed == broken
    for indexer, ids in vectors.items():
        saved = VectorIndex.load(index_path(index_dir, indexer))
        if complete:
            assert saved is not None and saved.generation == generation
        if saved is not None and saved.generation == generation:
            np.testing.assert_array_equal(np.sort(faiss.vector_to_array(saved.index.id_map)), np.sort(ids))


def published(index_dir: Path, files: int) -> bool:
    """The running index has published a snapshot holding at least ``files`` indexed files."""
    if not (index_dir / SNAPSHOT_NAME).exists():
        return False
    return Engine(index_dir).info()["files_ok"] >= files


def run_to_completion(cmd: list[str]) -> dict:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=os.environ | {"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_sigkill_at_random_points_loses_and_duplicates_nothing(tmp_path, example_videos, tiny_models):
    good, broken = make_folder(tmp_path / "videos", example_videos)
    spec = f"dinov2:{tiny_models['dinov2']}"
    started = time.monotonic()
    reference = run_to_completion(index_command(tmp_path / "videos", tmp_path / "reference", spec))
    full = time.monotonic() - started
    assert reference["indexed"] == len(good)

    rng = random.Random(1234)
    tenths = rng.sample(range(TRIALS), TRIALS)
    index_dir = tmp_path / "index"
    cmd = index_command(tmp_path / "videos", index_dir, spec)
    budget_end = time.monotonic() + TIME_BUDGET
    trials = 0
    while trials < TRIALS and time.monotonic() < budget_end:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=os.environ | {"HF_HUB_OFFLINE": "1"})
        time.sleep(0.2 + (full - 0.2) * (tenths[trials] + rng.random()) / TRIALS)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        trials += 1
        if (index_dir / "catalog.duckdb").exists():
            check_consistent(index_dir, good, broken, complete=False)
        if trials % ROUND == 0:  # a resumed run finishes the job from wherever the kills left it
            run_to_completion(cmd)
            check_consistent(index_dir, good, broken, complete=True)
            shutil.rmtree(index_dir)  # start the next round from nothing again
    assert trials >= TRIALS, f"only {trials} kill trials fit in {TIME_BUDGET:.0f} s"
    print(f"{trials} SIGKILL trials, one full run took {full:.1f} s")
    run_to_completion(cmd)
    check_consistent(index_dir, good, broken, complete=True)


@pytest.mark.slow
def test_query_while_indexing_reads_the_last_snapshot_and_a_second_writer_is_refused(
        tmp_path, example_videos):
    good, _ = make_folder(tmp_path / "videos", example_videos, copies=4)
    index_dir = tmp_path / "index"
    cmd = index_command(tmp_path / "videos", index_dir, "efficientnet-lite0")
    log = (tmp_path / "index.log").open("w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                            env=os.environ | {"HF_HUB_OFFLINE": "1"})
    try:
        deadline = time.monotonic() + 180
        while not published(index_dir, 2) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        runner = CliRunner()
        second = runner.invoke(app, ["index", str(tmp_path / "videos"), "--index-dir", str(index_dir)])
        query = runner.invoke(app, ["query", "--anchor", str(tmp_path / "videos" / "c0_campus_01.mp4"),
                                    "-c", "location", "--index-dir", str(index_dir), "--json"])
        still_running = proc.poll() is None
    finally:
        out, _ = proc.communicate(timeout=300)
    assert still_running, ("the index run ended before the concurrent checks: "
                           + (tmp_path / "index.log").read_text()[-1500:])
    assert second.exit_code == 2 and "being written by another `convis index` run (pid" in second.stderr
    assert query.exit_code == 0, query.output
    assert "index run is in progress" in query.stderr
    assert json.loads(query.stdout)["hits"]  # what was committed so far is searchable
    assert json.loads(out)["indexed"] == len(good)
