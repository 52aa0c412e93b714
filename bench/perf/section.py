"""What a part of `convis bench perf` is: its runner, the rows it returns, their JSON and their page.

A section is one module under ``bench/perf/sections/`` holding one ``Section`` and its row dataclass; the registry
(``bench/perf/sections/__init__.py``) lists them in page order, and the run, the report and the markdown page loop
over it. A section's module imports nothing heavy: its runner is named by "module:function" and imported when the
section runs, so ``convis bench perf --help`` reads every section's name and help without the harness.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import Any, Callable, Mapping, Sequence

from bench.perf.config import Footage, PerfConfig, Progress

Check = tuple[str, str, bool]  # (target, what was measured, met?)
Page = Callable[[list], list[str]]  # a section's rows -> its markdown blocks


@dataclass(frozen=True)
class Section:
    name: str  # its key in the report and its JSON, and its word in --sections
    help: str
    result: type  # the dataclass of its rows
    runner: str | Callable[[PerfConfig, Footage, Progress], list]  # "module:function", imported when it runs
    page: Page  # its heading and table(s)
    derived: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)  # JSON values computed from a row
    checks: Callable[[list], list[Check]] = lambda rows: []  # the targets its rows are judged against
    needs_clips: bool = True  # it measures the clips folder, so a run choosing it refuses an empty one
    chosen_by: Callable[[PerfConfig], bool] | None = None  # None: named in --sections

    @property
    def title(self) -> str:
        """How a run's parts line names it."""
        return self.name.replace("_", " ")

    def chosen(self, config: PerfConfig) -> bool:
        return self.chosen_by(config) if self.chosen_by else self.name in config.sections

    def measure(self, config: PerfConfig, footage: Footage, progress: Progress) -> list:
        runner = self.runner
        if isinstance(runner, str):
            module, _, function = runner.partition(":")
            runner = getattr(import_module(module), function)
        return runner(config, footage, progress)

    def as_dicts(self, rows: list) -> list[dict]:
        return [{**asdict(r), **{key: value(r) for key, value in self.derived.items()}} for r in rows]

    def from_dicts(self, rows: list[dict]) -> list:
        """Rows read back from ``as_dicts``: the derived values dropped, any other unknown key refused."""
        return [self.result(**{k: v for k, v in row.items() if k not in self.derived}) for row in rows]

    def markdown(self, rows: list) -> list[str]:
        return self.page(rows)


def rounded(**digits: int | None) -> dict[str, Callable[[Any], Any]]:
    """Derived JSON values: each named property of a row, rounded to its digits (None: as it is)."""
    def value(name: str, places: int | None) -> Callable[[Any], Any]:
        return lambda r: getattr(r, name) if places is None else round(getattr(r, name), places)
    return {name: value(name, places) for name, places in digits.items()}


def table(head: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def one_table(heading: str, head: Sequence[str], row: Callable[[Any], list]) -> Page:
    """The page of most sections: a heading, then one table of a line a row."""
    return lambda rows: [f"## {heading}\n", table(head, [row(r) for r in rows])]


def maybe(value, form: str = "{}") -> str:
    """A count or share a row may lack (None: not measured there)."""
    return "n/a" if value is None else form.format(value)


def ratio(amount: float, seconds: float) -> float:
    """``amount`` a second: infinite when nothing measurable elapsed (a row read back from a report keeps it)."""
    return amount / seconds if seconds > 0 else math.inf
