// The catalog pages (algorithms, datasets, caches, model repositories): sending to the REST API,
// its problems shown next to the fields that caused them, and the pages' dialogs: create a
// dataset, a cache or a model repository, upload a dataset version with its progress, publish
// a version, refresh a cache, delete any of them or an algorithm. Dialogs are <dialog>s of the
// page (Airflow's iframe sandbox blocks prompt and confirm); a refusal keeps the dialog open with
// each problem at its field, or its reason (what still uses the object).
"use strict";

// Each of the API's problems at the [data-error-for] element of its field, or of the nearest
// field above it ("parameters.2.min" → "parameters.2" → "parameters"), in words: the rule, after
// the name of the part of the field when it is shown at a field above it. What has no place
// goes to ``summary`` with the answer's detail. Returns the first element marked.
function showProblems(form, summary, answer) {
  clearProblems(form, summary);
  const problems = answer.body.problems || [];
  const unplaced = [];
  let first = null;
  for (const problem of problems) {
    const parts = problem.field.split(".");
    let place = null;
    for (let length = parts.length; length > 0 && !place; length -= 1) {
      const at = parts.slice(0, length).join(".");
      place = form.querySelector(`[data-error-for="${CSS.escape(at)}"]`);
      // Below a place of files (data-paths) the rest is a file's path, shown as it is.
      const rest = place?.dataset.paths !== undefined ? problem.field.slice(at.length + 1) : partInWords(parts.slice(length));
      if (place && length < parts.length) problem.shown = `${rest}: ${problem.rule}`;
    }
    if (!place) {
      unplaced.push(`${partInWords(problem.field.split("."))}: ${problem.rule}`);
      continue;
    }
    place.append(element("span", problem.shown || problem.rule));
    // The input the place is for: its own name, or the one it names (data-field).
    const field = form.elements.namedItem(place.dataset.field || place.dataset.errorFor);
    if (field instanceof Element) field.setAttribute("aria-invalid", "true");
    first = first || place;
  }
  if (!problems.length) unplaced.push(answer.body.detail || `refused (${answer.status})`);
  const lines = [];
  if (first) lines.push(`Not saved: ${problems.length - unplaced.length === 1 ? "a problem is" : "problems are"} shown at ${problems.length - unplaced.length === 1 ? "its field" : "their fields"}.`);
  lines.push(...unplaced);
  summary.replaceChildren(...lines.map((line) => element("div", line)));
  summary.hidden = false;
  return first;
}

// The part of a field below the one it is shown at: "0" → "line 1", "max_length" → "max length".
function partInWords(parts) {
  return parts.map((part) => (/^\d+$/.test(part) ? `line ${Number(part) + 1}` : part.replaceAll("_", " "))).join(", ");
}

function clearProblems(form, summary) {
  for (const place of form.querySelectorAll("[data-error-for]")) place.textContent = "";
  for (const marked of form.querySelectorAll("[aria-invalid]")) marked.removeAttribute("aria-invalid");
  summary.hidden = true;
}

// The dialog ``dialog`` opened by each button with data-dialog="<its id>": the button's data-*
// values fill the dialog's [data-fill] elements (names shown in its heading) and are given to
// ``act(form, data)``, which sends and answers the API's answer; on success the page reloads, or
// goes to the button's data-then (a page whose object is gone).
// What a dialog's change says once made: "Deleted algorithm a1.", "Done: Publish." …
function doneSaying(dialog, data) {
  if (dialog.id === "delete-dialog") return `Deleted ${data.label || "it"}.`;
  const title = dialog.querySelector("h2")?.textContent.trim().replace(/[?:]$/, "");
  return title ? `Done: ${title}.` : "Done.";
}

function formDialog(dialog, act) {
  const form = dialog.querySelector("form");
  const summary = dialog.querySelector(".dialog-problems");
  const buttons = form.querySelectorAll("button");
  let data = {};
  for (const opener of document.querySelectorAll(`[data-dialog="${dialog.id}"]`)) {
    opener.addEventListener("click", () => {
      data = { ...opener.dataset };
      form.reset();
      clearProblems(form, summary);
      for (const filled of dialog.querySelectorAll("[data-fill]")) filled.textContent = data[filled.dataset.fill] || "";
      dialog.dispatchEvent(new CustomEvent("octotrain:open", { detail: data }));
      dialog.showModal();
    });
  }
  form.querySelector(".cancel").addEventListener("click", () => dialog.close());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearProblems(form, summary);
    for (const button of buttons) button.disabled = true;
    const answer = await act(form, data).catch((error) => ({ ok: false, status: 0, body: { detail: error.message } }));
    for (const button of buttons) button.disabled = false;
    if (answer.ok) {
      sayOnNextPage(doneSaying(dialog, data));
      if (data.then) window.location.assign(data.then);
      else window.location.reload();
      return;
    }
    const first = showProblems(form, summary, answer);
    (first?.previousElementSibling?.querySelector("input, select, textarea") || form.querySelector("[autofocus]"))?.focus();
  });
}

// The form's named fields as a JSON document: number inputs as numbers (an empty one left out,
// so the API's default applies), the rest as text.
function documentOf(form) {
  const document_ = {};
  for (const field of form.querySelectorAll("[name]")) {
    if (field.type === "file" || field.dataset.notSent !== undefined) continue;
    const value = field.value.trim();
    if (field.type === "number") {
      if (value !== "") document_[field.name] = Number(value);
    } else {
      document_[field.name] = value;
    }
  }
  return document_;
}

