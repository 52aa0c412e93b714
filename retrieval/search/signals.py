"""Which indexed signal scores which concept before (or without) LMM reranking.

ConViS-Bench Table 3 measured how well each global signal follows human judgement
per concept: DINOv2 is best for location; SBERT over captions is best for main
action, main subjects, main objects and order of actions; CLIP-based scores come
next.  The table below orders the indexers accordingly; the first one present in
the index is used.  Override per concept with ``--signal CONCEPT=INDEXER``.

PE-Core (``pe``) and SigLIP2 (``siglip2``) are not in Table 3: nobody has measured them against the
ConViS human ratings.  They are the same kind of signal as CLIP (contrastive image-text towers,
frame vectors mean-pooled) with stronger published retrieval: PE-Core-L-14-336 reports MSR-VTT
text-to-video R@1 50.3 zero-shot (Perception Encoder paper), a video-retrieval figure CLIP
ViT-L/14 stays well below; SigLIP 2 improves on SigLIP at every size in zero-shot classification
and image-text retrieval (SigLIP 2 paper) but reports no video figure.  So each takes CLIP's
measured place, PE first (its evidence is on video), SigLIP2 next, CLIP after them; none moves
ahead of a signal Table 3 measured as better for that concept.

An indexed signal compares whole clips, not concepts: two concepts scored by the same
signal get the same score, and free text is scored by whatever the signal measures.
``scoring_notices`` says so whenever that happens.

A concept-conditioned indexer (``indexers.conditioned``) stores a vector per unit and concept, embedded under an
instruction that names the concept (``<model id>#location``): such a signal measures the concept itself, so a
concept that has one is scored by it before any signal of the table (``conditioned_concepts``).
"""

from __future__ import annotations

from typing import Iterable

from retrieval.core.concepts import CONVIS_CONCEPTS, Concept, parse_concept
from retrieval.core.errors import ConvisError
from retrieval.core.signal_kinds import CAPTION, CLIPSCORE, CLIPSCORE_MODELS, clipscore_parts, is_vqascore

DEFAULT_ORDER: dict[str, tuple[str, ...]] = {
    "location": ("dinov2", "pe", "siglip2", "clip", "efficientnet-lite0", "internvideo", "videomae", "text"),
    "main-action": ("text", "internvideo", "videomae", "pe", "siglip2", "clip", "dinov2", "efficientnet-lite0"),
    "main-subjects": ("text", "dinov2", "pe", "siglip2", "clip", "efficientnet-lite0", "internvideo", "videomae"),
    "main-objects": ("text", "dinov2", "pe", "siglip2", "clip", "efficientnet-lite0", "internvideo", "videomae"),
    "order-of-actions": ("text", "internvideo", "videomae", "pe", "siglip2", "clip", "dinov2", "efficientnet-lite0"),
}
# free-text concepts: visual-semantic embeddings first
FALLBACK_ORDER: tuple[str, ...] = ("pe", "siglip2", "clip", "dinov2", "internvideo", "videomae", "efficientnet-lite0",
                                   "text")


class SignalError(ConvisError, ValueError):
    """A signal (or a concept's signals) the query cannot use: unknown, not indexed, or asked for wrongly."""

    exit_code, http_status = 2, 400


def parse_overrides(specs: Iterable[str], free_text: bool = False) -> dict[str, str]:
    """``location=clip`` -> {"location": "clip"} (the concept part is read like --concept)."""
    out = {}
    for spec in specs:
        concept, sep, indexer = spec.partition("=")
        if not sep or not concept.strip() or not indexer.strip():
            raise SignalError(f"--signal takes CONCEPT=INDEXER, got {spec!r}")
        out[parse_concept(concept, free_text).key] = indexer.strip()
    return out


def short_name(model_id: str) -> str:
    """The indexer's name in a model id: ``text:sentence-transformers/...`` -> ``text``; a description signal
    keeps its concept: ``text:...#location`` -> ``text#location``, CLIPScore its model: ``clipscore:clip``."""
    name = model_id.split(":")[0]
    parts = clipscore_parts(model_id)
    if parts is not None:  # which model's CLIPScore: ``clipscore:clip``
        return f"{CLIPSCORE}:{short_name(parts[0])}"
    _, sep, concept = model_id.rpartition("#")
    return f"{name}#{concept}" if sep and ":" in model_id else name


