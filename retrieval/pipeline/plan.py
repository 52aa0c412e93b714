"""What an indexing run has to do: the files found against what the catalog already holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from retrieval.media.scan import FoundFile
from retrieval.store.catalog.records import FileState


@dataclass(frozen=True)
class Plan:
    new: list[FoundFile]
    changed: list[FoundFile]
    missing_vectors: list[FoundFile]  # indexed, but not yet by every requested indexer
    unchanged: list[FoundFile]  # indexed, every vector there
    deleted: list[str]
    failed: list[FoundFile]  # failed in an earlier run for a lasting reason and unchanged since: not retried
    resegment: list[FoundFile]  # indexed with units of another length than the index's
    retry: list[FoundFile] = field(default_factory=list)  # failed earlier for a passing reason (or asked): again
    # indexed files whose stat key moved (or was never recorded) over the same bytes: the key to record, no work
    restamped: list[FoundFile] = field(default_factory=list)

    @property
    def work(self) -> list[FoundFile]:
        return self.new + self.changed + self.retry + self.resegment + self.missing_vectors


def plan(found: list[FoundFile], known: dict[str, FileState], complete: set[str],
         resegment: set[str] = frozenset(), retry_failed: bool = False,
         same_bytes: Callable[[FoundFile, str], bool] | None = None) -> Plan:
    """Split found files by what must happen to them; ``complete`` = paths with every requested vector,
    ``resegment`` = indexed paths whose units are not the index's unit length.  An unchanged file that failed
    is tried again when its failure was transient (timed out, crashed, disk full), or every one with
    ``retry_failed``; one that is not a video is not, as the same bytes would fail the same way.  An indexed
    file with its size and mtime but another stat key is hashed (``same_bytes(file, stored hash)``): other bytes
    make it changed, the same ones only restamp it."""
    new, changed, missing, unchanged, failed, stale, retry, restamped = [], [], [], [], [], [], [], []
    for f in found:
        state = known.get(f.rel)
        if state is None:
            new.append(f)
        elif state.size != f.size or abs(state.mtime - f.mtime) > 1e-6:
            changed.append(f)
        elif state.status == "ok" and f.stat_key and state.stat_key != f.stat_key and not _stamped(
                f, state, same_bytes, restamped):
            changed.append(f)
        elif state.status != "ok":
            (retry if state.transient or retry_failed else failed).append(f)
        elif f.rel in resegment:
            stale.append(f)
        elif f.rel not in complete:
            missing.append(f)
        else:
            unchanged.append(f)
    return Plan(new, changed, missing, unchanged, gone(found, known), failed, stale, retry, restamped)


def _stamped(f: FoundFile, state: FileState, same_bytes: Callable[[FoundFile, str], bool] | None,
             restamped: list[FoundFile]) -> bool:
    """Whether ``f``, whose stat key differs from the stored one, holds its stored bytes (then it is restamped). A
    key never recorded (a catalog of an earlier release) is taken as it is: hashing every file once on upgrade
    would cost a full read of the collection."""
    if state.stat_key is None or same_bytes is None or not state.content_hash or same_bytes(f, state.content_hash):
        restamped.append(f)
        return True
    return False


# A run may forget up to this share of the files an index lists; more (a folder that is not the one indexed,
# a mount point whose drive is absent) is refused unless pruning is asked for, since forgetting loses vectors
# that only re-embedding brings back.
PRUNE_SHARE = 0.5


def gone(found: list[FoundFile], known: dict[str, FileState]) -> list[str]:
    """Indexed paths not among the files found, but for unavailable ones (``pipeline.availability``): the ones the
    run forgets."""
    present = {f.rel for f in found}
    return sorted(p for p, state in known.items() if p not in present and not state.unavailable)


def needs_prune(forgetting: int, listed: int) -> bool:
    """Whether forgetting ``forgetting`` of the ``listed`` files is more than a run does unasked."""
    return forgetting > PRUNE_SHARE * listed
