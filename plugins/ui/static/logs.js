// The "Task logs" page: the run's files by node, one file's lines (opening at its end,
// following it while the run is live, paging back), search with next/previous, downloads.
// Log text is only ever set as text (textContent), never parsed as HTML.
"use strict";

const page = document.getElementById("logs-page");
const api = page.dataset.api;
const $ = (id) => document.getElementById(id);
const FOLLOW_EVERY_MS = 2000;
const PAGE_LINES = 200;

const state = {
  files: [],          // {node, name, size, modified}
  file: null,         // the file on view
  start: 0, end: 0,   // byte offsets of what is shown
  partial: false,     // the last shown line is still being written
  live: page.dataset.live === "true",
  hits: [], current: -1, more: null, query: null,
};

function size(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

function fileUrl(name, suffix = "") {
  return `${api}/${encodeURIComponent(name)}${suffix}`;
}

async function loadList() {
  const listed = await getJson(api);
  state.live = listed.live;
  $("run-state").textContent = listed.run.state;
  $("run-state").className = `state state-${listed.run.state}`;
  const nav = $("log-list");
  nav.replaceChildren();
  state.files = [];
  for (const node of listed.nodes) {
    nav.append(element("h2", node.node));
    const list = element("ul");
    for (const file of node.files) {
      state.files.push({ node: node.node, ...file });
      const item = element("li");
      item.dataset.name = file.name;
      const view = element("a", file.name, "name");
      view.href = "#";
      view.title = `View ${file.name}`;
      view.addEventListener("click", (event) => { event.preventDefault(); openFile(file.name); });
      const download = element("a", "Download");
      download.href = fileUrl(file.name, "/download");
      download.setAttribute("download", file.name);
      item.append(view, element("span", size(file.size), "muted"),
                  timeElement(file.modified, "muted"), download);
      list.append(item);
    }
    if (!node.files.length) list.append(element("li", "no log file yet", "muted"));
    nav.append(list);
  }
  if (!listed.nodes.length) nav.append(element("p", "This run has not started its nodes yet.", "muted"));
  markCurrent();
  if (!state.file && state.files.length) openFile(state.files[0].name);
}

function markCurrent() {
  for (const item of document.querySelectorAll("#log-list li")) {
    item.classList.toggle("current", state.file !== null && item.dataset.name === state.file);
  }
}

// A line that says an error or a warning (a logger's level, a traceback, Python's warnings)
// stands out, so that a long log can be skimmed for them.
const ERROR_LINE = /\b(ERROR|CRITICAL|FATAL|Traceback|Exception|Error:)|\bERROR\b|\b[A-Za-z]+Error\b/;
const WARNING_LINE = /\b(WARNING|WARN)\b|\b[A-Za-z]*Warning\b/;

// A line of the file with its number in the file (shown beside it, never copied with it).
function lineElement(line, number, hitOffset) {
  const shown = element("span", `${line.text}\n`, "line");
  shown.dataset.offset = line.offset;
  shown.dataset.line = number;
  if (ERROR_LINE.test(line.text)) shown.classList.add("line-error");
  else if (WARNING_LINE.test(line.text)) shown.classList.add("line-warning");
  if (line.offset === hitOffset) shown.classList.add("hit");
  return shown;
}

function showPage(view, { prepend = false, hitOffset = -1 } = {}) {
  const lines = $("lines");
  const made = view.lines.map((line, at) => lineElement(line, view.first_line + at, hitOffset));
  // Numbers as wide as the largest one on the page, so that the text stays in one column.
  const widest = String(view.first_line + view.lines.length).length;
  lines.style.setProperty("--line-digits", Math.max(widest, Number(lines.style.getPropertyValue("--line-digits")) || 0));
  if (prepend) {
    const before = lines.scrollHeight;
    lines.prepend(...made);
    lines.scrollTop += lines.scrollHeight - before;
    state.start = view.start;
  } else {
    lines.append(...made);
  }
  $("earlier").hidden = state.start === 0;
}

async function openFile(name, around = null) {
  state.file = name;
  markCurrent();
  $("file-name").textContent = name;
  const download = $("file-download");
  download.href = fileUrl(name, "/download");
  download.setAttribute("download", name);
  download.hidden = false;
  $("lines").replaceChildren();
  if (around === null) {
    const view = await getJson(`${fileUrl(name)}?lines=${PAGE_LINES}`);
    state.start = view.start; state.end = view.end; state.partial = view.partial;
    showPage(view);
    $("lines").scrollTop = $("lines").scrollHeight;
  } else {
    const earlier = await getJson(`${fileUrl(name)}?before=${around}&lines=${PAGE_LINES / 2}`);
    const later = await getJson(`${fileUrl(name)}?after=${around}&lines=${PAGE_LINES / 2}`);
    state.start = earlier.start; state.end = later.end; state.partial = later.partial;
    showPage(earlier);
    showPage(later, { hitOffset: around });
    $("lines").querySelector(".hit")?.scrollIntoView({ block: "center" });
  }
}

async function earlier() {
  if (!state.file || state.start === 0) return;
  const view = await getJson(`${fileUrl(state.file)}?before=${state.start}&lines=${PAGE_LINES}`);
  showPage(view, { prepend: true });
}

async function follow() {
  if (!state.file || !$("follow").checked) return;
  const lines = $("lines");
  const atBottom = lines.scrollTop + lines.clientHeight >= lines.scrollHeight - 4;
  const view = await getJson(`${fileUrl(state.file)}?after=${state.end}&lines=2000`);
  if (!view.lines.length) return;
  if (state.partial) lines.lastElementChild?.remove();  // it comes again, complete
  state.end = view.end; state.partial = view.partial;
  showPage(view);
  if (atBottom) lines.scrollTop = lines.scrollHeight;
}

// ---- search ---------------------------------------------------------------------------------

function highlighted(text, query) {
  // The text with each match in a <mark>, built from text nodes only.
  const out = element("span");
  let pattern;
  try {
    pattern = query.regex ? new RegExp(query.q, "gi") : new RegExp(query.q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
  } catch { out.textContent = text; return out; }  // a PCRE-only pattern: shown unmarked
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (!match[0]) break;
    out.append(document.createTextNode(text.slice(last, match.index)), element("mark", match[0]));
    last = match.index + match[0].length;
  }
  out.append(document.createTextNode(text.slice(last)));
  return out;
}

function searchUrl(query, cursor) {
  const params = new URLSearchParams({ q: query.q, regex: query.regex, context: 2, limit: 200 });
  const current = state.files.find((file) => file.name === state.file);
  if (query.scope === "file" && current) params.set("file", current.name);
  if (query.scope === "node" && current) params.set("node", current.node);
  if (cursor) {
    params.set("after_file", cursor.file);
    params.set("after_offset", cursor.offset);
    params.set("after_line", cursor.line);
  }
  return `${api}/search?${params}`;
}

function showHits(found, query) {
  const list = $("search-hits");
  list.hidden = false;
  for (const hit of found) {
    const item = element("li");
    item.append(element("div", `${hit.node} / ${hit.file}:${hit.line}`, "muted"));
    for (const text of hit.before) item.append(element("div", text, "context"));
    const line = element("div");
    line.append(highlighted(hit.text, query));
    item.append(line);
    for (const text of hit.after) item.append(element("div", text, "context"));
    const index = state.hits.length;
    item.addEventListener("click", () => goTo(index));
    state.hits.push(hit);
    list.append(item);
  }
}

async function runSearch(event) {
  event.preventDefault();
  const query = { q: $("search-text").value, regex: $("search-regex").checked, scope: $("search-scope").value };
  state.query = query; state.hits = []; state.current = -1; state.more = null;
  $("search-hits").replaceChildren();
  const status = $("search-status");
  status.className = "muted"; status.textContent = "Searching…";
  try {
    const answer = await getJson(searchUrl(query));
    state.more = answer.more;
    showHits(answer.hits, query);
    status.textContent = answer.hits.length
      ? `${answer.hits.length}${answer.more ? "+" : ""} lines found`
      : "Nothing found";
    if (answer.hits.length) await goTo(0);
  } catch (error) {
    status.className = "error"; status.textContent = error.message;
  }
  updateButtons();
}

async function goTo(index) {
  if (index >= state.hits.length && state.more) {
    const answer = await getJson(searchUrl(state.query, state.more));
    state.more = answer.more;
    showHits(answer.hits, state.query);
    $("search-status").textContent = `${state.hits.length}${state.more ? "+" : ""} lines found`;
  }
  if (index < 0 || index >= state.hits.length) return;
  state.current = index;
  const items = $("search-hits").children;
  for (const item of items) item.classList.remove("current");
  items[index].classList.add("current");
  items[index].scrollIntoView({ block: "nearest" });
  $("follow").checked = false;  // stay on the line found
  const hit = state.hits[index];
  await openFile(hit.file, hit.offset);
  updateButtons();
}

function updateButtons() {
  $("search-previous").disabled = state.current <= 0;
  $("search-next").disabled = state.current < 0 || (state.current >= state.hits.length - 1 && !state.more);
}

$("search").addEventListener("submit", runSearch);
$("search-previous").addEventListener("click", () => goTo(state.current - 1));
$("search-next").addEventListener("click", () => goTo(state.current + 1));
$("earlier").addEventListener("click", earlier);

// Up to 1200 px wide the log gets the width: the file list is folded behind "Files" when the
// page opens, and a list opened with "Files" folds again once a file is chosen from it.
const NARROW = window.matchMedia("(max-width: 1200px)");
let openedWithFiles = false;
function foldFiles(folded) {
  document.querySelector("#logs-page .columns").classList.toggle("files-folded", folded);
  $("toggle-files").setAttribute("aria-expanded", String(!folded));
}
$("toggle-files").addEventListener("click", () => {
  openedWithFiles = $("toggle-files").getAttribute("aria-expanded") !== "true";
  foldFiles(!openedWithFiles);
});
$("log-list").addEventListener("click", (event) => {
  if (openedWithFiles && event.target.closest("a.name")) {
    openedWithFiles = false;
    foldFiles(true);
  }
});
foldFiles(NARROW.matches);
$("follow").addEventListener("change", follow);

loadList().catch((error) => {
  $("log-list").replaceChildren(element("p", error.message, "error"));
});
setInterval(() => { follow().catch(() => {}); }, FOLLOW_EVERY_MS);
setInterval(() => { if (state.live) loadList().catch(() => {}); }, 5 * FOLLOW_EVERY_MS);
