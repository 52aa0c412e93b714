"""A concept-conditioned indexer's per-concept vectors: one signal per concept, each vector stamped with the
instruction it was made under; resumable, and re-embedded only where an instruction changed."""

import subprocess
import sys

import pytest

from indexers.conditioned import Instructions
from retrieval.core.concepts import CONVIS_CONCEPTS
from retrieval.pipeline import concept_index
from retrieval.store.catalog import Catalog
from tests.conditioned import INSTRUCTIONS, ToyConditioned, index_cli, toy_registered
from tests.paths import ROOT

MODEL = "toy-conditioned:toy"
UNITS = 4  # video_folder's clips, one unit each


@pytest.fixture
def toy():
    with toy_registered() as model:
        yield model
    ToyConditioned.instructions = INSTRUCTIONS


def stored(index_dir):
    """signal -> {unit id: instruction digest}, of every concept signal, and the count of rows per (signal, unit)."""
    with Catalog(index_dir / "catalog.duckdb", read_only=True) as catalog:
        signals = {row.signal: catalog.vector_sources(row.signal) for row in catalog.description_signals()}
        rows = catalog.db.execute("SELECT indexer, unit_id, count(*) FROM embeddings GROUP BY ALL").fetchall()
    return signals, {(s, u): n for s, u, n in rows}


def test_each_unit_gets_a_vector_per_concept_under_its_instruction(toy, tmp_path, video_folder):
    code, report = index_cli(video_folder, tmp_path / "index", "--concept", "camera angle")
    assert code == 0, report
    wanted = [*CONVIS_CONCEPTS, "camera-angle"]
    assert sorted(report["concept_signals"]) == sorted(f"{MODEL}#{key}" for key in wanted)
    assert report["concept_vectors"] == UNITS * len(wanted) and report["description_signals"] == []
    signals, _ = stored(tmp_path / "index")
    for key in wanted:
        words = "camera angle" if key == "camera-angle" else key
        assert set(signals[f"{MODEL}#{key}"].values()) == {concept_index.digest(INSTRUCTIONS.for_concept(key, words))}
        assert len(signals[f"{MODEL}#{key}"]) == UNITS
    # each unit decoded once for all its concepts: one call a concept, every unit in it
    concept_calls = [c for c in toy.calls if c[0] == "units" and c[1] != INSTRUCTIONS.generic]
    assert sorted(c[1] for c in concept_calls) == sorted(INSTRUCTIONS.for_concept(k, "camera angle") for k in wanted)
    assert {c[2] for c in concept_calls} == {UNITS}
    toy.calls.clear()
    code, report = index_cli(video_folder, tmp_path / "index")  # the added concept is kept; nothing is pending
    assert code == 0 and report["concept_vectors"] == 0 and not toy.calls
    assert f"{MODEL}#camera-angle" in report["concept_signals"]


def test_a_changed_instruction_embeds_again_only_its_concept(toy, tmp_path, video_folder):
    assert index_cli(video_folder, tmp_path / "index")[0] == 0
    before, _ = stored(tmp_path / "index")
    toy.instructions = Instructions(INSTRUCTIONS.generic, INSTRUCTIONS.query,
                                    {**INSTRUCTIONS.concepts, "location": "Represent where this location is."},
                                    INSTRUCTIONS.template)
    toy.calls.clear()
    code, report = index_cli(video_folder, tmp_path / "index")
    assert code == 0 and report["concept_vectors"] == UNITS
    assert toy.calls == [("units", "Represent where this location is.", UNITS)]
    after, _ = stored(tmp_path / "index")
    assert set(after[f"{MODEL}#location"].values()) == {concept_index.digest("Represent where this location is.")}
    assert {s: v for s, v in after.items() if not s.endswith("#location")} == \
        {s: v for s, v in before.items() if not s.endswith("#location")}


def test_concept_without_a_conditioned_indexer_is_a_one_line_error(tmp_path, video_folder):
    from typer.testing import CliRunner

    from retrieval.cli.app import app

    result = CliRunner().invoke(app, ["index", str(video_folder), "-i", "efficientnet-lite0", "--workers", "1",
                                      "--index-dir", str(tmp_path / "index"), "--concept", "camera angle"])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: --concept adds a vector per unit from a concept-conditioned indexer, "
                                     "and this index has none: index with one too (-i qwen3-vl-embedding)")


KILLED_RUN = """
import os, signal, sys
from retrieval.api import Engine
from retrieval.pipeline import concept_index
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from tests.conditioned import INSTRUCTIONS, ToyConditioned, toy_registered

index_dir, videos, after = sys.argv[1:]
concept_index.CHUNK = 1  # a commit a unit
real, seen = ToyConditioned.embed_units, []

def dies(self, units, instruction=None):
    if instruction is not None and instruction != INSTRUCTIONS.generic:
        if len(seen) == int(after):
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally: the process is gone
        seen.append(instruction)
    return real(self, units, instruction)

ToyConditioned.embed_units = dies
with toy_registered():
    Engine(index_dir).index(videos, ["toy-conditioned"], IndexSettings(concepts=("camera angle",)),
                            distributor=SerialDistributor())
"""


@pytest.mark.slow
def test_a_run_sigkilled_mid_pass_loses_nothing_it_committed_and_doubles_nothing(toy, tmp_path, video_folder):
    after = 9  # a unit of each of 6 concepts, then 3 of the second unit's, then killed
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, str(tmp_path / "index"), str(video_folder),
                             str(after)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr
    signals, _ = stored(tmp_path / "index")
    assert sum(len(v) for v in signals.values()) == after
    toy.calls.clear()
    code, report = index_cli(video_folder, tmp_path / "index")
    assert code == 0, report
    total = UNITS * (len(CONVIS_CONCEPTS) + 1)
    assert report["concept_vectors"] == total - after
    signals, rows = stored(tmp_path / "index")
    assert sum(len(v) for v in signals.values()) == total
    assert set(rows.values()) == {1}  # one vector per signal and unit: nothing doubled
