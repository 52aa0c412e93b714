"""A query on a concept recalls and ranks with a concept-conditioned indexer's vectors of that concept; a text
search embeds the sentence under the model's query instruction."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from tests.conditioned import INSTRUCTIONS, index_cli, toy_registered
from tests.media import make_clip

MODEL = "toy-conditioned:toy"


def clip(path, rgb, moving):
    """A clip of one colour whose brightness pulses (``moving``) or holds still."""
    def pixels(i):
        level = 0.55 + 0.4 * np.sin(0.9 * i) if moving else 0.75
        return (np.array(rgb, np.float32) * level * np.ones((48, 64, 3), np.float32)).astype(np.uint8)
    make_clip(path, frames=40, pixels=pixels)


@pytest.fixture(scope="module")
def toy_index(tmp_path_factory):
    """Four clips indexed by the toy conditioned indexer: the anchor (red, pulsing), one in its place (red, still),
    one doing its action (blue, pulsing), one sharing neither (green, still)."""
    tmp = tmp_path_factory.mktemp("concepts")
    folder = tmp / "videos"
    folder.mkdir()
    for name, rgb, moving in (("anchor.mp4", (255, 0, 0), True), ("same_place.mp4", (255, 0, 0), False),
                              ("same_action.mp4", (0, 0, 255), True), ("neither.mp4", (0, 200, 0), False)):
        clip(folder / name, rgb, moving)
    with toy_registered() as toy:
        code, report = index_cli(folder, tmp / "index")
        assert code == 0, report
        yield folder, tmp / "index", toy


def query(toy_index, *args):
    folder, index_dir, _ = toy_index
    result = CliRunner().invoke(app, ["query", "--anchor", str(folder / "anchor.mp4"), "--index-dir",
                                      str(index_dir), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def ranking(found):
    return [hit["path"] for hit in found["hits"]]


def test_each_concept_ranks_by_its_own_stored_vectors(toy_index):
    location, action = query(toy_index, "-c", "location"), query(toy_index, "-c", "main-action")
    assert location["signals"] == {"location": f"{MODEL}#location"}
    assert action["signals"] == {"main-action": f"{MODEL}#main-action"}
    assert ranking(location)[0] == "same_place.mp4" and ranking(action)[0] == "same_action.mp4"
    assert ranking(location) != ranking(action)
    assert location["hits"][0]["evidence"]["location"] == {f"{MODEL}#location": location["hits"][0]["total"]}


def test_an_override_still_names_the_generic_vectors(toy_index):
    found = query(toy_index, "-c", "location", "--signal", "location=toy-conditioned")
    assert found["signals"] == {"location": MODEL}
    named = query(toy_index, "-c", "location", "--signal", "location=toy-conditioned#main-action")
    assert named["signals"] == {"location": f"{MODEL}#main-action"}
    assert ranking(named) == ranking(query(toy_index, "-c", "main-action"))


def test_a_free_text_concept_without_vectors_is_answered_by_the_generic_ones_and_says_how_to_add_it(toy_index):
    found = query(toy_index, "-c", "camera angle", "--free-text")
    assert found["signals"] == {"camera-angle": MODEL}
    assert any("'camera angle' has no stored vectors of its own" in n and
               'convis index FOLDER --concept "camera angle"' in n for n in found["notices"])


def test_search_embeds_the_sentence_under_the_query_instruction_against_the_generic_vectors(toy_index):
    folder, index_dir, toy = toy_index
    toy.calls.clear()
    result = CliRunner().invoke(app, ["search", "something blue", "--index-dir", str(index_dir), "--json",
                                      "--mode", "vector"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["signals"] == {"toy-conditioned": MODEL}
    assert found["hits"][0]["path"] == "same_action.mp4"  # the blue one
    assert toy.calls == [("texts", INSTRUCTIONS.query, 1)]
    by_concept = CliRunner().invoke(app, ["search", "something red", "-c", "location", "--index-dir",
                                          str(index_dir), "--json", "--mode", "vector"])
    assert by_concept.exit_code == 0, by_concept.output
    assert json.loads(by_concept.stdout)["signals"] == {"toy-conditioned#location": f"{MODEL}#location"}