def choose_all(concepts: list[Concept], available: dict[str, str], overrides: dict[str, str] | None = None,
               described: dict[str, str] | None = None, cross: dict[str, str] | None = None,
               conditioned: dict[str, str] | None = None) -> dict[str, str]:
    """Each concept's indexer (model id); an override for a concept the query does not have is an error, not
    silently unused. ``cross``: the index's CLIPScore signals (``clipscore_names``); ``conditioned``: its
    concept-conditioned signals (``conditioned_concepts``)."""
    check_concepts(overrides or {}, concepts)
    return {c.key: choose(c.key, available, overrides, described, cross, conditioned) for c in concepts}


def check_concepts(overrides: dict[str, str], concepts: list[Concept]) -> None:
    """An override for a concept the query does not have is an error, not silently unused."""
    keys = [c.key for c in concepts]
    stray = sorted(set(overrides) - set(keys))
    if stray:
        raise SignalError(f"--signal {stray[0]}: not a concept of this query (concepts: {', '.join(keys)})")


def clipscore_names(clipscores: dict[str, str]) -> dict[str, str]:
    """How a user names the index's CLIPScore signals (``clipscores``: indexer name -> signal id):
    ``clipscore:clip``, and ``clipscore`` alone for the first in Table 3's order."""
    names = {f"{CLIPSCORE}:{name}": signal for name, signal in clipscores.items()}
    first = [clipscores[n] for n in CLIPSCORE_MODELS if n in clipscores] + sorted(clipscores.values())
    return {**names, CLIPSCORE: first[0]} if first else names


