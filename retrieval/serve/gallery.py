"""Self-contained HTML reports of a query, a comparison or a diff.

Each page is one file: thumbnails are inline JPEG data URIs and the style sheet is inline,
so a report opens offline, can be mailed or archived, and never reaches the network.  The
videos are linked by absolute file URI (the original, or its H.264 preview when browsers cannot play the original:
made once with ffmpeg, in the index's ``previews/`` folder, or beside a page written without an index in
``<page>-previews/``), or, on request, each result's span is embedded as a small H.264 clip.
"""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Iterable

from retrieval.api import (
    CHANGE_KEY,
    CompareResult,
    DecodeError,
    DiffRanking,
    DiffResult,
    Hit,
    PreviewError,
    Previews,
    QueryResult,
    VideoDecoder,
    atomic_write,
    content_hash,
    format_span,
    format_time,
    playback,
    scorer_label,
    span_clip,
)
from retrieval.serve.thumbs import THUMB_SHORT_SIDE, data_uri, strip

PAGE_PREVIEWS = "-previews"  # beside a page written without an index: q.html's previews are in q-previews/

# Shared by the static pages and the web UI (a real stylesheet, package data), so both look the same.
STYLE = (resources.files("retrieval.serve") / "ui" / "gallery.css").read_text(encoding="utf-8")


def score_fraction(value: float | None) -> float:
    """Bar length in [0, 1]: every score is on the 0-1 scale (a 1-5 rating mapped to it); a fused score may
    stray a little outside it."""
    return 0.0 if value is None else min(1.0, max(0.0, value))


def scored_by(model_id: str, rating: float | None = None) -> str:
    """What scored a concept, for a row: the indexer's or model's name, and the 1-5 rating behind the score."""
    name = scorer_label(model_id)
    return name if rating is None else f"{name}, rating {rating:.3f} of 5"


def video_src(video: Path, start: float = 0.0, end: float | None = None) -> str:
    """The absolute ``file://`` URI of ``video``, starting at ``start`` (media fragment): unlike a link relative
    to the page, it still works when the page is moved or copied elsewhere on this machine."""
    fragment = f"#t={start:.3f}" + (f",{end:.3f}" if end is not None else "")
    return Path(video).resolve().as_uri() + fragment


@dataclass
class Players:
    """How one page shows its videos, and the note that says so.

    Linked (the default): the original by file URI when browsers play it (its codec, and its first seconds decode
    cleanly: see stream_check.py), else its preview (made now if need be), else a label with the reason (a black
    player would look like a broken page).  Embedded: each span as an H.264
    clip in a data URI, so the page plays on any machine.
    """

    previews: Previews | None = None
    embed: bool = False
    linked: list[Path] = field(default_factory=list)  # the files the page links, for the note

    def html(self, path: Path, start: float = 0.0, end: float | None = None) -> str:
        if self.embed:
            return self._embedded(Path(path), start, end)
        target, reason = self._link_target(Path(path))
        if target is None:
            return _cannot_play(reason)
        self.linked.append(target)
        return _player(video_src(target, start, end))

    def note(self) -> str:
        if self.embed:
            return ('<p class="note" id="videos-note">Videos are embedded (H.264 previews of each result\'s span), '
                    'so this page plays on any machine.</p>')
        if not self.linked:
            return ""
        try:
            where = f" (under {os.path.commonpath([str(p.resolve().parent) for p in self.linked])})"
        except ValueError:  # on several drives (Windows): no one folder holds them
            where = ""
        return (f'<p class="note" id="videos-note">Videos link the files on this machine{_e(where)}; '
                f'open this page on another machine and the players stay empty.</p>')

    def _embedded(self, path: Path, start: float, end: float | None) -> str:
        try:
            clip = span_clip(path, start, end)
        except (PreviewError, OSError) as exc:
            return _cannot_play(str(exc))
        return _player("data:video/mp4;base64," + base64.b64encode(clip).decode("ascii"))

    def _link_target(self, path: Path) -> tuple[Path | None, str | None]:
        """The original when browsers play it, else its preview (made now, once: kept by content); else (None, why
        it cannot play)."""
        if self.previews is None:
            seen = playback(path)
            return (path, None) if seen.playable else (None, seen.reason)
        seen = self.previews.playback(path)
        if seen.playable:
            return path, None
        try:
            return self.previews.ensure(path, content_hash(path)), None
        except (PreviewError, OSError) as exc:  # no ffmpeg, a file it cannot convert, a file gone
            return None, f"{seen.reason}; {exc}" if isinstance(exc, PreviewError) else seen.reason


