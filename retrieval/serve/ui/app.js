const $ = (sel) => document.querySelector(sel);
const CONCEPTS = ["location", "main-action", "main-subjects", "main-objects", "order-of-actions"];
let current = null;  // the last query's request (null for a text search) and response

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value; else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);  // strings become text nodes: names are never parsed as HTML
  return node;
}
// one clock format everywhere (retrieval/core/timecode.py): 0:08.1, 1:20.0, 1:02:03.5
const fmtTime = (s) => {
  const tenths = Math.round(Math.max(s, 0) * 10), whole = Math.floor(tenths / 10);
  const [h, m, sec] = [Math.floor(whole / 3600), Math.floor(whole / 60) % 60, whole % 60];
  const clock = h ? `${h}:${String(m).padStart(2, "0")}:${String(sec).padStart(2, "0")}` : `${m}:${String(sec).padStart(2, "0")}`;
  return `${clock}.${tenths % 10}`;
};
const fmtScore = (v) => v === null || v === undefined ? "unreadable" : v.toFixed(3);

function status(text, isError = false) {
  const box = $("#status");
  box.textContent = text;
  box.className = isError ? "error" : "meta";
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = data.error || (Array.isArray(data.detail) ? data.detail.map((d) => d.msg).join("; ") : data.detail);
    throw new Error(detail || `${response.status} ${response.statusText}`);
  }
  return data;
}
const post = (path, body) => api(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                        body: JSON.stringify(body)});

function conceptRow(name = "", weight = 1) {
  const remove = el("button", {type: "button", class: "remove", title: "remove concept"}, "×");
  const row = el("div", {class: "concept-row"},
    el("input", {class: "name", list: "concept-names", value: name, placeholder: "concept", required: ""}),
    el("input", {class: "weight", type: "number", min: "0", step: "0.1", value: String(weight), title: "weight"}),
    remove);
  remove.addEventListener("click", () => { if ($("#concepts").children.length > 1) row.remove(); });
  $("#concepts").append(row);
}

function concepts() {
  return [...document.querySelectorAll(".concept-row")].map((row) => ({
    name: row.querySelector(".name").value.trim(), weight: Number(row.querySelector(".weight").value || 0)}))
    .filter((c) => c.name);
}

async function fillStrip(box, url, name) {
  box.replaceChildren(el("span", {class: "meta"}, "loading frames…"));
  try {
    const data = await api(url);
    box.replaceChildren(...data.frames.map((f) => el("figure", {},
      el("img", {src: f.src, width: f.width, height: f.height, alt: `${name} at ${fmtTime(f.time)}`}),
      el("figcaption", {}, fmtTime(f.time)))));
  } catch (error) {
    box.replaceChildren(el("span", {class: "error"}, `thumbnails unavailable: ${error.message}`));
  }
}

const shortName = (modelId) => modelId.split(":")[0];

// every score is on one 0-1 scale (an LMM's 1-5 answer r as (r - 1) / 4); `by` says what scored the row
function scoreRows(rows) {
  const box = el("div", {class: "scores"});
  for (const [label, weight, value, by] of rows) {
    const fraction = value === null ? 0 : Math.min(1, Math.max(0, value));
    box.append(el("span", {}, label, " ", el("span", {class: "meta"}, `w ${weight.toFixed(2)} · ${by}`)),
               el("span", {class: "bar"}, el("span", {style: `width:${(100 * fraction).toFixed(1)}%`})),
               el("span", {class: "value"}, fmtScore(value)));
  }
  return box;
}

const video = (src, start, end) => el("video", {controls: "", preload: "metadata",
  src: `${src}#t=${start || 0}${end !== null && end !== undefined ? "," + end : ""}`});

function rowBy(scoredBy, rating) {
  const by = scoredBy === "fusion" ? "fusion" : shortName(scoredBy);
  return rating === null || rating === undefined ? by : `${by}, ${rating.toFixed(2)} of 5`;
}

function hitCard(hit, result) {
  const ratings = hit.ratings || {};
  const rows = result.concepts.map((c) => [c.words, c.weight, hit.scores[c.key],
                                          rowBy(c.scored_by, ratings[c.key])]);
  if (hit.composed) {  // a composed query: what of the total is staying alike, what is the change
    const w = hit.composed.weight;
    rows.push(["stays like the anchor", 1 / (1 + w), hit.composed.stay, "the concepts above"]);
    rows.push([`shows "${result.change.text}"`, w / (1 + w), hit.composed.change,
               ratings.change !== undefined ? rowBy(result.reranker, ratings.change) : "the change text"]);
  }
  const stripBox = el("div", {class: "strip"});
  const card = el("li", {class: "card hit", id: `hit-${hit.rank}`, "data-rank": hit.rank, "data-path": hit.path},
    el("div", {class: "hit-head"}, el("span", {class: "rank"}, `#${hit.rank}`), el("span", {class: "path"}, hit.path),
       el("span", {class: "time"}, `${fmtTime(hit.start)}-${fmtTime(hit.end)}`),
       el("span", {class: "total"}, `total ${fmtScore(hit.total)}`)),
    el("div", {class: "body"}, el("div", {}, stripBox, scoreRows(rows)), video(hit.media, hit.start, hit.end)));
  // a clip anchor can be compared with a hit; a sentence cannot
  card.addEventListener("click", (event) => { if (event.target.tagName !== "VIDEO" && current.body) compare(hit); });
  fillStrip(stripBox, hit.strip, hit.path);
  return card;
}

