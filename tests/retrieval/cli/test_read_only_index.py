"""An index folder that cannot be written: `convis index` and `remove` stop in one line (exit 1) before any work,
while `query`, `ls` and `info` read it as before; a read-only video folder is indexed (it is only read).

Tests run as root here, and root writes wherever it likes: the commands run in a child whose capabilities to
override file permissions are dropped (`setpriv`), so the folder's permission bits apply to it as to any user.
The seam itself (a folder or catalog that refuses the writer) is also tested in-process by raising the
permission error there."""

import errno
import shutil

import pytest

from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexReadOnly
from tests.permissions import convis_as_user as convis
from tests.permissions import needs_permissions, read_only, writable


@pytest.fixture
def locked_index(example_index, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(example_index, index)
    yield index
    writable(index)


@needs_permissions
@pytest.mark.parametrize("whole", [True, False], ids=["folder-and-files", "folder-only"])
def test_a_read_only_index_refuses_writers_in_one_line_and_still_answers_reads(locked_index, example_videos, whole):
    if whole:
        read_only(locked_index)
    else:  # the catalog file stays writable: DuckDB would open it and fail only at the first commit
        locked_index.chmod(0o555)
    for args in (["index", example_videos, "--index-dir", locked_index],
                 ["remove", example_videos / "box.mp4", "--index-dir", locked_index]):
        ran = convis(*args)
        assert ran.returncode == 1, ran.stderr
        assert ran.stderr.strip().splitlines() == [
            f"error: cannot write the index {locked_index} (Permission denied); commands that only read it (query, "
            "search, ls, info, serve) still work: make it writable, or index into another --index-dir"]
    listed = convis("ls", "--index-dir", locked_index, "--json")
    assert listed.returncode == 0 and "box.mp4" in listed.stdout
    assert convis("info", locked_index).returncode == 0
    query = convis("query", "--anchor", example_videos / "box.mp4", "-c", "location", "--index-dir", locked_index,
                   "--json")
    assert query.returncode == 0 and '"hits"' in query.stdout, query.stderr


@needs_permissions
def test_a_read_only_video_folder_is_indexed(example_videos, tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("box.mp4", "cup.mp4"):
        shutil.copy(example_videos / name, videos / name)
    read_only(videos)
    ran = convis("index", videos, "--index-dir", tmp_path / "index", "-i", "efficientnet-lite0", "--json")
    assert ran.returncode == 0, ran.stderr
    assert '"indexed": 2' in ran.stdout


def test_a_folder_that_refuses_new_files_stops_the_writer_before_it_opens_the_catalog(example_index, tmp_path,
                                                                                        monkeypatch):
    index = tmp_path / "index"
    shutil.copytree(example_index, index)

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(index))

    monkeypatch.setattr("retrieval.store.catalog.connection.tempfile.mkstemp", refuse)
    with pytest.raises(IndexReadOnly, match=r"cannot write the index .*index \(Permission denied\)") as caught:
        Catalog(index / "catalog.duckdb")
    assert caught.value.exit_code == 1
    with Catalog(index / "catalog.duckdb", read_only=True) as cat:  # readers never write
        assert cat.file_states()


def test_a_catalog_file_that_refuses_the_writer_is_one_line(example_index, tmp_path, monkeypatch):
    import duckdb

    index = tmp_path / "index"
    shutil.copytree(example_index, index)
    real = duckdb.connect

    def connect(path, read_only=False, **kwargs):
        if not read_only:
            raise duckdb.IOException(f'IO Error: Cannot open file "{path}": Permission denied')
        return real(path, read_only=read_only, **kwargs)

    monkeypatch.setattr("retrieval.store.catalog.connection.duckdb.connect", connect)
    with pytest.raises(IndexReadOnly, match="Permission denied"):
        Catalog(index / "catalog.duckdb")
