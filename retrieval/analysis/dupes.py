"""``dupes``: the index's near-duplicate files (or units), in groups, with one to keep in each.

The vectors are one indexed signal's (``--indexer``; default the ``fingerprint`` indexer's when the index holds
it, made for copies, else the first visual indexer's, with a notice that semantic vectors also group footage of
one place).  Grouping is ``dupe_groups``; this module reads the catalog, picks the threshold and the keeper.

``--auto`` reads the threshold from the signal's background (``retrieval.store.backgrounds``: random unit pairs,
the reference query confidence reads scores against, ``calibration.py``), on the distance ``1 - similarity``
and a log scale, where a copy's distance is a small fraction of an unrelated pair's: centre the background's
median distance, scale the quartile sigma of its log (the wider of its two sides; as calibration's cuts, read
from the bulk, which stays the unrelated pairs' while fewer than a quarter of pairs are related), threshold
``AUTO_Z`` sigmas below the median; never below the "high" confidence cut, so a group is never looser than a
high-confidence match.  On the example clips' test set (tests/near_copies.py) this gives 0.90 with copies at
0.95 and above and the campus takes at 0.86 and below; without the copies, 0.92.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from retrieval.analysis import dupe_groups
from retrieval.search import filters
from retrieval.search.calibration import QUARTILE_SIGMA, Cuts
from retrieval.search.requests import DupesError
from retrieval.store import index_dir as store
from retrieval.store.catalog import Catalog, FileListing, list_files
from retrieval.store.catalog.records import BackgroundRow

FINGERPRINT = "fingerprint"
AUTO_Z = 5.0  # sigmas of the background's log distance below its median
AUTO_RULE = (f"distance 1 - similarity at most the background's median distance x exp(-{AUTO_Z:g} sigma) (sigma: "
             "the wider quartile sigma of its log), and never below the high confidence cut")


def auto_threshold(row: BackgroundRow | None) -> float | None:
    """The similarity from which a pair is a near-duplicate, read from ``row``; None when it tells no spread."""
    cuts = Cuts.of_row(row)
    if cuts is None:
        return None
    far = [1.0 - row.at(q) for q in (0.75, 0.50, 0.25)]  # distances, nearest quartile first
    if min(far) <= 0:
        return None
    logs = [math.log(d) for d in far]
    # the wider side of the median: related pairs (takes of one scene) bend one side of the bulk, not both
    sigma = max(logs[1] - logs[0], logs[2] - logs[1]) / QUARTILE_SIGMA
    return float(min(1.0, max(1.0 - far[1] * math.exp(-AUTO_Z * sigma), cuts.high)))


@dataclass(frozen=True)
class Member:
    path: str
    start: float  # the unit's span (file level: the span of its units that matched)
    end: float
    similarity: float  # its highest similarity to another member
    keep: bool


@dataclass(frozen=True)
class Group:
    members: list[Member]

    @property
    def similarity(self) -> float:
        """The lowest of the members' best similarities: how alike the least alike member is to another."""
        return min(m.similarity for m in self.members)

    def as_dict(self) -> dict:
        return {"similarity": round(self.similarity, 4),
                "members": [{**asdict(m), "similarity": round(m.similarity, 4), "start": round(m.start, 3),
                             "end": round(m.end, 3)} for m in self.members]}


