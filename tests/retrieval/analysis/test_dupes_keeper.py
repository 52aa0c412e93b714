"""`dupes` on an index: the keeper of a group is a real file, never a symlink to one (removing the target would
leave the link dangling), and a threshold so low that units have more neighbours that alike than are paired says
so."""

import os
import shutil

from retrieval.analysis import dupe_groups
from retrieval.api import DupesRequest, Engine, IndexSettings
from tests.indexes import EXAMPLES


def test_a_symlink_is_never_kept_over_its_target_and_a_low_threshold_says_so(tmp_path, monkeypatch):
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
    assert not any("too low" in n for n in found.notices)
    monkeypatch.setattr(dupe_groups, "NEIGHBOURS", 0)  # pairs of none: each unit's copy is left out
    low = engine.dupes(DupesRequest(threshold=0.50001))
    assert any("the threshold is too low to tell copies" in n for n in low.notices), low.notices