def page_previews(out: Path, previews: Previews | None) -> Previews:
    """Where a page's previews go: the index's (``previews``), else a folder beside the page (``q-previews/``)."""
    return previews if previews is not None else Previews(Path(out).with_name(Path(out).stem + PAGE_PREVIEWS))


# -- building blocks ----------------------------------------------------------------------------
def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _strip_html(path: Path, name: str, start: float, end: float | None, frames: int, decoder) -> str:
    try:
        thumbs = strip(path, start, end, frames, decoder)
    except (DecodeError, OSError) as exc:
        # one unreadable clip (moved, truncated) must not cost the whole report
        return f'<p class="error">thumbnails unavailable: {_e(exc)}</p>'
    figures = "".join(
        f'<figure><img src="{data_uri(t.jpeg)}" width="{t.width}" height="{t.height}" '
        f'alt="{_e(name)} at {_e(format_time(t.time))}"><figcaption>{_e(format_time(t.time))}</figcaption></figure>'
        for t in thumbs)
    return f'<div class="strip">{figures}</div>'


def _score_rows(rows: Iterable[tuple[str, float, float | None, str]]) -> str:
    """(label, weight, score, what scored it) -> label, bar, value; scores of None read 'unreadable'."""
    cells = []
    for label, weight, value, by in rows:
        shown = "unreadable" if value is None else f"{value:.3f}"
        cells.append(f'<span>{_e(label)} <span class="meta">w {weight:.2f} · {_e(by)}</span></span>'
                     f'<span class="bar"><span style="width:{100 * score_fraction(value):.1f}%"></span></span>'
                     f'<span class="value">{_e(shown)}</span>')
    return f'<div class="scores">{"".join(cells)}</div>'


def _player(src: str) -> str:
    return f'<video controls preload="metadata" src="{_e(src)}"></video>'


def _cannot_play(reason: str | None) -> str:
    return f'<p class="cannot-play">cannot play here: {_e(reason or "unknown reason")}</p>'


def _page(title: str, body: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n')


def _notes(notices: Iterable[str]) -> str:
    return "".join(f'<p class="note">note: {_e(n)}</p>' for n in notices)


def _write(out: Path, text: str) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))  # never half a report
    return out


