// The convis web app: browse the collection, find clips like one (or from words), see why, compare.
// Every view is a URL (see stateFrom/urlOf): Back, reload and a shared link show the same thing.
"use strict";
const $ = (sel) => document.querySelector(sel);
const $$ = (sel) => [...document.querySelectorAll(sel)];
const CONCEPTS = ["location", "main-action", "main-subjects", "main-objects", "order-of-actions"];
const PAGE = 60;  // units on a collection page
const RANK_OF = {strong: 2, likely: 1, weak: 0};  // the one confidence vocabulary (search/confidence.py WORDS)
const MODES = ["vector", "keyword", "hybrid"];  // text search's (GET /search's mode); none: the server's default
const SYNC_SLACK_S = 0.25;  // players this close are in sync: closer seeks would chase each other
let health = {};
let current = null;  // the results on screen: {state, result, rendered (the grouping they are drawn in)}
let latest = 0;  // the newest navigation: an answer to an older one arrives late and is dropped

// -- small helpers ------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);  // text, never HTML
  return node;
}
// one clock format everywhere (retrieval/core/timecode.py): 0:08.1, 1:20.0, 1:02:03.5
function fmtTime(s) {
  const tenths = Math.round(Math.max(s, 0) * 10), whole = Math.floor(tenths / 10);
  const [h, m, sec] = [Math.floor(whole / 3600), Math.floor(whole / 60) % 60, whole % 60];
  const pad = (n) => String(n).padStart(2, "0");
  return `${h ? `${h}:${pad(m)}:${pad(sec)}` : `${m}:${pad(sec)}`}.${tenths % 10}`;
}
const fmtSpan = (start, end) => `${fmtTime(start)}-${end === null || end === undefined ? "end" : fmtTime(end)}`;
const fmtScore = (v) => v === null || v === undefined ? "unreadable" : v.toFixed(3);
const shortName = (modelId) => modelId.split(":")[0];

function status(text, isError = false) {
  $("#status").textContent = text;
  $("#status").className = isError ? "error" : "meta";
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = data.error || (Array.isArray(data.detail) ? data.detail.map((d) => d.msg).join("; ") : data.detail);
    const error = new Error(detail || `${response.status} ${response.statusText}`);
    // a filter the server refused: its one line begins "--where" (retrieval/store/where.py), or "where" when
    // the request's list of them broke the schema (retrieval/serve/errors.py)
    error.where = /^(--)?where\b/.test(error.message);
    throw error;
  }
  return data;
}
const send = (method, path, body) => api(path, {method, headers: {"Content-Type": "application/json"},
                                                 body: JSON.stringify(body)});

