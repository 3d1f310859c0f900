// What every page of the plugin shares: reading the REST API with the user's Airflow session,
// making elements whose text is only ever set as text, and links into Airflow's own UI.
"use strict";

async function getJson(url) {
  const answer = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  const body = await answer.json().catch(() => ({}));
  if (!answer.ok) throw new Error(body.detail || `${answer.status} ${answer.statusText}`);
  return body;
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
