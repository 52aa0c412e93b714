"""The app's filter bar in headless Chromium: fields from GET /fields, conditions as chips sent with every query and
search, kept in the URL (reload, back and forward restore them), a refused condition's one line beside the bar,
and text search's mode selector."""

from urllib.parse import parse_qs, urlparse

import pytest

from tests.retrieval.serve.browser import needs_chromium, needs_ffmpeg, serving

pytestmark = [needs_chromium, needs_ffmpeg]
HITS = "#hits li.hit"
QUERY = "/?anchor=box.mp4&c=location%3D1&k=10"
SHOWN = """(want) => { const cards = [...document.querySelectorAll('#hits li.hit')];
  return !document.querySelector('#results').hidden && cards.length > 0 &&
         cards.every((li) => want === null ? true : li.dataset.path.startsWith(want)); }"""
MIXED = """() => { const paths = [...document.querySelectorAll('#hits li.hit')].map((li) => li.dataset.path);
  return !document.querySelector('#results').hidden && paths.some((p) => !p.startsWith('campus_')); }"""


@pytest.fixture(scope="module")
def app_url(app_videos):
    with serving(app_videos / ".convis") as url:
        yield url


def ready(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']")


def paths(page) -> list[str]:
    return page.eval_on_selector_all(HITS, "items => items.map((li) => li.dataset.path)")


def chips(page) -> list[str]:
    return page.eval_on_selector_all("#filter-chips li.chip", "items => items.map((li) => li.dataset.where)")


def where_of(page) -> list[str]:
    return parse_qs(urlparse(page.url).query).get("where", [])


def add_by_keys(page, field: str, op: str, value: str) -> None:
    """A condition added from the keyboard: the selects chosen, the value typed, Enter."""
    page.select_option("#filter-field", field)
    page.select_option("#filter-op", op)
    page.focus("#filter-value")
    page.keyboard.type(value)
    page.keyboard.press("Enter")


def test_the_bar_offers_the_index_fields_and_operators_with_labels(app_url, page):
    ready(page, app_url + "/")
    fields = page.eval_on_selector_all("#filter-field option", "o => o.map((x) => x.value)")
    assert fields[:4] == ["path", "folder", "name", "duration"] and "codec" in fields
    assert page.eval_on_selector_all("#filter-op option", "o => o.map((x) => x.value)") == \
        ["=", "!=", "<", "<=", ">", ">=", "in", "glob", "has"]
    for control in ("#filter-field", "#filter-op", "#filter-value", "#mode"):  # each inside its own label
        assert page.eval_on_selector(control, "e => e.closest('label') !== null")
    assert not page.errors, page.errors


def test_a_filter_narrows_the_results_and_the_url_keeps_it(app_url, page):
    ready(page, app_url + QUERY)
    page.wait_for_function(SHOWN, arg=None)
    unfiltered = paths(page)
    assert {p for p in unfiltered if not p.startswith("campus_")}  # there is something for the filter to drop

    add_by_keys(page, "name", "glob", "campus_*")
    page.wait_for_function(SHOWN, arg="campus_")
    narrowed = paths(page)
    assert set(narrowed) == {"campus_01.mp4", "campus_02.mp4"}
    assert chips(page) == ["name glob campus_*"] and where_of(page) == ["name glob campus_*"]
    assert "where name glob campus_*" in page.inner_text("#query-summary")

    page.reload()  # from the URL alone: the same chip, the same results
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_function(SHOWN, arg="campus_")
    assert paths(page) == narrowed and chips(page) == ["name glob campus_*"]

    page.go_back()  # before the filter
    page.wait_for_function(MIXED)
    assert paths(page) == unfiltered and chips(page) == []
    page.go_forward()
    page.wait_for_function(SHOWN, arg="campus_")
    assert paths(page) == narrowed and chips(page) == ["name glob campus_*"]

    # removed from the keyboard: focus on the chip's button, Enter; the results are whole again
    page.focus("#filter-chips li.chip button.remove")
    page.keyboard.press("Enter")
    page.wait_for_function(MIXED)
    assert paths(page) == unfiltered and chips(page) == [] and where_of(page) == []
    assert page.evaluate("() => document.activeElement.id") == "filter-field"
    assert not page.errors, page.errors


def test_a_refused_value_shows_the_server_line_beside_the_bar(app_url, page):
    ready(page, app_url + QUERY)
    page.wait_for_function(SHOWN, arg=None)
    add_by_keys(page, "duration", ">", "long")
    page.wait_for_selector("#filter-error:not([hidden])")
    said = page.inner_text("#filter-error")
    assert "duration is a number" in said and "long" in said and "\n" not in said
    # the page stays whole: the form open, the chip there to fix, no results under a query that failed
    assert page.is_visible("#query-form") and page.is_hidden("#results")
    assert chips(page) == ["duration > long"] and where_of(page) == ["duration > long"]

    page.reload()  # the URL holding the bad filter gives the same line, not a broken page
    page.wait_for_selector("#filter-error:not([hidden])")
    assert page.inner_text("#filter-error") == said

    page.click("#filter-chips li.chip button.remove")
    page.wait_for_function(SHOWN, arg=None)
    assert page.is_hidden("#filter-error")
    assert not page.errors, page.errors


def test_text_search_sends_its_mode_and_the_filters(app_url, page):
    ready(page, app_url + "/")
    assert page.input_value("#mode") == ""  # the server's default until chosen
    add_by_keys(page, "duration", "<", "9")  # in the collection: kept for the next search
    assert where_of(page) == ["duration < 9"] and page.is_visible("#collection")
    page.fill("#text", "a hand holds")
    page.select_option("#mode", "keyword")
    page.click("#text-search")
    page.wait_for_function(SHOWN, arg="cup")
    assert set(paths(page)) == {"cup.mp4"}  # box.mp4's caption says it too, but it is 15 s long
    query = parse_qs(urlparse(page.url).query)
    assert query["mode"] == ["keyword"] and query["where"] == ["duration < 9"]
    assert "keyword mode" in page.inner_text("#query-summary")

    page.reload()
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_function(SHOWN, arg="cup")
    assert page.input_value("#mode") == "keyword" and chips(page) == ["duration < 9"]
    assert not page.errors, page.errors


def test_a_hybrid_search_card_shows_its_keyword_and_vector_ranks_and_matched_words(app_url, page):
    ready(page, app_url + "/")
    page.fill("#text", "a hand holds")
    page.select_option("#mode", "hybrid")
    with page.expect_response(lambda r: urlparse(r.url).path == "/search") as answered:
        page.click("#text-search")
    page.wait_for_function(SHOWN, arg=None)
    hits = {hit["rank"]: hit for hit in answered.value.json()["hits"]}
    assert any(hit["keyword_rank"] for hit in hits.values()) and any(hit["vector_rank"] for hit in hits.values())
    cards = page.eval_on_selector_all(HITS, """cards => cards.map((li) => ({rank: Number(li.dataset.rank),
      keyword: li.querySelector('.list-ranks .keyword-rank').textContent,
      vector: li.querySelector('.list-ranks .vector-rank').textContent,
      terms: [...li.querySelectorAll('.list-ranks .term')].map((t) => t.textContent)}))""")
    assert cards
    for card in cards:
        hit = hits[card["rank"]]
        for list_name in ("keyword", "vector"):
            rank = hit[f"{list_name}_rank"]
            assert card[list_name] == f"{list_name} " + ("–" if rank is None else f"#{rank}")
        assert card["terms"] == hit["matched_terms"]
    assert {"hand"} <= {t for card in cards for t in card["terms"]}
    assert not page.errors, page.errors


def test_an_anchor_query_card_has_no_list_ranks(app_url, page):
    ready(page, app_url + QUERY)
    page.wait_for_function(SHOWN, arg=None)
    assert page.eval_on_selector_all(".list-ranks", "nodes => nodes.length") == 0