// A multipart upload with its progress: XMLHttpRequest, because fetch reports no upload
// progress. ``onProgress(sentBytes, totalBytes)``; answers as ``sendJson`` does.
function uploadWithProgress(url, formData, onProgress) {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open("POST", url);
    request.withCredentials = true;
    request.setRequestHeader("Accept", "application/json");
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    request.addEventListener("load", () => {
      let body = {};
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = { detail: `${request.status} ${request.statusText}` };
      }
      resolve({ status: request.status, ok: request.status >= 200 && request.status < 300, body });
    });
    request.addEventListener("error", () => resolve({ status: 0, ok: false, body: { detail: "the upload failed: the connection to Airflow was lost" } }));
    request.send(formData);
  });
}

for (const size of document.querySelectorAll("[data-bytes]")) size.textContent = byteSize(Number(size.dataset.bytes));

(function () {
  const page = document.querySelector(".catalog-page");
  if (!page || !page.dataset.api) return;
  const api = page.dataset.api;
  const project = (data) => `${api}/projects/${encodeURIComponent(data.project)}`;

  // Delete: the button names its route; a refusal (still used) stays in the dialog, saying by what.
  const deleteDialog = document.getElementById("delete-dialog");
  if (deleteDialog) formDialog(deleteDialog, (_form, data) => sendJson("DELETE", data.url));

  const datasetDialog = document.getElementById("dataset-dialog");
  if (datasetDialog) formDialog(datasetDialog, (form, data) => sendJson("POST", `${project(data)}/datasets`, documentOf(form)));

  const repositoryDialog = document.getElementById("repository-dialog");
  if (repositoryDialog) formDialog(repositoryDialog, (form, data) => sendJson("POST", `${project(data)}/model-repositories`, documentOf(form)));

  const cacheDialog = document.getElementById("cache-dialog");
  if (cacheDialog) {
    // The source is one select of "dataset version" pairs; the API takes them apart.
    formDialog(cacheDialog, (form, data) => {
      const document_ = documentOf(form);
      const [dataset, version] = document_.source ? JSON.parse(document_.source) : ["", ""];
      delete document_.source;
      return sendJson("POST", `${project(data)}/caches`, { ...document_, dataset, version });
    });
    // Only the chosen project's versions are offered.
    cacheDialog.addEventListener("octotrain:open", (event) => {
      for (const option of cacheDialog.querySelectorAll("option[data-project]")) {
        option.hidden = option.disabled = option.dataset.project !== event.detail.project;
      }
      const first = cacheDialog.querySelector(`option[data-project="${CSS.escape(event.detail.project)}"]`);
      cacheDialog.querySelector("select[name=source]").value = first ? first.value : "";
    });
  }

  const publishDialog = document.getElementById("publish-dialog");
  if (publishDialog) {
    formDialog(publishDialog, (_form, data) => sendJson("POST",
      `${project(data)}/datasets/${encodeURIComponent(data.dataset)}/versions/${encodeURIComponent(data.version)}/publish`));
  }

  const refreshDialog = document.getElementById("refresh-dialog");
  if (refreshDialog) {
    formDialog(refreshDialog, (form, data) => sendJson("POST",
      `${project(data)}/caches/${encodeURIComponent(data.cache)}/refresh`, documentOf(form)));
  }

  const uploadDialog = document.getElementById("upload-dialog");
  if (uploadDialog) {
    const progress = uploadDialog.querySelector("progress");
    const progressText = uploadDialog.querySelector(".progress-text");
    const files = uploadDialog.querySelector("input[name=files]");
    const folder = uploadDialog.querySelector("input[name=folder]");
    const chosen = uploadDialog.querySelector(".chosen-files");
    // Files keep their path inside a chosen folder (less the folder itself), so a version's
    // layout is the folder's.
    const picked = () => [
      ...[...files.files].map((file) => [file.name, file]),
      ...[...folder.files].map((file) => [file.webkitRelativePath.split("/").slice(1).join("/") || file.name, file]),
    ];
    const showChosen = () => {
      const all = picked();
      const total = all.reduce((sum, [, file]) => sum + file.size, 0);
      chosen.textContent = all.length ? `${all.length} file${all.length === 1 ? "" : "s"}, ${byteSize(total)}` : "No file chosen yet.";
    };
    files.addEventListener("change", showChosen);
    folder.addEventListener("change", showChosen);
    uploadDialog.addEventListener("octotrain:open", () => {
      progress.hidden = progressText.hidden = true;
      showChosen();
    });
    formDialog(uploadDialog, async (form, data) => {
      const body = new FormData();
      body.append("version", form.elements.namedItem("version").value.trim());
      for (const [path, file] of picked()) body.append("files", file, path);
      progress.hidden = progressText.hidden = false;
      progress.value = 0;
      progressText.textContent = "Uploading…";
      const answer = await uploadWithProgress(`${project(data)}/datasets/${encodeURIComponent(data.dataset)}/versions`, body, (sent, total) => {
        progress.max = total;
        progress.value = sent;
        progressText.textContent = sent < total
          ? `${byteSize(sent)} of ${byteSize(total)} sent`
          : "Sent; the server is storing the files…";
      });
      progressText.textContent = answer.ok ? "Stored." : "Not stored.";
      return answer;
    });
  }
  page.dataset.ready = "true";
})();
