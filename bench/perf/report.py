"""A run's report: each section's rows, the targets judged from them, and reports of several runs made one."""

from __future__ import annotations

from typing import Sequence

from bench.perf.section import Check
from bench.perf.sections import SECTIONS
from retrieval.core.user_files import read_json


class PerfReport:
    """The machine and the settings of a run, its notes and runs, and each section's rows as an attribute named
    by the section (``report.indexing``; empty where it was not measured)."""

    def __init__(self, machine: dict, config: dict, notes: list[str] | None = None, runs: list[dict] | None = None,
                 **rows: list):
        unknown = sorted(set(rows) - set(SECTIONS))
        if unknown:
            raise TypeError(f"no perf section named {', '.join(unknown)}")
        self.machine, self.config = machine, config
        self.notes: list[str] = list(notes or [])
        self.runs: list[dict] = list(runs or [])  # each run that measured a part: machine facts + command + parts
        for name in SECTIONS:
            setattr(self, name, list(rows.get(name, [])))

    def rows(self, name: str) -> list:
        return getattr(self, name)

    def measured(self) -> list[str]:
        """The sections that have rows, in page order."""
        return [name for name in SECTIONS if self.rows(name)]

    def as_dict(self) -> dict:
        return {
            "machine": self.machine, "config": self.config, "notes": self.notes, "runs": self.runs,
            **{name: section.as_dicts(self.rows(name)) for name, section in SECTIONS.items()},
            "checks": [dict(zip(("target", "measured", "met"), c, strict=False)) for c in checks(self)],
        }

    @classmethod
    def read(cls, path) -> "PerfReport":
        """A report saved by ``convis bench perf --json``, read with the size and nesting limits of user files."""
        return cls.from_dict(read_json(path, "perf report"))

    @classmethod
    def from_dict(cls, data: dict) -> "PerfReport":
        """Read back what ``as_dict`` wrote (``convis bench perf --json``)."""
        return cls(data["machine"], data["config"], list(data.get("notes", [])),
                   list(data.get("runs") or [data["machine"]]),
                   **{name: section.from_dicts(data.get(name, [])) for name, section in SECTIONS.items()})


def checks(report: PerfReport) -> list[Check]:
    """(target, what was measured, met?) for every target the report has numbers for."""
    return [check for name, section in SECTIONS.items() for check in section.checks(report.rows(name))]


def combine(reports: Sequence[PerfReport]) -> PerfReport:
    """One report from runs that measured different parts (or again): each part from the last run
    that has it; every run's command and machine facts are kept."""
    out = PerfReport(reports[-1].machine, reports[-1].config)
    source = {}  # part -> the report it comes from
    for name in SECTIONS:
        for i, report in enumerate(reports):
            if report.rows(name):
                setattr(out, name, report.rows(name))
                source[name] = i
    out.notes = list(dict.fromkeys(n for r in reports for n in r.notes))
    for i, report in enumerate(reports):  # a run whose every part was measured again later drops out
        used = [SECTIONS[name].title for name in SECTIONS if source.get(name) == i]
        out.runs += [{**run, "parts": used} for run in report.runs] if used else []
    return out