@dataclass
class DupesResult:
    level: str
    signal: str
    threshold: float
    chosen: str  # "auto" or "given"
    keep_by: str
    groups: list[Group]
    root: str
    notices: list[str] = field(default_factory=list)
    semantic: bool = False  # grouped by a semantic embedding: alike footage, not only copies
    drop_asked: bool = False  # a semantic grouping proposes a drop list only when asked (``--drop``)

    @property
    def proposes_drop(self) -> bool:
        """Whether the groups come with a drop list: always for copies (a fingerprint), for a semantic signal only
        when asked, since three takes of one scene are alike without being copies."""
        return not self.semantic or self.drop_asked

    @property
    def withheld(self) -> str | None:
        """Why no drop list is proposed, when it is not."""
        if self.proposes_drop or not self.groups:
            return None
        return (f"no drop list: {self.signal.split(':')[0]} is a semantic embedding, so a group may be distinct "
                "footage of one scene rather than copies; check the groups, then ask for the list with --drop (or "
                "index with `-i fingerprint`, which groups copies only)")

    @property
    def drop(self) -> list[str]:
        """What to remove: every member but each group's keeper (file level: paths; unit level: path@start-end);
        none for a semantic grouping nobody asked to drop from."""
        if not self.proposes_drop:
            return []
        if self.level == "file":
            return [m.path for g in self.groups for m in g.members if not m.keep]
        return [f"{m.path}@{m.start:g}-{m.end:g}" for g in self.groups for m in g.members if not m.keep]

    def as_dict(self) -> dict:
        return {"level": self.level, "signal": self.signal, "threshold": round(self.threshold, 4),
                "threshold_by": self.chosen, **({"rule": AUTO_RULE} if self.chosen == "auto" else {}),
                "keep_by": self.keep_by, "root": self.root, "groups": [g.as_dict() for g in self.groups],
                "drop": self.drop, "semantic": self.semantic, "drop_withheld": self.withheld,
                "notices": self.notices}


def run_dupes(request, index_dir: Path) -> DupesResult:
    """The groups ``request`` (a ``requests.DupesRequest``) asks of the index in ``index_dir``."""
    notices: list[str] = []
    with store.reading(index_dir, notices) as catalog:
        signal = _signal(catalog, request.indexer, notices)
        notices += filters.notices(catalog, request.where)
        threshold, chosen = _threshold(catalog, signal, request.threshold)
        units, files = _units(catalog, signal, request.where)
        root = str(store.root_of(catalog, index_dir))
    pairs = dupe_groups.unit_pairs(units.vectors, threshold)
    if pairs.saturated:
        notices.append(f"{pairs.saturated} units have more than {dupe_groups.NEIGHBOURS} others at least {threshold:g} "
                       f"alike: only the nearest {dupe_groups.NEIGHBOURS} of each are paired; the threshold is too "
                       "low to tell copies, raise it (or use --auto)")
    group = _file_groups if request.level == "file" else _unit_groups
    groups = group(units, files, pairs, Keeper(request.keep, Path(root)))
    semantic = not signal.startswith(f"{FINGERPRINT}:") and signal != FINGERPRINT
    return DupesResult(request.level, signal, threshold, chosen, request.keep, groups, root, notices, semantic)


def _signal(catalog: Catalog, wanted: str | None, notices: list[str]) -> str:
    """The stored signal to group by: ``wanted`` (an indexer's name or model id), else the fingerprint's, else the
    first visual indexer's."""
    rows = [r for r in catalog.indexers() if r.kind != "text"]
    if wanted is not None:
        for row in rows:
            if wanted in (row.name, row.indexer):
                return row.indexer
        names = ", ".join(r.name for r in rows) or "none"
        raise DupesError(f"--indexer {wanted!r} is not a visual indexer of this index (it has: {names})")
    if not rows:
        raise DupesError("this index holds no visual vectors to compare: index it with `-i fingerprint`")
    chosen = next((r for r in rows if r.name == FINGERPRINT), rows[0])
    if chosen.name != FINGERPRINT:
        notices.append(f"grouping by {chosen.name}, a semantic embedding: it also scores footage of one place or "
                       "one kind of scene as alike; index with `-i fingerprint` for copies only")
    return chosen.indexer


def _threshold(catalog: Catalog, signal: str, given: float | None) -> tuple[float, str]:
    if given is not None:
        return given, "given"
    threshold = auto_threshold(catalog.backgrounds().get(signal))
    if threshold is None:
        raise DupesError(f"--auto needs the background of {signal}, and this index keeps none worth reading "
                         "(too few units, or indexed before backgrounds were kept): give --threshold")
    return threshold, "auto"


