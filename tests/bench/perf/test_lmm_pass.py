"""``python -m bench.perf.lmm_pass``: both LMM sections in one pass a family (one build and load each), every row
written as it is measured, and no step started once the time budget is spent. Tiny checkpoints on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.perf import lmm_pass

ROOT = Path(__file__).resolve().parents[3]
CLIPS = sorted((ROOT / "examples" / "videos").glob("*.mp4"))[:3]  # an anchor and two candidates


@pytest.mark.slow
def test_one_pass_measures_rerank_then_captions_and_writes_each_row(tmp_path, monkeypatch):
    built = []
    real_build = lmm_pass.real_shape.build
    monkeypatch.setattr(lmm_pass.real_shape, "build", lambda *a: built.append(a[0]) or real_build(*a))
    rows = lmm_pass.run_pass("tiny", tmp_path, budget_s=600, families=["qwen2.5-vl"], clips=CLIPS, say=lambda _: None)
    assert built == ["qwen2.5-vl"]  # one checkpoint serves both sections
    written = [json.loads(line) for line in (tmp_path / "lmm.jsonl").read_text().splitlines()]
    assert written == rows and [r["what"] for r in rows] == ["rerank"] * 4 + ["describe"] * 3
    rerank = {(r["batch"], r["share"]): r for r in rows[:4]}
    assert set(rerank) == {(1, "on"), (4, "on"), (1, "off"), (4, "off")}
    for (_, share), row in rerank.items():  # 2 candidates x 5 concepts: 1 + 2 vision calls shared, 2 x 10 not
        assert row["pairs"] == 10 and row["pair_passes"] == 10
        assert (row["vision_calls"], row["prefix_passes"]) == ((3, 5) if share == "on" else (20, 0))
    assert [r["way"] for r in rows[4:]] == ["one vision pass a unit", "every question at once", "one request a call"]
    assert all(r["answers"] == 3 * 6 and r["tokens"] > 0 for r in rows[4:])
    table = (tmp_path / "lmm.md").read_text()
    assert "| qwen2.5-vl | tiny | 4 | on | 10 |" in table and "| every question at once |" in table


def test_a_spent_budget_starts_no_step_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(lmm_pass.real_shape, "build", lambda *a: pytest.fail("nothing is built past the budget"))
    said = []
    rows = lmm_pass.run_pass("tiny", tmp_path, budget_s=-1, families=["qwen2.5-vl", "internvl"], clips=CLIPS,
                             say=said.append)
    assert rows == [] and not (tmp_path / "lmm.jsonl").exists()
    assert [line for line in said if line.startswith("budget spent")] == [
        "budget spent: qwen2.5-vl rerank not measured", "budget spent: internvl rerank not measured",
        "budget spent: qwen2.5-vl describe not measured"]


def test_a_failing_step_is_a_row_and_the_pass_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(lmm_pass.real_shape, "build", lambda family, folder, shape: Path(folder))
    calls = []

    def measure(family, *args, **kwargs):
        calls.append(family)
        if family == "qwen2.5-vl":
            raise RuntimeError("CUDA error: an illegal memory access")
        return []

    monkeypatch.setattr(lmm_pass.lmm_rerank, "measure_family", measure)
    rows = lmm_pass.run_pass("tiny", tmp_path, budget_s=600, families=["qwen2.5-vl", "internvl"], clips=CLIPS,
                             say=lambda _: None)
    assert calls == ["qwen2.5-vl", "internvl"]
    assert rows[0] == {"family": "qwen2.5-vl", "what": "rerank", "error": "RuntimeError: CUDA error: an illegal "
                       "memory access"}
    assert "- qwen2.5-vl rerank: RuntimeError" in (tmp_path / "lmm.md").read_text()


def test_the_lmm_sections_import_neither_the_catalog_nor_faiss():
    # a lent GPU machine has torch and transformers but not duckdb or faiss: the LMM pass must not need them
    code = ("import sys, bench.perf.lmm_pass, bench.perf.lmm_rerank, bench.perf.lmm_describe; "
            "print(sorted(m for m in ('duckdb', 'faiss', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
