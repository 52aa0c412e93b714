// What differs, in the compare view: statements the server's LMM (--reranker) places on the anchor or the compared
// clip (POST /diff, as `convis diff`). app.js announces each comparison it shows with a "convis:compare" event.
"use strict";
(() => {
  let asked = 0;  // the newest question: an older answer arriving late is dropped

  function section() {
    let box = $("#compare-diff");
    if (!box) {
      box = el("section", {class: "card", id: "compare-diff", "aria-label": "what differs"});
      $("#compare").append(box);
    }
    return box;
  }

  function render({data, state}) {
    asked += 1;
    const box = section();
    if (!health.reranker) {
      box.replaceChildren(el("h2", {}, "What differs"), el("p", {class: "note", id: "diff-off"},
        "No LMM on this server to say what differs: start it with `convis serve --reranker NAME` (e.g. qwen2.5-vl), " +
        "or run `convis diff A B --action TEXT` on the command line."));
      return;
    }
    const action = el("input", {type: "text", id: "diff-action", maxlength: "1000", size: "30", required: true,
                                placeholder: "a hand moving a box"});
    const statements = el("textarea", {id: "diff-statements", rows: "3", cols: "44", maxlength: "10000",
                                       placeholder: "one difference a line, e.g. the box is larger (empty: the " +
                                                    "model proposes up to 3)"});
    const out = el("div", {id: "diff-out"});
    const form = el("form", {id: "diff-form", class: "row"},
                    el("label", {}, "what the clips show ", action), el("label", {}, "statements ", statements),
                    el("button", {type: "submit", id: "diff-ask"}, "What differs?"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      ask(data, state, action.value, statements.value, out);
    });
    box.replaceChildren(el("h2", {}, "What differs ", el("span", {class: "meta"}, `asked of ${health.reranker}; ` +
                                                          "each statement is one model call")), form, out);
  }

  async function ask(data, state, action, text, out) {
    const mine = ++asked;
    const body = {a: data.a, b: data.b, action,
                  statements: text.split("\n").map((line) => line.trim()).filter(Boolean)};
    for (const [key, value] of [["a_start", state.start], ["a_end", state.end], ["b_start", data.b_start],
                                ["b_end", data.b_end]]) if (value !== null && value !== undefined) body[key] = value;
    out.replaceChildren(el("p", {class: "meta"}, "asking the model…"));
    try {
      const result = await send("POST", "/diff", body);
      if (mine === asked) out.replaceChildren(...answer(result));
    } catch (error) {
      if (mine === asked) out.replaceChildren(el("p", {class: "error"}, `cannot say what differs: ${error.message}`));
    }
  }

  // a: the anchor, b: the compared clip; P(a) this close to 0.5 is "can't tell"
  function told(row, margin) {
    if (row.told !== undefined) return row.told;
    if (row.p_a === null) return null;
    return Math.abs(row.p_a - 0.5) < margin ? "can't tell" : row.prediction;
  }

  function answer(result) {
    const rows = result.statements || result.proposals || [];
    const names = {a: `the anchor (${result.a})`, b: `B (${result.b})`};
    const table = el("table", {class: "diff", id: "diff-table"},
      el("tr", {}, el("th", {}, "statement"), el("th", {}, "more true of"), el("th", {}, "P(anchor)")),
      ...rows.map((row) => {
        const which = told(row, result.cant_tell_margin);
        return el("tr", {class: "diff-row", "data-told": which || "unreadable"},
                  el("td", {}, row.statement || row.description),
                  el("td", {}, which === null ? "unreadable" : names[which] || which),
                  el("td", {}, fmtScore(row.p_a)));
      }));
    return [rows.length ? table : el("p", {class: "note"}, "the model named no difference it could be asked about"),
            ...(result.unreadable || []).map((line) => el("p", {class: "note"}, `unreadable: ${line}`)),
            el("p", {class: "meta"}, `${result.model_calls} model calls · "can't tell": P within ` +
                                     `${result.cant_tell_margin} of 0.5 · frames ${result.frames}`),
            ...result.notices.map((line) => el("p", {class: "note"}, `note: ${line}`))];
  }

  document.addEventListener("convis:compare", (event) => render(event.detail));
})();