function download(name, type, text) {
  const link = el("a", {href: URL.createObjectURL(new Blob([text], {type})), download: name});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

function show(view) {
  for (const id of ["collection", "results", "compare"]) $(`#${id}`).hidden = id !== view;
  $("#filter-bar").hidden = view === "compare";  // a comparison is of two clips: nothing to filter
}

// -- the URL is the state -------------------------------------------------------------------------
// view: collection | results | compare; a clip query: anchor, start, end, c (name=weight, repeated), change, k,
// free, most, rerank; a words query: text, k, mode; the filter bar: where ("FIELD OP VALUE", repeated, every
// view); grouping and filters of the results: group, min, show; compare: b, bstart; collection: folder, status,
// name, page
function stateFrom(search) {
  const p = new URLSearchParams(search);
  const num = (key) => p.has(key) && p.get(key) !== "" && Number.isFinite(Number(p.get(key))) ? Number(p.get(key)) : null;
  const view = p.get("view") || (p.get("anchor") || p.get("text") ? "results" : "collection");
  return {view, anchor: p.get("anchor") || "", start: num("start"), end: num("end"),
          concepts: p.getAll("c").map((c) => { const [name, w] = c.split("="); return {name, weight: Number(w || 1)}; }),
          change: p.get("change") || "", k: num("k") || 10, free: p.get("free") === "1", most: p.get("most") === "1",
          rerank: p.get("rerank") === "1", text: p.get("text") || "", group: p.get("group") || "flat",
          min: num("min"), show: p.get("show") || "all", b: p.get("b") || "", bstart: num("bstart"),
          folder: p.get("folder"), status: p.get("status") || "ok", name: p.get("name") || "",
          page: num("page") || 1, where: p.getAll("where").filter(Boolean),
          mode: MODES.includes(p.get("mode")) ? p.get("mode") : ""};
}

function urlOf(state) {
  const p = new URLSearchParams();
  const put = (key, value, skip = null) => { if (value !== null && value !== undefined && value !== "" &&
                                                value !== false && value !== skip) p.append(key, value === true ? "1" : value); };
  put("view", state.view);
  if (state.view === "collection") {
    put("folder", state.folder); put("status", state.status, "ok"); put("name", state.name); put("page", state.page, 1);
  } else if (state.text) {
    put("text", state.text); put("k", state.k, 10); put("mode", state.mode);
  } else {
    put("anchor", state.anchor); put("start", state.start); put("end", state.end);
    for (const c of state.concepts) p.append("c", `${c.name}=${c.weight}`);
    put("change", state.change); put("k", state.k, 10); put("free", state.free); put("most", state.most);
    put("rerank", state.rerank);
  }
  for (const condition of state.where) p.append("where", condition);
  if (state.view !== "collection") { put("group", state.group, "flat"); put("min", state.min); put("show", state.show, "all"); }
  if (state.view === "compare") { put("b", state.b); put("bstart", state.bstart); }
  return `/?${p}`;
}

function navigate(state, replace = false) {
  const url = urlOf(state);
  if (url !== location.pathname + location.search) history[replace ? "replaceState" : "pushState"](null, "", url);
  return apply(state);
}

async function apply(state) {
  const mine = ++latest;
  fillForm(state);
  if (state.view === "collection") { expandForm(); return loadCollection(state, mine); }
  const same = current && sameQuery(current.state, state);
  if (!same && !(await runQuery(state, mine))) return;
  current.state = state;
  if (state.view === "compare") return compare(state, mine);
  if (same && current.rendered === state.group && !$("#results").hidden) filterCards();  // the same cards
  else renderResults();
  if (current.fresh) {  // a new answer: its first results in view, under the folded form
    current.fresh = false;
    if (!$("#results").hidden) $("#results").scrollIntoView({block: "start"});
  }
}

const queryKey = (s) => JSON.stringify([s.anchor, s.start, s.end, s.concepts, s.change, s.k, s.free, s.most,
                                        s.rerank, s.text, s.text ? s.mode : "", s.where]);
const sameQuery = (a, b) => queryKey(a) === queryKey(b);

// -- the query form -------------------------------------------------------------------------------
function conceptRow(name = "", weight = 1) {
  const row = el("div", {class: "concept-row"},
    el("input", {class: "name", list: "concept-names", value: name, placeholder: "concept", "aria-label": "concept"}),
    el("input", {class: "weight", type: "number", min: "0", step: "0.1", value: String(weight), title: "weight",
                 "aria-label": "weight"}),
    el("button", {type: "button", class: "remove", title: "remove concept", "aria-label": "remove concept",
                  onclick: () => { if ($("#concepts").children.length > 1) row.remove(); }}, "×"));
  $("#concepts").append(row);
}

function formConcepts() {
  return $$(".concept-row").map((row) => ({name: row.querySelector(".name").value.trim(),
                                           weight: Number(row.querySelector(".weight").value || 1)}))
    .filter((c) => c.name);
}

function seconds(id) {
  const value = $(id).value.trim();
  return value === "" ? null : Number(value);
}

function fillForm(state) {
  if (state.anchor) {
    if (![...$("#anchor").options].some((o) => o.value === state.anchor)) {
      $("#anchor").append(el("option", {value: state.anchor}, state.anchor));
    }
    $("#anchor").value = state.anchor;
  }
  $("#start").value = state.start ?? "";
  $("#end").value = state.end ?? "";
  if (state.concepts.length) {
    $("#concepts").replaceChildren();
    for (const c of state.concepts) conceptRow(c.name, c.weight);
  }
  $("#change").value = state.change;
  $("#k").value = state.k;
  $("#free-text").checked = state.free;
  $("#most-different").checked = state.most;
  $("#rerank").checked = state.rerank;
  $("#text").value = state.text;
  $("#mode").value = state.mode;
  renderFilters(state.where);
  $(`#group-${state.group === "video" ? "video" : "flat"}`).checked = true;
  $("#confidence-filter").value = state.show;
}

function formState(extra = {}) {
  return {...stateFrom(""), view: "results", anchor: $("#anchor").value, start: seconds("#start"),
          end: seconds("#end"), concepts: formConcepts(), change: $("#change").value.trim(),
          k: Number($("#k").value || 10), free: $("#free-text").checked, most: $("#most-different").checked,
          rerank: $("#rerank").checked, group: current ? current.state.group : "flat", where: [...filters],
          mode: $("#mode").value, ...extra};
}

function searchClip(event) {
  event.preventDefault();
  performance.mark("convis:search");
  if (!$("#anchor").value) { status("pick or upload an anchor first", true); return; }
  current = null;  // asked again, even unchanged: files may have been added or removed since
  navigate(formState());
}

function searchWords() {
  const text = $("#text").value.trim();
  if (!text) { status("type what to look for first", true); return; }
  performance.mark("convis:search");
  current = null;
  navigate({...formState(), text, anchor: "", concepts: []});
}

// a unit of the index becomes the anchor, with its time span, and the query runs again
// a collection card has no query yet: "more like this" asks in which respect, the five ConViS concepts to choose
function chooseConcept(button, unit) {
  const open = button.parentElement.querySelector(".chooser");
  if (open) { open.remove(); return; }
  const pick = el("select", {class: "chooser-concept", "aria-label": "like this in"},
                  ...CONCEPTS.map((c) => el("option", {value: c}, c.replace(/-/g, " "))));
  const chooser = el("form", {class: "chooser"}, el("span", {class: "meta"}, "like this in"), pick,
                     el("button", {type: "submit", class: "primary"}, "Find"));
  chooser.addEventListener("submit", (event) => {
    event.preventDefault();
    moreLikeThis(unit, [{name: pick.value, weight: 1}]);
  });
  button.after(chooser);
  pick.focus();
}

function moreLikeThis(unit, chosen = null) {
  const whole = unit.start === 0 && (unit.duration === null || unit.duration === undefined ||
                                     Math.abs(unit.end - unit.duration) < 0.05);
  const concepts = chosen || (formConcepts().length ? formConcepts() : [{name: "location", weight: 1}]);
  navigate({...formState(), text: "", anchor: unit.path, start: whole ? null : unit.start,
            end: whole ? null : unit.end, concepts, change: ""});
}

// the moment a result shows (its player's frame when one plays, else its poster's) as a new query's anchor: the
// second around it, in the concepts asked
const FRAME_SPAN_S = 1;
function frameQuery(hit) {
  const video = $(`#hit-${hit.rank} video`);
  const t = video ? video.currentTime : (hit.start + hit.end) / 2;
  const last = hit.duration ?? hit.end;
  const start = Math.max(0, Math.min(t - FRAME_SPAN_S / 2, last - FRAME_SPAN_S));
  moreLikeThis({path: hit.path, start: +start.toFixed(3), end: +Math.min(start + FRAME_SPAN_S, last).toFixed(3),
                duration: hit.duration});
}

async function upload() {
  const file = $("#upload").files[0];
  if (!file) return;
  const form = new FormData();
  form.append("file", file);
  status(`uploading ${file.name}…`);
  try {
    const data = await api("/uploads", {method: "POST", body: form});
    $("#anchor").append(el("option", {value: data.anchor}, `uploaded: ${data.name}`));
    $("#anchor").value = data.anchor;
    status(`uploaded ${data.name}`);
  } catch (error) {
    clearResults();  // results of another anchor under a header that no longer holds are worse than none
    if (location.search) history.pushState(null, "", "/");  // the URL no longer names that query
    status(`upload failed: ${error.message}`, true);
  }
  $("#upload").value = "";
}

function clearResults() {
  current = null;
  expandForm();
  $("#results").hidden = true;
  $("#compare").hidden = true;
  $("#hits").replaceChildren();
  $("#anchor-name").textContent = "";
}

// -- the filter bar: `where` conditions as chips, sent with every query and search ------------------
let filters = [];  // the conditions in use, each "FIELD OP VALUE" as the server parses it

// the fields this index knows (built-in, then the user's: they change with `convis tag` and --metadata)
async function loadFields() {
  try {
    const data = await api("/fields");
    const chosen = $("#filter-field").value;
    $("#filter-field").replaceChildren(...data.fields.map((f) => el("option", {value: f.name, "data-kind": f.kind},
                                                                     `${f.name} (${f.kind})`)));
    if (data.fields.some((f) => f.name === chosen)) $("#filter-field").value = chosen;
    if (!$("#filter-op").options.length) {
      $("#filter-op").replaceChildren(...data.operators.map((op) => el("option", {value: op}, op)));
    }
    fieldChosen();
    renderFacets(data.fields);
  } catch (error) { filterError(`fields unavailable: ${error.message}`); }
}

// each field's most common values with how many files hold each: a click adds (or takes off) its condition
function renderFacets(fields) {
  const shown = fields.filter((f) => f.values?.length);
  $("#facets").hidden = !shown.length;
  $("#facet-list").replaceChildren(...shown.map((f) => el("div", {class: "facet", "data-field": f.name},
    el("span", {class: "facet-name"}, f.name),
    ...f.values.map((v) => el("button", {type: "button", class: "facet-value", "data-where": v.where,
                                         "aria-pressed": filters.includes(v.where) ? "true" : "false",
                                         title: `only files where ${v.where}`,
                                         onclick: () => toggleFilter(v.where)},
      f.kind === "number" ? String(+Number(v.value).toFixed(2)) : v.value, el("span", {class: "count"}, String(v.count)))))));
}

function toggleFilter(text) {
  setFilters(filters.includes(text) ? filters.filter((w) => w !== text) : [...filters, text]);
}

function fieldChosen() {
  const kind = $("#filter-field").selectedOptions[0]?.dataset.kind;
  $("#filter-value").placeholder = kind === "number" ? "10" : "campus_*.mp4";
}

function filterError(text) {
  $("#filter-error").textContent = text;
  $("#filter-error").hidden = !text;
}

// "duration > 10" -> its three parts, as the chip shows them (a hand-written URL's odd one: shown whole)
function conditionParts(text) {
  const match = /^\s*(\S+)\s+(\S+)\s+(.*)$/s.exec(text);
  return match ? match.slice(1) : [text, "", ""];
}

function renderFilters(where) {
  filters = [...where];
  // on a phone the filter bar folds behind its toggle: the toggle says how many filters are in use meanwhile
  $("#tools-toggle").textContent = `Filters and tools${filters.length ? ` (${filters.length} in use)` : ""}`;
  for (const chip of $$("#facet-list .facet-value")) chip.setAttribute("aria-pressed", filters.includes(chip.dataset.where));
  $("#filter-chips").replaceChildren(...filters.map((text, i) => {
    const [field, op, value] = conditionParts(text);
    return el("li", {class: "chip", "data-where": text},
      el("span", {class: "field"}, field), el("span", {class: "op"}, op), el("span", {class: "value"}, value),
      el("button", {type: "button", class: "remove", title: "remove this filter", "aria-label": `remove filter ${text}`,
                    onclick: () => removeFilter(i)}, "×"));
  }));
}

function addFilter() {
  const field = $("#filter-field").value, op = $("#filter-op").value, value = $("#filter-value").value.trim();
  if (!field || !op) return;
  if (!value) { filterError("type a value first"); $("#filter-value").focus(); return; }
  const text = `${field} ${op} ${value}`;
  $("#filter-value").value = "";
  if (!filters.includes(text)) setFilters([...filters, text]);
}

function removeFilter(i) {
  setFilters(filters.filter((_, j) => j !== i));
  ($$("#filter-chips .remove")[Math.min(i, filters.length - 1)] || $("#filter-field")).focus();  // keys go on
}

// new filters: the results on screen (or the query the URL names) asked again; the collection only keeps them
function setFilters(where) {
  filterError("");
  const state = {...stateFrom(location.search), where};
  if (state.view !== "collection") return navigate({...state, view: "results"});
  history.pushState(null, "", urlOf(state));
  renderFilters(where);
}

// -- running a query ------------------------------------------------------------------------------
function requestOf(state) {
  const body = {anchor: state.anchor, concepts: state.concepts, k: state.k, rerank: state.rerank,
                free_text: state.free, most_different: state.most};
  if (state.start !== null) body.start = state.start;
  if (state.end !== null) body.end = state.end;
  if (state.change) body.change = state.change;
  if (state.where.length) body.where = state.where;
  return body;
}

async function runQuery(state, mine) {
  status("searching…");
  try {
    const result = state.text ? await api(`/search?${searchParams(state)}`)
                              : await send("POST", "/query", requestOf(state));
    if (mine !== latest) return false;
    current = {state, result, rendered: null, fresh: true};
    status("");
    filterError("");
    if (state.text && !state.mode && result.mode) $("#mode").options[0].textContent = `server default (${result.mode})`;
    return true;
  } catch (error) {
    if (mine !== latest) return false;
    clearResults();
    if (state.where.length && error.where) {  // the filters' fault: said beside them, where they can be fixed
      filterError(error.message);
      status("the filters were refused", true);
    } else status(error.message, true);
    return false;
  }
}

function searchParams(state) {
  const params = new URLSearchParams({text: state.text, k: state.k});
  if (state.mode) params.set("mode", state.mode);
  for (const condition of state.where) params.append("where", condition);
  return params;
}

function anchorLabel(state) {
  if (state.text) return `"${state.text}"`;
  const named = current?.result?.anchor === state.anchor ? current.result.anchor_name : null;  // the server keeps it
  if (named && named !== state.anchor) return `uploaded: ${named}`;
  const option = [...$("#anchor").options].find((o) => o.value === state.anchor);
  return option ? option.textContent : state.anchor;
}

// -- strips, players, score bars ------------------------------------------------------------------
// lazy: images below the fold load when scrolled to (a collection page holds up to 200 strips)
async function fillStrip(box, url, name, lazy = false) {
  box.replaceChildren(el("span", {class: "meta"}, "loading frames…"));
  try {
    const data = await api(url);
    box.replaceChildren(...data.frames.map((f) => el("figure", {},
      el("img", {src: f.src, width: f.width, height: f.height, alt: `${name} at ${fmtTime(f.time)}`,
                 loading: lazy ? "lazy" : null}),
      el("figcaption", {}, fmtTime(f.time)))));
  } catch (error) {
    box.replaceChildren(el("span", {class: "error"}, `thumbnails unavailable: ${error.message}`));
  }
}

const cannotPlay = (reason) => el("div", {class: "cannot-play", role: "note"}, `cannot play here: ${reason}`);

// the original when the browser plays it, else the H.264 preview the server makes; a label when neither can be had
function player(media, playback, start, end) {
  if (!media) return cannotPlay((playback && playback.reason) || "no playable file");
  const fragment = `#t=${start || 0}${end !== null && end !== undefined ? "," + end : ""}`;
  const video = el("video", {controls: true, preload: "metadata", src: media + fragment});
  if (playback && playback.kind === "preview") video.title = `a preview: ${playback.reason}`;
  // an original the browser cannot decode (a broken stream the server's check missed) gets its H.264 preview, made
  // now; the same element, so the players stay in sync; a preview that fails too is said so
  video.addEventListener("error", () => {
    if (media.startsWith("/media/") && !video.src.includes("/previews/")) {
      video.title = "a preview: this browser could not decode the original";
      video.src = `${media.replace("/media/", "/previews/")}?force=1${fragment}`;
    } else video.replaceWith(cannotPlay("this browser could not decode it"));
  });
  return video;
}

// bars span the range the query's scores span (ranges/spread), not 0-1: similarities crowd near the top; the rows
// of one card share one scale (the widest of their ranges, and their values), so equal scores draw equal bars
function cardScale(rows) {
  const ranged = rows.filter((r) => r.range);
  if (!ranged.length) return [0, 1];
  const values = rows.map((r) => r.value).filter((v) => v !== null && v !== undefined);
  return [Math.min(...ranged.map((r) => r.range[0]), ...values), Math.max(...ranged.map((r) => r.range[1]), ...values)];
}

function scoreRows(rows) {
  const box = el("div", {class: "scores"});
  const [low, high] = cardScale(rows);
  for (const {label, weight, value, by} of rows) {
    const fraction = value === null ? 0 : high > low ? (value - low) / (high - low) : 1;
    box.append(el("span", {class: "label"}, label, " ", el("span", {class: "meta"}, `w ${weight.toFixed(2)} · ${by}`)),
               el("span", {class: "bar", title: `${fmtScore(value)} on a bar from ${low.toFixed(3)} to ${high.toFixed(3)}`},
                  el("span", {style: `width:${(100 * Math.min(1, Math.max(0, fraction))).toFixed(1)}%`})),
               el("span", {class: "value"}, fmtScore(value)));
  }
  return box;
}

function rowBy(by, rating) {  // by: the answer's scored_by_label, the same words on every surface
  return rating === null || rating === undefined ? by : `${by}, ${rating.toFixed(2)} of 5`;
}

function badge(hit, result) {
  if (!hit.confidence) return null;
  const spread = result.spread;
  const title = hit.cuts ? Object.entries(hit.cuts).map(([k, v]) => `${k} from ${v.toFixed(3)}`).join(", ") +
    " (this index's background)" : `modified z-score ${hit.z} against ${spread.n} scored candidates (median ` +
    `${spread.median.toFixed(3)}): ${spread.rule}`;
  return el("span", {class: `badge ${hit.confidence}`, title}, hit.confidence);
}

// -- a hit ----------------------------------------------------------------------------------------
function hitRows(hit, result) {
  const ratings = hit.ratings || {};
  const rows = result.concepts.map((c) => ({label: c.words, weight: c.weight, value: hit.scores[c.key],
                                            by: rowBy(c.scored_by_label, ratings[c.key]), range: result.ranges?.[c.key]}));
  if (hit.composed) {  // a composed query: what of the total is staying alike, what is the change
    const w = hit.composed.weight;
    rows.push({label: "stays like the anchor", weight: 1 / (1 + w), value: hit.composed.stay, by: "the concepts above"});
    rows.push({label: `shows "${result.change.text}"`, weight: w / (1 + w), value: hit.composed.change,
               by: ratings.change !== undefined ? rowBy(shortName(result.reranker), ratings.change) : "the change text"});
  }
  return rows;
}

// a keyword or hybrid search's hit: its place in each list the fusion ranked (none: not in that list) and the
// query's words its texts hold, as the command line's kw rank / vec rank / matched columns say them
function listRanks(hit) {
  if (!("keyword_rank" in hit)) return null;
  const place = (rank) => rank === null || rank === undefined ? "–" : `#${rank}`;
  const terms = hit.matched_terms?.length ? hit.matched_terms.flatMap((t, i) => [i ? " " : null, el("span", {class: "term"}, t)]) : ["none"];
  return el("div", {class: "list-ranks meta"},
    el("span", {class: "keyword-rank", title: "rank in the keyword (BM25) list"}, `keyword ${place(hit.keyword_rank)}`),
    " · ", el("span", {class: "vector-rank", title: "rank in the vector list"}, `vector ${place(hit.vector_rank)}`),
    " · ", el("span", {class: "matched"}, "matched: ", ...terms));
}

// a result is one card and one tab stop: its poster (scrubbed by the pointer, played on a click or tap), its
// scores and its actions; keys act on the focused card (see onKey), its buttons are for the pointer
function hitCard(hit, result) {
  const canCompare = !current.state.text;  // a sentence has nothing to compare a clip with
  const head = el("div", {class: "hit-head", role: canCompare ? "button" : null,
                          title: canCompare ? "compare with the anchor (Enter)" : null},
    el("span", {class: "rank"}, `#${hit.rank}`), el("span", {class: "path"}, hit.path),
    el("span", {class: "time"}, fmtSpan(hit.start, hit.end)), badge(hit, result),
    el("span", {class: "total"}, `total ${fmtScore(hit.total)}`));
  const evidence = el("details", {class: "evidence"}, el("summary", {tabindex: "-1"}, "Why this result"));
  evidence.addEventListener("toggle", () => { if (evidence.open) fillEvidence(evidence, hit, result); }, {once: true});
  const card = el("li", {class: "card hit", id: `hit-${hit.rank}`, tabindex: "0", "data-rank": hit.rank,
                         "data-path": hit.path, "data-start": hit.start, "data-confidence": hit.confidence || "",
                         "aria-label": `result ${hit.rank}: ${hit.path} ${fmtSpan(hit.start, hit.end)}`,
                         "aria-keyshortcuts": canCompare ? "Enter Space" : "Space"},
    poster(hit), head, tagRow(hit.path, hit.tags || []), listRanks(hit), scoreRows(hitRows(hit, result)),
    el("div", {class: "actions"},
       el("button", {type: "button", class: "more", tabindex: "-1", onclick: () => moreLikeThis(hit)}, "More like this"),
       el("button", {type: "button", class: "frame-query", tabindex: "-1", title: "find clips like the moment shown: " +
                     "the frame playing, else the poster's (a second around it)", onclick: () => frameQuery(hit)}, "Query this frame"),
       canCompare ? el("button", {type: "button", class: "compare-button", tabindex: "-1",
                                  onclick: () => openCompare(hit)}, "Compare") : null),
    evidence);
  card.hit = hit;
  if (canCompare) head.addEventListener("click", () => openCompare(hit));
  return card;
}

// the unit's middle frame; moving a mouse across it shows the frames of the unit's strip (hover scrub); a click
// or a tap plays that one unit: a player only when asked for, never many videos at once
function poster(hit) {
  const img = el("img", {class: "poster-img", src: hit.poster, alt: `${hit.path} at ${fmtTime((hit.start + hit.end) / 2)}`,
                         loading: "lazy", decoding: "async"});
  const clock = el("span", {class: "scrub-time", "aria-hidden": "true"});
  const box = el("div", {class: "poster"}, img, clock,
                 el("button", {type: "button", class: "play", tabindex: "-1", "aria-label": `play ${hit.path}`}, "▶"));
  let frames = null;
  box.addEventListener("pointerenter", (event) => {
    if (event.pointerType === "mouse" && !frames) frames = api(hit.strip).then((d) => d.frames).catch(() => []);
  });
  box.addEventListener("pointermove", async (event) => {
    if (event.pointerType !== "mouse" || !frames) return;
    const list = await frames, rect = box.getBoundingClientRect();
    if (!list.length || !box.matches(":hover")) return;
    const at = list[Math.min(list.length - 1, Math.floor(list.length * (event.clientX - rect.left) / rect.width))];
    if (img.getAttribute("src") !== at.src) img.src = at.src;
    clock.textContent = fmtTime(at.time);
  });
  box.addEventListener("pointerleave", () => { img.src = hit.poster; clock.textContent = ""; });
  box.addEventListener("click", () => playIn(box, hit));
  return box;
}

function playIn(box, hit) {
  for (const video of $$("#hits video")) video.pause();  // one at a time
  const video = player(hit.media, hit.playback, hit.start, hit.end);
  box.replaceWith(video);
  if (video.tagName === "VIDEO") {
    video.autoplay = true;
    video.playsInline = true;
    video.play().catch(() => {});
    video.after(transcript(hit, video));
  }
}

// the file's timed lines (subtitles, speech, on-screen text) under its player, the unit's own marked; a click on a
// line seeks the player to it; a file without lines shows none
function transcript(hit, video) {
  const list = el("ol", {class: "transcript", "aria-label": `what ${hit.path} says and shows`});
  api(`/lines/${encodePath(hit.path)}`).then((data) => {
    list.replaceChildren(...data.lines.map((line) => {
      const inUnit = line.start < hit.end && Math.max(line.end, line.start + 1e-6) > hit.start;
      const item = el("li", {class: `line ${line.source}${inUnit ? " in-unit" : ""}`, tabindex: "0", role: "button",
                             title: `${line.source} (${line.origin}): play from ${fmtTime(line.start)}`,
                             "data-start": line.start},
        el("span", {class: "time"}, fmtTime(line.start)), el("span", {class: "source"}, line.source),
        el("span", {class: "text"}, line.text));
      const seek = () => { video.currentTime = line.start; video.play().catch(() => {}); };
      item.addEventListener("click", seek);
      item.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.stopPropagation(); seek(); } });
      return item;
    }));
  }).catch(() => list.remove());
  return list;
}

