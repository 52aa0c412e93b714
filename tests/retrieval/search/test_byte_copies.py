"""Byte-identical files are one clip to a query: the first keeps its place and names the others
(``same_bytes_as``), so k results are k different clips; ``convis dupes`` still lists the copies."""

import json
import shutil

from typer.testing import CliRunner

from retrieval.api import Engine, QueryRequest
from retrieval.cli.app import app
from retrieval.search.ranking import one_per_copy
from retrieval.search.results import Hit
from tests.indexes import indexed_copies


def hit(path, content_hash, start=0.0, end=3.0, total=0.5):
    return Hit(1, path, 0, start, end, {"location": total}, total, content_hash)


def test_one_hit_a_copy_the_first_naming_the_others():
    hits = [hit("a.mp4", "h1"), hit("b.mp4", "h2"), hit("c.mp4", "h1"), hit("a.mp4", "h1", 3.0, 6.0),
            hit("d.mp4", "h1"), hit("e.mp4", None), hit("f.mp4", None)]
    kept = one_per_copy(hits)
    assert [(h.path, h.start, h.same_bytes_as) for h in kept] == [
        ("a.mp4", 0.0, ("c.mp4", "d.mp4")), ("b.mp4", 0.0, ()), ("a.mp4", 3.0, ()), ("e.mp4", 0.0, ()),
        ("f.mp4", 0.0, ())]
    assert kept[0].as_dict()["same_bytes_as"] == ["c.mp4", "d.mp4"] and "same_bytes_as" not in kept[1].as_dict()


def test_a_query_shows_a_byte_copy_once_and_names_it(tmp_path_factory):
    videos = indexed_copies(tmp_path_factory.mktemp("copies"), ("cup.mp4", "campus_01.mp4", "campus_02.mp4"),
                            ["efficientnet-lite0"])
    shutil.copy(videos / "cup.mp4", videos / "cup copy.mp4")
    engine = Engine(videos / ".convis")
    engine.index(videos, ["efficientnet-lite0"])
    result = engine.query(QueryRequest(anchor=str(videos / "campus_01.mp4"), concepts=("location",), k=10))
    copies = {"cup.mp4", "cup copy.mp4"}
    [kept] = [h for h in result.hits if h.path in copies]  # one of the two, first by path on equal scores
    [other] = copies - {kept.path}
    assert kept.same_bytes_as == (other,)
    printed = CliRunner().invoke(app, ["query", "--anchor", str(videos / "campus_01.mp4"), "-c", "location",
                                       "--index-dir", str(videos / ".convis")], env={"COLUMNS": "200"})
    assert printed.exit_code == 0, printed.output
    assert f"the same bytes are also at {other}" in printed.output
    answer = CliRunner().invoke(app, ["query", "--anchor", str(videos / "campus_01.mp4"), "-c", "location",
                                      "--index-dir", str(videos / ".convis"), "--json"])
    assert answer.exit_code == 0, answer.output
    hits = json.loads(answer.stdout)["hits"]
    assert next(h for h in hits if h["path"] == kept.path)["same_bytes_as"] == [other]
    dupes = CliRunner().invoke(app, ["dupes", "--index-dir", str(videos / ".convis"), "--threshold", "0.99", "--json"])
    assert "cup copy.mp4" in dupes.output  # the copies are listed where a user chooses which to keep
