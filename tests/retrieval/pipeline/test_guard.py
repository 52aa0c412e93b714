"""A script that indexes from unguarded module-level code is stopped with one line, before any worker starts;
the README's Python API example runs as written."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from retrieval.pipeline.guard import is_guarded
from tests.paths import ROOT

GUARD = 'if __name__ == "__main__":'


def readme_example() -> str:
    """The README's Python API example, as a user would save it."""
    section = (ROOT / "README.md").read_text().split("### Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def offline_part(example: str) -> str:
    """The example up to its first comparison (the LMM one needs weights this machine has not got)."""
    return example.split("engine.compare")[0].rsplit("\n", 1)[0] + "\n"


def run_script(tmp_path, source: str) -> subprocess.CompletedProcess:
    videos = tmp_path / "videos"
    videos.mkdir()
    for name, copy in (("campus_01.mp4", "clip.mp4"), ("campus_02.mp4", "campus_02.mp4"), ("cup.mp4", "cup.mp4")):
        shutil.copy(ROOT / "examples" / "videos" / name, videos / copy)
    (tmp_path / "example.py").write_text(source)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=300)


def test_the_readme_example_indexes_under_the_guard():
    example = readme_example()
    calls = [n for n, line in enumerate(example.split("\n"), 1) if "engine." in line]
    assert GUARD in example and calls and all(is_guarded(example, n) for n in calls)


def test_the_readme_example_runs_as_written(tmp_path):
    result = run_script(tmp_path, offline_part(readme_example()))
    assert result.returncode == 0, result.stderr
    assert re.search(r"^1 campus_02\.mp4 ", result.stdout, re.M)  # the same place ranks first


def test_without_the_guard_the_script_stops_with_one_line(tmp_path):
    head, body = offline_part(readme_example()).split(GUARD)
    script = head + textwrap.dedent(body.split("\n", 1)[1])  # the same code, unguarded
    line = next(n for n, text in enumerate(script.split("\n"), 1) if "engine.index" in text)
    result = run_script(tmp_path, script)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr == (f"convis: example.py line {line} starts decode worker processes at module level: put "
                             'that code under `if __name__ == "__main__":` (each worker re-imports example.py and '
                             "would run it again)\n")
    assert not (tmp_path / "videos" / ".convis" / "catalog.duckdb").exists()  # stopped before anything was written


@pytest.mark.parametrize("source, line, guarded", [
    ("import x\nx.run()\n", 2, False),
    ('import x\nif __name__ == "__main__":\n    x.run()\n', 3, True),
    ('import x\nif "__main__" == __name__:\n    x.run()\n', 3, True),
    ('import x\nif __name__ != "__main__":\n    pass\nelse:\n    x.run()\n', 5, True),
    ('import x\nif __name__ != "__main__":\n    x.run()\n', 3, False),
    ('import x\nif __name__ == "__main__":\n    pass\nx.run()\n', 4, False),
    ('import x\ndef main():\n    x.run()\nif __name__ == "__main__":\n    try:\n        main()\n    finally:\n'
     '        pass\n', 6, True),
])
def test_the_guard_is_read_from_the_source(source, line, guarded):
    assert is_guarded(source, line) is guarded
