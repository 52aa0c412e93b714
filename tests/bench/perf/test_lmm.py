"""`convis bench perf --sections rerank,describe`: each LMM family's pair scoring and captioning measured, on the CPU
with the tiny checkpoints (call counts; no timing is asserted), and `--shape 7b` refused in one line without CUDA.
The real shapes' table is checked against the released models' parameter counts, built on the meta device."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
import typer
from typer.testing import CliRunner

from bench.perf import real_shape
from retrieval.cli.bench.perf import register


def perf_app() -> typer.Typer:
    app = typer.Typer()
    app.callback()(lambda: None)  # keep `perf` a named sub-command, as under `convis bench`
    register(app)
    return app


@pytest.mark.slow
def test_smoke_run_measures_every_family_rerank_and_describe(tmp_path):
    out = tmp_path / "performance.md"
    result = CliRunner().invoke(perf_app(), ["perf", "--smoke", "--sections", "rerank,describe", "--out", str(out),
                                             "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    families = set(real_shape.FAMILIES)
    # smoke: three clips (two candidates), two concepts
    rerank = data["rerank_lmm"]
    assert {r["family"] for r in rerank} == families
    for row in rerank:
        assert (row["shape"], row["device"], row["pairs"], row["concepts"]) == ("tiny", "cpu", 4, 2)
        assert row["pairs_per_s"] > 0 and row["gpu_peak_gb"] is None and row["kernel_share"] is None
        if row["pair_passes"] is not None:  # the reranker keeps work counts
            assert row["pair_passes"] == 4
            if row["share"] == "on":  # one anchor, 2 candidates, 2 concepts: each video encoded once, a prefix a
                # concept (LLaVA asks the concept after the videos: its prefix, system and video 1, serves both)
                prefixes = 1 if row["family"] == "llava-onevision" else 2
                assert (row["vision_calls"], row["prefix_passes"]) == (1 + 2, prefixes)
            elif row["share"] == "off":
                assert (row["vision_calls"], row["prefix_passes"]) == (2 * 4, 0)
    for family in families:
        batches = sorted(r["batch"] for r in rerank if r["family"] == family and r["share"] in ("on", "-"))
        assert batches == [1, 4]
    describe = data["describe"]
    assert {(r["family"], r["way"]) for r in describe} == \
        {(f, w) for f in families for w in ("one request a call", "every question at once", "one vision pass a unit")}
    for row in describe:
        assert (row["units"], row["answers"]) == (2, 12) and 0 < row["tokens"] <= 12 * 8
        # two units a batch: six generations one request at a time, one with every question at once (a decoding
        # after one pass over each unit's video counts as one)
        assert row["generate_calls"] == (6 if row["way"] == "one request a call" else 1)
    text = out.read_text()
    assert "## Reranking, each LMM family" in text and "## Describing units, each LMM family" in text
    assert "| qwen2.5-vl | tiny | cpu | every question at once |" in text and "| n/a |" in text
    # a saved report renders the same page again
    saved = tmp_path / "report.json"
    saved.write_text(result.stdout)
    again = tmp_path / "again.md"
    assert CliRunner().invoke(perf_app(), ["perf", "--from-json", str(saved), "--out", str(again)]).exit_code == 0
    assert again.read_text() == text


def test_the_7b_shape_without_cuda_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "performance.md"
    result = CliRunner().invoke(perf_app(), ["perf", "--smoke", "--sections", "rerank,describe", "--shape", "7b",
                                             "--out", str(out)])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: --shape 7b") and "no CUDA device" in line
    assert not out.exists()
    bad = CliRunner().invoke(perf_app(), ["perf", "--smoke", "--shape", "70b", "--out", str(out)])
    assert bad.exit_code == 2 and "--shape takes tiny or 7b" in bad.output


@pytest.mark.parametrize("family, billions", [("qwen2.5-vl", 8.29), ("llava-onevision", 8.03), ("internvl", 7.94),
                                             ("qwen3-vl", 8.77)])
def test_the_real_shapes_have_the_released_models_parameter_counts(tmp_path, family, billions):
    """Qwen2.5-VL-7B-Instruct has 8.29 B parameters, llava-onevision-qwen2-7b-ov-hf 8.03 B, InternVL3-8B-hf 7.94 B,
    Qwen3-VL-8B-Instruct 8.77 B
    (their safetensors indices); a dimension off in the table moves the count."""
    builder, real = real_shape._BUILDERS[family]
    config = real_shape.real_config(builder(tmp_path / family), real_shape.REAL_DIMENSIONS[real])
    with torch.device("meta"):
        model = getattr(transformers, config.architectures[0])._from_config(config)
    assert sum(p.numel() for p in model.parameters()) / 1e9 == pytest.approx(billions, abs=0.01)
    text = config.text_config
    assert text.hidden_size // text.num_attention_heads == 128
