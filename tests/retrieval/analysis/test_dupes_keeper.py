"""The keeper of a group of near-duplicates is a real file, never a symlink to one (removing the target would
leave the link dangling)."""

import os
import shutil

from retrieval.api import DupesRequest, Engine, IndexSettings
from tests.indexes import EXAMPLES


def test_a_symlink_is_never_kept_over_its_target(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(EXAMPLES / "cup.mp4", videos / "cup.mp4")
    os.symlink("cup.mp4", videos / "a_link.mp4")  # sorts first: ties went to it
    engine = Engine(videos / ".convis")
    engine.index(videos, ["fingerprint"], IndexSettings(workers=1))
    for level in ("file", "unit"):
        found = engine.dupes(DupesRequest(level=level, threshold=0.99))
        assert found.groups, level
        for group in found.groups:
            assert [m.path for m in group.members if m.keep] == ["cup.mp4"], level
        assert all(d.startswith("a_link.mp4") for d in found.drop)