function playCard(card) {
  const box = card.querySelector(".poster");
  if (box) playIn(box, card.hit || card.best);
  else card.querySelectorAll("video").forEach((v) => (v.paused ? v.play().catch(() => {}) : v.pause()));
}

// what a hit's scores rest on: which signal scored each concept and how much, the frames each signal (or the
// reranker) saw, and the unit's caption and descriptions
async function fillEvidence(box, hit, result) {
  const body = el("div", {class: "evidence-body"}, el("span", {class: "meta"}, "loading…"));
  box.append(body);
  const scored = el("table", {class: "scored-by"}, el("tr", {}, el("th", {}, "concept"), el("th", {}, "scored by"),
                                                      el("th", {}, "signal values")));
  for (const c of result.concepts) {
    const parts = Object.entries((hit.evidence || {})[c.key] || {}).map(([s, v]) => `${shortName(s)} ${fmtScore(v)}`);
    const fused = Object.entries((hit.contributions || {})[c.key] || {}).map(([s, v]) => `${s} +${v.toFixed(3)}`);
    scored.append(el("tr", {}, el("td", {}, c.words), el("td", {}, rowBy(c.scored_by_label, (hit.ratings || {})[c.key])),
                     el("td", {}, [...parts, ...fused].join(", ") || "—")));
  }
  const parts = [el("h3", {}, "Scores"), scored];
  for (const [concept, seen] of Object.entries(hit.seen || {})) {
    parts.push(el("h3", {}, `${result.reranker ? shortName(result.reranker) : "reranker"} saw, for ${concept}`),
               framesOf(hit.path, timestampsOf(seen, "b"), "candidate"));
  }
  try {
    const data = await api(`/evidence/${encodePath(hit.path)}?segment=${hit.segment}`);
    for (const signal of data.signals) {
      parts.push(el("h3", {}, `${signal.name} `, el("span", {class: "meta"}, signal.sees || signal.embeds || "")));
      if (signal.frames && signal.frames.length) {
        parts.push(el("div", {class: "strip"}, ...signal.frames.map((f) => el("figure", {},
          el("img", {src: f.src, alt: `${signal.name} frame at ${fmtTime(f.time)}`}),
          el("figcaption", {}, fmtTime(f.time))))));
      }
    }
    if (data.caption) parts.push(el("h3", {}, "Caption"), el("p", {class: "text"}, data.caption));
    if (data.descriptions && data.descriptions.length) {
      parts.push(el("h3", {}, "Descriptions"), el("dl", {}, ...data.descriptions.flatMap((d) =>
        [el("dt", {}, d.concept, " ", el("span", {class: "meta"}, d.by || "")), el("dd", {}, d.text)])));
    }
    for (const n of data.notices || []) parts.push(el("p", {class: "note"}, `note: ${n}`));
  } catch (error) {
    parts.push(el("p", {class: "error"}, `frames and texts unavailable: ${error.message}`));
  }
  body.replaceChildren(...parts);
}

