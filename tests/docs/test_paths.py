"""Every repository path the README and the documentation pages name exists, so a moved or renamed module
cannot leave the docs pointing at nothing."""

import pytest

from tests.docs.named_paths import named_paths, prose
from tests.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# named in the docs, made by a command rather than kept in the repository
MADE_BY_COMMANDS = {ROOT / "examples/videos/.convis-index"}  # `make demo` writes it


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_path_a_page_names_exists(page):
    missing = [str(p) for p in named_paths(page, ROOT) if not p.exists() and p not in MADE_BY_COMMANDS]
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


def test_the_path_reader_finds_code_paths_and_links_but_not_commands(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See `retrieval/store/where.py:40`, `tests/...`, `OUT/<set>/x.json` and [more](other.md#a).\n"
                    "```bash\nconvis index `retrieval/nothing.py`\n```\n")
    named = named_paths(page, ROOT)
    assert named == [ROOT / "retrieval/store/where.py", tmp_path / "other.md"]
    assert "retrieval/nothing.py" not in prose(page.read_text())


def test_a_missing_path_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("The catalog lives in `retrieval/store/no_such_module.py`.\n")
    assert [p for p in named_paths(page, ROOT) if not p.exists()] == [ROOT / "retrieval/store/no_such_module.py"]
