"""The speech indexer in the index run: each file's sound track is heard once, silence costs no recogniser call,
files with subtitles are left to them, and the index keeps hearing new files without ``-i speech``."""

import shutil

import numpy as np
import pytest

from bench.tiny.speech import tiny_whisper
from indexers.speech import SpeechRecognizer, SpokenLine
from retrieval.pipeline.distribute import SerialDistributor
from retrieval.pipeline.settings import IndexSettings
from retrieval.store.catalog import Catalog
from tests.media import make_clip, silence, spoken, tone, with_sound


@pytest.fixture(scope="module")
def whisper(tmp_path_factory):
    return tiny_whisper(tmp_path_factory.mktemp("whisper") / "tiny")


def run(engine, folder, *specs):
    return engine.index(folder, [engine.spec, *specs], IndexSettings(), distributor=SerialDistributor())


def test_speech_is_heard_once_and_silence_costs_no_call(engine, tmp_path, whisper):
    folder = tmp_path / "videos"
    folder.mkdir()
    speech = spoken("meet me at the old lighthouse at noon", tmp_path)
    said = len(speech) / 16_000
    picture = make_clip(tmp_path / "picture.mp4", frames=60)
    with_sound(picture, np.concatenate([silence(1.0), speech, silence(5.0 - said)]), folder / "talk.mp4")
    with_sound(make_clip(tmp_path / "other.mp4", frames=60, pixels=lambda i: np.full((48, 64, 3), 200 - i, np.uint8)),
               np.concatenate([silence(2.0), tone(2.0), silence(2.0)]), folder / "quiet.mp4")
    with_sound(make_clip(tmp_path / "third.mp4", frames=40), np.concatenate([speech, silence(1.0)]),
               folder / "subtitled.mp4")
    (folder / "subtitled.srt").write_text("1\n00:00:00,000 --> 00:00:02,000\nwritten words\n", encoding="utf-8")
    report = run(engine, folder, f"speech:{whisper}")
    assert (report.speech_files, report.speech_calls) == (2, 1)  # the subtitled file is not heard
    origin = f"whisper:{whisper}"
    with Catalog(engine.catalog_path, read_only=True) as cat:
        talk = cat.file_lines("talk.mp4", ("speech",))
        assert all(x.origin == origin and 0.8 <= x.start <= x.end <= 1.2 + said for x in talk)
        stamps = {rel: cat.line_stamps(s.content_hash, "speech") for rel, s in cat.file_states().items()}
    assert stamps == {"talk.mp4": {origin: f"{whisper}@local"}, "quiet.mp4": {origin: "no voice"},
                      "subtitled.mp4": {}}
    again = engine.index(folder, [], IndexSettings(), distributor=SerialDistributor())
    assert (again.speech_files, again.speech_calls) == (0, 0)  # heard already, and the index kept the indexer
    with_sound(picture, np.concatenate([silence(0.5), speech, silence(5.5 - said)]), folder / "new.mp4")
    later = engine.index(folder, [], IndexSettings(), distributor=SerialDistributor())
    assert (later.speech_files, later.speech_calls) == (1, 1)
    other = shutil.copytree(whisper, tmp_path / "another-whisper")  # another checkpoint: its lines replace these
    run(engine, folder, f"speech:{other}")
    with Catalog(engine.catalog_path, read_only=True) as cat:
        heard = {x.origin for rel in ("talk.mp4", "new.mp4") for x in cat.file_lines(rel, ("speech",))}
        stamps = [set(cat.line_stamps(s.content_hash, "speech")) for s in cat.file_states().values()]
    assert heard == {f"whisper:{other}"} and stamps.count({f"whisper:{other}"}) == 3


def test_a_recogniser_that_cannot_be_loaded_is_said_and_the_run_goes_on(engine, tmp_path):
    folder = tmp_path / "videos"
    folder.mkdir()
    speech = spoken("meet me at the old lighthouse at noon", tmp_path)
    picture = make_clip(tmp_path / "picture.mp4", frames=60)
    with_sound(picture, np.concatenate([silence(1.0), speech, silence(1.0)]), folder / "talk.mp4")
    missing = tmp_path / "no-such-whisper"
    report = run(engine, folder, f"speech:{missing}")
    assert report.indexed == 1 and report.speech_files == 0
    said = [n for n in report.notes if n.startswith("speech:")]
    assert len(said) == 1 and "cannot load" in said[0] and str(missing) in said[0]
    with Catalog(engine.catalog_path, read_only=True) as cat:  # not recorded as heard: a later run tries again
        assert [cat.line_stamps(s.content_hash, "speech") for s in cat.file_states().values()] == [{}]


def test_a_heard_line_the_catalog_cannot_store_is_counted_and_costs_itself(engine, tmp_path, whisper, monkeypatch):
    folder = tmp_path / "videos"
    folder.mkdir()
    with_sound(make_clip(tmp_path / "picture.mp4", frames=60), np.concatenate([tone(1.0), silence(5.0)]),
               folder / "talk.mp4")
    heard = [SpokenLine(0.0, 1.0, "kept words"), SpokenLine(1.0, 2.0, "half \ud800 a surrogate")]
    monkeypatch.setattr(SpeechRecognizer, "voiced", lambda self, audio: [(0.0, 2.0)])
    monkeypatch.setattr(SpeechRecognizer, "transcribe", lambda self, audio, spans: heard)
    report = run(engine, folder, f"speech:{whisper}")
    assert report.speech_unstored == 1 and report.as_dict()["speech_unstored"] == 1
    assert any(note.startswith("speech: 1 line(s) the catalog cannot store") for note in report.notes)
    with Catalog(engine.catalog_path, read_only=True) as cat:
        assert [x.text for x in cat.file_lines("talk.mp4", ("speech",))] == ["kept words"]
