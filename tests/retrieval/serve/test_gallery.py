"""Static HTML reports: one self-contained page per query or comparison."""

import base64
import io
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import av
import pytest
from PIL import Image

from rerankers.base import PairScore
from retrieval.analysis.diff import DiffRanking, RankedCandidate
from retrieval.api import Engine, QueryRequest
from retrieval.core.concepts import parse_concepts
from retrieval.lmm.differences import DiffResult
from retrieval.media.preview import Previews
from retrieval.media.scan import content_hash
from retrieval.search.results import Answerer, CompareResult, Hit, QueryResult
from retrieval.serve.gallery import (
    strip,
    video_src,
    write_compare_html,
    write_diff_html,
    write_diff_ranking_html,
    write_query_html,
)
from tests.media import make_clip
from tests.paths import EXAMPLES

NASTY = "<script>alert('x')\"q.mp4"  # no '/' possible in a file name, so no closing tag either


class Page(HTMLParser):
    """The parts of a report the tests look at: every tag with its attributes, and the text."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str, **wanted) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in wanted.items())]


def section_images(html: str, marker: str, until: str) -> list[str]:
    """``src`` of the <img> tags between two markers of the page."""
    part = html[html.index(marker):html.index(until, html.index(marker))]
    return [a["src"] for a in Page(part).all("img")]


def decode_jpeg(uri: str) -> Image.Image:
    assert uri.startswith("data:image/jpeg;base64,")
    image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert image.format == "JPEG"
    return image


def assert_offline(html: str) -> None:
    lowered = html.lower()
    assert "http://" not in lowered and "https://" not in lowered and "//cdn" not in lowered
    assert "<script" not in lowered and "<link" not in lowered  # nothing to fetch, nothing to run


def test_query_page_shows_anchor_strip_then_hits_in_rank_order(example_index, example_videos, tmp_path):
    engine = Engine(example_index)
    result = engine.query(QueryRequest(example_videos / "campus_01.mp4", ["location"], k=5))
    out = write_query_html(result, engine.root, tmp_path / "report" / "query.html")
    html = out.read_text(encoding="utf-8")
    page = Page(html)

    assert [a["data-path"] for a in page.all("li")] == [h.path for h in result.hits]
    assert [a["data-rank"] for a in page.all("li")] == ["1", "2", "3", "4", "5"]
    anchor_thumbs = section_images(html, 'id="anchor"', "</section>")
    assert len(anchor_thumbs) >= 4
    assert max(decode_jpeg(u).size[1] for u in anchor_thumbs) <= 128  # thumbnails, not frames
    for hit in result.hits:
        thumbs = section_images(html, f'id="hit-{hit.rank}"', "</li>")
        assert thumbs and all(decode_jpeg(u).size[0] > 0 for u in thumbs)
    videos = page.all("video")
    assert len(videos) == len(result.hits)
    first = result.hits[0]
    assert videos[0]["src"].endswith(f"{first.path}#t={first.start:.3f},{first.end:.3f}")
    assert linked_file(videos[0]["src"]) == (engine.root / first.path).resolve()
    text = " ".join(page.text)
    assert "Location" in text and f"{first.total:.3f}" in text
    assert_offline(html)


def test_names_are_escaped_everywhere(tmp_path):
    root = tmp_path / "videos"
    root.mkdir()
    clip = make_clip(root / NASTY, frames=30, fps=10)
    anchor = make_clip(tmp_path / f"anchor {NASTY}", frames=20, fps=10)
    concepts = parse_concepts(["location"])
    hit = Hit(1, NASTY, 0, 0.0, 3.0, {"location": 0.8}, 0.8, rank=1)
    result = QueryResult(str(anchor), concepts, {"location": "efficientnet-lite0:x"}, [hit])
    html = write_query_html(result, root, tmp_path / "q.html").read_text(encoding="utf-8")

    assert NASTY not in html and "<script" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&quot;q.mp4" in html
    page = Page(html)
    assert page.all("li")[0]["data-path"] == NASTY  # escaped, not mangled
    src = page.all("video")[0]["src"]
    assert "<" not in src and '"' not in src and "'" not in src
    assert src.startswith(root.resolve().as_uri() + "/%3Cscript%3E")
    assert linked_file(src) == clip.resolve()
    assert page.all("img") and all(NASTY in a["alt"] for a in page.all("img"))

    pair = write_compare_html(_compare_result(), anchor, clip, tmp_path / "c.html").read_text(encoding="utf-8")
    assert NASTY not in pair and "<script" not in pair


def test_unreadable_hit_costs_one_strip_not_the_page(tmp_path):
    anchor = make_clip(tmp_path / "anchor.mp4", frames=20, fps=10)
    concepts = parse_concepts(["location"])
    hits = [Hit(1, "gone.mp4", 0, 0.0, 2.0, {"location": 0.9}, 0.9, rank=1)]
    out = write_query_html(QueryResult(str(anchor), concepts, {"location": "m"}, hits), tmp_path, tmp_path / "q.html")
    html = out.read_text(encoding="utf-8")
    assert "thumbnails unavailable" in html and 'data-path="gone.mp4"' in html
    assert section_images(html, 'id="anchor"', "</section>")  # the anchor still has its strip


def _compare_result() -> CompareResult:
    answers = {"location": PairScore(4.2, "expected", "4"), "main-action": PairScore(None, "expected", "?")}
    return CompareResult.answered("a.mp4", "b.mp4", Answerer("tiny-qwen", "expected", False),
                                  parse_concepts(["location=0.75", "main-action=0.25"]), answers, model_pairs=1,
                                  notices=("a <b>note</b>",))


def test_compare_page_puts_both_strips_side_by_side_with_scores(tmp_path, example_videos):
    a, b = example_videos / "box.mp4", example_videos / "cup.mp4"
    html = write_compare_html(_compare_result(), a, b, tmp_path / "pair.html").read_text(encoding="utf-8")
    page = Page(html)
    assert [s["id"] for s in page.all("section", **{"class": "card clip"})] == ["clip-a", "clip-b"]
    assert html.index('id="clip-a"') < html.index('id="clip-b"') < html.index('id="scores"')
    assert len(section_images(html, 'id="clip-a"', "</section>")) >= 4
    assert len(section_images(html, 'id="clip-b"', "</section>")) >= 4
    widths = [a["style"] for a in page.all("span") if a.get("style", "").startswith("width:")]
    assert widths == ["width:80.0%", "width:0.0%"]  # 4.2 on the 1-5 scale; unreadable draws no bar
    text = " ".join(page.text)
    assert "4.200" in text and "unreadable" in text and "tiny-qwen" in text
    assert "&lt;b&gt;note&lt;/b&gt;" in html
    assert_offline(html)


def test_strip_drops_the_samplers_padding_repeats(tmp_path):
    clip = make_clip(tmp_path / "short.mp4", frames=25, fps=10, size=(320, 240))  # 2.5 s: fewer frames than 8
    thumbs = strip(clip, frames=8)
    times = [t.time for t in thumbs]
    assert times == sorted(set(times)) and 2 <= len(times) < 8
    assert min(thumbs[0].width, thumbs[0].height) <= 128


@pytest.mark.parametrize("start, end, fragment", [(0.0, None, "#t=0.000"), (2.5, 7.25, "#t=2.500,7.250")])
def test_video_src_is_the_files_absolute_uri_starting_at_the_unit(tmp_path, start, end, fragment):
    video = tmp_path / "clips" / "my clip.mp4"
    video.parent.mkdir()
    video.touch()
    src = video_src(video, start, end)
    assert src == f"{(tmp_path / 'clips').resolve().as_uri()}/my%20clip.mp4{fragment}"
    assert src.startswith("file:///") and linked_file(src) == video.resolve()


def test_the_page_is_written_whole_or_not_at_all(tmp_path):
    out = tmp_path / "pair.html"
    clip = make_clip(tmp_path / "clip.mp4", frames=20, fps=10)
    write_compare_html(_compare_result(), clip, clip, out)
    assert out.read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert not list(tmp_path.glob("*.tmp"))


# -- how videos are shown: linked by absolute URI, a preview, a label, or embedded ------------------------------
FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="embedding clips needs the ffmpeg command-line tool")


def linked_file(src: str) -> Path:
    """The file a ``file://`` player source points to."""
    parsed = urlparse(src)
    assert parsed.scheme == "file"
    return Path(unquote(parsed.path))


