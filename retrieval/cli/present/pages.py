"""The HTML pages `--html` writes: the gallery, diff and compare pages of the server's gallery module."""

from __future__ import annotations

from pathlib import Path


def write_query_html(*args, index_dir: Path, **kwargs) -> Path:
    """The gallery page; a file browsers cannot play links the preview `convis serve` made of it, if any."""
    from retrieval.api import Previews
    from retrieval.serve.gallery import write_query_html as write  # decoders: only a page pays for them
    from retrieval.serve.playback import PREVIEWS_DIRNAME

    return write(*args, previews=Previews(index_dir / PREVIEWS_DIRNAME), **kwargs)


def write_diff_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_diff_html as write

    return write(*args, **kwargs)


def write_diff_ranking_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_diff_ranking_html as write

    return write(*args, **kwargs)


def write_compare_html(*args, **kwargs) -> Path:
    from retrieval.serve.gallery import write_compare_html as write

    return write(*args, **kwargs)
