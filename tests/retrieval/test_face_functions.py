"""The faces (the command line, the server) stay thin: no function of theirs is longer than a screen (60 lines, its
signature and decorators included); what a longer one does belongs in a helper of its own or below the public face."""

from __future__ import annotations

import ast

from tests.paths import ROOT

LONGEST = 60
FACES = ("retrieval/cli", "retrieval/serve")


def long_functions(folder) -> list[str]:
    """``path:line name (n lines)`` for each function under ``folder`` over LONGEST lines."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if node.end_lineno - start + 1 > LONGEST:
                    found.append(f"{path.relative_to(folder)}:{node.lineno} {node.name} "
                                 f"({node.end_lineno - start + 1} lines)")
    return found


def test_no_function_of_a_face_is_over_60_lines():
    for face in FACES:
        assert long_functions(ROOT / face) == [], face


def test_the_scan_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n")
    (tmp_path / "short.py").write_text("def short():\n    return 1\n")
    assert long_functions(tmp_path) == [f"long.py:1 long ({LONGEST + 1} lines)"]
