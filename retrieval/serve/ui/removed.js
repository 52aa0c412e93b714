// The collection's removed files: `show: removed files` lists the files taken out of the index (with when), and
// each one's Undo puts its stored vectors back (POST /files/{ref}/restore): searchable at once, nothing embedded.
// app.js calls renderRemoved(items) when the collection shows removed files; the list is emptied otherwise.
"use strict";

function renderRemoved(items) {
  $("#removed-list").replaceChildren(...items.map(removedItem));
  if (!items.length) $("#removed-list").append(el("li", {class: "meta"}, "no file is removed from the index"));
}

function removedItem(file) {
  const when = file.removed_at ? `removed ${file.removed_at.replace("T", " ")}` : "removed";
  const kept = file.kept ? `${file.units} unit${file.units === 1 ? "" : "s"} kept`
                         : "removed before vectors were kept: the next index run embeds it again";
  return el("li", {class: "card removed-file", "data-path": file.path},
    el("span", {class: "path"}, file.path), " ", el("span", {class: "meta"}, `${when} · ${kept}`), " ",
    health.allow_writes ? el("button", {type: "button", class: "undo-remove", onclick: () => undoRemove(file.path)},
                             "Undo") : null);
}

async function undoRemove(path) {
  try {
    const done = await api(`/files/${encodePath(path)}/restore`, {method: "POST"});
    current = null;  // what the index holds changed: results are asked again
    await refreshHealth();
    await loadAnchors();
    await loadCollection(stateFrom(location.search));
    status(done.restored.length ? `restored ${path}: searchable again`
                                : `${path} is indexed again by the next run (Re-index the folder)`);
  } catch (error) { status(`undo failed: ${error.message}`, true); }
}
