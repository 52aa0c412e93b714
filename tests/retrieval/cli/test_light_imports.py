"""The light path: `--help`, `info`, `ls` and a query whose anchor is indexed import no model code and no decoder.

Each command runs in a fresh Python (the CLI in-process through typer's CliRunner), so what this test process
has imported does not count. No timing is asserted (`convis bench perf --sections cli` measures it).
"""

import json
import subprocess
import sys

from tests.paths import ROOT

HEAVY = ("torch", "transformers", "sentence_transformers", "open_clip", "av", "decord", "cv2", "scipy", "matplotlib",
         "ray", "fastapi")

_RUN = """
import json, sys
from typer.testing import CliRunner
from retrieval.cli.app import app
result = CliRunner().invoke(app, json.loads(sys.argv[1]))
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"code": result.exit_code, "output": result.output[-2000:], "heavy": heavy}))
"""


def imported(args: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _RUN, json.dumps(args), json.dumps(HEAVY)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


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