// the timestamps a reranker saw of one clip (a: anchor, b: candidate), in either order of a symmetric pair
function timestampsOf(seen, side) {
  if (seen[side] && seen[side].timestamps) return seen[side].timestamps;
  const order = seen.ab || seen.ba;
  return order && order[side] ? order[side].timestamps : [];
}

function framesOf(path, times, what) {
  return el("div", {class: "strip"}, ...times.map((t) => el("figure", {},
    el("img", {src: `/frame/${encodePath(path)}?t=${t}`, alt: `${what} frame at ${fmtTime(t)}`}),
    el("figcaption", {}, fmtTime(t)))));
}

const encodePath = (path) => path.split("/").map(encodeURIComponent).join("/");

// -- results: flat or grouped by video, filtered by a threshold and by confidence ------------------
function visible(hits, state) {
  return hits.filter((h) => (state.min === null || (h.total !== null && h.total >= state.min)) &&
                            (state.show === "all" || (RANK_OF[h.confidence] ?? -1) >= RANK_OF[state.show]));
}

function renderResults() {
  const {state, result} = current;
  show("results");
  $("#anchor-name").textContent = anchorLabel(state);
  $("#anchor-span").textContent = state.start !== null || state.end !== null ? fmtSpan(state.start || 0, state.end) : "";
  if (result.anchor_strip) fillStrip($("#anchor-strip"), result.anchor_strip, anchorLabel(state));
  else $("#anchor-strip").replaceChildren();
  $("#scale-note").textContent = result.spread ? `Bars span this query's scores (${result.spread.low.toFixed(3)}-` +
    `${result.spread.high.toFixed(3)} over ${result.spread.n} candidates), not 0-1.` : "";
  const rule = result.calibration ? result.calibration.rule : result.spread && `relative to this query's own scores: ${result.spread.rule}`;
  $("#confidence-rule").hidden = !rule;
  $("#confidence-text").textContent = rule ? `Labels ${rule}.` : "";
  const empty = !result.hits.length && result.empty_reason;  // why nothing came back, as the answer says it
  $("#notices").replaceChildren(...(empty ? [el("p", {class: "card empty-reason", id: "empty-reason"},
                                                 `No results: ${result.empty_reason}`)] : []),
                                ...(result.no_match ? [el("p", {class: "note no-match"}, result.no_match_note)] : []),
                                ...foldedNotes(result.notices));
  $("#hits").replaceChildren(...(state.group === "video" ? byVideo(result.hits, result)
                                                          : result.hits.map((h) => hitCard(h, result))));
  $("#hits").className = `hits results-grid ${state.group === "video" ? "grouped" : ""}`;
  current.rendered = state.group;
  $("#export-html").disabled = !!state.text;
  filterCards();
  collapseForm(state);
  firstPaint();
}

