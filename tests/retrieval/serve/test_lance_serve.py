"""A server over an index on Lance sees what another process's index run publishes at its next request."""

import os
import shutil
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from retrieval.serve.server import create_app
from tests.indexes import CAPTIONS, indexed_copies
from tests.paths import EXAMPLES, ROOT

LOCAL = "http://localhost"


def recalled(client) -> dict[str, list[str]]:
    """path -> what recalled it, for a text search of every clip."""
    answer = client.get("/search", params={"text": "a hand holding a cup", "k": 10})
    assert answer.status_code == 200, answer.text
    return {h["path"]: h["recalled_by"] for h in answer.json()["hits"]}


@pytest.mark.slow  # an index run in another process
def test_a_server_reads_the_lance_version_another_process_published(tmp_path):
    videos = indexed_copies(tmp_path, ("cup.mp4", "box.mp4"), ["efficientnet-lite0"], captions=CAPTIONS,
                            store="lance")
    with TestClient(create_app(videos / ".convis"), base_url=LOCAL) as client:
        assert set(recalled(client)) == {"cup.mp4", "box.mp4"}
        shutil.copy(EXAMPLES / "campus_01.mp4", videos / "campus_01.mp4")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        subprocess.run([sys.executable, str(ROOT / "cli.py"), "index", str(videos), "--workers", "1",
                        "--captions", str(CAPTIONS)], env=env, check=True, capture_output=True, timeout=300)
        found = recalled(client)
    # recalled from the text signal's Lance table, at the version the run published (not by keyword alone)
    assert any(by.startswith("text:") for by in found["campus_01.mp4"])
