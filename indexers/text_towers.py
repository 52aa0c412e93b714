"""Query-time text towers: a sentence in, the unit vector its indexer would give, with ONNX Runtime and the
``tokenizers`` library only (no torch in the process).

An indexer that embeds sentences (the caption model, the CLIP family) is exported once where torch is already
loaded (``indexers.text_export``): its text graph to ``model.onnx``, its tokenizer (truncation and padding
included) to ``tokenizer.json``, and what the export is to ``tower.json``.  The folder is keyed by the model's
id and the revision of its weights, so new weights under the same name are exported again, and it lives in the
user's cache (``$CONVIS_CACHE_DIR``, else ``$XDG_CACHE_HOME/convis``), shared by every index of that model.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from indexers.base import INDEXERS, l2_normalise
from indexers.bundled import weights_path
from retrieval.core.registry import UnknownModelError
from retrieval.core.revisions import weights_revision

MANIFEST, GRAPH, TOKENIZER = "tower.json", "model.onnx", "tokenizer.json"
FORMAT = 1  # bumped when what an export holds changes: older folders are exported again
MIN_COSINE = 0.9999  # an export whose vectors differ more from its torch model's is not used


class TextEncoder(Protocol):
    """What embeds sentences for an indexed signal: its exported tower, or the indexer itself."""

    model_id: str  # the indexer's id, which its stored vectors carry
    kind: str  # the indexer's kind: ``text`` reads captions; ``image`` and ``video`` are CLIP-family towers
    dim: int

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


def cache_root() -> Path:
    """Where exported towers live: ``$CONVIS_CACHE_DIR`` or the user's cache folder."""
    explicit = os.environ.get("CONVIS_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "convis"


def folder_for(model_id: str, revision: str, root: Path | None = None) -> Path:
    family = model_id.partition(":")[0] or "model"
    digest = hashlib.sha256(f"{FORMAT}\0{model_id}\0{revision}".encode()).hexdigest()[:20]
    return (root or cache_root()) / "text-towers" / f"{family}-{digest}"


def locate(model_id: str, protocol: str = "fast", root: Path | None = None) -> Path | None:
    """The folder the tower of ``model_id`` (an indexer id such as ``text:sentence-transformers/...``) is or
    would be exported to; None when its family has no text tower or its weights' revision cannot be told."""
    try:
        resolved = INDEXERS.resolve(model_id)
    except UnknownModelError:
        return None
    if not resolved.entry.text_tower:
        return None
    source = resolved.source or resolved.entry.source_for(protocol) or ""
    # keyed as the built indexer names itself (family:source), however the spec was written
    return folder_of(f"{resolved.entry.name}:{source}", resolved.entry.name, source, root)


def folder_of(model_id: str, family: str, source: str, root: Path | None = None) -> Path | None:
    """The export folder of the ``family`` model ``model_id`` with weights ``source`` as they are now."""
    weights = weights_revision(weights_of(family, source), family)
    return folder_for(model_id, weights, root) if weights else None


@dataclass(frozen=True)
class TowerManifest:
    model_id: str
    name: str  # the indexer family (``text``, ``clip``)
    source: str
    kind: str  # the indexer's kind: ``text`` for captions, ``image``/``video`` for the CLIP family
    dim: int
    inputs: tuple[str, ...]  # the graph's inputs, from the tokenizer's encodings
    cosine: float  # the least cosine between this export's and the torch model's vectors of the probe sentences
    exported_with: dict

    @property
    def usable(self) -> bool:
        return self.cosine >= MIN_COSINE

    def write(self, folder: Path) -> None:
        data = {**self.__dict__, "inputs": list(self.inputs), "format": FORMAT}
        (folder / MANIFEST).write_text(json.dumps(data, indent=1))

    @classmethod
    def read(cls, folder: Path) -> TowerManifest | None:
        try:
            data = json.loads((folder / MANIFEST).read_text())
            if data.pop("format", None) != FORMAT:
                return None
            return cls(**{**data, "inputs": tuple(data["inputs"])})
        except (OSError, ValueError, TypeError, KeyError):
            return None  # absent, half-written by a killed export, or older: exported again


class OnnxTextTower:
    """An exported text tower: ``embed_texts`` as its indexer's, answered by ONNX Runtime."""

    def __init__(self, folder: Path, manifest: TowerManifest):
        import onnxruntime
        from tokenizers import Tokenizer

        self.folder, self.manifest = folder, manifest
        self.name, self.source, self.kind, self.dim = manifest.name, manifest.source, manifest.kind, manifest.dim
        self.model_id = manifest.model_id
        self._tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # its warnings about unused initialisers are not the user's concern
        self._session = onnxruntime.InferenceSession(str(folder / GRAPH), options,
                                                     providers=["CPUExecutionProvider"])

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        feeds = {"input_ids": np.array([e.ids for e in encodings], np.int64),
                 "attention_mask": np.array([e.attention_mask for e in encodings], np.int64)}
        out = self._session.run(None, {name: feeds[name] for name in self.manifest.inputs})[0]
        return l2_normalise(np.asarray(out, np.float32))


def load(folder: Path | None) -> OnnxTextTower | None:
    """The usable tower exported to ``folder``, or None (never exported, refused by its check, unreadable)."""
    if folder is None:
        return None
    manifest = TowerManifest.read(folder)
    if manifest is None or not manifest.usable:
        return None
    try:
        return OnnxTextTower(folder, manifest)
    except Exception:  # a missing onnxruntime, an unreadable graph: onnxruntime's errors share no base
        return None


def refused(folder: Path | None) -> TowerManifest | None:
    """The manifest of an export whose check failed (the torch model answers instead), else None."""
    manifest = TowerManifest.read(folder) if folder is not None else None
    return manifest if manifest is not None and not manifest.usable else None


def weights_of(family: str, source: str) -> str:
    """Where ``source``'s weights are read from: itself, or for the caption model its bundled copy."""
    if family == "text":  # MiniLM's bundled copy is its weights
        return weights_path(source)
    return source