# -- query page ---------------------------------------------------------------------------------
def write_query_html(result: QueryResult, root: Path, out: Path, frames_per_strip: int = 8, start: float | None = None,
                     end: float | None = None, *, previews: Previews | None = None, embed_videos: bool = False) -> Path:
    """One HTML page for a QueryResult: the anchor's strip, then every hit in rank order.

    ``root`` is the folder the index covers (hit paths are relative to it); ``start``/``end``
    restrict the anchor strip to the span the query used.  ``previews``: where the previews of files browsers
    cannot play are kept (default: beside the page); ``embed_videos``: embed each hit's span instead of linking
    the files.
    """
    decoder = VideoDecoder(short_side=THUMB_SHORT_SIDE)
    players = Players(page_previews(out, previews), embed_videos)
    out, anchor = Path(out), Path(root) / result.anchor  # an anchor inside the root is named relative to it
    by = {c.key: result.scored_by(c.key) for c in result.concepts}
    weights = ", ".join(f"{c.words} {c.weight:.2f}" for c in result.concepts)
    text = getattr(result, "text", None)  # a text search: its anchor is a sentence, not a clip
    title = f'"{text}"' if text else anchor.name
    like = "Clips least like" if getattr(result, "most_different", False) else "Clips like"
    hits = "\n".join(_hit_html(h, result, by, Path(root), frames_per_strip, decoder, players, result.confidence(h))
                     for h in result.hits)
    head = (f'<header><h1>{like} <code>{_e(title)}</code>{_changed_title(result.change)}</h1>'
            f'<p class="meta">{"signals" if text else "concepts"}: {_e(weights)} · scored by {_e(result.how_scored)} · '
            f'{len(result.hits)} results</p>{_change_note(result.change)}{players.note()}{_notes(result.notices)}'
            f'{_confidence_html(result)}'
            f'</header>')
    anchor_card = (f'<section class="card anchor" id="anchor"><h2>Text</h2><p class="text">{_e(text)}</p></section>'
                   if text else
                   f'<section class="card anchor" id="anchor"><h2>Anchor <span class="path">{_e(result.anchor)}'
                   f'</span></h2>{_strip_html(anchor, anchor.name, start or 0.0, end, frames_per_strip, decoder)}'
                   f'</section>')
    body = f'{head}\n{anchor_card}\n<h2>Results</h2>\n<ol class="hits" id="hits">\n{hits}\n</ol>'
    return _write(out, _page(f"convis: clips like {title}", body))


def _confidence_html(result: QueryResult) -> str:
    """The no-match notice, and what the labels were read against behind a disclosure."""
    explained = result.as_dict()
    no_match = f'<p class="note no-match">{_e(explained["no_match_note"])}</p>' if result.no_match else ""
    calibration, spread = explained["calibration"], explained["spread"]
    if calibration is not None:
        rule = calibration["rule"]
        refs = "<br>".join(f"{_e(s)}: {_e(r)}" for s, r in calibration["references"].items())
    elif spread is not None:
        rule, refs = f"relative to this query's own scores: {spread['rule']}", ""
    else:
        return no_match
    return (f'{no_match}<details class="confidence"><summary>confidence labels</summary>'
            f'<p class="meta">{_e(rule)}</p>{f"<p class=meta>{refs}</p>" if refs else ""}</details>')


def _changed_title(change: dict | None) -> str:
    return "" if change is None else f' changed: <q class="change">{_e(change["text"])}</q>'


def _change_note(change: dict | None) -> str:
    """How a composed query's total is made of its two parts, and what read the change text."""
    if change is None:
        return ""
    w, signals = change["weight"], ", ".join(scorer_label(s) for s in change["signals"])
    return (f'<p class="meta" id="change-note">total = (stay + {w:g} x change) / {1 + w:g}: stay is the concepts\' '
            f'score, change how well the clip matches the change text (against {_e(signals)})'
            + (f'; {_e(change["footnote"])}' if change.get("footnote") else "") + '</p>')


def _composed_rows(hit: Hit, result: QueryResult) -> list[tuple[str, float, float | None, str]]:
    """A composed hit's two parts beside its concepts: staying like the anchor, and showing the change."""
    if not hit.composed or result.change is None:
        return []
    w, rating = hit.composed.get("weight") or result.change["weight"], hit.ratings.get(CHANGE_KEY)
    by = "the change text" if rating is None else scored_by(result.reranker or "", rating)
    return [("stays like the anchor", 1 / (1 + w), hit.composed.get("stay"), "the concepts above"),
            (f'shows "{result.change["text"]}"', w / (1 + w), hit.composed.get("change"), by)]


