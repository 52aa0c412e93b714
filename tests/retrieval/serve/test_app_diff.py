"""What differs, in the web compare view: POST /diff asks the server's LMM (a tiny random Qwen2-VL here) as
`convis diff` does, its weights checked first; the app shows each statement and the clip it is more true of, or
says how to enable it when the server has no LMM."""

import pytest
from fastapi.testclient import TestClient

from bench.tiny.vlm import build_qwen_vl
from retrieval.serve.server import create_app
from tests.retrieval.serve.browser import needs_chromium, needs_ffmpeg, serving

LOCAL = "http://localhost"
PAIR = {"a": "cup.mp4", "b": "box.mp4", "b_start": 0, "b_end": 10, "action": "a hand moving an object"}


@pytest.fixture(scope="module")
def qwen(tmp_path_factory) -> str:
    return str(build_qwen_vl(tmp_path_factory.mktemp("vlm") / "qwen2-vl-tiny"))


@pytest.fixture
def answers(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no answer cache of another test


def test_without_a_reranker_diff_says_how_to_enable_it(app_videos):
    with TestClient(create_app(app_videos / ".convis"), base_url=LOCAL) as client:
        refused = client.post("/diff", json={**PAIR, "statements": ["the object is larger"]})
    assert refused.status_code == 400 and "convis serve --reranker NAME" in refused.json()["error"]


def test_missing_weights_are_refused_before_any_clip_is_decoded(app_videos, tmp_path):
    missing = str(tmp_path / "no-such-weights")
    with TestClient(create_app(app_videos / ".convis", reranker=missing), base_url=LOCAL) as client:
        refused = client.post("/diff", json={**PAIR, "statements": ["the object is larger"]})
    assert refused.status_code >= 400 and str(tmp_path) not in refused.json()["error"]
    assert "no-such-weights" in refused.json()["error"] or "weights" in refused.json()["error"]


@pytest.mark.parametrize("bad", [{"action": " "}, {"statements": [""]}, {"statements": ["x"] * 21}, {"most": 0}])
def test_bad_diff_requests_are_one_line_422s(app_videos, qwen, bad):
    with TestClient(create_app(app_videos / ".convis", reranker=qwen), base_url=LOCAL) as client:
        refused = client.post("/diff", json={**PAIR, **bad})
    assert refused.status_code == 422 and "\n" not in refused.json()["error"]


def test_diff_places_each_statement_on_the_anchor_or_the_clip(app_videos, qwen, answers):
    statements = ["the object is larger", "the hand moves faster"]
    with TestClient(create_app(app_videos / ".convis", reranker=qwen), base_url=LOCAL) as client:
        data = client.post("/diff", json={**PAIR, "statements": statements}).json()
        again = client.post("/diff", json={**PAIR, "statements": statements}).json()
    assert (data["a"], data["b"], data["task"]) == ("cup.mp4", "box.mp4", "closed")
    assert [s["statement"] for s in data["statements"]] == statements and data["model_calls"] == 2
    for row in data["statements"]:
        assert 0.0 <= row["p_a"] <= 1.0 and row["p_b"] == pytest.approx(1 - row["p_a"], abs=1e-3)
        assert row["prediction"] == ("a" if row["p_a"] > 0.5 else "b")
    assert data["seen"]["b"]["timestamps"][-1] <= 10.0  # b's span, the compared unit, not the whole file
    assert [s["p_a"] for s in again["statements"]] == [s["p_a"] for s in data["statements"]]
    assert again["model_calls"] == 0  # from the index's answer cache


@pytest.mark.slow
@needs_chromium
@needs_ffmpeg
def test_the_compare_view_shows_what_differs(app_videos, qwen, answers, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(120_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    compare = "/?view=compare&anchor=cup.mp4&c=location%3D1&k=10&b=box.mp4&bstart=0"
    with serving(app_videos / ".convis") as url:  # no LMM: the view says how to have one
        page.goto(url + compare)
        page.wait_for_selector("#compare-diff #diff-off")
        assert "convis serve --reranker NAME" in page.inner_text("#diff-off")
    with serving(app_videos / ".convis", reranker=qwen) as url:
        page.goto(url + compare)
        page.fill("#diff-action", "a hand moving an object")
        page.fill("#diff-statements", "the object is red\nthe camera moves")
        page.click("#diff-ask")
        page.wait_for_selector("#diff-table tr.diff-row")
        rows = page.eval_on_selector_all("#diff-table tr.diff-row", "rows => rows.map((r) => [r.dataset.told, "
                                         "r.cells[0].innerText, r.cells[1].innerText, Number(r.cells[2].innerText)])")
    assert [r[1] for r in rows] == ["the object is red", "the camera moves"]
    for told, _statement, shown, p_a in rows:
        expected = "can't tell" if abs(p_a - 0.5) < 0.1 else "a" if p_a > 0.5 else "b"
        assert told == expected
        assert shown == {"a": "the anchor (cup.mp4)", "b": "B (box.mp4)"}.get(told, told)
    assert not errors, errors
