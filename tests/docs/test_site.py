"""The documentation site builds offline with `mkdocs build --strict`: a broken link, a missing page, an anchor
that is not there or a page left out of the nav fails; the README stays the front door."""

import os
import subprocess
import sys

from tests.paths import ROOT

FRONT_DOOR_LINES = 300


def build(config, out):
    """`mkdocs build --strict` of a config, run from its folder (the README's Python API example is included from
    the repository root). No -q: mkdocs counts the warnings strict mode fails on only while it logs them."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(out)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=120)


def test_the_site_builds_strictly(tmp_path):
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    api = (tmp_path / "site" / "api.html").read_text()
    assert 'id="retrieval.api.Engine"' in api and 'id="retrieval.api.QueryRequest"' in api  # mkdocstrings rendered
    assert "from retrieval.api import" in api.replace('<span class="kn">', "").replace("</span>", "")


def test_a_broken_link_fails_the_build(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the guide](guide.md).\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nstrict: true\nnav:\n  - Home: index.md\n")
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0 and "guide.md" in result.stderr


def test_the_readme_is_the_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= FRONT_DOOR_LINES
    assert "make demo" in readme and "make test" in readme and "docs/architecture.md" in readme
