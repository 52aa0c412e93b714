"""Atomic writes end with the permissions a plain ``open()`` would have given the file."""

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from retrieval.core.files import atomic_write, atomic_write_bytes
from retrieval.store.vectors.faiss_index import VectorIndex, index_path


@pytest.fixture
def umask_022():
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def plain_open_mode(folder: Path) -> int:
    """What open() gives a new file here, measured rather than computed."""
    probe = folder / "probe"
    probe.write_text("x")
    try:
        return mode(probe)
    finally:
        probe.unlink()


def test_new_files_get_the_mode_open_gives_under_the_umask(tmp_path, umask_022):
    atomic_write(tmp_path / "page.html", lambda tmp: Path(tmp).write_text("<p>hi</p>"))
    atomic_write_bytes(tmp_path / "data.json", lambda fh: fh.write(b"{}"))
    assert plain_open_mode(tmp_path) == 0o644
    assert mode(tmp_path / "page.html") == 0o644 and mode(tmp_path / "data.json") == 0o644
    os.umask(0o077)
    atomic_write(tmp_path / "private.html", lambda tmp: Path(tmp).write_text("<p>hi</p>"))
    assert mode(tmp_path / "private.html") == 0o600 == plain_open_mode(tmp_path)


def test_a_replaced_file_keeps_its_own_mode(tmp_path, umask_022):
    target = tmp_path / "shared.html"
    target.write_text("old")
    target.chmod(0o664)
    atomic_write(target, lambda tmp: Path(tmp).write_text("new"))
    assert target.read_text() == "new" and mode(target) == 0o664


def test_faiss_files_are_readable_by_others_under_umask_022(tmp_path, umask_022):
    ids, matrix = np.arange(4, dtype=np.int64), np.eye(4, 8, dtype=np.float32)
    path = index_path(tmp_path, "dinov2:facebook/dinov2-small")
    VectorIndex.build(ids, matrix, generation=1).save(path)
    written = [p for p in path.parent.iterdir() if p.is_file()]  # the index and its sidecar
    assert path in written and {p.name: mode(p) for p in written} == {p.name: 0o644 for p in written}