// the notes on how an answer was scored: one line above the results, opened for the sentences
function foldedNotes(notices) {
  if (!notices.length) return [];
  const label = `${notices.length} note${notices.length > 1 ? "s" : ""} on how these were scored`;
  return [el("details", {class: "notes", id: "notes-box"}, el("summary", {class: "meta"}, label),
             ...notices.map((n) => el("p", {class: "note"}, `note: ${n}`)))];
}

// the time from Search to the first result card drawn: the browser's User Timing entries, for anyone measuring
function firstPaint() {
  if (!performance.getEntriesByName("convis:search").length || !$("#hits > li")) return;
  requestAnimationFrame(() => setTimeout(() => {
    performance.measure("convis:search to first result", "convis:search");
    performance.clearMarks("convis:search");
  }));
}

// the threshold and the confidence filter hide cards (and a video's card when none of its hits is left); the
// cards stay as they are: open evidence, playing videos and loaded strips are kept
function filterCards() {
  const {state, result} = current;
  const keep = new Set(visible(result.hits, state).map((h) => h.rank));
  for (const card of $$("#hits li.hit")) card.hidden = !keep.has(Number(card.dataset.rank));
  for (const group of $$("#hits li.video-group")) group.hidden = !group.querySelector("li.hit:not([hidden])");
  setThreshold(result, state);
  const scoredBy = result.scored_by;
  const hidden = result.hits.length - keep.size;
  $("#results-meta").textContent = `${keep.size} results${hidden ? ` (${hidden} hidden by the filters)` : ""} · ` +
    `scored by ${scoredBy}${state.text ? "" : " · click one to compare"}`;
}

function setThreshold(result, state) {
  const range = $("#threshold");
  const low = result.spread ? result.spread.low : 0, high = result.spread ? result.spread.high : 1;
  range.min = String(low);
  range.max = String(high);
  range.value = String(state.min ?? low);
  $("#threshold-value").textContent = state.min === null ? "off" : state.min.toFixed(3);
}

function byVideo(hits, result) {
  const groups = new Map();
  for (const hit of hits) {
    if (!groups.has(hit.path)) groups.set(hit.path, []);
    groups.get(hit.path).push(hit);
  }
  return [...groups.entries()].map(([path, group], i) => videoCard(path, group, result, i + 1));
}

