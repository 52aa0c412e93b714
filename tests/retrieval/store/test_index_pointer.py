"""The .convis-index pointer: a folder indexed elsewhere finds its index, and a pointer to a gone index says so."""

import pytest

from retrieval.store.index_dir import POINTER_NAME, NoIndexError, locate_index
from tests.paths import EXAMPLES, ROOT


def test_a_pointer_to_a_gone_index_says_so_in_one_line(tmp_path):
    videos = tmp_path / "videos"
    (videos / "sub").mkdir(parents=True)
    gone = tmp_path / "gone" / ".convis"
    (videos / POINTER_NAME).write_text(f"{gone}\n", encoding="utf-8")
    with pytest.raises(NoIndexError) as raised:
        locate_index(None, videos / "sub")
    message = str(raised.value)
    assert "\n" not in message
    assert f"{videos.resolve() / POINTER_NAME} names {gone}, which no longer holds an index" in message
    assert f"convis index {videos.resolve()}" in message


def test_the_example_fixtures_never_write_into_the_repository(demo_index, example_index, example_videos):
    assert ROOT not in example_videos.resolve().parents
    pointer = EXAMPLES / POINTER_NAME
    named = pointer.read_text(encoding="utf-8").strip() if pointer.exists() else ""
    assert str(demo_index.parent) not in named and str(example_index.parent) not in named
