"""Caption and description files are read with the size limit: one too large costs that file, not the run."""

import shutil

from retrieval.api import Engine
from retrieval.core.user_files import TEXT_FILE_LIMIT
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog


def test_a_caption_over_the_limit_is_a_note_and_the_others_are_embedded(tmp_path, example_videos):
    folder, captions = tmp_path / "videos", tmp_path / "captions"
    folder.mkdir()
    captions.mkdir()
    for name in ("cup.mp4", "box.mp4"):
        shutil.copy(example_videos / name, folder / name)
    (captions / "cup.txt").write_text("A hand lifts a cup from the table.")
    (captions / "box.txt").write_bytes(b"a box " * (TEXT_FILE_LIMIT // 6 + 1))
    (captions / "box.location.txt").write_bytes(b"a room " * (TEXT_FILE_LIMIT // 7 + 1))
    engine = Engine(tmp_path / "index")
    report = engine.index(folder, ["text"], IndexSettings(captions=captions), distributor=SerialDistributor())
    assert (report.indexed, report.failed, report.captioned) == (2, [], 1)
    assert any("box.txt is larger than 1 MiB" in n and "box.mp4 has no caption signal" in n for n in report.notes)
    with Catalog(engine.catalog_path, read_only=True) as cat:
        (status, error), = cat.db.execute("SELECT status, error FROM descriptions WHERE concept = 'location'")\
            .fetchall()
    assert status == "unreadable" and "box.location.txt is larger than 1 MiB" in error