def videos_note(html: str) -> str:
    return " ".join(Page(html[html.index('id="videos-note"'):html.index("</p>", html.index('id="videos-note"'))]).text)


def _one_hit_page(root: Path, anchor: Path, names: list[str], out: Path, **options) -> str:
    hits = [Hit(i, name, 0, 0.5, 1.5, {"location": 0.5}, 0.5, rank=i + 1) for i, name in enumerate(names)]
    result = QueryResult(str(anchor), parse_concepts(["location"]), {"location": "m"}, hits)
    return write_query_html(result, root, out, frames_per_strip=2, **options).read_text(encoding="utf-8")


@pytest.fixture
def clips(tmp_path) -> Path:
    """A folder with an H.264 MP4 and an msmpeg4v3 AVI (which no browser plays)."""
    root = tmp_path / "videos"
    root.mkdir()
    make_clip(root / "plays.mp4", frames=30, fps=10)
    make_clip(root / "old.avi", frames=30, fps=10, codec="msmpeg4")
    return root


def test_a_moved_page_still_links_the_original_videos(clips, tmp_path):
    written = _one_hit_page(clips, clips / "plays.mp4", ["plays.mp4"], tmp_path / "report" / "q.html")
    moved = tmp_path / "elsewhere" / "deeper" / "q.html"
    moved.parent.mkdir(parents=True)
    shutil.move(tmp_path / "report" / "q.html", moved)
    html = moved.read_text(encoding="utf-8")
    [video] = Page(html).all("video")
    assert linked_file(video["src"].split("#")[0]) == (clips / "plays.mp4").resolve()
    assert linked_file(video["src"].split("#")[0]).is_file()
    note = videos_note(html)
    assert str(clips.resolve()) in note and "another machine" in note
    assert html.count('id="videos-note"') == 1 and written == html


