"""Readers for the ConViS-Bench release formats, and pairing model scores with the human ones."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from retrieval.core.concepts import BENCH_KEYS, CONVIS_CONCEPTS, slug
from retrieval.core.errors import ConvisError
from retrieval.core.user_files import read_json as read_user_json

PairKey = tuple[str, str]  # (base name of video1, base name of video2), order kept

SIMILARITIES_SUFFIX = "_similarities.json"
RANKING_SUFFIX = "_ranking.json"


class BenchDataError(ConvisError, ValueError):
    """A benchmark file is missing, unreadable or not in the expected format."""

    exit_code, http_status = 2, 400


def check_unique(keys, what: str) -> None:
    """BenchDataError naming the first key of ``keys`` seen twice (``what``: "dataset X: sample_key")."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise BenchDataError(f"{what} {key!r} appears more than once")
        seen.add(key)


# ---------------------------------------------------------------- names


def base_name(path: str) -> str:
    """`videos_trimmed/education/1754_007.mp4` -> `1754_007.mp4` (releases differ in folder prefixes)."""
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def pair_key(video1: str, video2: str) -> PairKey:
    return base_name(video1), base_name(video2)


def concept_key(name: str) -> str | None:
    """Concept slug for `Main_Action`, `MainAction`, `main-action`...; None if not a ConViS concept."""
    compact = slug(name).replace("-", "")
    return next((c for c in CONVIS_CONCEPTS if c.replace("-", "") == compact), None)


BENCH_KEY_TO_CONCEPT = {key: concept for concept, key in BENCH_KEYS.items()}


# ---------------------------------------------------------------- JSON


def read_json(path: str | Path, what: str) -> Any:
    path = Path(path)
    if not path.exists():
        raise BenchDataError(f"{what} not found: {path}")
    if not path.is_file():
        raise BenchDataError(f"{what} is not a file: {path}")
    return read_user_json(path, what, error=BenchDataError)


def _expect_list_of_dicts(data: Any, path: Path | str, fields: tuple[str, ...]) -> list[dict]:
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise BenchDataError(f"{path}: expected a list of {{{', '.join(fields)}}} objects")
    for i, entry in enumerate(data):
        missing = [f for f in fields if f not in entry]
        if missing:
            raise BenchDataError(f"{path}: entry {i} lacks {', '.join(missing)}")
    return data