// one card per file, ranked by its best hit (1, 2, 3, ...): that hit's poster, the file's timeline with its
// matching spans (and the anchor's own span when the anchor is this file), the hits inside, expandable
function videoCard(path, hits, result, rank) {
  const best = hits[0];
  const duration = best.duration || Math.max(...hits.map((h) => h.end));
  const details = el("details", {class: "group-hits"}, el("summary", {tabindex: "-1"}, `${hits.length} matching ` +
                                                          `span${hits.length > 1 ? "s" : ""}`));
  const timeline = el("div", {class: "timeline", role: "group", "aria-label": `${path} timeline`});
  const state = current.state;
  if (!state.text && state.anchor === path) {
    const from = state.start || 0, to = Math.min(state.end ?? duration, duration);
    timeline.append(el("span", {class: "anchor-mark", title: `the anchor: ${fmtSpan(from, to)}`,
      style: `left:${(100 * from / duration).toFixed(2)}%;width:${Math.max(1, 100 * (to - from) / duration).toFixed(2)}%`}));
  }
  for (const hit of hits) {
    const left = 100 * hit.start / duration, width = Math.max(1, 100 * (hit.end - hit.start) / duration);
    timeline.append(el("button", {type: "button", class: `span ${hit.confidence || ""}`, tabindex: "-1",
      style: `left:${left.toFixed(2)}%;width:${width.toFixed(2)}%`, title: `#${hit.rank} ${fmtSpan(hit.start, hit.end)}`,
      "aria-label": `result ${hit.rank}, ${fmtSpan(hit.start, hit.end)}`,
      onclick: () => { details.open = true; $(`#hit-${hit.rank}`).scrollIntoView({block: "center"}); }}));
  }
  details.append(el("ol", {class: "hits results-grid"}, ...hits.map((h) => hitCard(h, result))));
  const card = el("li", {class: "card video-group", tabindex: "0", "data-path": path, "data-group-rank": rank,
                         "aria-label": `video ${rank}: ${path}, best result ${best.rank}`},
    poster(best),
    el("div", {class: "hit-head"}, el("span", {class: "rank"}, `#${rank}`), el("span", {class: "path"}, path),
       el("span", {class: "time"}, `${fmtTime(duration)} long`), badge(best, result),
       el("span", {class: "total"}, `best ${fmtScore(best.total)}`)),
    timeline, details);
  card.best = best;
  return card;
}

// -- the query form folds to one line over results; keys ------------------------------------------
function collapseForm(state) {
  const concepts = state.concepts.map((c) => `${c.name} ${c.weight}`).join(", ");
  const parts = state.text ? [`words ${anchorLabel(state)}`, current?.result?.mode ? `${current.result.mode} mode` : ""]
    : [anchorLabel(state) + (state.start !== null || state.end !== null ? ` ${fmtSpan(state.start || 0, state.end)}` : ""),
       concepts, state.change ? `changed: "${state.change}"` : "", state.most ? "most different first" : ""];
  const where = state.where.length ? `where ${state.where.join(" and ")}` : "";
  $("#query-line").textContent = [...parts.filter(Boolean), where, `${state.k} results`].filter(Boolean).join(" · ");
  $("#query-form").hidden = true;
  $("#query-summary").hidden = false;
}

function expandForm(focus = null) {
  $("#query-form").hidden = false;
  $("#query-summary").hidden = true;
  if (focus) focus.focus();
}

// the cards j/k move over: the results shown (or the videos, grouped)
const cards = () => $$("#hits > li:not([hidden])");

function select(step) {
  const list = cards();
  if (!list.length) return;
  const at = list.indexOf(document.activeElement.closest?.("#hits > li"));
  const next = list[at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, at + step))];
  for (const card of list) card.classList.toggle("selected", card === next);
  next.focus({preventScroll: true});
  next.scrollIntoView({block: "nearest"});
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = event.target.closest?.("input, select, textarea, button, summary, video, [contenteditable]");
  if (event.key === "Escape" && !$("#compare").hidden && current) {
    event.preventDefault();
    navigate({...current.state, view: "results"});
    return;
  }
  if (typing) return;
  if (event.key === "/") {
    event.preventDefault();
    expandForm($("#text").disabled ? $("#anchor") : $("#text"));
    return;
  }
  if ($("#results").hidden) return;
  const card = event.target.closest?.("#hits li.hit, #hits li.video-group");
  if (event.key === "j" || event.key === "k") { event.preventDefault(); select(event.key === "j" ? 1 : -1); }
  else if (card && event.key === "Enter" && !current.state.text) {
    event.preventDefault();
    openCompare(card.hit || card.best);
  } else if (card && event.key === " ") { event.preventDefault(); playCard(card); }
}

// -- exports --------------------------------------------------------------------------------------
function exportRows() {
  const {state, result} = current;
  const keys = result.concepts.map((c) => c.key);
  const rows = [["rank", "path", "start", "end", "total", "confidence", "z", ...keys]];
  for (const h of visible(result.hits, state)) {
    rows.push([h.rank, h.path, h.start, h.end, h.total ?? "", h.confidence || "", h.z ?? "",
               ...keys.map((k) => h.scores[k] ?? "")]);
  }
  return rows;
}

function csvCell(value) {
  // a text starting with = + - @ is a formula to a spreadsheet: kept as text (OWASP's CSV injection advice)
  const text = typeof value === "string" && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function exportName(ext) {
  const base = current.state.text ? "words" : current.state.anchor.split("/").pop().replace(/\.[^.]*$/, "");
  return `convis-${base.replace(/[^\w.-]+/g, "_")}.${ext}`;
}

// the gallery holds what the page shows: the results the filters left, as CSV and JSON do
function galleryRequest() {
  const {state, result} = current;
  return {...requestOf(state), shown: visible(result.hits, state).map((h) => ({path: h.path, start: h.start}))};
}

async function exportHtml() {
  status("writing the gallery (previews of each result are embedded)…");
  try {
    const response = await fetch("/export/gallery", {method: "POST", headers: {"Content-Type": "application/json"},
                                                       body: JSON.stringify(galleryRequest())});
    if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error || response.statusText);
    download(exportName("html"), "text/html", await response.text());
    status("");
  } catch (error) { status(`export failed: ${error.message}`, true); }
}

// -- compare --------------------------------------------------------------------------------------
function openCompare(hit) {
  navigate({...current.state, view: "compare", b: hit.path, bstart: hit.start});
}

async function compare(state, mine) {
  status(`comparing with ${state.b}…`);
  try {
    const body = {a: state.anchor, b: state.b, b_start: state.bstart, concepts: state.concepts, rerank: state.rerank,
                  free_text: state.free};
    if (state.start !== null) body.a_start = state.start;
    if (state.end !== null) body.a_end = state.end;
    const data = await send("POST", "/compare", body);
    if (mine !== latest) return;
    showCompare(data, state);
    status("");
  } catch (error) {
    if (mine !== latest) return;
    renderResults();  // the results it came from, rather than an empty page
    status(`cannot compare: ${error.message}`, true);
  }
}

function clipColumn(box, title, name, stripUrl, media, playback, start, end) {
  const stripBox = el("div", {class: "strip"});
  box.replaceChildren(el("h2", {}, `${title} `, el("span", {class: "path"}, name)), stripBox,
                      player(media, playback, start, end));
  fillStrip(stripBox, stripUrl, name);
}