@pytest.fixture
def no_ffmpeg(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _name: None)


def test_without_ffmpeg_a_file_browsers_cannot_play_gets_a_label_not_a_black_player(clips, tmp_path, no_ffmpeg):
    html = _one_hit_page(clips, clips / "plays.mp4", ["old.avi"], tmp_path / "q.html")
    page = Page(html)
    assert page.all("video") == []
    [label] = page.all("p", **{"class": "cannot-play"})
    text = " ".join(page.text)
    assert "cannot play here: msmpeg4v3 video in an AVI file" in text and "ffmpeg is not installed" in text
    assert section_images(html, 'id="hit-1"', "</li>")  # the strip is still there


def test_a_cached_preview_is_linked_in_place_of_a_file_browsers_cannot_play(clips, tmp_path):
    previews = Previews(tmp_path / "index" / "previews")
    made = previews.path_for(clips / "old.avi", content_hash(clips / "old.avi"))
    made.parent.mkdir(parents=True)
    shutil.copy(clips / "plays.mp4", made)  # stands in for what Previews.ensure makes
    html = _one_hit_page(clips, clips / "plays.mp4", ["old.avi", "plays.mp4"], tmp_path / "q.html", previews=previews)
    videos = Page(html).all("video")
    assert [linked_file(v["src"].split("#")[0]) for v in videos] == [made.resolve(), (clips / "plays.mp4").resolve()]
    assert videos[0]["src"].endswith("#t=0.500,1.500") and "cannot play here" not in html


def test_compare_and_diff_pages_link_by_absolute_uri_and_label_what_cannot_play(clips, tmp_path, no_ffmpeg):
    mp4, avi = clips / "plays.mp4", clips / "old.avi"
    compare = write_compare_html(_compare_result(), mp4, avi, tmp_path / "c.html", frames_per_strip=2)
    diff = write_diff_html(DiffResult("a", "b", "squat", "m", "expected", False, "linspace:4"), mp4, avi,
                           tmp_path / "d.html", frames_per_strip=2)
    ranking = DiffRanking(str(mp4), "squat", (RankedCandidate(1, "old.avi", str(avi), 0.0, None),), 0)
    ranked = write_diff_ranking_html(ranking, mp4, tmp_path / "r.html", frames_per_strip=2)
    for out in (compare, diff, ranked):
        html = out.read_text(encoding="utf-8")
        page = Page(html)
        assert [linked_file(v["src"].split("#")[0]) for v in page.all("video")] == [mp4.resolve()]
        assert len(page.all("p", **{"class": "cannot-play"})) == 1 and "msmpeg4v3" in html
        assert str(clips.resolve()) in videos_note(html)


