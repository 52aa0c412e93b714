"""Subtitles read in the index run: sidecars and embedded streams become the file's timed lines, found by keyword
search at the cue's time, re-read when the sidecar changes, forgotten when it is gone."""

import os
import shutil
import subprocess
import threading

import pytest

from retrieval.api import SearchRequest
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog


def cue(n, start, end, text):
    stamp = lambda s: f"00:00:{int(s):02d},{round(s % 1 * 1000):03d}"  # noqa: E731
    return f"{n}\n{stamp(start)} --> {stamp(end)}\n{text}\n"


def run(engine, folder, **kw):
    return engine.index(folder, [engine.spec], IndexSettings(**kw), distributor=SerialDistributor())


def lines(engine, path):
    with Catalog(engine.catalog_path, read_only=True) as cat:
        return [(x.origin, x.start, x.end, x.text, x.language) for x in cat.file_lines(path, ("subtitle",))]


def first_hit(engine, word):
    found = engine.search(SearchRequest(word, mode="keyword"))
    return found.hits[0].path if found.hits else None


def test_sidecars_and_an_embedded_stream_are_found_by_keyword_at_their_cue_time(engine, video_folder):
    (video_folder / "cup.en.srt").write_text(cue(1, 1.5, 2.75, "the axolotl waves") + "\n"
                                             + cue(2, 3.0, 4.0, "goodbye"), encoding="utf-8")
    (video_folder / "campus_01.vtt").write_text("WEBVTT\n\n00:00.500 --> 00:01.250\nnarwhal parade\n",
                                                encoding="utf-8")
    subs = video_folder.parent / "embedded.srt"
    subs.write_text(cue(1, 2.0, 3.5, "pangolin crossing"), encoding="utf-8")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(video_folder / "campus_02.mp4"), "-i", str(subs),
                    "-c", "copy", "-c:s", "srt", str(video_folder / "campus_02.mkv")], check=True)
    (video_folder / "campus_02.mp4").unlink()
    report = run(engine, video_folder, segment_seconds=2.0)
    assert report.subtitle_reads == 3 and not any(n.startswith("subtitles") for n in report.notes)
    assert lines(engine, "cup.mp4") == [("cup.en.srt", 1.5, 2.75, "the axolotl waves", "en"),
                                        ("cup.en.srt", 3.0, 4.0, "goodbye", "en")]
    assert lines(engine, "campus_01.mp4") == [("campus_01.vtt", 0.5, 1.25, "narwhal parade", None)]
    assert lines(engine, "campus_02.mkv") == [("stream:1", 2.0, 3.5, "pangolin crossing", None)]
    assert first_hit(engine, "axolotl") == "cup.mp4"
    assert first_hit(engine, "narwhal") == "campus_01.mp4"
    assert first_hit(engine, "pangolin") == "campus_02.mkv"
    with Catalog(engine.catalog_path, read_only=True) as cat:
        units = {r[0]: (r[1], r[2]) for r in cat.db.execute(
            "SELECT u.unit_id, u.start_s, u.end_s FROM units u JOIN files f USING (file_id) "
            "WHERE f.path = 'cup.mp4'").fetchall()}
        spans = {units[i] for i, found in cat.unit_lines(list(units)).items()
                 if any("axolotl" in x.text for x in found)}
    assert spans == {(0.0, 2.0), (2.0, 4.0)}  # the cue 1.5-2.75 s overlaps both units


def test_a_changed_sidecar_is_read_again_and_a_removed_one_forgotten(engine, video_folder):
    sidecar = video_folder / "cup.srt"
    sidecar.write_text(cue(1, 1.0, 2.0, "first words"), encoding="utf-8")
    run(engine, video_folder)
    assert [x[3] for x in lines(engine, "cup.mp4")] == ["first words"]
    again = run(engine, video_folder)
    assert again.subtitle_reads == 0  # unchanged: nothing read
    sidecar.write_text(cue(1, 1.0, 2.0, "second version of the words"), encoding="utf-8")
    os.utime(sidecar, ns=(sidecar.stat().st_atime_ns, sidecar.stat().st_mtime_ns + 10**9))
    assert run(engine, video_folder).subtitle_reads == 1
    assert [x[3] for x in lines(engine, "cup.mp4")] == ["second version of the words"]
    assert first_hit(engine, "version") == "cup.mp4"
    sidecar.unlink()
    run(engine, video_folder)
    assert lines(engine, "cup.mp4") == [] and first_hit(engine, "version") is None


def test_each_problem_class_is_one_report_line_and_the_good_cues_stay(engine, video_folder):
    broken = cue(1, 1.0, 2.0, "kept cue") + "\n2\n00:00:0x,000 --> 00:00:04,000\nbad\n\n" \
        + cue(3, 5.0, 4.0, "backwards") + "\n" + cue(4, 1.5, 3.0, "overlapping cue")
    (video_folder / "cup.srt").write_text(broken, encoding="utf-8")
    (video_folder / "campus_01.srt").write_text(broken, encoding="utf-8")
    (video_folder / "campus_02.srt").write_bytes(cue(1, 1.0, 2.0, "cr\u00e8me br\u00fbl\u00e9e").encode("cp1252"))
    report = run(engine, video_folder)
    said = [n for n in report.notes if n.startswith("subtitles:")]
    assert said == ["subtitles: 4 cue(s) without a readable time skipped (campus_01.srt, cup.srt)",
                    "subtitles: 2 cue(s) overlapping the one before, kept (campus_01.srt, cup.srt)",
                    "subtitles: 1 subtitle file(s) not UTF-8, read with a fallback encoding (campus_02.srt: cp1252)"]
    assert [x[3] for x in lines(engine, "cup.mp4")] == ["kept cue", "overlapping cue"]
    assert [x[3] for x in lines(engine, "campus_02.mp4")] == ["cr\u00e8me br\u00fbl\u00e9e"]


