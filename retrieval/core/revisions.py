"""What tells weights apart when their name stays the same, decided without loading them: the key of every
cache of model outputs (exported text towers, anchor vectors)."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

from retrieval.core.weights import hub_folder


def weights_revision(source: str, family: str = "") -> str | None:
    """A local path's files (names, sizes, modification times), the version of the package that ships them
    (``package:NAME``), the commit the Hugging Face cache's main ref names, or for an open_clip tag
    (``ViT-L-14/openai``, family ``clip``) open_clip's version, whose table pins its weights.  None when it
    cannot be told (a hub id not in the cache)."""
    if source.startswith("package:"):
        return f"package:{_version(source.removeprefix('package:'))}"
    local = Path(source).expanduser()
    try:
        if local.exists():
            files = sorted(p for p in ([local] if local.is_file() else local.rglob("*")) if p.is_file())
            stats = [(str(p.relative_to(local.parent)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
            return "files:" + hashlib.sha256(json.dumps(stats).encode()).hexdigest()
    except OSError:
        return None
    commit = _hub_commit(source.removeprefix("hf-hub:"))
    if commit is None and family == "clip" and not source.startswith("hf-hub:"):
        return f"open_clip-{_version('open_clip_torch')}:{source}"
    return commit


def _hub_commit(repo: str) -> str | None:
    if repo.count("/") != 1:  # not a hub id
        return None
    try:
        ref = hub_folder(repo) / "refs" / "main"
        return "hub:" + ref.read_text().strip() if ref.is_file() else None
    except (ImportError, OSError):
        return None


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"
