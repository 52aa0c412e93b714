"""Every command that would load a video LMM whose weights are not here says so in one line, exit code 1, before
importing torch or transformers: offline, and with a hub that refuses connections (no retries to wait out).

The commands run in a fresh Python (the CLI in-process through typer's CliRunner) with an empty Hugging Face cache,
so what this test process has imported, and what this machine has cached, do not count."""

import json
import os
import shutil
import socket
import subprocess
import sys

from retrieval.store.snapshots import CATALOG_NAME
from tests.paths import ROOT

_RUN = """
import json, sys
from typer.testing import CliRunner
from retrieval.cli.app import app
results = [CliRunner().invoke(app, args) for args in json.loads(sys.argv[1])]
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers"})
print(json.dumps({"runs": [[r.exit_code, r.output] for r in results], "heavy": heavy}))
"""

VIDEOS = ROOT / "examples" / "videos"
A, B = str(VIDEOS / "box.mp4"), str(VIDEOS / "cup.mp4")


def run_all(commands: list[list[str]], tmp_path, **env) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    environment |= {"HF_HUB_CACHE": str(tmp_path / "hub"), "XDG_CACHE_HOME": str(tmp_path / "cache"), **env}
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(commands)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=environment)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def an_index(tmp_path):
    """A folder the CLI takes for an index: the check comes before the catalog is opened."""
    index_dir = tmp_path / "videos" / ".convis"
    index_dir.mkdir(parents=True)
    (index_dir / CATALOG_NAME).touch()
    shutil.copy(A, tmp_path / "videos" / "box.mp4")
    return index_dir


def test_every_command_that_loads_an_lmm_refuses_missing_weights_offline(tmp_path):
    index_dir = an_index(tmp_path)
    qwen, llava = "qwen2.5-vl: cannot load 'Qwen/Qwen2.5-VL-7B-Instruct'", \
        "llava-onevision: cannot load 'llava-hf/llava-onevision-qwen2-7b-ov-hf'"
    expected = {
        ("diff", A, B, "--action", "riding", "-s", "wider stance"): qwen,
        ("compare", A, B, "-c", "location", "-r", "qwen2.5-vl"): qwen,
        ("query", "--anchor", A, "-c", "location", "--index-dir", str(index_dir), "--reranker", "qwen2.5-vl"): qwen,
        ("query", "--anchor", A, "-c", "location", "--index-dir", str(index_dir), "--signal",
         "location=vqascore"): llava,
        ("index", str(tmp_path / "videos"), "--captioner", "qwen2.5-vl"): qwen,
        ("describe", str(index_dir), "--captioner", "qwen2.5-vl"): qwen,
    }
    ran = run_all([list(args) for args in expected], tmp_path, HF_HUB_OFFLINE="1")
    for (args, said), (code, output) in zip(expected.items(), ran["runs"], strict=True):
        assert code == 1, (args[0], output)
        (line,) = output.strip().splitlines()
        assert said in line and "HF_HUB_OFFLINE is set" in line and "llava-onevision-0.5b" in line, line
    assert ran["heavy"] == []


def test_an_unreachable_hub_is_one_line_without_torch(tmp_path):
    with socket.socket() as probe:  # a local port nothing listens on: the hub refuses at once
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ran = run_all([["diff", A, B, "--action", "riding", "-s", "wider stance"]], tmp_path,
                  HF_ENDPOINT=f"http://127.0.0.1:{port}")
    ((code, output),) = ran["runs"]
    assert code == 1, output
    (line,) = output.strip().splitlines()
    assert f"the model hub (127.0.0.1:{port}) is unreachable" in line and "llava-onevision-0.5b" in line, line
    assert ran["heavy"] == []
