"""The repository paths a markdown page names: its inline code that reads as a path from the repository root, and
its relative links. Fenced code is left out (commands there name the user's folders)."""

import re
from pathlib import Path

# where a path from the repository root starts
ROOTS = ("retrieval/", "indexers/", "rerankers/", "bench/", "tests/", "docs/", "examples/", ".ci/")
FILES = {"cli.py", "Makefile", "pyproject.toml", ".importlinter", "mkdocs.yml", "README.md", ".gitignore"}
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SPAN = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The page without its fenced code."""
    return FENCE.sub("", text)


def _spans(text: str) -> list[str]:
    out = []
    for span in SPAN.findall(text):
        path = re.sub(r":\d+(-\d+)?$", "", span)  # a line reference
        if any(mark in path for mark in "<>*{}") or "..." in path:
            continue  # a pattern, not a path
        if path in FILES or path.startswith(ROOTS):
            out.append(path)
    return out


def named_paths(page: Path, root: Path) -> list[Path]:
    """Every repository path the page names: inline code from the root, relative links from the page's folder."""
    text = prose(page.read_text())
    paths = [root / p for p in _spans(text)]
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # another site, or a heading of the same page
        paths.append(page.parent / target.split("#")[0])
    return paths
