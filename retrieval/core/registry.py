"""A registry of named model builders, shared by indexers and rerankers.

Like timm/open_clip: every model family registers a builder under a short name;
one factory turns a *spec* into a built model.  A spec is one of

* a registered name or alias:            ``dinov2``
* a name with explicit weights:          ``dinov2:facebook/dinov2-large``
* a hub id the family claims:            ``facebook/dinov2-base``
* a local weights folder:                ``/models/dinov2-small`` (family read from its config.json)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from retrieval.core.errors import ConvisError
from retrieval.core.user_files import TEXT_FILE_LIMIT, UserFileError, read_json
from retrieval.core.weights import hub_weights

T = TypeVar("T")


class UnknownModelError(ConvisError, ValueError):
    """The spec names no registered model family."""

    exit_code, http_status = 2, 503  # a server's models are its setup, not the request: 503 like a busy index
    label = "model unavailable"


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    # the builder, or where it lives ("package.module:function"): a family whose module imports torch is
    # registered by path, so that listing or resolving models imports none of them
    builder: Callable[..., T] | str
    default_source: str | None = None
    aliases: tuple[str, ...] = ()
    # substrings of a hub id / local config `model_type` that identify this family
    claims: tuple[str, ...] = ()
    description: str = ""
    # default weights per variant (e.g. an indexer's "paper" protocol), else ``default_source``
    variant_sources: dict[str, str] = field(default_factory=dict, hash=False)
    # what the model is fed, in words (frames, decode size, pooling, precision), for ``convis models``
    card: dict[str, str] = field(default_factory=dict, hash=False)
    # where given weights would come from now (weights.BUNDLED, CACHED...), without downloading
    weights: Callable[[str], str] = hub_weights
    # the family embeds sentences into the space of its vectors (text search), known before building it
    text_tower: bool = False
    license: str = ""  # the default weights' license, as their model card states it
    evidence: str = ""  # the published figure that argues for the family, with its source

    def source_for(self, variant: str | None) -> str | None:
        return self.variant_sources.get(variant or "", self.default_source)

    def weights_for(self, variant: str | None) -> str:
        source = self.source_for(variant)
        return self.weights(source) if source else ""

    def build(self, source: str | None, **kwargs: Any) -> T:
        builder = self.builder
        if isinstance(builder, str):
            module, _, name = builder.partition(":")
            builder = getattr(importlib.import_module(module), name)
        return builder(source, **kwargs)


@dataclass(frozen=True)
class Resolved(Generic[T]):
    entry: Entry[T]
    source: str | None  # hub id, open_clip tag or local path; None = the family's default


@dataclass
class Registry(Generic[T]):
    kind: str  # "indexer" or "reranker", used in messages
    _entries: dict[str, Entry[T]] = field(default_factory=dict)

    def register(self, name: str, **fields: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """A decorator: its builder becomes the family ``name``; ``fields`` are the rest of its Entry, by name
        (default_source, aliases, claims, description, variant_sources, card, weights, text_tower, license,
        evidence)."""

        def decorate(builder: Callable[..., T]) -> Callable[..., T]:
            self.add(name, builder, **fields)
            return builder

        return decorate

    def add(self, name: str, builder: Callable[..., T] | str, **fields: Any) -> None:
        """Register the family ``name``; ``builder`` may be ``"module:function"``, imported on first build."""
        entry = Entry(name, builder, **fields)
        for key in (name, *entry.aliases):
            if key in self._entries:
                raise ValueError(f"{self.kind} {key!r} is registered twice")
            self._entries[key] = entry

    def names(self) -> list[str]:
        return sorted({e.name for e in self._entries.values()})

    def entry(self, name: str) -> Entry[T]:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownModelError(self._unknown(name)) from None

    def resolve(self, spec: str) -> Resolved[T]:
        spec = spec.strip()
        if spec in self._entries:
            return Resolved(self._entries[spec], None)
        name, sep, source = spec.partition(":")
        if sep and name in self._entries and source:
            return Resolved(self._entries[name], source)
        path = Path(spec).expanduser()
        if path.is_dir():
            return Resolved(self._claim(_local_model_type(path), spec), str(path))
        if "/" in spec or "-" in spec:
            return Resolved(self._claim(spec.lower(), spec), spec)
        raise UnknownModelError(self._unknown(spec))

    def create(self, spec: str, variant: str | None = None, **kwargs) -> T:
        resolved = self.resolve(spec)
        source = resolved.source or resolved.entry.source_for(variant)
        return resolved.entry.build(source, **kwargs)

    def _claim(self, text: str, spec: str) -> Entry[T]:
        for entry in {id(e): e for e in self._entries.values()}.values():
            if any(c in text for c in entry.claims):
                return entry
        raise UnknownModelError(self._unknown(spec))

    def _unknown(self, spec: str) -> str:
        return f"unknown {self.kind} {spec!r}; known: {', '.join(self.names())}"


def _local_model_type(path: Path) -> str:
    """What a local weights folder says it is (transformers/open_clip config), lower-cased."""
    for name in ("config.json", "open_clip_config.json"):
        cfg = path / name
        if cfg.is_file():
            try:
                data = read_json(cfg, "model config", TEXT_FILE_LIMIT)
            except UserFileError:
                continue
            if not isinstance(data, dict):
                continue
            parts = [str(data.get("model_type", "")), *map(str, data.get("architectures", []) or [])]
            if name == "open_clip_config.json":
                parts.append("open_clip")
            return " ".join(parts).lower() + " " + path.name.lower()
    return path.name.lower()
