"""The registry of `convis bench perf`'s sections, in the order of the page (and of measuring).

A new section is a module here holding its ``SECTION`` (``bench.perf.section.Section``) under the module's name,
and that name in ``PAGE`` below.
"""

from __future__ import annotations

from importlib import import_module

from bench.perf.section import Section

PAGE = ("indexing", "long_video", "scaling", "recall", "store", "filter", "ocr", "dupes", "speech", "rerank",
        "rerank_lmm", "embed", "describe", "lmm", "encoders", "cli", "serve")


def _section(name: str) -> Section:
    section = import_module(f"{__name__}.{name}").SECTION
    assert section.name == name, f"{name}.py holds section {section.name!r}"
    return section


SECTIONS: dict[str, Section] = {name: _section(name) for name in PAGE}


def section_names() -> tuple[str, ...]:
    """The parts ``--sections`` can name (the long video is chosen by ``--long-video``, the LMM reranking by
    ``rerank``)."""
    return tuple(name for name, section in SECTIONS.items() if section.chosen_by is None)


def sections_help() -> str:
    """``--sections``' help: every name it takes and what that section measures."""
    return "Comma-separated names. " + "; ".join(f"{name}: {SECTIONS[name].help}" for name in section_names()) + "."
