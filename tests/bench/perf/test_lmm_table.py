"""`convis bench perf --sections lmm`: each family in one line, measured on the CPU with a tiny checkpoint (counts
and n/a columns; no timing is asserted), and the whole section run from the command line in smoke mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.perf import lmm_table, real_shape
from bench.perf.sections.lmm import SECTION
from tests import media
from tests.bench.perf.test_lmm import perf_app


def test_one_family_measured_once_on_the_cpu(tiny_folders, tmp_path):
    clips = [media.make_clip(tmp_path / f"{name}.mp4", size=size)
             for name, size in (("a", (64, 48)), ("b", (96, 64)), ("c", (64, 48)))]
    row = lmm_table.measure_family("qwen2.5-vl", tiny_folders["qwen2_5_vl"], clips, clips[:2], "tiny",
                                   ["the subject", "the location"], tokens=4)
    assert (row.family, row.device, row.card, row.pairs) == ("qwen2.5-vl", "cpu", None, 4)
    assert row.pairs_per_s > 0 and 0 < row.tokens <= 2 * 6 * 4 and row.pair_flops > 0
    # the GPU-only columns: not measured on the CPU, and shown as such
    assert (row.mfu, row.pair_busy, row.caption_busy, row.unfed_busy, row.fed_busy, row.gpu_peak_gb) == (None,) * 6
    assert row.unfed_seconds > 0 and row.fed_seconds > 0
    assert row.attention == "sdpa"  # no FlashAttention-2 on a CPU: transformers' default kernels, named
    (line,) = [line for line in SECTION.markdown([row])[1].splitlines() if line.startswith("| qwen2.5-vl")]
    assert line.count("n/a") == 6 and "unknown card" not in line


def test_a_gpu_row_names_an_unknown_card_for_its_mfu():
    row = {name: 0 for name in SECTION.result.__dataclass_fields__}
    row.update(family="x", shape="7b", device="cuda:0", card="NVIDIA L4", mfu=None, pair_seconds=1.0,
               caption_seconds=1.0, torch="2", transformers="5")
    text = "".join(SECTION.markdown([SECTION.result(**row)]))
    assert "unknown card" in text


def test_the_real_shape_is_the_7b_one():
    assert real_shape.canonical("real") == "7b" and real_shape.canonical("tiny") == "tiny"


@pytest.mark.slow
def test_smoke_run_prints_every_family_with_na_for_the_gpu_columns(tmp_path: Path):
    out = tmp_path / "performance.md"
    result = CliRunner().invoke(perf_app(), ["perf", "--smoke", "--sections", "lmm", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["lmm"]
    assert [r["family"] for r in rows] == list(real_shape.FAMILIES)
    assert all(r["mfu"] is None and r["pair_busy"] is None and r["caption_tokens_per_s"] > 0 for r in rows)
    assert "## LMM families: speed and GPU use" in out.read_text()