function showResults(result) {
  $("#compare").hidden = true;
  $("#results").hidden = false;
  $("#anchor-name").textContent = current.label;
  if (result.anchor_strip) fillStrip($("#anchor-strip"), result.anchor_strip, current.label);
  else $("#anchor-strip").replaceChildren();
  const scoredBy = result.reranker || `recall similarity (${Object.entries(result.signals)
    .map(([c, m]) => `${c}: ${m.split(":")[0]}`).join(", ")})`;
  const click = current.body ? " · click one to compare" : "";
  $("#results-meta").textContent = `${result.hits.length} results · scored by ${scoredBy}${click}`;
  $("#notices").replaceChildren(...result.notices.map((n) => el("p", {class: "note"}, `note: ${n}`)));
  $("#hits").replaceChildren(...result.hits.map((hit) => hitCard(hit, result)));
}

async function search(event) {
  event.preventDefault();
  const select = $("#anchor");
  if (!select.value) { status("pick or upload an anchor first", true); return; }
  const body = {anchor: select.value, concepts: concepts(), k: Number($("#k").value || 10),
                rerank: $("#rerank").checked, free_text: $("#free-text").checked};
  const change = $("#change").value.trim();
  if (change) body.change = change;
  status("searching…");
  try {
    const result = await post("/query", body);
    current = {body, result, label: select.selectedOptions[0].textContent};
    showResults(result);
    status("");
  } catch (error) { status(error.message, true); }
}

async function searchText(event) {
  event.preventDefault();
  const text = $("#text").value.trim();
  if (!text) { status("type what to look for first", true); return; }
  status("searching…");
  try {
    const result = await api(`/search?${new URLSearchParams({text, k: Number($("#k").value || 10)})}`);
    current = {body: null, result, label: `"${result.text}"`};
    showResults(result);
    status("");
  } catch (error) { status(error.message, true); }
}

async function compare(hit) {
  status(`comparing with ${hit.path}…`);
  try {
    const req = current.body;
    const data = await post("/compare", {a: req.anchor, b: hit.path, b_start: hit.start, concepts: req.concepts,
                                         rerank: req.rerank, free_text: req.free_text});
    showCompare(data);
    status("");
  } catch (error) { status(error.message, true); }
}

function clipColumn(box, title, name, stripUrl, media, start, end) {
  const stripBox = el("div", {class: "strip"});
  box.replaceChildren(el("h2", {}, `${title} `, el("span", {class: "path"}, name)), stripBox, video(media, start, end));
  fillStrip(stripBox, stripUrl, name);
}

function showCompare(data) {
  const lmm = data.reranker !== null;
  const rows = data.concepts.map((c) => [c.words, c.weight, c.score, lmm ? rowBy(data.reranker, c.rating)
                                                                       : shortName(c.signal)]);
  $("#results").hidden = true;
  $("#compare").hidden = false;
  $("#compare-title").textContent = `${current.label} vs ${data.b}`;
  clipColumn($("#clip-a"), "Anchor", current.label, data.a_strip, data.a_media, current.body.start, current.body.end);
  clipColumn($("#clip-b"), data.rank ? `#${data.rank}` : "B", data.b, data.b_strip, data.b_media,
             data.b_start, data.b_end);
  const scale = lmm ? `${data.reranker}: its answer, 1 (completely different) to 5 (perfectly similar), as 0-1`
                    : `${data.scored_by}, in [0, 1]`;
  $("#compare-scores").replaceChildren(el("h2", {}, "Per-concept similarity ", el("span", {class: "meta"}, scale)),
    scoreRows(rows),
    el("p", {class: "total"}, `total ${fmtScore(data.total)}`),
    ...data.notices.map((n) => el("p", {class: "note"}, `note: ${n}`)));
  window.scrollTo(0, 0);
}

async function upload() {
  const file = $("#upload").files[0];
  if (!file) return;
  const form = new FormData();
  form.append("file", file);
  status(`uploading ${file.name}…`);
  try {
    const data = await api("/uploads", {method: "POST", body: form});
    const option = el("option", {value: data.anchor}, `uploaded: ${data.name}`);
    $("#anchor").append(option);
    $("#anchor").value = data.anchor;
    status(`uploaded ${data.name}`);
  } catch (error) { status(error.message, true); }
}

async function start() {
  $("#concept-names").replaceChildren(...CONCEPTS.map((c) => el("option", {value: c})));
  conceptRow("location", 1);
  $("#add-concept").addEventListener("click", () => conceptRow());
  $("#query-form").addEventListener("submit", search);
  $("#text-form").addEventListener("submit", searchText);
  $("#upload").addEventListener("change", upload);
  $("#back").addEventListener("click", () => { $("#compare").hidden = true; $("#results").hidden = false; });
  try {
    const health = await api("/health");
    $("#root").textContent = `${health.root} · ${health.files_ok} files, ${health.units} units · ` +
                             health.indexers.join(", ");
    if (health.reranker) { $("#rerank-box").hidden = false; $("#reranker-name").textContent = health.reranker; }
    const videos = await api("/videos");
    const ok = videos.files.filter((f) => f.status === "ok");
    $("#anchor").replaceChildren(el("option", {value: ""}, "— pick an indexed clip —"),
                                 ...ok.map((f) => el("option", {value: f.path}, f.path)));
    document.body.dataset.ready = "1";
  } catch (error) { status(error.message, true); }
}
start();
