"""An index covers one folder, and a run never forgets most of it unasked: a wrong or half-absent folder
is refused before anything is written."""

import shutil

import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.pipeline.plan import needs_prune
from retrieval.store.catalog import Catalog
from retrieval.store.errors import IndexSettingsError
from tests.retrieval.pipeline import test_indexing

run = test_indexing.run  # an indexing run with the tiny-model engine (conftest.py)


def state(engine):
    """What a refused run must leave as it was: the files, their vectors' units, and the root."""
    with Catalog(engine.catalog_path, read_only=True) as catalog:
        units = catalog.db.execute("SELECT count(*) FROM units").fetchone()[0]
        return sorted(catalog.file_states()), units, catalog.setting("root")


def other_folder(tmp_path, example_videos):
    folder = tmp_path / "other"
    folder.mkdir()
    shutil.copy(example_videos / "box.mp4", folder / "box.mp4")
    return folder


def test_another_folder_is_refused_naming_both_and_the_index_is_kept(engine, video_folder, tmp_path,
                                                                       example_videos):
    run(engine, video_folder)
    before = state(engine)
    other = other_folder(tmp_path, example_videos)
    with pytest.raises(IndexSettingsError, match="--move-root") as refused:
        run(engine, other)
    assert f"covers {video_folder}, not {other}" in str(refused.value)
    assert state(engine) == before and before[2] == str(video_folder)


def test_moved_videos_are_indexed_at_their_new_folder_without_re_embedding(engine, video_folder, tmp_path):
    run(engine, video_folder)
    moved = shutil.move(video_folder, tmp_path / "moved")
    report = run(engine, moved, move_root=True)
    assert (report.indexed, report.unchanged, report.forgotten) == (0, 4, 0)
    assert state(engine)[2] == str(moved)


def test_forgetting_more_than_half_needs_prune(engine, video_folder):
    run(engine, video_folder)
    before = state(engine)
    for name in ("campus_01.mp4", "campus_02.mp4", "cup.mp4"):
        (video_folder / name).unlink()  # e.g. a share that is only partly mounted
    with pytest.raises(IndexSettingsError, match="3 of the 4 indexed files are not in .*--prune"):
        run(engine, video_folder)
    assert state(engine) == before
    assert run(engine, video_folder, prune=True).forgotten == 3
    assert state(engine)[0] == ["carphone_pristine.mp4"]


def test_forgetting_up_to_half_needs_no_prune(engine, video_folder):
    run(engine, video_folder)
    (video_folder / "cup.mp4").unlink()
    (video_folder / "campus_01.mp4").unlink()
    assert run(engine, video_folder).forgotten == 2


@pytest.mark.parametrize("forgetting, listed, refused", [(0, 0, False), (1, 1, True), (1, 2, False), (2, 4, False),
                                                         (3, 4, True), (4, 4, True), (0, 4, False)])
def test_prune_threshold_is_more_than_half(forgetting, listed, refused):
    assert needs_prune(forgetting, listed) is refused


def test_cli_refuses_another_folder_in_one_line_with_exit_2(tmp_path, tiny_models, example_videos):
    first = other_folder(tmp_path, example_videos)
    second = shutil.copytree(first, tmp_path / "second")
    index_dir = first / ".convis"
    args = ["index", "-i", f"dinov2:{tiny_models['dinov2']}", "--workers", "1", "--index-dir", str(index_dir)]
    assert CliRunner().invoke(app, [*args, str(first)]).exit_code == 0
    result = CliRunner().invoke(app, [*args, str(second)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"error: this index covers {first}, not {second}")
    assert len(result.stderr.strip().splitlines()) == 1