@needs_ffmpeg
def test_pages_link_a_preview_made_beside_them_of_what_browsers_cannot_decode(clips, tmp_path):
    box = Path(shutil.copy(EXAMPLES / "box.mp4", clips / "box.mp4"))  # H.264 with a broken slice at its start
    html = _one_hit_page(clips, clips / "plays.mp4", ["box.mp4", "old.avi", "plays.mp4"], tmp_path / "q.html")
    linked = [linked_file(v["src"].split("#")[0]) for v in Page(html).all("video")]
    beside = tmp_path / "q-previews"
    assert linked == [beside / f"{content_hash(box)}.mp4", beside / f"{content_hash(clips / 'old.avi')}.mp4",
                      (clips / "plays.mp4").resolve()] and "cannot play here" not in html
    for made in linked[:2]:
        with av.open(str(made)) as container:
            assert container.streams.video[0].codec_context.name == "h264"
        errors = subprocess.run([FFMPEG, "-nostdin", "-v", "error", "-i", str(made), "-f", "null", "-"],
                                capture_output=True, text=True, check=True).stderr
        assert errors.strip() == ""
    compare = write_compare_html(_compare_result(), clips / "plays.mp4", box, tmp_path / "c.html", frames_per_strip=2)
    [_, b] = Page(compare.read_text(encoding="utf-8")).all("video")
    assert linked_file(b["src"]) == tmp_path / "c-previews" / f"{content_hash(box)}.mp4"


@needs_ffmpeg
def test_embedded_videos_make_the_page_play_anywhere(clips, tmp_path):
    html = _one_hit_page(clips, clips / "plays.mp4", ["plays.mp4", "old.avi", "gone.mp4"], tmp_path / "q.html",
                         embed_videos=True)
    page = Page(html)
    sources = [v["src"] for v in page.all("video")]
    assert len(sources) == 2 and all(s.startswith("data:video/mp4;base64,") for s in sources)
    for i, source in enumerate(sources):
        clip = tmp_path / f"embedded-{i}.mp4"
        clip.write_bytes(base64.b64decode(source.split(",", 1)[1]))
        with av.open(str(clip)) as container:
            assert container.streams.video[0].codec_context.name == "h264"
            assert abs(container.duration / 1e6 - 1.0) <= 0.3  # the hit's span, 0.5-1.5 s
    assert "Videos are embedded (H.264 previews of each result" in videos_note(html)
    assert "file://" not in html
    [label] = section_html_labels(html, 'id="hit-3"')
    assert label.startswith("cannot play here:") and "gone.mp4" in label and str(tmp_path) not in label


def section_html_labels(html: str, marker: str) -> list[str]:
    part = html[html.index(marker):html.index("</li>", html.index(marker))]
    return [t for t in Page(part).text if t.startswith("cannot play here")]


def test_a_composed_query_page_shows_the_change_and_each_hits_stay_and_change(demo_index, example_videos, tmp_path):
    from retrieval.search.compose import Change

    change = "a cup instead of a box"
    result = Engine(demo_index).query(QueryRequest(example_videos / "box.mp4", ["main-objects"], k=3,
                                                   change=Change(change, 2.0)))
    assert result.hits and all(h.composed for h in result.hits)
    page = Page(write_query_html(result, example_videos, tmp_path / "q.html").read_text(encoding="utf-8"))
    text = " ".join("".join(page.text).split())
    assert f"changed: {change}" in text and "total = (stay + 2 x change) / 3" in text
    for hit in result.hits:
        card = " ".join(_card_text(tmp_path / "q.html", hit.rank).split())
        stay, moved = hit.composed["stay"], hit.composed["change"]
        assert f"stays like the anchor w 0.33 · the concepts above{stay:.3f}" in card
        assert f'shows "{change}" w 0.67 · the change text{moved:.3f}' in card
        assert f"total {hit.total:.3f}" in card


def _card_text(page: Path, rank: int) -> str:
    html = page.read_text(encoding="utf-8")
    start = html.index(f'id="hit-{rank}"')
    return "".join(Page(html[start:html.index("</li>", start)]).text)
