"""Index passes as stages: a new pass is one module and its registration, runs in `convis index` after the
built-in ones, lands its counts in the report, and resumes where a stopped run left it."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.pipeline.passes.base import PassContext
from retrieval.pipeline.passes.registry import register, registered, unregister
from retrieval.pipeline.run import IndexReport
from retrieval.store.catalog import Catalog
from tests.media import make_clip
from tests.retrieval.pipeline.sample_pass import PREFIX, UnitTally

BUILT_IN = ["subtitles", "speech", "captions", "descriptions", "description_vectors", "concept_vectors"]


@pytest.fixture
def tally():
    register(UnitTally)
    yield UnitTally
    UnitTally.stop_after = None
    unregister(UnitTally.name)


def index(folder, index_dir):
    result = CliRunner().invoke(app, ["index", str(folder), "-i", "efficientnet-lite0", "--workers", "1",
                                      "--segment", "1", "--index-dir", str(index_dir), "--json"])
    return result.exit_code, (json.loads(result.stdout) if result.exit_code == 0 else result.exception)


def pending(index_dir, root):
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        return UnitTally().pending(PassContext(catalog, index_dir, root))


def test_a_registered_pass_runs_in_convis_index_and_resumes_where_it_stopped(tally, tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name, shade in (("a.mp4", 40), ("b.mp4", 200)):
        make_clip(folder / name, frames=20, pixels=lambda i, shade=shade: np.full((48, 64, 3), shade, np.uint8))
    index_dir = tmp_path / "index"
    assert [p.name for p in registered()] == [*BUILT_IN, "unit_tally"]
    tally.stop_after = 1  # the run stops in the pass, after one file's tally is committed
    code, error = index(folder, index_dir)
    assert code != 0 and "the sample pass stops here" in str(error)
    assert [rel for rel, _ in pending(index_dir, folder)] == ["b.mp4"]
    tally.stop_after = None
    code, report = index(folder, index_dir)
    assert code == 0 and (report["unchanged"], report["tallied_files"], report["tallied_units"]) == (2, 1, 2)
    assert report["subtitle_reads"] == 0 and report["description_signals"] == []  # the built-in keys stay
    assert pending(index_dir, folder) == []
    make_clip(folder / "c.mp4", frames=30, pixels=lambda i: np.full((48, 64, 3), 120, np.uint8))
    code, report = index(folder, index_dir)
    assert (report["indexed"], report["tallied_files"], report["tallied_units"]) == (1, 1, 3)
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        tallies = sorted(catalog.setting(PREFIX + s.content_hash) for s in catalog.file_states().values())
    assert tallies == ["2", "2", "3"]


def test_a_report_lists_every_registered_pass_flat_and_reads_its_counts_as_its_own(tally):
    report = IndexReport(["efficientnet-lite0:x"])
    report.passes["unit_tally"].tallied_files = 3
    report.passes["captions"].captioned, report.passes["descriptions"].captioned = 2, 1
    data = report.as_dict()
    assert (data["tallied_files"], report.tallied_files, data["captioned"], report.captioned) == (3, 3, 3, 3)
    assert list(data)[:9] == ["indexers", "found", "indexed", "unchanged", "forgotten", "unavailable", "units",
                              "frames", "seconds"]
    assert list(data)[-4:] == ["failed", "failed_earlier", "excluded", "notes"]
    assert not hasattr(report, "no_such_count")


def test_a_pass_registers_once_and_where_it_is_asked_to_run(tally):
    with pytest.raises(ValueError, match="registered twice"):
        register(UnitTally)
    unregister(UnitTally.name)
    register(UnitTally, before="captions")
    assert [p.name for p in registered()] == ["subtitles", "speech", "unit_tally", "captions", "descriptions",
                                              "description_vectors", "concept_vectors"]
    with pytest.raises(ValueError, match="no index pass"):
        register(type("Late", (UnitTally,), {"name": "late"}), before="nowhere")
