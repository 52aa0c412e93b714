"""``GET /evidence`` and ``GET /frame``: the frames each signal sampled from a unit, its caption and descriptions."""

import io
from fractions import Fraction
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import av
import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from indexers import create_indexer
from retrieval.api import Engine
from retrieval.core.sampling import FrameSpec
from retrieval.pipeline.settings import IndexSettings
from retrieval.serve.gallery import THUMB_SHORT_SIDE
from retrieval.serve.routes.evidence import frame_spec
from retrieval.serve.server import create_app
from retrieval.store.catalog import Catalog
from retrieval.store.catalog.records import IndexerRow
from tests.indexes import CAPTIONS, indexed_copies
from tests.media import decoded_frame_number, make_clip
from tests.paths import EXAMPLES

LOCAL = "http://localhost"  # the app answers loopback host names only
FRAMES = 8  # EfficientNet-Lite0's frames a unit (convis's fast protocol)


@pytest.fixture(scope="module")
def client(example_index):
    with TestClient(create_app(example_index), base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def segmented(tmp_path_factory):
    """campus_01.mp4 (20 s) indexed in 5-second units."""
    videos = indexed_copies(tmp_path_factory.mktemp("segmented"), ("campus_01.mp4",), ["efficientnet-lite0"],
                            segment_seconds=5.0)
    return videos / ".convis"


@pytest.fixture(scope="module")
def captioned(tmp_path_factory):
    videos = indexed_copies(tmp_path_factory.mktemp("captioned"), ("cup.mp4", "box.mp4"), ["efficientnet-lite0"],
                            captions=CAPTIONS)
    return videos / ".convis"


@pytest.fixture(scope="module")
def numbered(tmp_path_factory):
    """A 5-second clip at 10 fps whose frames carry their own numbers in their grey level."""
    videos = tmp_path_factory.mktemp("numbered") / "videos"
    videos.mkdir()
    make_clip(videos / "count.mp4", frames=50, fps=10)
    Engine(videos / ".convis").index(videos, ["efficientnet-lite0"], IndexSettings(workers=1))
    return videos / ".convis"


def by_hand(path: Path, start: float = 0.0, end: float | None = None) -> list[tuple[int, float]]:
    """The fast protocol's documented rule, worked out from the decoded file: the unit's frames, every
    round(fps)-th of them, then ``int(i*gap + gap/2)`` of those (gap = their count / 8), padded with the last."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate)
        count = sum(1 for _ in container.decode(stream))
    first = int(start * fps)
    stop = count if end is None else min(count, int(np.ceil(end * fps)))
    seconds = list(range(0, stop - first, round(fps)))
    if len(seconds) < FRAMES:
        picked = seconds + [seconds[-1]] * (FRAMES - len(seconds))
    else:
        gap = len(seconds) / FRAMES
        picked = [seconds[int(i * gap + gap / 2)] for i in range(FRAMES)]
    return [(first + i, (first + i) / fps) for i in picked]


def frames_of(answer: dict) -> list[tuple[int, float]]:
    (signal,) = [s for s in answer["signals"] if s["kind"] == "image"]
    return [(f["index"], f["time"]) for f in signal["frames"]]


@pytest.mark.parametrize("name", ["cup.mp4", "campus_01.mp4", "carphone_pristine.mp4", "bikes.mp4"])
def test_frames_are_those_the_sampling_rule_gives(client, example_index, name):
    answer = client.get(f"/evidence/{name}")
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert (data["path"], data["segment"], data["start"], data["caption"], data["descriptions"]) == \
        (name, 0, 0.0, None, [])
    shown, expected = frames_of(data), by_hand(EXAMPLES / name)
    assert [i for i, _ in shown] == [i for i, _ in expected]
    assert [t for _, t in shown] == pytest.approx([t for _, t in expected], abs=1e-3)
    with Catalog(example_index / "catalog.duckdb", read_only=True) as catalog:
        (unit,) = catalog.file_units(name)
    assert [t for _, t in shown] == pytest.approx(unit.frame_times, abs=1e-3)  # the times indexing recorded
    (signal,) = data["signals"]
    assert signal["name"] == "efficientnet-lite0" and signal["count"] == FRAMES
    assert signal["sees"].startswith(f"{len(set(shown))} frames, ")  # padding repeats the last
    assert all(f["src"] == f"/frame/{name}?t={f['time']}" for f in signal["frames"]) and data["notices"] == []


def test_a_segmented_index_shows_frames_inside_each_segment(segmented):
    with TestClient(create_app(segmented), base_url=LOCAL) as client:
        answers = [client.get("/evidence/campus_01.mp4", params={"segment": n}) for n in range(4)]
        missing = client.get("/evidence/campus_01.mp4", params={"segment": 4})
    assert missing.status_code == 404 and "no segment 4" in missing.json()["error"]
    for n, answer in enumerate(answers):
        assert answer.status_code == 200, answer.text
        data = answer.json()
        assert data["segment"] == n and data["start"] == pytest.approx(5.0 * n)
        shown = frames_of(data)
        assert all(data["start"] - 1e-3 <= t < data["end"] for _, t in shown)
        expected = by_hand(segmented.parent / "campus_01.mp4", data["start"], data["end"])
        assert [i for i, _ in shown] == [i for i, _ in expected]


def test_captions_and_descriptions_appear_with_the_text_signals(captioned):
    with TestClient(create_app(captioned), base_url=LOCAL) as client:
        data = client.get("/evidence/cup.mp4").json()
    assert data["caption"] == (CAPTIONS / "cup.txt").read_text().strip()
    described = {d["concept"]: d for d in data["descriptions"]}
    assert described["location"]["text"] == (CAPTIONS / "cup.location.txt").read_text().strip()
    assert described["location"]["by"] == "file" and "main-action" in described
    texts = {s["embeds"]: s for s in data["signals"] if s["kind"] == "text"}
    assert texts["caption"]["text"] == data["caption"] and texts["caption"]["frames"] == []
    assert texts["location"]["text"] == described["location"]["text"]
    assert len(frames_of(data)) == FRAMES


def test_frame_serves_the_frame_at_a_time_as_a_small_jpeg(client):
    data = client.get("/evidence/cup.mp4").json()
    picture = client.get(data["signals"][0]["frames"][3]["src"])
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/jpeg"
    assert picture.headers["cache-control"] == "private, max-age=300"
    assert min(Image.open(io.BytesIO(picture.content)).size) == THUMB_SHORT_SIDE
    past = client.get("/frame/cup.mp4", params={"t": 60})
    assert past.status_code == 404 and "past the end" in past.json()["error"]


def test_frame_is_the_very_frame_evidence_names(numbered):
    with TestClient(create_app(numbered), base_url=LOCAL) as client:
        data = client.get("/evidence/count.mp4").json()
        shown = data["signals"][0]["frames"]
        # 50 frames at 10 fps: 1 a second gives 0, 10, ..., 40, padded to 8 with the last
        assert [f["index"] for f in shown] == [0, 10, 20, 30, 40, 40, 40, 40]
        for f in shown[:5]:
            picture = client.get(f["src"])
            assert picture.status_code == 200
            assert float(parse_qs(urlparse(f["src"]).query)["t"][0]) == pytest.approx(f["index"] / 10)
            assert decoded_frame_number(np.asarray(Image.open(io.BytesIO(picture.content)))) == f["index"]
        # a time rounded to the millisecond still finds its frame
        near = client.get("/frame/count.mp4", params={"t": float(Fraction(7, 10)) - 0.0004})
        assert decoded_frame_number(np.asarray(Image.open(io.BytesIO(near.content)))) == 7


@pytest.mark.parametrize("url, status", [
    ("/evidence/cup.mp4?segment=1", 404),
    ("/evidence/nothing.mp4", 404),
    ("/evidence/..%2Fx.mp4", 422),  # refused by the ref's pattern, as /media, /strips and /thumbs refuse it
    ("/evidence/a/..%2F..%2Fx.mp4", 422),
    ("/frame/..%2Fx.mp4?t=0", 422),
    ("/frame/cup.mp4?t=-1", 422),
    ("/frame/nothing.mp4?t=0", 404),
])
def test_bad_refs_and_segments_get_a_one_line_error(client, url, status):
    answer = client.get(url)
    assert answer.status_code == status and list(answer.json()) == ["error"]


@pytest.mark.parametrize("protocol", ["fast", "paper"])
@pytest.mark.parametrize("family", ["dinov2", "videomae", "hf_clip", "open_clip"])
def test_the_rule_read_from_a_card_is_the_built_models_own(tiny_models, family, protocol):
    built = create_indexer(str(tiny_models[family]), protocol=protocol)
    row = IndexerRow(built.model_id, built.name, built.source, built.kind, built.dim, built.frames_per_unit, None)
    assert frame_spec(row, protocol) == FrameSpec(built.frame_spec.rule, built.frame_spec.count)