def _hit_html(hit: Hit, result: QueryResult, by: dict[str, str], root: Path, frames: int, decoder,
              players: Players, confidence: str | None = None) -> str:
    path = root / hit.path
    total = "unreadable" if hit.total is None else f"{hit.total:.3f}"
    rows = [(c.words, c.weight, hit.scores.get(c.key), scored_by(by[c.key], hit.ratings.get(c.key)))
            for c in result.concepts] + _composed_rows(hit, result)
    badge = f'<span class="badge {_e(confidence)}">{_e(confidence)}</span>' if confidence else ""
    recall = ""
    if hit.recall_scores:  # after reranking, keep the recall similarity in view
        recall = '<p class="meta">recall: ' + _e(", ".join(f"{k} {v:.3f}" for k, v in hit.recall_scores.items())) \
                 + "</p>"
    return (f'<li class="card hit" id="hit-{hit.rank}" data-rank="{hit.rank}" data-path="{_e(hit.path)}">'
            f'<div class="hit-head"><span class="rank">#{hit.rank}</span><span class="path">{_e(hit.path)}</span>'
            f'<span class="time">{_e(format_span(hit.start, hit.end))}</span>'
            f'<span class="total">total {_e(total)}</span>'
            f'{badge}</div>'
            f'<div class="body"><div>{_strip_html(path, hit.path, hit.start, hit.end, frames, decoder)}'
            f'{_score_rows(rows)}{recall}</div>{players.html(path, hit.start, hit.end)}</div></li>')


# -- compare page -------------------------------------------------------------------------------
def write_compare_html(result: CompareResult, a: Path, b: Path, out: Path, frames_per_strip: int = 8, *,
                       previews: Previews | None = None) -> Path:
    """One HTML page for ``Engine.compare``'s result: both strips side by side, then per-concept scores."""
    decoder, players = VideoDecoder(short_side=THUMB_SHORT_SIDE), Players(page_previews(out, previews))
    out, a, b = Path(out), Path(a), Path(b)
    lmm = bool(result.reranker)
    mode = f" ({result.mode})" if result.mode and lmm else ""
    rows = [(row.concept.words, row.concept.weight, row.score, scored_by(row.scored_by, row.rating))
            for row in result.concepts]
    total = result.total
    columns = "".join(
        f'<section class="card clip" id="clip-{tag}"><h2>{tag.upper()} <span class="path">{_e(path.name)}</span>'
        f'</h2>{_strip_html(path, path.name, 0.0, None, frames_per_strip, decoder)}{players.html(path)}'
        f'</section>' for tag, path in (("a", a), ("b", b)))
    scale = "ratings 1 (completely different) to 5 (perfectly similar) as 0-1" if lmm else "similarity in [0, 1]"
    body = (f'<header><h1><code>{_e(a.name)}</code> vs <code>{_e(b.name)}</code></h1>'
            f'<p class="meta">scored by {_e(result.scored_by)}{_e(mode)} · {_e(scale)}</p>'
            f'{players.note()}{_notes(result.notices)}</header>\n<div class="pair">{columns}</div>\n'
            f'<section class="card" id="scores"><h2>Per-concept similarity</h2>{_score_rows(rows)}'
            f'<p class="total">total {_e("unreadable" if total is None else f"{total:.3f}")}</p></section>')
    return _write(out, _page(f"convis: {a.name} vs {b.name}", body))


# -- differences page ---------------------------------------------------------------------------
def write_diff_html(result: DiffResult, a: Path, b: Path, out: Path, frames_per_strip: int = 8, *,
                    previews: Previews | None = None) -> Path:
    """One HTML page for ``Engine.diff``: both clips side by side, then each statement, the video it fits more
    and P(a) / P(b) (open mode: the LMM's proposals, its own words, and what could not be read)."""
    return _write(out, _page(f"convis diff: {Path(a).name} vs {Path(b).name}",
                             _diff_body(result, Path(a), Path(b), frames_per_strip,
                                        Players(page_previews(out, previews)))))