def _number(value: Any, where: str) -> float:
    """A rating, score or rank as a float; JSON's NaN and Infinity (Python writes them) are refused here, where
    the row is known, as they would otherwise make every correlation over them null."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchDataError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise BenchDataError(f"{where}: expected a finite number, got {value!r}")
    return float(value)


# ---------------------------------------------------------------- pair files


@dataclass(frozen=True)
class GtPair:
    video1: str  # as written in the file
    video2: str
    scores: dict[str, float]  # concept slug -> mean human rating (1-5)

    @property
    def key(self) -> PairKey:
        return pair_key(self.video1, self.video2)


def load_gt_pairs(path: str | Path) -> dict[PairKey, GtPair]:
    """`[{video1, video2, conditioned_similarity: {MainAction: ...}}]`; a repeated pair keeps its last entry."""
    fields = ("video1", "video2", "conditioned_similarity")
    data = _expect_list_of_dicts(read_json(path, "ground-truth file"), path, fields)
    pairs: dict[PairKey, GtPair] = {}
    for i, entry in enumerate(data):
        scores = _gt_scores(entry["conditioned_similarity"], f"{path}: entry {i}")
        pair = GtPair(str(entry["video1"]), str(entry["video2"]), scores)
        pairs[pair.key] = pair
    if not pairs:
        raise BenchDataError(f"{path}: no pairs")
    return pairs


def _gt_scores(raw: Any, where: str) -> dict[str, float]:
    if not isinstance(raw, dict):
        raise BenchDataError(f"{where}: conditioned_similarity must be an object")
    scores = {}
    for name, value in raw.items():
        concept = BENCH_KEY_TO_CONCEPT.get(name) or concept_key(name)
        if concept is not None:
            scores[concept] = _number(value, f"{where} {name}")
    return scores


def load_pair_scores(path: str | Path) -> dict[PairKey, float]:
    """`[{video1, video2, similarity}]` -> ordered pair of base names -> score (a repeated pair keeps its last)."""
    data = _expect_list_of_dicts(read_json(path, "similarity file"), path, ("video1", "video2", "similarity"))
    return {
        pair_key(e["video1"], e["video2"]): _number(e["similarity"], f"{path}: entry {i}")
        for i, e in enumerate(data)
    }


@dataclass(frozen=True)
class Matched:
    model: np.ndarray  # model scores of the matched pairs
    human: np.ndarray  # human means, same order
    n_gt: int  # pairs the ground truth rates for this concept

    @property
    def n(self) -> int:
        return len(self.model)


def match_pairs(model: dict[PairKey, float], gt: dict[PairKey, GtPair], concept: str) -> Matched:
    """Pairs present in both, on the ORDERED pair of base names, as the reference matches them."""
    rated = {k: p.scores[concept] for k, p in gt.items() if concept in p.scores}
    keys = [k for k in model if k in rated]
    return Matched(
        np.array([model[k] for k in keys], dtype=np.float64),
        np.array([rated[k] for k in keys], dtype=np.float64),
        len(rated),
    )


def gt_concepts(gt: dict[PairKey, GtPair]) -> list[str]:
    """Concepts the ground truth rates, in the paper's order."""
    present = {c for p in gt.values() for c in p.scores}
    return [c for c in CONVIS_CONCEPTS if c in present]


# ---------------------------------------------------------------- retrieval files

HumanRanks = dict[str, dict[str, dict[str, int]]]  # concept -> anchor -> candidate -> rank
ModelScores = dict[str, dict[str, float]]  # anchor -> candidate -> score


def load_ranked(path: str | Path) -> HumanRanks:
    """`[{"anchor": a, "MainAction": {c: rank}, ...}]` (rank 1 = most similar) -> concept -> anchor -> ranks."""
    return ranked_from_data(read_json(path, "ranking file"), path)


def ranked_from_data(data: Any, path: str | Path) -> HumanRanks:
    """The parsed `ranked.json` structure (from a file or from `make_split`) -> concept -> anchor -> ranks."""
    _refuse_other_format(data, path)
    data = _expect_list_of_dicts(data, path, ("anchor",))
    out: HumanRanks = {}
    for i, entry in enumerate(data):
        anchor = base_name(entry["anchor"])
        for name, ranks in entry.items():
            concept = BENCH_KEY_TO_CONCEPT.get(name) or concept_key(name)
            if concept is None or name == "anchor":
                continue
            out.setdefault(concept, {})[anchor] = _ranks(ranks, f"{path}: entry {i} {name}")
    if not out:
        raise BenchDataError(f"{path}: no concept rankings found")
    return {c: out[c] for c in CONVIS_CONCEPTS if c in out}


def _refuse_other_format(data: Any, path: str | Path) -> None:
    """Another release file given where human rankings belong: say what it is and how to make rankings."""
    what = _other_format(data)
    if what is None:
        return
    # pair ratings are make-split's input; for any other file point at the ratings, beside it when they are
    ratings = Path(path).with_name(GT_PAIRS_NAME)
    pairs = path if what == PAIR_RATINGS else (ratings if ratings.is_file() else GT_PAIRS_NAME)
    raise BenchDataError(
        f"{path} {what}, not human rankings; make those from the pair ratings with "
        f"`convis bench make-split --pairs {pairs} --out ranked.json` and pass --gt ranked.json"
    )


GT_PAIRS_NAME = "gt_conditioned_similarities.json"
PAIR_RATINGS = "holds pair ratings ({video1, video2, conditioned_similarity})"


