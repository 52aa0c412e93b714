"""Reading subtitle files and streams: cues with their times, problems counted by class, nothing else lost."""

import subprocess

from retrieval.media import subtitles
from retrieval.media.subtitles import read_sidecar, read_streams, sidecars
from tests.media import make_clip

SRT = """1
00:00:01,000 --> 00:00:02,500
Hello <i>world</i>

2
00:00:0x,000 --> 00:00:04,000
a broken timing line

3
00:00:05,000 --> 00:00:04,000
backwards

4
00:00:06,000 --> 00:00:08,000
two
lines

5
00:00:07,000 --> 00:00:09,000
overlapping
"""


def cues(read):
    return [(c.start, c.end, c.text) for c in read.cues]


def test_srt_cues_keep_their_times_and_each_problem_is_counted(tmp_path):
    path = tmp_path / "talk.srt"
    path.write_text(SRT, encoding="utf-8")
    read = read_sidecar(path)
    assert cues(read) == [(1.0, 2.5, "Hello world"), (6.0, 8.0, "two lines"), (7.0, 9.0, "overlapping")]
    assert read.problems == {"malformed": 2, "overlap": 1}


def test_vtt_cue_identifiers_and_notes_are_not_text(tmp_path):
    path = tmp_path / "talk.en.vtt"
    path.write_text("WEBVTT\n\nNOTE a remark\n\nintro\n00:01.000 --> 00:02.000 align:start\n<v Bob>Hi there\n\n"
                    "cue-2\n01:00:04.000 --> 01:00:05.000\nlater\n", encoding="utf-8")
    read = read_sidecar(path)
    assert cues(read) == [(1.0, 2.0, "Hi there"), (3604.0, 3605.0, "later")] and read.problems == {}


def test_a_file_not_in_utf8_is_read_with_the_fallback_and_said(tmp_path):
    path = tmp_path / "talk.srt"
    path.write_bytes("1\n00:00:01,000 --> 00:00:02,000\ncaf\u00e9 cr\u00e8me \u2013 d\u00e9j\u00e0\n".encode("cp1252"))
    read = read_sidecar(path)
    assert cues(read) == [(1.0, 2.0, "caf\u00e9 cr\u00e8me \u2013 d\u00e9j\u00e0")]
    assert read.encoding == "cp1252" and read.problems == {"encoding": 1}
    bom = tmp_path / "bom.srt"
    bom.write_bytes(b"\xef\xbb\xbf1\n00:00:01,000 --> 00:00:02,000\nplain\n")
    assert cues(read_sidecar(bom)) == [(1.0, 2.0, "plain")] and read_sidecar(bom).problems == {}


def test_sidecars_match_the_stem_with_or_without_a_language(tmp_path):
    for name in ("talk.srt", "talk.en.vtt", "talk.pt-BR.srt", "talk.mp4", "talks.srt", "talk.director cut.srt",
                 "other.srt", "talk.txt"):
        (tmp_path / name).write_text("")
    found = sidecars(tmp_path / "talk.mp4")
    assert [(s.path.name, s.language) for s in found] == [
        ("talk.en.vtt", "en"), ("talk.pt-BR.srt", "pt-BR"), ("talk.srt", None)]


def test_text_subtitle_streams_are_read_from_mkv_and_mp4(tmp_path):
    clip = make_clip(tmp_path / "clip.mp4", frames=100)
    subs = tmp_path / "subs.srt"
    subs.write_text("1\n00:00:01,200 --> 00:00:02,400\nquokka <b>sighting</b>\n\n"
                    "2\n00:00:06,000 --> 00:00:07,500\nsecond cue\n", encoding="utf-8")
    for out, codec in (("out.mkv", "srt"), ("out.mp4", "mov_text"), ("ass.mkv", "ass")):
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(clip), "-i", str(subs), "-c", "copy",
                        "-c:s", codec, "-metadata:s:s:0", "language=eng", str(tmp_path / out)], check=True)
        streams = read_streams(tmp_path / out)
        assert [(s.index, s.language) for s in streams] == [(1, "eng")], out
        assert cues(streams[0].read) == [(1.2, 2.4, "quokka sighting"), (6.0, 7.5, "second cue")], out
    assert read_streams(clip) == [] and read_streams(tmp_path / "missing.mkv") == []


def test_a_file_of_more_cues_than_a_day_of_speech_keeps_the_first_and_counts_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(subtitles, "MAX_CUES", 100)  # the rule, not the size: 100 stands in for 50,000
    path = tmp_path / "talk.srt"
    path.write_text("".join(f"{i + 1}\n00:{i // 60:02d}:{i % 60:02d},000 --> 00:{i // 60:02d}:{i % 60:02d},500\n"
                            f"cue {i}\n\n" for i in range(130)), encoding="utf-8")
    read = read_sidecar(path)
    assert [c.text for c in read.cues] == [f"cue {i}" for i in range(100)]
    assert read.problems == {"too_many": 30}
