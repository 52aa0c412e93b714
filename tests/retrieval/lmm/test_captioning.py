"""Reading a captioner's answers: clean text, or unreadable with the reason."""

from dataclasses import dataclass

import pytest

from retrieval.lmm.captioning import MAX_CHARS, answer_limit, read_answer


@pytest.mark.parametrize("raw, expected", [
    ("  A man walks.\n", ("A man walks.", "ok", None)),
    ("a\x00b\x1bc", ("abc", "ok", None)),
    ("", (None, "unreadable", "empty answer")),
    (None, (None, "unreadable", "not text: NoneType")),
])
def test_answers_are_read_as_clean_text_or_unreadable(raw, expected):
    a = read_answer(raw)
    assert (a.text, a.status, a.error) == expected


def test_a_caption_as_long_as_its_budget_allows_is_kept():
    """The reference's Qwen captions took up to 1024 new tokens and run to 4,958 characters (a model looping on,
    kept as it was written); a fast caption of 256 tokens past 2,000 characters is still a model running on."""
    looping = "The camera then cuts to a shot of a race car being pushed off the track by a tow truck. " * 56
    assert 4900 < len(looping) < 5000
    assert read_answer(looping, answer_limit(1024)).status == "ok"
    assert answer_limit(256) == MAX_CHARS
    too_long = read_answer(looping, answer_limit(256))
    assert (too_long.status, too_long.error) == ("unreadable", f"{len(looping.strip())} characters, more than 2000")


class _Decoded:
    def __init__(self, pixels):
        self.pixels = pixels


class _Decoder:
    """Frames of one value a unit (its start second); a unit starting at 99 s cannot be decoded."""

    def __init__(self, events, next_started):
        self.events, self.next_started = events, next_started

    def sample_span(self, path, spec, start, end):
        self.events.append(("decode", start))
        if start == 2.0:  # the second batch's first unit
            self.next_started.set()
        if start == 99.0:
            raise OSError("truncated file")
        import numpy as np
        return _Decoded(np.full((1, 2, 2, 3), int(start), dtype=np.uint8))


class _SlowModel:
    """A describer whose first batch ends only once the next batch's decoding has begun."""

    model_id, revision, describe_version, frame_spec, caption_tokens = "slow", "r", "1", 4, None
    batch_size = 2

    def __init__(self, events, next_started):
        self.events, self.next_started = events, next_started

    def describe_each(self, videos, questions, prepared=False):
        firsts = [int(v[0, 0, 0, 0]) for v in videos]
        self.events.append(("model starts", firsts))
        if firsts == [0, 1]:
            assert self.next_started.wait(timeout=60)
        self.events.append(("model ends", firsts))
        return [[f"unit {first}: {request}" for request, _ in asked]
                for first, asked in zip(firsts, questions, strict=True)]


def test_the_local_describer_decodes_the_next_batch_while_the_model_runs():
    import threading
    from dataclasses import dataclass
    from pathlib import Path

    from retrieval.lmm.captioning import LocalDescriber, describe_units

    @dataclass(frozen=True)
    class Unit:
        path: str
        start: float
        end: float

    events, next_started = [], threading.Event()
    work = [(Unit("a.mp4", float(s), float(s) + 1), {"caption": ("Describe.", 8)}) for s in (0, 1, 2, 99, 4)]
    model, decoder = _SlowModel(events, next_started), _Decoder(events, next_started)
    fed = list(LocalDescriber(model, Path("/videos"), decoder)(work))
    assert events.index(("decode", 2.0)) < events.index(("model ends", [0, 1]))
    next_started.set()
    sequential = [d for start in range(0, len(work), 2)
                  for d in describe_units(model, decoder, Path("/videos"), work[start:start + 2])]
    same = [(d.unit, d.answers, d.reason, d.calls) for d in fed]
    assert same == [(d.unit, d.answers, d.reason, d.calls) for d in sequential]
    assert [d.unit.start for d in fed] == [0, 1, 2, 99, 4]
    assert fed[3].reason == "not decoded (truncated file)"
    assert fed[2].answers["caption"].text == "unit 2: Describe."


@dataclass(frozen=True)
class _Unit:
    path: str
    start: float
    end: float


class _Shapes:
    """A describer on a GPU (as far as the describer can tell) that answers with each video's shape."""

    model_id, revision, describe_version, frame_spec, caption_tokens = "shapes", "r", "1", 4, None
    batch_size = 1

    def __init__(self):
        from types import SimpleNamespace
        self.device = SimpleNamespace(type="cuda")

    def describe_each(self, videos, questions, prepared=False):
        return [[f"{v.shape}" for _ in asked] for v, asked in zip(videos, questions, strict=True)]


def test_a_gpu_describer_decodes_in_worker_processes_as_in_this_one(tmp_path):
    from pathlib import Path

    from retrieval.lmm.captioning import LocalDescriber
    from retrieval.media.video_decoder import VideoDecoder
    from tests import media

    media.make_clip(tmp_path / "a.mp4", size=(64, 48))
    # the units go to the workers: a module's class, as the catalog's UnitRow is
    work = [(_Unit(name, 0.0, 2.0), {"caption": ("Describe.", 8)}) for name in ("a.mp4", "gone.mp4", "a.mp4")]
    model = _Shapes()
    describer = LocalDescriber(model, Path(tmp_path))
    assert describer.own_workers
    in_workers = list(describer(work))
    here = list(LocalDescriber(model, Path(tmp_path), VideoDecoder())(work))
    assert [(d.answers, d.reason is None) for d in in_workers] == [(d.answers, d.reason is None) for d in here]
    assert in_workers[0].answers["caption"].text.startswith("(4, ")
    assert in_workers[1].reason.startswith("not decoded (")
