"""One way to fail for both CLIs: a ConvisError is one line on stderr and its own exit code, whether `convis`
or `convis bench` meets it; errors that are not convis's keep their exit codes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from retrieval.api import ConvisError
from retrieval.cli.app import app


class Unusual(ConvisError):
    """A kind of error with an exit code no other kind uses."""

    exit_code = 3


def raising(exc: BaseException):
    def call(*args, **kwargs):
        raise exc

    return call


def error_lines(result) -> list[str]:
    return result.stderr.strip().splitlines()


def test_the_main_cli_exits_with_the_errors_own_code(monkeypatch, tmp_path):
    monkeypatch.setattr("retrieval.cli.admin.resolve_index_dir", raising(Unusual("the index\nis unusual")))
    result = CliRunner().invoke(app, ["info", str(tmp_path)])
    assert result.exit_code == 3
    assert error_lines(result) == ["error: the index is unusual"]


@pytest.mark.parametrize("command, target", [
    (["make-split", "--pairs", "gt.json", "--out", "split.json"], "retrieval.cli.bench.paper.load_gt_pairs"),
    (["fusion", "--gt", "gt.json", "-s", "scores"], "retrieval.cli.bench.fusion._table"),
    (["perf", "--smoke", "--out", "perf.md"], "bench.perf.run.run"),
], ids=lambda v: v[0] if isinstance(v, list) else "")
def test_the_bench_cli_exits_with_the_errors_own_code(monkeypatch, tmp_path, command, target):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(target, raising(Unusual("the ratings are unusual")))
    result = CliRunner().invoke(app, ["bench", *command])
    assert result.exit_code == 3, result.output
    assert error_lines(result) == ["error: the ratings are unusual"]


def test_a_system_error_in_a_bench_command_is_one_line_and_exit_code_2(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("retrieval.cli.bench.paper.load_gt_pairs", raising(PermissionError(13, "Permission denied")))
    result = CliRunner().invoke(app, ["bench", "make-split", "--pairs", "gt.json", "--out", "split.json"])
    assert result.exit_code == 2
    assert error_lines(result) == ["error: [Errno 13] Permission denied"]