function showCompare(data, state) {
  const lmm = data.reranker !== null;
  const rows = data.concepts.map((c) => ({label: c.words, weight: c.weight, value: c.score,
                                          by: rowBy(c.scored_by_label, lmm ? c.rating : null),
                                          range: current.result.ranges?.[c.key]}));
  show("compare");
  collapseForm(state);
  $("#compare-title").textContent = `${anchorLabel(state)} vs ${data.b}`;
  clipColumn($("#clip-a"), "Anchor", anchorLabel(state), data.a_strip, data.a_media, data.a_playback,
             state.start, state.end);
  clipColumn($("#clip-b"), data.rank ? `#${data.rank}` : "B", data.b, data.b_strip, data.b_media, data.b_playback,
             data.b_start, data.b_end);
  syncPlayers(state.start || 0, data.b_start || 0);
  const scale = lmm ? `${data.reranker}: its answer, 1 (completely different) to 5 (perfectly similar), as 0-1`
                    : `${data.scored_by}; bars span this query's scores`;
  $("#compare-scores").replaceChildren(el("h2", {}, "Per-concept similarity ", el("span", {class: "meta"}, scale)),
    scoreRows(rows), el("p", {class: "total"}, `total ${fmtScore(data.total)}`),
    ...data.notices.map((n) => el("p", {class: "note"}, `note: ${n}`)));
  document.dispatchEvent(new CustomEvent("convis:compare", {detail: {data, state}}));  // diff.js: what differs
  window.scrollTo(0, 0);
}

// the two players move together: play, pause and seek on one do the same on the other, each from its own start
function syncPlayers(startA, startB) {
  const a = $("#clip-a video"), b = $("#clip-b video");
  $("#play-both").disabled = !(a && b);
  if (!(a && b)) return;
  const pairs = [[a, b, startA, startB], [b, a, startB, startA]];
  // each mirror acts only when the other player differs, so the events it causes come back as no-ops
  for (const [from, to, fromStart, toStart] of pairs) {
    const synced = () => $("#sync").checked;
    from.addEventListener("play", () => { if (synced() && to.paused) to.play().catch(() => {}); });
    from.addEventListener("pause", () => { if (synced() && !to.paused) to.pause(); });
    from.addEventListener("seeked", () => {
      const target = toStart + (from.currentTime - fromStart);
      if (synced() && Math.abs(to.currentTime - target) > SYNC_SLACK_S) to.currentTime = target;
    });
  }
  $("#play-both").onclick = () => {
    a.currentTime = startA;
    b.currentTime = startB;
    Promise.all([a.play(), b.play()]).catch(() => {});
  };
}

// -- the collection -------------------------------------------------------------------------------
async function loadCollection(state, mine = latest) {
  show("collection");
  const params = new URLSearchParams({status: state.status, offset: (state.page - 1) * PAGE, limit: PAGE});
  if (state.folder !== null && state.folder !== "*") params.set("folder", state.folder);
  if (state.name) params.set("name", state.name);
  status("loading the collection…");
  try {
    const data = await api(`/collection?${params}`);
    if (mine !== latest) return;
    renderCollection(data, state);
    status("");
  } catch (error) { status(error.message, true); }
}

function renderCollection(data, state) {
  const folder = $("#folder");
  folder.replaceChildren(el("option", {value: "*"}, "all folders"),
                         ...data.folders.map((f) => el("option", {value: f}, f === "" ? "(top folder)" : f)));
  folder.value = state.folder === null ? "*" : state.folder;
  $("#file-status").value = state.status;
  $("#name-filter").value = state.name;
  const first = data.total ? data.offset + 1 : 0, last = Math.min(data.offset + data.limit, data.total);
  const what = state.status === "ok" ? "units" : `${state.status} files`;
  const offline = data.counts.unavailable ? `, ${data.counts.unavailable} unavailable` : "";
  $("#collection-meta").textContent = `${first}-${last} of ${data.total} ${what} · ${data.counts.ok} files ` +
    `indexed, ${data.counts.failed} failed${offline}`;
  $("#prev-page").disabled = state.page <= 1;
  $("#next-page").disabled = last >= data.total;
  $("#removed-list").replaceChildren();  // removed.js fills it
  if (state.status === "removed") {
    $("#grid").replaceChildren(); $("#failed-list").replaceChildren(); renderRemoved(data.items);
  } else if (state.status !== "ok") {
    $("#grid").replaceChildren();
    $("#failed-list").replaceChildren(...data.items.map((f) => el("li", {class: "card failed-file"},
      el("span", {class: "path"}, f.path), " ", el("span", {class: "error"}, f.error))));
  } else {
    $("#failed-list").replaceChildren();
    $("#grid").replaceChildren(...data.items.map(unitCard));
  }
  $("#collection-notes").replaceChildren(...(data.notices || []).map((n) => el("p", {class: "note"}, `note: ${n}`)));
}

function unitCard(unit) {
  const stripBox = el("div", {class: "strip"});
  const segmented = unit.units > 1;
  const card = el("li", {class: "card unit", "data-path": unit.path, "data-start": unit.start},
    stripBox,
    el("div", {class: "unit-head"}, el("span", {class: "path"}, unit.path),
       el("span", {class: "time"}, segmented ? fmtSpan(unit.start, unit.end) : `${fmtTime(unit.duration || unit.end)}`)),
    tagRow(unit.path, unit.tags || []),
    el("div", {class: "actions"},
       el("button", {type: "button", class: "more", onclick: (event) => chooseConcept(event.target, unit)},
          "More like this"),
       health.allow_writes ? el("button", {type: "button", class: "remove-file", onclick: () => removeFile(unit.path)},
                                "Remove from index") : null));
  fillStrip(stripBox, unit.strip, unit.path, true);
  return card;
}

// a file's tags (the user field `tags`, which `where: tags has X` filters read) as chips; a server that takes
// writes lets each be removed and new ones added here, for every card of that file at once
function tagRow(path, tags) {
  const row = el("div", {class: "tags", "data-path": path});
  fillTags(row, path, tags);
  return row;
}

function fillTags(row, path, tags) {
  const chips = tags.map((tag) => el("span", {class: "tag"}, tag,
    health.allow_writes ? el("button", {type: "button", class: "untag", title: `remove the tag ${tag}`,
                                        "aria-label": `remove the tag ${tag}`, onclick: () => changeTags(path, {remove: [tag]})}, "×") : null));
  const input = health.allow_writes ? el("input", {type: "text", class: "add-tag", placeholder: "+ tag", maxlength: 64,
                                                    "aria-label": `add a tag to ${path}`}) : null;
  input?.addEventListener("keydown", (event) => {
    const tag = input.value.replace(/,/g, " ").trim();
    if (event.key === "Enter" && tag) changeTags(path, {add: [tag]});
  });
  row.replaceChildren(...chips, input || "");
  row.hidden = !tags.length && !input;
}

async function changeTags(path, change) {
  try {
    const data = await send("POST", `/files/${encodePath(path)}/tags`, change);
    for (const row of $$(".tags")) if (row.dataset.path === path) fillTags(row, path, data.tags);
    for (const hit of current?.result?.hits || []) if (hit.path === path) hit.tags = data.tags;
    loadFields();  // the tags' counts changed
  } catch (error) { status(`tagging failed: ${error.message}`, true); }
}

