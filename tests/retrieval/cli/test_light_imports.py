"""The light path: `--help`, `models`, `info`, `ls`, a query whose anchor is indexed, and text search and composed
queries once their text towers are exported, import no model code and no decoder.

Each command runs in a fresh Python (the CLI in-process through typer's CliRunner), so what this test process
has imported does not count. No timing is asserted (`convis bench perf --sections cli` measures it).
"""

import json
import subprocess
import sys

import pytest

from tests.paths import ROOT

HEAVY = ("torch", "transformers", "sentence_transformers", "open_clip", "av", "decord", "cv2", "scipy", "matplotlib",
         "ray", "fastapi", "lancedb")  # lancedb: only an index served from Lance loads it

_RUN = """
import json, sys
from typer.testing import CliRunner
from retrieval.cli.app import app
result = CliRunner().invoke(app, json.loads(sys.argv[1]))
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"code": result.exit_code, "output": result.output[-2000:], "heavy": heavy}))
"""


def imported(args: list[str], heavy: tuple[str, ...] = HEAVY) -> dict:
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args), json.dumps(heavy)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["query", "--help"], ["index", "--help"], ["serve", "--help"]],
                         ids=" ".join)
def test_help_imports_nothing_heavy(args):
    ran = imported(args, (*HEAVY, "duckdb", "faiss"))  # nor the catalog and its indices: help opens no index
    assert ran["code"] == 0, ran["output"]
    assert ran["heavy"] == [], ran["heavy"]


_EVERY_HELP = """
import json, sys
from typer.main import get_command
from typer.testing import CliRunner
from retrieval.cli.app import app

def walk(group, prefix=()):
    # every command and sub-command, the bench group and its own groups included (naming one loads it)
    for name in group.list_commands(None):
        command = group.get_command(None, name)
        yield (*prefix, name)
        if hasattr(command, "list_commands"):
            yield from walk(command, (*prefix, name))

runner = CliRunner()
codes = {" ".join(path): runner.invoke(app, [*path, "--help"]).exit_code for path in [(), *walk(get_command(app))]}
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_every_help_imports_nothing_heavy():
    done = subprocess.run([sys.executable, "-c", _EVERY_HELP, json.dumps(HEAVY)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"", "query", "diff", "bench", "bench perf", "bench fusion", "bench viddiff"} <= set(ran["codes"])
    assert set(ran["codes"].values()) == {0}, ran["codes"]
    assert ran["heavy"] == [], ran["heavy"]  # torch and scipy among them


def test_info_ls_and_an_indexed_query_import_no_model_code(demo_index):
    anchor = str(ROOT / "examples" / "videos" / "campus_01.mp4")
    for args in (["info", str(demo_index)], ["ls", str(demo_index)],
                 ["query", "--anchor", anchor, "--concept", "location", "--index-dir", str(demo_index)]):
        ran = imported(args)
        assert ran["code"] == 0, ran["output"]
        assert ran["heavy"] == [], (args[0], ran["heavy"])


def test_text_search_and_a_change_import_no_model_code_once_exported(demo_index):
    # indexing the demo's captions exported MiniLM's text tower into the user cache: ONNX Runtime answers
    anchor = str(ROOT / "examples" / "videos" / "box.mp4")
    for args in (["search", "a hand holding a cup", "--mode", "vector", "--index-dir", str(demo_index)],
                 ["search", "--concept", "location", "the campus square", "--index-dir", str(demo_index)],
                 ["query", "--anchor", anchor, "--change", "a cup instead of a box", "--index-dir", str(demo_index)],
                 ["models"]):
        ran = imported(args)
        assert ran["code"] == 0, ran["output"]
        assert ran["heavy"] == [], (args[0], ran["heavy"])



def test_keyword_and_hybrid_search_import_no_model_code(demo_index):
    # the keyword index is bm25s's, which brings scipy.sparse: only these modes import it
    for mode in ("keyword", "hybrid"):
        ran = imported(["search", "a hand holding a cup", "--mode", mode, "--index-dir", str(demo_index)],
                       tuple(m for m in HEAVY if m != "scipy"))
        assert ran["code"] == 0, ran["output"]
        assert ran["heavy"] == [], (mode, ran["heavy"])