def write_diff_ranking_html(ranking: DiffRanking, reference: Path, out: Path, frames_per_strip: int = 8, *,
                            previews: Previews | None = None) -> Path:
    """One HTML page for ``Engine.diff_rank``: the reference, then each candidate, most different first."""
    decoder, players = VideoDecoder(short_side=THUMB_SHORT_SIDE), Players(page_previews(out, previews))
    cards = "".join(
        f'<section class="card"><h2><span class="rank">#{c.rank}</span> <span class="path">{_e(c.path)}</span> '
        f'<span class="meta">differences {c.differences:.3f}</span></h2>'
        f'{_strip_html(Path(c.file), c.path, 0.0, None, frames_per_strip, decoder)}{players.html(Path(c.file))}'
        f'{_diff_table(c.result) if c.result is not None else "<p class=note>the same video as the reference</p>"}'
        f'</section>' for c in ranking.candidates)
    reference_card = (f'<section class="card"><h2>Reference</h2>'
                      f'{_strip_html(Path(reference), Path(reference).name, 0.0, None, frames_per_strip, decoder)}'
                      f'{players.html(Path(reference))}</section>')
    body = (f'<header><h1>Most different from <code>{_e(Path(reference).name)}</code></h1>'
            f'<p class="meta">action: {_e(ranking.action)} · {ranking.model_calls} model calls</p>'
            f'{players.note()}{_notes(ranking.notices)}</header>{reference_card}{cards}')
    return _write(out, _page(f"convis diff: most different from {Path(reference).name}", body))


def _diff_body(result: DiffResult, a: Path, b: Path, frames: int, players: Players) -> str:
    decoder = VideoDecoder(short_side=THUMB_SHORT_SIDE)
    seen = result.seen.to_dict() if result.seen else {}
    columns = "".join(
        f'<section class="card clip" id="clip-{tag}"><h2>video {tag} <span class="path">{_e(path.name)}</span></h2>'
        f'{_strip_html(path, path.name, 0.0, None, frames, decoder)}{players.html(path)}'
        f'<p class="meta">the model saw {len(seen.get(tag, {}).get("timestamps", []))} frames of it</p></section>'
        for tag, path in (("a", a), ("b", b)))
    how = f"{result.model}, {result.mode}" + (", both orders" if result.symmetric else "")
    return (f'<header><h1><code>{_e(a.name)}</code> vs <code>{_e(b.name)}</code></h1>'
            f'<p class="meta">action: {_e(result.action)} · {_e(how)} · frames {_e(result.frames)}</p>'
            f'{players.note()}{_notes(result.notices)}</header>\n<div class="pair">{columns}</div>\n'
            f'<section class="card" id="differences"><h2>{"Statements" if result.closed else "Proposed differences"}'
            f'</h2>{_diff_table(result)}</section>')


def _diff_table(result: DiffResult) -> str:
    rows = result.verdicts if result.closed else tuple(p.verdict for p in result.proposals)
    proposed = {} if result.closed else {p.verdict.key: p.proposed for p in result.proposals}
    cells = "".join(
        f'<tr><td>{_e(v.statement)}</td>'
        + ("" if result.closed else f'<td>{_e(proposed.get(v.key) or "-")}</td>')
        + f'<td><b>{_e(v.prediction or "undecided")}</b></td>'
        f'<td class="value">{_e("-" if v.p_a is None else f"{v.p_a:.3f}")}</td>'
        f'<td class="value">{_e("-" if v.p_a is None else f"{1 - v.p_a:.3f}")}</td></tr>' for v in rows)
    head = "<th>statement</th>" + ("" if result.closed else "<th>proposed</th>") + \
        "<th>more true of</th><th>P(a)</th><th>P(b)</th>"
    problems = "" if result.closed else _notes(f"not read from the answer: {p}" for p in result.problems)
    empty = "" if rows else '<p class="note">no differences</p>'
    return f'<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>{empty}{problems}'
