"""An index served from Lance tables on object storage (a local S3 API): indexed, queried from another process, its
writer killed mid-run, queried again, resumed: nothing lost, nothing doubled."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from retrieval.store.catalog import Catalog
from retrieval.store.vectors import lance_sync
from retrieval.store.vectors.lance_store import LanceLocation, LanceVectors
from retrieval.store.vectors.signals import ids_of, index_signals
from tests.paths import EXAMPLES, ROOT

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")
FIRST, MORE = ("cup.mp4", "box.mp4"), ("campus_01.mp4", "campus_02.mp4", "bikes.mp4")


@pytest.fixture
def s3(monkeypatch):
    """A local S3 API with a bucket, its settings in the environment (this process's and its children's)."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
           "AWS_REGION": "us-east-1"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    boto3.client("s3").create_bucket(Bucket="bucket")
    yield "s3://bucket/idx"
    server.stop()


def cli(*args, wait=True):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(ROOT / "cli.py"), *map(str, args)]
    if not wait:
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def tables(index_dir):
    """signal -> (unit ids its table holds, in the order held; unit ids the catalog searches)."""
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        where = lance_sync.location(catalog, index_dir)
        return {s: (LanceVectors(where, s).unit_ids().tolist(), ids_of(catalog, s).tolist())
                for s in index_signals(catalog)}


def query(videos, index_dir):
    """The files of the hits for cup.mp4's units (its own are never hits)."""
    answer = json.loads(cli("query", "--anchor", videos / "cup.mp4", "-c", "main-objects", "--index-dir", index_dir,
                            "-k", "20", "--json"))
    return {h["path"] for h in answer["hits"]}


def test_an_index_on_s3_survives_a_killed_writer(s3, tmp_path):
    videos, index_dir = tmp_path / "videos", tmp_path / "videos" / ".convis"
    videos.mkdir()
    for name in FIRST:
        shutil.copy(EXAMPLES / name, videos / name)
    cli("index", videos, "--store", f"lance:{s3}", "-i", "efficientnet-lite0", "--workers", "1")
    assert not (index_dir / "lance").exists()
    assert query(videos, index_dir) == {"box.mp4"}  # read from the bucket by another process
    [(held, wanted)] = tables(index_dir).values()
    assert sorted(held) == wanted
    watched = LanceVectors(LanceLocation.parse(f"lance:{s3}", index_dir), next(iter(tables(index_dir))))
    version = watched.version
    for name in MORE:
        shutil.copy(EXAMPLES / name, videos / name)
    writer = cli("index", videos, "--publish-every", "0", "--workers", "1", wait=False)
    while writer.poll() is None and watched.version == version:  # killed once it has appended a part of the run
        time.sleep(0.05)
        watched.checkout_latest()
    writer.send_signal(signal.SIGKILL)
    assert writer.wait() == -signal.SIGKILL  # killed mid-run, one more file to go at least
    for held, _ in tables(index_dir).values():
        assert len(held) == len(set(held))  # nothing doubled by the killed publish
    assert "box.mp4" in query(videos, index_dir)  # nothing lost
    cli("index", videos, "--workers", "1")  # the next run resumes and publishes the rest
    for held, wanted in tables(index_dir).values():
        assert sorted(held) == wanted and len(held) == len(set(held))
    assert query(videos, index_dir) == {"box.mp4", *MORE}