// -- index management (`convis serve --allow-writes`) ----------------------------------------------
function setupManage() {
  const allowed = !!health.allow_writes;
  $("#manage").hidden = !allowed;  // a read-only server has nothing to manage: no panel of disabled controls
  $("#manage-note").textContent = allowed ? "changes are written to the index on this machine"
    : "read-only: start the server with `convis serve --allow-writes` to add, remove or re-index files";
  for (const id of ["#add-files", "#add-folder", "#reindex", "#retry-failed"]) $(id).disabled = !allowed;
}

async function addFiles() {
  const files = [...$("#add-files").files];
  if (!files.length) return;
  const refs = [];
  try {
    for (const [i, file] of files.entries()) {
      jobText(`uploading ${file.name} (${i + 1} of ${files.length})…`);
      const form = new FormData();
      form.append("file", file);
      refs.push((await api("/uploads", {method: "POST", body: form})).anchor);
    }
    await send("POST", "/index/files", {uploads: refs, folder: $("#add-folder").value.trim() || "added"});
    watchJob();
  } catch (error) { jobText(""); status(`adding failed: ${error.message}`, true); }
  $("#add-files").value = "";
}

async function reindex() {
  try {
    await send("POST", "/index/runs", {retry_failed: $("#retry-failed").checked});
    watchJob();
  } catch (error) { status(`re-indexing refused: ${error.message}`, true); }
}

async function removeFile(path) {
  if (!confirm(`Remove ${path} from the index? The file itself stays where it is.`)) return;
  try {
    await api(`/files/${encodePath(path)}`, {method: "DELETE"});
    current = null;
    await refreshHealth();
    await loadAnchors();
    await loadCollection(stateFrom(location.search));
    status(`removed ${path} from the index (the file is still on disk)`);
  } catch (error) { status(`removing failed: ${error.message}`, true); }
}

function jobText(text, done = null, total = null) {
  $("#job").hidden = !text;
  $("#job-text").textContent = text;
  const bar = $("#job-progress");
  if (total) { bar.max = total; bar.value = done; } else bar.removeAttribute("value");
}

async function watchJob() {
  const job = await api("/index/job").catch((error) => ({state: "failed", error: error.message}));
  if (job.state === "running") {
    jobText(`indexing: ${job.done || 0} of ${job.total ?? "?"} files${job.current ? ` · ${job.current}` : ""}`,
            job.done || 0, job.total);
    setTimeout(watchJob, 600);
    return;
  }
  if (job.state === "failed") { jobText(""); status(`indexing failed: ${job.error}`, true); return; }
  const report = job.report || {};
  const failed = report.failed || [];
  jobText(job.state === "done" ? `done: ${report.indexed ?? job.done ?? 0} indexed, ${failed.length} failed` +
          failed.map((f) => ` · ${f.path}: ${f.error}`).join("") : "", 1, 1);
  current = null;  // what the index holds changed: results are asked again
  await refreshHealth();
  await loadAnchors();
  await loadFields();
  if (stateFrom(location.search).view === "collection") loadCollection(stateFrom(location.search));
}

// -- start ----------------------------------------------------------------------------------------
async function refreshHealth() {
  health = await api("/health");
  $("#root").textContent = `${health.root} · ${health.files_ok} files, ${health.units} units` +
    `${health.files_failed ? `, ${health.files_failed} failed` : ""}` +
    `${health.files_unavailable ? `, ${health.files_unavailable} unavailable` : ""}` +
    ` · ${health.indexers.map(shortName).join(", ")}`;
  if (health.reranker) { $("#rerank-box").hidden = false; $("#reranker-name").textContent = health.reranker; }
  $("#words-note").textContent = health.text_search ? "" : "(this index has no text signal: index with --captions " +
                                                           "or a CLIP-family indexer to search by words)";
  $("#text").disabled = $("#text-search").disabled = !health.text_search;
}

async function loadAnchors() {
  const videos = await api("/videos");
  const chosen = $("#anchor").value;
  const uploaded = [...$("#anchor").options].filter((o) => o.value.startsWith(".uploads/"));
  $("#anchor").replaceChildren(el("option", {value: ""}, "— pick an indexed clip —"),
    ...videos.files.filter((f) => f.status === "ok").map((f) => el("option", {value: f.path}, f.path)), ...uploaded);
  $("#anchor").value = chosen;
}

function collectionState(changes) {
  return {...stateFrom(location.search), view: "collection", ...changes};
}

function wire() {
  $("#concept-names").replaceChildren(...CONCEPTS.map((c) => el("option", {value: c})));
  conceptRow("location", 1);
  $("#add-concept").addEventListener("click", () => conceptRow());
  $("#query-form").addEventListener("submit", searchClip);
  $("#text-search").addEventListener("click", searchWords);
  $("#text").addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); searchWords(); } });
  $("#upload").addEventListener("change", upload);
  $("#back").addEventListener("click", () => navigate({...current.state, view: "results"}));
  $("#edit-query").addEventListener("click", () => expandForm($("#anchor").value ? $("#concepts .name") : $("#anchor")));
  document.addEventListener("keydown", onKey);
  $("#nav-collection").addEventListener("click", (event) => { event.preventDefault(); navigate(collectionState({page: 1})); });
  $("#home").addEventListener("click", (event) => { event.preventDefault(); navigate(collectionState({page: 1})); });
  $("#folder").addEventListener("change", () => navigate(collectionState({folder: $("#folder").value, page: 1})));
  $("#file-status").addEventListener("change", () => navigate(collectionState({status: $("#file-status").value, page: 1})));
  $("#name-filter").addEventListener("change", () => navigate(collectionState({name: $("#name-filter").value.trim(), page: 1})));
  $("#prev-page").addEventListener("click", () => navigate(collectionState({page: stateFrom(location.search).page - 1})));
  $("#next-page").addEventListener("click", () => navigate(collectionState({page: stateFrom(location.search).page + 1})));
  for (const radio of $$("input[name=group]")) {
    radio.addEventListener("change", () => navigate({...current.state, group: radio.value}, true));
  }
  $("#threshold").addEventListener("input", () => {
    const value = Number($("#threshold").value);
    navigate({...current.state, min: value <= Number($("#threshold").min) ? null : value}, true);
  });
  $("#confidence-filter").addEventListener("change", () => navigate({...current.state, show: $("#confidence-filter").value}, true));
  $("#export-csv").addEventListener("click", () => download(exportName("csv"), "text/csv",
                                                            exportRows().map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n"));
  $("#export-json").addEventListener("click", () => download(exportName("json"), "application/json",
                                                             JSON.stringify({...current.result, hits: visible(current.result.hits, current.state)}, null, 2)));
  $("#export-html").addEventListener("click", exportHtml);
  $("#add-files").addEventListener("change", addFiles);
  $("#reindex").addEventListener("click", reindex);
  $("#filter-field").addEventListener("change", fieldChosen);
  $("#filter-add").addEventListener("click", addFilter);
  $("#tools-toggle").addEventListener("click", () => {
    const open = document.body.classList.toggle("tools-open");
    $("#tools-toggle").setAttribute("aria-expanded", open);
  });
  $("#filter-value").addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); addFilter(); } });
  window.addEventListener("popstate", () => apply(stateFrom(location.search)));
}

async function start() {
  wire();
  try {
    await refreshHealth();
    setupManage();
    await loadAnchors();
    await loadFields();
    await apply(stateFrom(location.search));
    const job = await api("/index/job").catch(() => ({}));
    if (job.state === "running") watchJob();
  } catch (error) { status(error.message, true); }
  document.body.dataset.ready = "1";
}
start();
