"""The sections' registry: a new section is one module and its name in the registry, and a run, its JSON, the saved
report read back and the markdown page take it with nothing else changed."""

import importlib
import json
from dataclasses import dataclass

import pytest

from bench.perf.config import PerfConfig
from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks, combine
from bench.perf.run import run
from bench.perf.section import Section, one_table, rounded
from bench.perf.sections import PAGE, SECTIONS, section_names, sections_help


@dataclass(frozen=True)
class Sample:
    name: str
    seconds: float

    @property
    def per_minute(self) -> float:
        return 60 / self.seconds


def _measure(config, footage, progress):
    progress("sample")
    return [Sample("a", 2.0), Sample("b", 4.0)]


SAMPLE = Section("sample", "two made-up rows", Sample, _measure,
                 one_table("Sample", ["name", "seconds", "a minute"], lambda r: [r.name, r.seconds, r.per_minute]),
                 derived=rounded(per_minute=1),
                 checks=lambda rows: [(f"{r.name} under 3 s", f"{r.seconds} s", r.seconds < 3) for r in rows],
                 needs_clips=False)


@pytest.fixture
def sample(monkeypatch):
    monkeypatch.setitem(SECTIONS, "sample", SAMPLE)


def test_every_section_is_the_module_of_its_name_and_the_help_names_each():
    assert tuple(SECTIONS) == PAGE
    for name, section in SECTIONS.items():
        assert importlib.import_module(f"bench.perf.sections.{name}").SECTION is section
        assert section.help and (section.chosen_by is not None or f"{name}: {section.help}" in sections_help())
    assert set(section_names()) == set(PAGE) - {"long_video", "rerank_lmm"}  # chosen by --long-video and rerank


def test_a_registered_section_is_run_saved_read_back_judged_and_shown(sample, tmp_path):
    said = []
    report = run(PerfConfig.smoke_run(sections=("sample",), videos=tmp_path), progress=said.append, command="c")
    assert said == ["sample"] and report.sample == [Sample("a", 2.0), Sample("b", 4.0)]
    assert report.measured() == ["sample"] and report.runs[0]["parts"] == ["sample"]
    data = json.loads(json.dumps(report.as_dict()))
    assert data["sample"] == [{"name": "a", "seconds": 2.0, "per_minute": 30.0},
                              {"name": "b", "seconds": 4.0, "per_minute": 15.0}]
    assert [c["met"] for c in data["checks"]] == [True, False]
    again = PerfReport.from_dict(data)
    assert again.sample == report.sample and checks(again) == checks(report)
    page = markdown(again)
    assert "## Sample\n" in page and "| a | 2.0 | 30.0 |" in page and "| b under 3 s | 4.0 s | **no** |" in page
    assert combine([report, PerfReport(report.machine, {})]).sample == report.sample


def test_a_report_refuses_rows_of_no_section():
    with pytest.raises(TypeError, match="no perf section named nonsense"):
        PerfReport({}, {}, nonsense=[1])