def _other_format(data: Any) -> str | None:
    """Which release format ``data`` is in, when it is one that holds no human rankings."""
    if isinstance(data, list) and data and all(isinstance(d, dict) and {"video1", "video2"} <= d.keys() for d in data):
        if all("conditioned_similarity" in d for d in data):
            return PAIR_RATINGS
        return "holds pair scores ({video1, video2, similarity})"
    if not isinstance(data, dict) or not data:
        return None
    if all(isinstance(v, list) for v in data.values()):
        return "is a retrieval split ({anchor: [candidates]}, the to_be_ranked.json format)"
    if all(isinstance(v, dict) for v in data.values()):
        return "holds retrieval scores ({anchor: {candidate: score}})"
    return None


def _ranks(raw: Any, where: str) -> dict[str, int]:
    if not isinstance(raw, dict) or not raw:
        raise BenchDataError(f"{where}: expected a non-empty {{candidate: rank}} object")
    ranks = {}
    for cand, rank in raw.items():
        value = _number(rank, f"{where} {cand}")
        if not value.is_integer() or value < 1:
            raise BenchDataError(f"{where} {cand}: rank must be an integer >= 1, got {rank!r}")
        ranks[base_name(cand)] = int(value)
    return ranks


def load_retrieval_scores(path: str | Path) -> ModelScores:
    """`{anchor: {candidate: score}}`, names reduced to base names."""
    data = read_json(path, "retrieval score file")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise BenchDataError(f"{path}: expected {{anchor: {{candidate: score}}}}")
    return {
        base_name(a): {base_name(c): _number(s, f"{path}: {a} {c}") for c, s in cands.items()}
        for a, cands in data.items()
    }


# ---------------------------------------------------------------- finding score files


@dataclass(frozen=True)
class ScoreFile:
    path: Path
    model: str  # the model's folder name in the released layout, else the file's stem
    concept: str | None  # None = a global signal, scored against every concept


def discover(paths: Iterable[str | Path], suffix: str) -> list[ScoreFile]:
    """Files as given, folders searched recursively for `*<suffix>`; each path listed once."""
    found: dict[Path, ScoreFile] = {}
    for raw in paths:
        root = Path(raw)
        if root.is_dir():
            files = sorted(root.rglob(f"*{suffix}"))
            if not files:
                raise BenchDataError(f"no *{suffix} files under {root}")
        elif root.is_file():
            files = [root]
        else:
            raise BenchDataError(f"not found: {root}")
        for f in files:
            found.setdefault(f.resolve(), describe(f, suffix))
    return list(found.values())


def describe(path: Path, suffix: str) -> ScoreFile:
    """Model and concept from `<Concept>/<Model>/<Model>_<Concept><suffix>` or `<Model dir>/<Model><suffix>`."""
    stem = path.name[: -len(suffix)] if path.name.endswith(suffix) else path.stem
    concept = concept_key(path.parent.parent.name) if path.parent.parent != path.parent else None
    stem, named_concept = _split_concept(stem)
    concept = concept or named_concept
    # the released layout names the model by its folder; the file stem may be shorter
    # (`LLaVA-OneVision_mPLUG-Owl3-7B-240728/LLaVA-OneVision_similarities.json`)
    model = path.parent.name if stem and path.parent.name.startswith(stem) else stem
    return ScoreFile(path, model or path.stem, concept)


def _split_concept(stem: str) -> tuple[str, str | None]:
    """`InternVL2_5-8B_Main_Action` -> (`InternVL2_5-8B`, `main-action`)."""
    for concept, words in CONVIS_CONCEPTS.items():
        for spelling in (words.replace(" ", "_"), BENCH_KEYS[concept], concept):
            if stem.lower().endswith("_" + spelling.lower()):
                return stem[: -len(spelling) - 1], concept
    return stem, None
