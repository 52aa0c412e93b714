"""`convis repair`, and what info/query/index say about a damaged catalog: one line, never a traceback."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app

runner = CliRunner()


@pytest.fixture
def damaged(three_clips_indexed, tmp_path):
    videos = tmp_path / "videos"
    shutil.copytree(three_clips_indexed, videos)
    catalog = videos / ".convis" / "catalog.duckdb"
    catalog.write_bytes(catalog.read_bytes()[: catalog.stat().st_size // 3])
    return videos


def test_info_and_query_on_a_damaged_catalog_read_the_snapshot(damaged):
    info = runner.invoke(app, ["info", str(damaged), "--json"])
    assert info.exit_code == 0, info.output
    assert json.loads(info.stdout)["files_ok"] == 3
    assert "is damaged" in info.stderr and "`convis repair` restores the snapshot of" in info.stderr
    query = runner.invoke(app, ["query", "-a", str(damaged / "cup.mp4"), "-c", "location", "--index-dir",
                                str(damaged), "--json"])
    assert query.exit_code == 0, query.output
    assert "damaged" in query.stderr + query.stdout


def test_repair_restores_and_reports_what_was_lost(damaged):
    result = runner.invoke(app, ["repair", str(damaged), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["repaired"] and report["files"] == 3
    assert (damaged / ".convis" / report["kept_aside"].rsplit("/", 1)[-1]).is_file()
    again = runner.invoke(app, ["repair", str(damaged)])
    assert again.exit_code == 0 and "nothing to repair" in again.stdout


def test_repair_without_a_snapshot_is_one_line(damaged):
    (damaged / ".convis" / "snapshot.duckdb").unlink()
    for args in (["repair", str(damaged)], ["info", str(damaged)]):
        result = runner.invoke(app, args)
        assert result.exit_code != 0
        assert "damaged" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.output
