"""File names that are not valid UTF-8 are skipped with a reason; the run and every resume go on."""

import os
import shutil

from retrieval.api import Engine
from retrieval.media.scan import find_videos
from retrieval.pipeline.settings import IndexSettings

RAW_NAME = b"b\xffd.mp4"  # a byte no UTF-8 text holds, as a file copied from an old Latin-1 disk has
SHOWN = "b\\xffd.mp4"


def test_a_non_utf8_file_name_is_skipped_with_a_reason_and_the_run_goes_on(tmp_path, video_folder, tiny_models):
    shutil.copy(video_folder / "cup.mp4", os.path.join(os.fsencode(video_folder), RAW_NAME))
    engine = Engine(tmp_path / "index")
    spec = [f"dinov2:{tiny_models['dinov2']}"]
    for _ in range(2):  # the first run and a resume
        report = engine.index(video_folder, spec, IndexSettings(workers=1, timeout=60))
        failed = dict(report.failed)
        assert "not valid UTF-8" in failed[SHOWN]
        assert engine.info()["files_ok"] == 4  # every other file indexed


def test_a_non_utf8_folder_name_names_its_files_readably(tmp_path, video_folder):
    folder = os.path.join(os.fsencode(video_folder), b"caf\xe9")
    os.mkdir(folder)
    shutil.copy(video_folder / "cup.mp4", os.path.join(folder, b"cup.mp4"))
    found, problems = find_videos(video_folder)
    assert len(found) == 4
    assert problems == [("caf\\xe9/cup.mp4", "file name is not valid UTF-8 (rename it to index it)")]


def deep_folder(root, parts: int = 22):
    """A folder ``parts`` levels below ``root`` whose absolute path is longer than PATH_MAX: made one level at a
    time by file descriptor, since no call may name it whole."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(parts):
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.path.join(os.sep, "proc", "self", "fd", str(fd), "deep.mp4"), "wb") as clip:
            clip.write(b"\x00" * 16)
    finally:
        os.close(fd)


def test_a_folder_past_the_path_limit_is_one_readable_problem_named_from_the_root(video_folder):
    deep_folder(video_folder)
    found, problems = find_videos(video_folder)
    assert len(found) == 4  # the clips beside it are found
    [(where, why)] = problems
    assert not where.startswith("/") and where.startswith("d" * 200 + "/")  # relative to the root, like every key
    assert why.startswith("path too long for this system (") and "the limit is" in why
