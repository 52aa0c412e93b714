"""One factory for every reranker: a spec (name, ``name:weights``, hub id or folder) in, a built model out.

The registry lives in ``rerankers.base`` and the families register into it; this module imports the
families, so nothing below it imports back (timm's layout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

# importing the family modules registers them (they import transformers only when a model is built)
from rerankers import internvl, llava, mplug, qwen, qwen3, qwen3_yesno  # noqa: F401
from rerankers.base import RERANKERS, Reranker, RerankerError, RerankerUnavailable
from rerankers.hf import FAMILIES, RELEASES, Release, cpu_hint, looks_like_path, unavailable
from retrieval.core.registry import UnknownModelError
from retrieval.core.revisions import weights_revision
from retrieval.core.weights import hub_missing

# families listed by name whose checkpoints convis cannot run: each answers every request with its one line
REFUSED = {mplug.NAME: mplug.refusal}
PAPER_BATCH = 1  # the reference asked one pair (one video) a forward pass; batched, left-padded rows score differently


def create_reranker(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """Build a reranker from a name (``qwen2.5-vl``), ``name:source``, a hub id or a local folder.

    Raises UnknownModelError for a spec no family claims and RerankerUnavailable when the
    weights are not on this machine; both carry a one-line message.
    """
    check_weights(spec)
    return RERANKERS.create(spec, device=device, dtype=dtype, **kwargs)


def check_weights(spec: str) -> None:
    """Refuse ``spec`` in one line (RerankerUnavailable) when its family cannot run here (``REFUSED``) or its
    weights cannot be had now: a folder that is not there, or hub weights neither cached nor downloadable
    (HF_HUB_OFFLINE is set, or the hub does not answer); a name no family claims is UnknownModelError, as
    building it would be.

    Loads nothing and imports neither torch nor transformers, so a command whose model is missing says so at once
    instead of after loading its libraries (or a stalled download's retries).  A present folder passes: whether
    it holds a checkpoint the family loads is the family's to say when it builds."""
    text = spec.strip()
    if Path(text).expanduser().is_dir():
        return
    if text.startswith(("/", "./", "../", "~")):
        # a bare path the registry cannot open would otherwise read as an "unknown reranker"
        raise RerankerUnavailable(f"no weights folder at {text!r}; check the path{cpu_hint(None)}")
    resolved = RERANKERS.resolve(text)
    source = resolved.source or resolved.entry.default_source
    if resolved.entry.name in REFUSED:  # before its weights: having them would not make it run
        raise REFUSED[resolved.entry.name](source)
    if source is None:
        return
    if looks_like_path(source):
        missing = None if Path(source).expanduser().is_dir() else "no such folder"
    else:
        missing = hub_missing(source)
    if missing:
        raise unavailable(resolved.entry.name, source, missing)


def lmm_identity(spec) -> tuple[str, str]:
    """(model id, weights' revision) of ``spec`` (a spec or a Reranker) without building it, as a built one would
    name itself (``Reranker.model_id``): what keys a cached answer before the model is loaded.  The revision is the
    files' or the hub cache's (``retrieval.core.revisions``), "unknown" when it cannot be told; a name no family
    claims is UnknownModelError."""
    if isinstance(spec, Reranker):
        return spec.model_id, spec.revision
    resolved = RERANKERS.resolve(str(spec))
    source = resolved.source or resolved.entry.default_source or ""
    return f"{resolved.entry.name}:{source}", weights_revision(source, resolved.entry.name) or "unknown"


def available_rerankers() -> list[str]:
    """Every registered family, the refused ones included (``convis models`` lists them with why)."""
    return RERANKERS.names()


def runnable_rerankers() -> list[str]:
    """The families convis can run: every registered one but the refused."""
    return [name for name in RERANKERS.names() if name not in REFUSED]


# -- the paper protocol ----------------------------------------------------------------------------------------------
def paper_dtype(spec: str) -> str:
    """The precision to pass as ``dtype`` when building ``spec`` for ``--protocol paper``: the one the paper's
    reference ran its family in ("fp16" for LLaVA, "bf16" for Qwen2.5-VL and InternVL); "auto" for a family the
    paper did not run. On a CPU half precision runs in fp32 (rerankers.hf.resolve_dtype says so in a notice)."""
    family = FAMILIES.get(_registered_name(spec) or "")
    return (family.paper_dtype if family is not None else None) or "auto"


def paper_refusal(spec: str) -> str | None:
    """Why ``--protocol paper`` cannot run ``spec`` as the paper did, in one line; None when it can (or when the
    spec names nothing registered: building it says what is wrong).

    A refused checkpoint is refused by its weights as well as by its registry name: ``llava-onevision:`` followed
    by LLaVA-Video's hub id or a folder of its conversion loads LLaVA-Video all the same.  A conversion's config
    holds no LLaVA-Video setting (transformers' converter writes a plain llava_onevision config), so the weights
    are known by their name: the hub id, the folder's name, or the repository a Hugging Face cache snapshot
    belongs to (``models--llava-hf--LLaVA-Video-7B-Qwen2-hf/snapshots/<commit>``)."""
    try:
        resolved = RERANKERS.resolve(spec)
    except UnknownModelError:
        return None
    source = resolved.source or resolved.entry.default_source or ""
    for release in RELEASES:
        if release.paper_refusal and (release.name == resolved.entry.name or _holds(source, release)):
            return release.paper_refusal
    return None


def _holds(source: str, release: Release) -> bool:
    """Whether ``source`` (a hub id or a folder) names ``release``'s weights: its default hub id, or a name one of
    its claims is part of (as the registry claims a hub id or folder for it)."""
    names = _weight_names(source)
    marks = [release.default.lower(), *release.claims]
    return any(mark in name for name in names for mark in marks)


def _weight_names(source: str) -> list[str]:
    """The names that say which weights ``source`` holds, lower-cased: a hub id itself; a folder's own name and,
    for a snapshot of the Hugging Face cache, its repository's folder name."""
    if not looks_like_path(source):
        return [source.lower()]
    path = Path(source).expanduser()
    names = [path.name.lower()]
    if path.parent.name == "snapshots":
        names.append(path.parent.parent.name.lower())
    return names


def check_protocol(specs: Iterable[str | None], protocol: str) -> None:
    """Refuse (RerankerError, one line) the first of ``specs`` that ``protocol`` cannot run as its reference did;
    None specs pass. Loads nothing, so a run can ask before it indexes anything."""
    if protocol != "paper":
        return
    for spec in specs:
        refusal = paper_refusal(spec) if spec else None
        if refusal:
            raise RerankerError(refusal)


def create_for_protocol(spec: str, protocol: str, device: str | None = None, **kwargs) -> Reranker:
    """``spec`` built as ``protocol`` runs it: under "paper" refused where the paper cannot be run
    (``check_protocol``), else in the family's ``paper_dtype``, one request a forward pass (``PAPER_BATCH``),
    nothing shared between pairs; under "fast" with ``kwargs`` as given (the family's defaults where they are None)."""
    if protocol == "paper":
        check_protocol([spec], protocol)
        kwargs = {**kwargs, "dtype": paper_dtype(spec), "batch_size": PAPER_BATCH, "share": False}
    return create_reranker(spec, device=device, **kwargs)


def _registered_name(spec: str) -> str | None:
    try:
        return RERANKERS.resolve(spec).entry.name
    except UnknownModelError:
        return None



def create_captioner(spec: str, device: str | None = None, dtype=None, **kwargs) -> Reranker:
    """A model that describes clips (``describe``): any reranker family, built from the same specs."""
    return create_reranker(spec, device=device, dtype=dtype, **kwargs)
