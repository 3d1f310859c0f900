// What every page of the plugin shares: reading and changing through the REST API with the user's
// Airflow session, making elements whose text is only ever set as text, and links into Airflow's
// own UI.
"use strict";

async function getJson(url) {
  const answer = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) throw new Error(body.detail || `${answer.status} ${answer.statusText}`);
  return body;
}

// A change sent to the REST API (``body`` as JSON, none when undefined). A refusal is an answer,
// not an error: ``{status, ok, body}`` with the API's body (its detail and problems) for the page
// to show; only a lost connection throws.
async function sendJson(method, url, body) {
  const answer = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await answer.json().catch(() => ({}));
  return { status: answer.status, ok: answer.ok, body: json };
}

// A size in bytes as people read it: "512 B", "1.5 MiB".
function byteSize(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = bytes;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${size.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

function element(tag, text, className) {
  const made = document.createElement(tag);
  if (text !== undefined) made.textContent = text;
  if (className) made.className = className;
  return made;
}

// A link into Airflow's UI is <a target="_top">. Inside Airflow the pages are in an iframe that
// Airflow sandboxes without allow-top-navigation, so the browser refuses to follow such a link.
// The iframe is of Airflow's origin (allow-same-origin), so a plain click is handed to Airflow's
// router instead: a new entry in the top window's history (in React Router's format: its index
// one past the current one, so Back returns here) and the popstate event its router listens to.
// Other clicks (middle button, a modifier key for a new tab or window) and a page opened on its
// own, outside Airflow, keep the browser's behaviour: the link is a real link.
document.addEventListener("click", (event) => {
  const link = event.target.closest?.("a[target=_top][href]");
  if (!link || event.defaultPrevented || event.button !== 0 || window.top === window) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  if (link.dataset.inFrame) { // a console page from the console's own view: as before, in here
    event.preventDefault();
    window.location.assign(link.dataset.inFrame);
    return;
  }
  let top;
  try {
    top = window.top;
    if (new URL(link.href).origin !== top.location.origin) return;
  } catch {
    return; // embedded by a page of another origin: the browser decides
  }
  const url = new URL(link.href);
  const state = { usr: null, key: Math.random().toString(36).slice(2, 10), idx: (top.history.state?.idx ?? 0) + 1 };
  top.history.pushState(state, "", url.pathname + url.search + url.hash);
  event.preventDefault();
  top.dispatchEvent(new top.PopStateEvent("popstate", { state }));
});

// Inside Airflow the console's pages are shown by its "Training" view, whose address Airflow
// keeps in step with the page's (/plugin/octotrain-tasks/octotrain/ui/tasks/5 shows
// /octotrain/ui/tasks/5). A link to a console page gets that address, for the top window, so
// that a middle-click, Ctrl-click or "Copy link" opens the page inside Airflow, not a bare
// page. A plain click opens the page in this frame when this frame is the console's view
// (Airflow's address follows, and Back returns, as for any page of the frame), else goes to
// Airflow's router as any link into Airflow does (above). Links added later (tables drawn from
// the API) are given the address too. Outside Airflow nothing changes.
(function consoleLinksInsideAirflow() {
  const script = document.currentScript;
  if (!script || window.top === window) return;
  const root = script.dataset.root;
  const consoleView = script.dataset.console;
  try {
    if (new URL(consoleView, window.location.href).origin !== window.top.location.origin) return;
  } catch {
    return; // embedded by a page of another origin
  }
  const pages = `${root}/ui/`;
  const inConsoleView = window.top.location.pathname.startsWith(new URL(consoleView, window.location.href).pathname);
  function throughAirflow(link) {
    if (link.target || link.hasAttribute("download") || link.getAttribute("href").startsWith("#")) return;
    const url = new URL(link.href, window.location.href);
    if (url.origin !== window.location.origin || !url.pathname.startsWith(pages)) return;
    if (url.pathname.startsWith(`${pages}static/`)) return;
    link.href = `${consoleView}${url.pathname}${url.search}${url.hash}`;
    link.target = "_top";
    if (inConsoleView) link.dataset.inFrame = `${url.pathname}${url.search}${url.hash}`;
  }
  function rewrite(node) {
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    if (node.matches("a[href]")) throughAirflow(node);
    for (const link of node.querySelectorAll("a[href]")) throughAirflow(link);
  }
  const start = () => {
    rewrite(document.body);
    new MutationObserver((changes) => {
      for (const change of changes) {
        if (change.type === "attributes") rewrite(change.target);
        else for (const node of change.addedNodes) rewrite(node);
      }
    }).observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ["href"] });
  };
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();

// Airflow's look inside Airflow's iframe. The iframe is of Airflow's origin, so the page reads
// the top window: its colour mode (Chakra UI's class "dark" or "light" on <html>) and the values
// of Chakra's semantic colour tokens, which pages.css uses through its own variables (--bg, --fg,
// …; its fallbacks serve a page opened on its own). A change of Airflow's theme is followed at
// once; pages that draw (the charts) listen to the "octotrain:theme" event.
const AIRFLOW_TOKENS = {
  "--bg": "--chakra-colors-bg",
  "--bg-subtle": "--chakra-colors-bg-subtle",
  "--bg-muted": "--chakra-colors-bg-muted",
  "--bg-panel": "--chakra-colors-bg-panel",
  "--fg": "--chakra-colors-fg",
  "--fg-muted": "--chakra-colors-fg-muted",
  "--border": "--chakra-colors-border",
  "--border-emphasized": "--chakra-colors-border-emphasized",
  "--font-body": "--chakra-fonts-body",
  "--accent": "--chakra-colors-fg-info",
  "--primary": "--chakra-colors-blue-solid",
  "--primary-fg": "--chakra-colors-blue-contrast",
  "--danger": "--chakra-colors-red-solid",
  "--danger-fg": "--chakra-colors-red-contrast",
  "--state-success-solid": "--chakra-colors-success-solid",
  "--state-failed-solid": "--chakra-colors-failed-solid",
  "--state-running-solid": "--chakra-colors-running-solid",
  "--state-queued-solid": "--chakra-colors-queued-solid",
};

function airflowDocument() {
  try {
    return window.top !== window ? window.top.document : null;
  } catch {
    return null; // embedded by a page of another origin
  }
}

function colorMode() {
  const html = airflowDocument()?.documentElement;
  if (html?.classList.contains("dark")) return "dark";
  if (html?.classList.contains("light")) return "light";
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function followAirflowTheme() {
  const mode = colorMode();
  const root = document.documentElement;
  const changed = root.dataset.theme !== mode;
  root.dataset.theme = mode;
  root.style.colorScheme = mode;
  const host = airflowDocument();
  if (host) {
    const tokens = getComputedStyle(host.documentElement);
    for (const [own, chakra] of Object.entries(AIRFLOW_TOKENS)) {
      const value = tokens.getPropertyValue(chakra).trim();
      if (value) root.style.setProperty(own, value);
      else root.style.removeProperty(own);
    }
  }
  if (changed) document.dispatchEvent(new CustomEvent("octotrain:theme", { detail: { mode } }));
}

followAirflowTheme();
if (airflowDocument()) {
  new MutationObserver(followAirflowTheme).observe(airflowDocument().documentElement, {
    attributes: true,
    attributeFilter: ["class", "style"],
  });
} else {
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", followAirflowTheme);
}

// Dates as Airflow's UI writes them: "YYYY-MM-DD HH:mm:ss" in the timezone the user chose in
// Airflow's user menu (kept in localStorage "timezone", of Airflow's origin and so of this page),
// else the browser's own, as Airflow does. Server-rendered dates are <time datetime="ISO">;
// they are rewritten on load and again when the user changes the timezone in Airflow.
function airflowTimezone() {
  let stored = null;
  try {
    stored = localStorage.getItem("timezone");
  } catch {
    stored = null;
  }
  if (stored) {
    let zone = stored;
    try {
      zone = JSON.parse(stored);
    } catch {
      zone = stored;
    }
    try {
      new Intl.DateTimeFormat("en", { timeZone: zone });
      return zone;
    } catch {
      // an unknown zone: the browser's, as below
    }
  }
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

function formatDateTime(value, { seconds = true } = {}) {
  if (value === null || value === undefined || value === "") return "";
  const when = value instanceof Date ? value : new Date(utcUnlessZoned(value));
  if (Number.isNaN(when.getTime())) return String(value);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone: airflowTimezone(),
      year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
    }).formatToParts(when).map((part) => [part.type, part.value]),
  );
  const time = `${parts.hour}:${parts.minute}${seconds ? `:${parts.second}` : ""}`;
  return `${parts.year}-${parts.month}-${parts.day} ${time}`;
}

// The API's times are UTC; one written without a zone must not be read as the browser's.
function utcUnlessZoned(value) {
  return typeof value === "string" && /T[\d:.]+$/.test(value) ? `${value}Z` : value;
}

// A table cell holding ``child``.
function cell(child) {
  const made = element("td");
  made.append(child);
  return made;
}

// A <time datetime> element showing ``value`` in Airflow's format; its title names the timezone.
function timeElement(value, className) {
  const made = element("time", formatDateTime(value), className);
  made.dateTime = new Date(utcUnlessZoned(value)).toISOString();
  made.title = airflowTimezone();
  return made;
}

function localizeDates(root = document) {
  for (const time of root.querySelectorAll("time[datetime]")) {
    time.textContent = formatDateTime(time.dateTime);
    time.title = airflowTimezone();
  }
}

document.addEventListener("DOMContentLoaded", () => localizeDates());
if (document.readyState !== "loading") localizeDates();
window.addEventListener("storage", (event) => {
  if (event.key === "timezone" || event.key === null) localizeDates();
});

// A run as a person names it everywhere in the console: "#23" (its catalog id) with when and
// how it started ("#23 · 2026-05-04 10:00:00, manual by ann").
function runName(run) {
  const how = run.triggered_by ? `${run.trigger} by ${run.triggered_by}` : run.trigger;
  return `#${run.id} · ${formatDateTime(run.started_at)}, ${how}`;
}

// Ask before an action that cannot be taken back (stop a run, resume one): a modal dialog of
// the page, since Airflow's iframe sandbox blocks the browser's own modals. ``act`` runs on
// the confirming button and answers the API's answer ({ok, status, body}); a refusal is shown
// inside the dialog, which stays open; success closes it. Escape and Cancel close it.
function confirmFirst({ title, text, confirm, danger = false }, act) {
  const shown = element("dialog", undefined, "confirm-dialog");
  const form = element("form");
  form.method = "dialog";
  const problems = element("div", undefined, "notice problem");
  problems.setAttribute("role", "alert");
  problems.hidden = true;
  const cancel = element("button", "Cancel", "cancel");
  cancel.type = "button";
  const go = element("button", confirm, danger ? "danger" : "primary");
  go.type = "submit";
  const buttons = element("div", undefined, "dialog-buttons");
  buttons.append(cancel, go);
  form.append(element("h2", title), element("p", text), problems, buttons);
  shown.append(form);
  document.body.append(shown);
  shown.addEventListener("close", () => shown.remove());
  cancel.addEventListener("click", () => shown.close());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    go.disabled = cancel.disabled = true;
    const answer = await act().catch((error) => ({ ok: false, body: { detail: error.message } }));
    go.disabled = cancel.disabled = false;
    if (answer.ok) {
      shown.close();
      return;
    }
    problems.textContent = answer.body.detail || `refused (${answer.status})`;
    problems.hidden = false;
  });
  shown.showModal();
  go.focus();
}

