// What every page of the plugin shares: reading the REST API with the user's Airflow session,
// and making elements whose text is only ever set as text.
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