def _units(catalog: Catalog, signal: str, where) -> tuple[dupe_groups.Units, list[FileListing]]:
    ids, vectors = catalog.vectors(signal)
    allowed = filters.allowed_units(catalog, where)
    if allowed is not None:
        kept = np.isin(ids, allowed)
        ids, vectors = ids[kept], vectors[kept]
    rows = catalog.units(ids.tolist())
    held = {r.path for r in rows.values()}
    files = [f for f in list_files(catalog, with_lines=False) if f.path in held]  # sizes and dates only
    at = {f.path: i for i, f in enumerate(files)}
    file = np.array([at[rows[int(u)].path] for u in ids], np.int64)
    start = np.array([rows[int(u)].start for u in ids], np.float64)
    end = np.array([rows[int(u)].end for u in ids], np.float64)
    return dupe_groups.Units(ids, vectors, file, start, end), files


@dataclass(frozen=True)
class Keeper:
    """How a group's keeper is chosen: by ``keep`` (the longest, the most pixels, or the oldest file; ties to the
    first path), never a symlink over a real file: a link to an indexed file is a second name for it, and
    removing the target would leave the link dangling."""

    keep: str
    root: Path

    def choose(self, files: list[FileListing], candidates: list[int], length: dict[int, float]) -> int:
        def key(i: int):
            f = files[i]
            link = _is_link(self.root / f.path)
            if self.keep == "resolution":
                return (link, -((f.width or 0) * (f.height or 0)), f.path)
            if self.keep == "oldest":
                return (link, f.mtime if f.mtime is not None else math.inf, f.path)
            return (link, -length[i], f.path)

        return min(candidates, key=key)


def _is_link(path: Path) -> bool:
    try:
        return path.is_symlink()
    except OSError:  # unreadable or unmounted: not known to be a link
        return False


def _file_groups(units: dupe_groups.Units, files: list[FileListing], pairs: dupe_groups.Pairs,
                 keeper: Keeper) -> list[Group]:
    found = dupe_groups.file_pairs(units, pairs)
    best = dupe_groups.best_each(len(files), found.a, found.b, found.similarity)
    length = np.bincount(units.file, weights=units.duration, minlength=len(files))
    groups = []
    for members in dupe_groups.components(len(files), found.a, found.b):
        chosen = keeper.choose(files, members.tolist(), {i: length[i] for i in members.tolist()})
        spans = {i: _span(found.spans, i, members) for i in members.tolist()}
        groups.append(Group([Member(files[i].path, *spans[i], float(best[i]), i == chosen)
                             for i in members.tolist()]))
    return groups


def _span(spans: dict, file: int, members: np.ndarray) -> tuple[float, float]:
    """The span of ``file`` that matched another member of its group."""
    found = [spans[(file, int(o))] for o in members if (file, int(o)) in spans]
    return min(s for s, _ in found), max(e for _, e in found)


def _unit_groups(units: dupe_groups.Units, files: list[FileListing], pairs: dupe_groups.Pairs,
                 keeper: Keeper) -> list[Group]:
    best = dupe_groups.best_each(len(units.ids), pairs.a, pairs.b, pairs.similarity)
    groups = []
    for members in dupe_groups.components(len(units.ids), pairs.a, pairs.b):
        by_file = {int(units.file[i]): int(i) for i in sorted(members, key=lambda i: units.duration[i])}  # its longest
        length = {f: float(units.duration[u]) for f, u in by_file.items()}
        chosen = by_file[keeper.choose(files, list(by_file), length)]
        groups.append(Group([Member(files[units.file[i]].path, float(units.start[i]), float(units.end[i]),
                                    float(best[i]), int(i) == chosen) for i in members.tolist()]))
    return groups
