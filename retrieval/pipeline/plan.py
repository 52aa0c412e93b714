"""What an indexing run has to do: the files found against what the catalog already holds."""

from __future__ import annotations

from dataclasses import dataclass

from retrieval.media.scan import FoundFile
from retrieval.store.catalog import FileState


@dataclass(frozen=True)
class Plan:
    new: list[FoundFile]
    changed: list[FoundFile]
    missing_vectors: list[FoundFile]  # indexed, but not yet by every requested indexer
    unchanged: list[FoundFile]
    deleted: list[str]

    @property
    def work(self) -> list[FoundFile]:
        return self.new + self.changed + self.missing_vectors


def plan(found: list[FoundFile], known: dict[str, FileState], complete: set[str]) -> Plan:
    """Split found files by what must happen to them; ``complete`` = paths with every requested vector."""
    new, changed, missing, unchanged = [], [], [], []
    for f in found:
        state = known.get(f.rel)
        if state is None:
            new.append(f)
        elif state.size != f.size or abs(state.mtime - f.mtime) > 1e-6:
            changed.append(f)
        elif state.status == "ok" and f.rel not in complete:
            missing.append(f)
        else:
            unchanged.append(f)
    present = {f.rel for f in found}
    deleted = sorted(p for p in known if p not in present)
    return Plan(new, changed, missing, unchanged, deleted)