def test_the_same_bytes_under_two_names_share_their_sidecars(engine, video_folder):
    shutil.copy(video_folder / "cup.mp4", video_folder / "cup_copy.mp4")
    (video_folder / "cup_copy.srt").write_text(cue(1, 1.0, 2.0, "shared words"), encoding="utf-8")
    run(engine, video_folder)
    run(engine, video_folder)
    assert [x[3] for x in lines(engine, "cup.mp4")] == ["shared words"]


def test_a_run_killed_between_two_streams_reads_both_the_next_time(tmp_path, video_folder, monkeypatch):
    from retrieval.pipeline import subtitle_lines

    for name, text in (("one.srt", "first stream"), ("two.srt", "second stream")):
        (tmp_path / name).write_text(cue(1, 1.0, 2.0, text), encoding="utf-8")
    video = tmp_path / "two_streams.mkv"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(video_folder / "cup.mp4"),
                    "-i", str(tmp_path / "one.srt"), "-i", str(tmp_path / "two.srt"),
                    "-map", "0", "-map", "1", "-map", "2", "-c", "copy",
                    "-c:s", "srt", str(video)], check=True)
    with Catalog(tmp_path / "catalog.duckdb") as cat:
        db = cat.db

        class KilledAtTheSecondRecord:  # the process dies as the second stream's read is recorded
            recorded = 0

            def __getattr__(self, name):
                return getattr(db, name)

            def execute(self, sql, *args):
                if sql.startswith("INSERT OR REPLACE INTO line_runs"):
                    self.recorded += 1
                    if self.recorded == 2:
                        raise KeyboardInterrupt
                return db.execute(sql, *args)

        cat.db = KilledAtTheSecondRecord()
        with pytest.raises(KeyboardInterrupt):
            subtitle_lines._sync_streams(cat, "abc", video, subtitle_lines.SubtitleProblems())
        cat.db = db
        subtitle_lines._sync_streams(cat, "abc", video, subtitle_lines.SubtitleProblems())
        texts = [r[0] for r in cat.db.execute("SELECT text FROM text_lines ORDER BY origin").fetchall()]
    assert texts == ["first stream", "second stream"]


def finished(call):
    """``call()``'s result, run in a thread: a read that blocks for ever fails the test instead of hanging it."""
    done = {}
    worker = threading.Thread(target=lambda: done.setdefault("result", call()), daemon=True)
    worker.start()
    worker.join(timeout=600)
    assert not worker.is_alive(), "the index run did not finish"
    return done["result"]


def test_a_pipe_a_device_or_a_link_outside_under_a_sidecar_name_is_one_notice_and_the_run_finishes(
        engine, video_folder, tmp_path):
    os.mkfifo(video_folder / "cup.srt")  # no writer: opening it to read would wait for ever
    (video_folder / "campus_01.en.srt").symlink_to("/dev/zero")  # endless bytes
    outside = tmp_path / "elsewhere.srt"
    outside.write_text(cue(1, 1.0, 2.0, "outside words"), encoding="utf-8")
    (video_folder / "campus_02.srt").symlink_to(outside)
    (video_folder / "carphone_pristine.srt").write_text(cue(1, 1.0, 2.0, "kept words"), encoding="utf-8")
    report = finished(lambda: run(engine, video_folder))
    said = [n for n in report.notes if n.startswith("subtitles:")]
    assert said == ["subtitles: 3 subtitle file(s) unreadable, no cues taken (campus_01.en.srt: it is a device, "
                    "not a file, campus_02.srt: it points outside the indexed folder, cup.srt: it is a pipe, "
                    "not a file)"]
    assert lines(engine, "cup.mp4") == lines(engine, "campus_01.mp4") == lines(engine, "campus_02.mp4") == []
    assert [x[3] for x in lines(engine, "carphone_pristine.mp4")] == ["kept words"]
    again = finished(lambda: run(engine, video_folder))  # refused once: not read again until it changes
    assert again.subtitle_reads == 0 and not any(n.startswith("subtitles:") for n in again.notes)


def test_one_stray_byte_costs_its_line_not_the_files_utf8(engine, video_folder):
    (video_folder / "cup.srt").write_bytes(cue(1, 1.0, 2.0, "caf\u00e9 cr\u00e8me").encode("utf-8") + b"\n"
                                           + cue(2, 3.0, 4.0, "na\u00efve").encode("cp1252"))
    report = run(engine, video_folder)
    assert [x[3] for x in lines(engine, "cup.mp4")] == ["caf\u00e9 cr\u00e8me", "na\u00efve"]
    assert "subtitles: 1 subtitle file(s) not UTF-8, read with a fallback encoding (cup.srt: cp1252)" in report.notes