def split_pair_signals(overrides: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(vector signal overrides, concept -> the VQAScore spec asked for it): VQAScore asks an LMM about each
    pair, so it scores the recalled shortlist instead of recalling."""
    pair = {key: spec for key, spec in overrides.items() if is_vqascore(spec)}
    return {key: spec for key, spec in overrides.items() if key not in pair}, pair


def conditioned_concepts(rows: Iterable, available: dict[str, str]) -> dict[str, str]:
    """concept key -> its concept-conditioned signal (a visual indexer's vectors of the units embedded under that
    concept's instruction), for the indexers the index has (``rows``: the catalog's ``description_signals()``;
    the first model's in name order when several have one)."""
    visual = {model_id: name for name, model_id in available.items() if name != "text"}
    out: dict[str, str] = {}
    for row in sorted(rows, key=lambda r: (visual.get(r.indexer, ""), r.signal)):
        if row.indexer in visual and row.concept != CAPTION:
            out.setdefault(row.concept, row.signal)
    return out


def described_concepts(rows: Iterable, available: dict[str, str]) -> dict[str, str]:
    """concept key -> its description signal (a text indexer's vectors of that concept's descriptions), for
    the text indexer the index has (``rows``: the catalog's ``description_signals()``)."""
    text = available.get("text")
    return {row.concept: row.signal for row in rows if row.indexer == text}


def beside(chosen: dict[str, str], described: dict[str, str], overrides: dict[str, str] | None = None
           ) -> dict[str, str]:
    """concept key -> the description signal that scores it beside its chosen signal: every described concept
    whose signal the user did not pick (an override is the one signal the user wants)."""
    return {key: described[key] for key in chosen
            if key in described and key not in (overrides or {}) and chosen[key] != described[key]}


def description_names(described: dict[str, str] | None) -> dict[str, str]:
    """``text#location`` -> its signal id: how a user names a description signal."""
    return {f"text#{concept}": signal for concept, signal in (described or {}).items()}


def choose(concept_key: str, available: dict[str, str], overrides: dict[str, str] | None = None,
           described: dict[str, str] | None = None, cross: dict[str, str] | None = None,
           conditioned: dict[str, str] | None = None) -> str:
    """Pick the indexer (model id) for a concept. ``available`` maps indexer name -> model id; ``described``
    maps concept key -> its description signal: a concept that has one is scored by it beside its best visual
    signal, which is the one picked here (an override may name a description signal, ``text#location``).
    ``conditioned`` maps concept key -> its concept-conditioned signal: first, before any other; a free-text
    concept without one is scored by the conditioned model's generic vectors (``scoring_notices`` says how to
    store its own)."""
    wanted = (overrides or {}).get(concept_key)
    if not wanted and conditioned:
        if concept_key in conditioned:
            return conditioned[concept_key]
        generic = conditioned_model(conditioned)
        if concept_key not in CONVIS_CONCEPTS and generic in available.values():
            return generic
    if wanted:
        names = {short_name(signal): signal for signal in (conditioned or {}).values()}
        for name, model_id in {**available, **description_names(described), **(cross or {}), **names}.items():
            if wanted in (name, model_id):
                return model_id
        if wanted.split(":")[0] == CLIPSCORE:
            raise SignalError(f"--signal {concept_key}={wanted}: this index has no such CLIPScore; it needs a "
                              f"CLIP-family indexer ({', '.join(CLIPSCORE_MODELS)}) and captions (index with "
                              f"--captions or --captioner){_known(cross)}")
        raise SignalError(f"--signal {concept_key}={wanted}: that indexer is not in this index "
                          f"(indexed: {', '.join(sorted(available)) or 'none'})")
    if concept_key in (described or {}):
        visual = {name: m for name, m in available.items() if name != "text"}
        if visual:
            return choose(concept_key, visual)
    for name in DEFAULT_ORDER.get(concept_key, FALLBACK_ORDER):
        if name in available:
            return available[name]
    if available:
        return available[sorted(available)[0]]
    raise SignalError("nothing is indexed yet: run `convis index FOLDER` first")


def conditioned_model(conditioned: dict[str, str]) -> str:
    """The model id of the indexer whose concept signals ``conditioned`` holds (the first, when several)."""
    return next(iter(conditioned.values())).rpartition("#")[0] if conditioned else ""


def _known(cross: dict[str, str] | None) -> str:
    return f" (it has: {', '.join(sorted(cross))})" if cross else ""


def scorer_label(scored_by: str) -> str:
    """A result's ``scored_by`` in short names: ``dinov2:facebook/... + text:...#location`` -> ``dinov2 +
    text#location``."""
    return " + ".join(short_name(part) for part in scored_by.split(" + "))


def describe(model_id: str) -> str:
    """What a signal measures, for the user: ``the caption similarity (text)``."""
    indexer = short_name(model_id)
    if indexer.startswith("text#"):
        return f"the similarity of the clips' {indexer.partition('#')[2]} descriptions ({indexer})"
    if "#" in indexer:  # a concept-conditioned indexer's vectors of one concept
        name, _, concept = indexer.partition("#")
        return f"{name}'s vectors of the clips under its {concept} instruction ({indexer})"
    if indexer.startswith(f"{CLIPSCORE}:"):
        return f"each clip against the other's caption ({indexer})"
    return "the caption similarity (text)" if indexer == "text" else f"the whole-clip similarity of {indexer}"


def scoring_notices(concepts: list[Concept], signal_of: dict[str, str], available: dict[str, str],
                    beside: dict[str, str] | None = None, described: dict[str, str] | None = None,
                    conditioned: dict[str, str] | None = None) -> list[str]:
    """What to know about ``concepts`` when indexed signals alone score them (no reranker, no fusion): free
    text measured by a whole-clip signal, concepts whose scores are equal because they share a signal (a
    concept scored by its own descriptions too, ``beside``, or by its concept-conditioned vectors, shares
    nothing), and a concept asked alone on its signal that another ConViS concept would be scored by as well
    (``described`` and ``conditioned``: the index's description and concept-conditioned signals, which give a
    concept a signal of its own)."""
    beside, conditioned = beside or {}, conditioned or {}
    own = {key for key, signal in signal_of.items() if conditioned.get(key) == signal}
    free = [_unstored_notice(c, signal_of[c.key]) if conditioned else
            _free_text_notice(c, signal_of[c.key], available) for c in concepts
            if c.key not in CONVIS_CONCEPTS and c.key not in beside and c.key not in own]
    concepts = [c for c in concepts if c.key not in own]
    alone = [c for c in concepts if c.key not in beside]
    return (free + _shared_notices(alone, signal_of, available)
            + _collapse_notices(concepts, alone, signal_of, available, {**(described or {}), **conditioned}))


def _collapse_notices(concepts: list[Concept], alone: list[Concept], signal_of: dict[str, str],
                      available: dict[str, str], described: dict[str, str]) -> list[str]:
    """A ConViS concept alone on its signal in this query, when other ConViS concepts would be scored by that
    signal too: asking for any of them would print the same ranking, and the user should know before trusting
    the concept's name."""
    asked = {c.key for c in concepts}
    notes = []
    for c in alone:
        model_id = signal_of[c.key]
        if c.key not in CONVIS_CONCEPTS or sum(signal_of[o.key] == model_id for o in alone) > 1:
            continue  # free text has its own notice; concepts asked together on one signal have theirs
        alike = [key for key in CONVIS_CONCEPTS if key != c.key and key not in asked
                 and key not in described and choose(key, available) == model_id]
        if alike:
            notes.append(collapse_line([c.key, *alike], model_id))
    return notes


def collapse_line(keys: list[str], model_id: str) -> str:
    """One line: these concepts would rank the same, and why."""
    every = "both" if len(keys) == 2 else "all"
    return (f"{_and(keys)} would rank the same here: {every} are scored by {describe(model_id)}, which does not "
            f"tell them apart; index a description of each concept (<clip>.<concept>.txt beside --captions, or "
            f"--captioner) or rerank with an LMM (--reranker) to separate them")


def meaning_notices(concepts: list[Concept], signal_of: dict[str, str], beside: dict[str, str] | None = None
                    ) -> list[str]:
    """What each ConViS concept scored by a signal that measures whole clips (no description of its own)
    means here: ``main-objects`` scored by caption similarity says how alike the captions are, not the objects."""
    return [f"{c.key} here means {describe(signal_of[c.key])}: it compares the whole clips, not their "
            f"{c.words.lower()} alone (index a {c.key} description of each clip to score it by itself)"
            for c in concepts if c.key in CONVIS_CONCEPTS and c.key not in (beside or {})
            and "#" not in short_name(signal_of[c.key])]


def _free_text_notice(concept: Concept, model_id: str, available: dict[str, str]) -> str:
    alike = [key for key in CONVIS_CONCEPTS if choose(key, available) == model_id]
    same = f", as {_and(alike)} {'is' if len(alike) == 1 else 'are'} by default" if alike else ""
    return (f"'{concept.words}' is free text: no indexed signal measures it, so it is scored by "
            f"{describe(model_id)}{same}; rerank with an LMM (--reranker) to ask about '{concept.words}' itself")


def _unstored_notice(concept: Concept, model_id: str) -> str:
    return (f"'{concept.words}' has no stored vectors of its own: the index embeds each unit per concept for the "
            f"ConViS concepts and those added to it, so it is scored by {describe(model_id)}; to store its own, "
            f"run `convis index FOLDER --concept \"{concept.words}\"`")


def _shared_notices(concepts: list[Concept], signal_of: dict[str, str], available: dict[str, str]) -> list[str]:
    by_signal: dict[str, list[str]] = {}
    for c in concepts:
        by_signal.setdefault(signal_of[c.key], []).append(c.key)
    notes = []
    for model_id, keys in by_signal.items():
        if len(keys) < 2:
            continue
        others = sorted(n for n, m in available.items() if m != model_id)
        other = f", or give one of them another signal (--signal {keys[-1]}={others[0]})" if others else ""
        notes.append(f"{_and(keys)} {'both' if len(keys) == 2 else 'all'} use {describe(model_id)}, so their "
                     f"scores are identical: without a reranker they cannot be told apart; rerank with an LMM "
                     f"(--reranker){other}")
    return notes


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
