"""mPLUG-Owl3, a family convis lists but cannot run, is one line from every command that would load it, before
torch or transformers are imported and before a benchmark indexes anything; `convis models` says why."""

import json

from bench.tiny.dataset import build_dataset
from tests.retrieval.cli.test_missing_model import A, B, an_index, run_all

REFUSAL = "mplug-owl3: the remote code of 'mPLUG/mPLUG-Owl3-7B-240728' needs transformers < 4.50"


def test_every_command_that_would_load_mplug_owl3_refuses_it_in_one_line(tmp_path):
    index_dir = an_index(tmp_path)
    commands = [
        ["compare", A, B, "-c", "location", "-r", "mplug-owl3"],
        ["query", "--anchor", A, "-c", "location", "--index-dir", str(index_dir), "--reranker", "mplug-owl3"],
        ["index", str(tmp_path / "videos"), "--captioner", "mplug-owl3"],
        ["describe", str(index_dir), "--captioner", "mplug-owl3"],
    ]
    ran = run_all(commands, tmp_path, HF_HUB_OFFLINE="1")
    for args, (code, output) in zip(commands, ran["runs"], strict=True):
        assert code == 1, (args[0], output)
        (line,) = output.strip().splitlines()
        assert REFUSAL in line and "convis bench correlation" in line and "HF_HUB_OFFLINE" not in line, line
    assert ran["heavy"] == []


def test_models_lists_mplug_owl3_as_unsupported(tmp_path):
    ((code, output),) = run_all([["models", "--json"]], tmp_path, HF_HUB_OFFLINE="1")["runs"]
    assert code == 0, output
    (row,) = [r for r in json.loads(output) if r["name"] == "mplug-owl3"]
    assert row["kind"] == "reranker" and row["default"] == "mPLUG/mPLUG-Owl3-7B-240728"
    assert row["weights"] == "unsupported (needs transformers < 4.50)"
    assert row["frames"].startswith("8 a video: 1 frame a second")


def test_bench_run_refuses_mplug_owl3_before_indexing(tmp_path, example_videos):
    build_dataset(tmp_path / "data", example_videos)
    out = tmp_path / "out"
    ((code, output),) = run_all([["bench", "run", "--dataset", str(tmp_path / "data"), "--out", str(out),
                                  "--reranker", "mplug-owl3"]], tmp_path, HF_HUB_OFFLINE="1")["runs"]
    assert code == 1, output  # the error's own exit code, as every other command gives it
    assert REFUSAL in output.strip().splitlines()[-1]
    assert not list(out.rglob("catalog.duckdb"))  # no video was indexed for a run that could not finish
