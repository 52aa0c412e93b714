"""Worker processes re-import the main script, so the code that starts them must not run on import.

forkserver and spawn workers import the script a program was started with (as ``__mp_main__``)
before their first task.  Module-level code of that script outside ``if __name__ == "__main__":``
runs again in each worker, tries to start workers of its own there, which multiprocessing
refuses, and every task fails.  The check below finds that case in the parent, before any worker
starts, from the script's own source, and stops the script with one line, as argparse does: the
script cannot work as written, and a traceback through the pool would only hide why.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import CodeType, FrameType

from retrieval.core.errors import ConvisError


class MainGuardError(SystemExit, ConvisError):
    """Worker processes were asked for from module-level code of the main script, outside the guard.

    A SystemExit: uncaught, Python prints the message alone and exits with status 1 (SystemExit comes first among
    the bases so that its ``__init__`` sets that status: Exception's would leave it None, an exit without a word).
    """

    exit_code, http_status = 1, 500
    label = "internal error"


def check_main_guard() -> None:
    """Raise MainGuardError when this call comes from unguarded module-level code of the main script."""
    frame = _main_script_frame()
    if frame is None:
        return
    source = _running_source(frame.f_code)
    if source is None or is_guarded(source, frame.f_lineno):
        return  # no source to judge by: nothing certain to report
    script = Path(frame.f_code.co_filename).name
    raise MainGuardError(
        f"convis: {script} line {frame.f_lineno} starts decode worker processes at module level: put that code under "
        f'`if __name__ == "__main__":` (each worker re-imports {script} and would run it again)')


def is_guarded(source: str, line: int) -> bool:
    """Whether ``line`` of a module's ``source`` lies in the branch of an ``if __name__ == "__main__":``
    that runs only when the module is the program (not when a worker imports it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True  # cannot judge: assume the script is fine
    for node in ast.walk(tree):
        branch = _main_branch(node) if isinstance(node, ast.If) else None
        if branch and branch[0].lineno <= line <= (branch[-1].end_lineno or branch[-1].lineno):
            return True
    return False


def _main_branch(node: ast.If) -> list[ast.stmt] | None:
    """The statements of ``node`` that run only as the program: the body of ``__name__ == "__main__"``,
    the else of ``__name__ != "__main__"``; None for any other test."""
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    sides = [test.left, test.comparators[0]]
    names = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    if not (names and main):
        return None
    if isinstance(test.ops[0], ast.Eq):
        return node.body
    return node.orelse if isinstance(test.ops[0], ast.NotEq) else None


def _main_script_frame() -> FrameType | None:
    """The frame running the main script's module-level code, when a worker would re-import that script."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main_file:
        return None  # python -c, a REPL, a notebook: workers have no script to re-import
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            return frame if _same_file(frame.f_code.co_filename, main_file) else None
        frame = frame.f_back
    return None


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _running_source(code: CodeType) -> str | None:
    """The source ``code`` was compiled from, read back from its file; None when that file no longer holds
    it (edited since the script started: its line numbers would point elsewhere) or cannot be read."""
    try:
        source = Path(code.co_filename).read_text(encoding="utf-8")
        compiled = compile(source, code.co_filename, "exec", dont_inherit=True)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    same = compiled.co_code == code.co_code and list(compiled.co_lines()) == list(code.co_lines())
    return source if same else None