// A note of Airflow's (Markdown there) shown as Airflow renders its common parts: paragraphs,
// **strong**, *emphasis* and `code`; anything else stays as written. Built as elements, never
// as HTML, so a note cannot inject markup.
function markdownNote(text) {
  const note = element("div", undefined, "note-text");
  for (const paragraph of text.split(/\n\s*\n/)) {
    const shown = element("p");
    for (const part of paragraph.split(/(\*\*[^*]+\*\*|`[^`]+`|\*[^*\s][^*]*\*)/)) {
      if (!part) continue;
      if (part.startsWith("**") && part.endsWith("**") && part.length > 4) {
        shown.append(element("strong", part.slice(2, -2)));
      } else if (part.startsWith("`") && part.endsWith("`") && part.length > 2) {
        shown.append(element("code", part.slice(1, -1)));
      } else if (part.startsWith("*") && part.endsWith("*") && part.length > 2) {
        shown.append(element("em", part.slice(1, -1)));
      } else {
        shown.append(part);
      }
    }
    note.append(shown);
  }
  return note;
}

// What a change said once it was made, shown on the page it led to ("Training task t1
// created."): kept for the next page of this tab only (sessionStorage), shown under that
// page's header and then forgotten, so that Back or a reload does not say it again.
const SAID_KEY = "octotrain:said";
function sayOnNextPage(text) {
  try {
    sessionStorage.setItem(SAID_KEY, text);
  } catch {
    // storage refused (a private window's quota): the next page says nothing
  }
}

(function showWhatWasSaid() {
  let text = null;
  try {
    text = sessionStorage.getItem(SAID_KEY);
    sessionStorage.removeItem(SAID_KEY);
  } catch {
    return;
  }
  const header = document.querySelector("main > header");
  if (!text || !header) return;
  const said = element("p", text, "notice");
  said.id = "page-said";
  said.setAttribute("role", "status");
  header.after(said);
})();
