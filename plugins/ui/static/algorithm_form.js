// The algorithm form: create (POST) or change (PATCH) an algorithm, its parameters and the charts
// extracted from its train log (metric definitions: a chart name and a regex) edited as rows of
// tables. Values are sent as typed by the declaration's type so that the API judges
// them (a default "abc" of an int parameter is sent as text and refused with its rule, not
// dropped); the API's problems are shown at their field or parameter row.
"use strict";

(function () {
  const page = document.getElementById("algorithm-page");
  const root = page.dataset.root;
  const project = page.dataset.project;
  const saved = JSON.parse(document.getElementById("saved").textContent);
  const form = document.getElementById("algorithm-form");
  const summary = document.getElementById("form-problems");
  const rows = document.querySelector("#parameters tbody");
  const metricRows = document.querySelector("#metric-definitions tbody");
  const collection = `${root}/api/v1/projects/${encodeURIComponent(project)}/algorithms`;

  // Text as a number when it is one, else as typed (the API says what the rule is).
  function numberOrText(text) {
    return text !== "" && Number.isFinite(Number(text)) ? Number(text) : text;
  }

  function valueOf(text, type, choices) {
    if (text === "") return undefined;
    if (type === "int" || type === "float") return numberOrText(text);
    if (type === "enum") return choices.find((choice) => String(choice) === text) ?? text;
    return text;
  }

  function shown(value) {
    return value === null || value === undefined ? "" : String(value);
  }

  // Each row of ``body`` has an error line under it, data-error-for="<field>.<index>", where the
  // API's problems with that item are shown ("parameters.2.min" → "min: <rule>").
  function renumber(body, field) {
    [...body.querySelectorAll("tr:not(.row-error)")].forEach((row, index) => {
      row.nextElementSibling.querySelector(".field-error").dataset.errorFor = `${field}.${index}`;
    });
  }

  // A new row of ``body`` from its <template id=templateId>, with its error line and Remove.
  function appendRow(body, templateId, field) {
    const row = document.getElementById(templateId).content.firstElementChild.cloneNode(true);
    const errors = element("tr", undefined, "row-error");
    const errorCell = element("td");
    errorCell.colSpan = row.children.length;
    errorCell.append(element("p", undefined, "field-error"));
    errors.append(errorCell);
    row.querySelector(".remove-row").addEventListener("click", () => {
      errors.remove();
      row.remove();
      renumber(body, field);
    });
    body.append(row, errors);
    renumber(body, field);
    return row;
  }

  function showTypeFields(row) {
    const type = row.querySelector("[name=p-type]").value;
    const numeric = type === "int" || type === "float";
    row.querySelector("[name=p-min]").disabled = !numeric;
    row.querySelector("[name=p-max]").disabled = !numeric;
    row.querySelector("[name=p-choices]").disabled = type !== "enum";
    row.querySelector("[name=p-max_length]").disabled = type !== "string";
    // The default's field follows the type: a switch for a bool, a hint of what it takes else.
    const text = row.querySelector("[name=p-default]");
    text.hidden = type === "bool";
    row.querySelector(".switch").hidden = type !== "bool";
    text.placeholder = TYPE_HINTS[type] || "";
    row.querySelector("[name=p-min]").placeholder = numeric ? TYPE_HINTS[type] : "";
    row.querySelector("[name=p-max]").placeholder = numeric ? TYPE_HINTS[type] : "";
  }

  const TYPE_HINTS = { int: "a whole number", float: "a number", enum: "one of the choices", string: "text" };

  function showSwitch(row) {
    const on = row.querySelector("[name=p-default-switch]");
    on.nextElementSibling.textContent = on.checked ? "on (true)" : "off (false)";
  }

  function addRow(declaration = {}) {
    const row = appendRow(rows, "parameter-row", "parameters");
    const field = (name) => row.querySelector(`[name=p-${name}]`);
    field("name").value = shown(declaration.name);
    field("type").value = declaration.type || "string";
    field("default").value = declaration.type === "bool" ? "" : shown(declaration.default);
    field("default-switch").checked = declaration.default === true;
    field("default-switch").addEventListener("change", () => showSwitch(row));
    showSwitch(row);
    field("min").value = shown(declaration.min);
    field("max").value = shown(declaration.max);
    field("choices").value = (declaration.choices || []).join(", ");
    field("max_length").value = shown(declaration.max_length);
    field("required").checked = Boolean(declaration.required);
    field("description").value = shown(declaration.description);
    field("type").addEventListener("change", () => showTypeFields(row));
    showTypeFields(row);
    return row;
  }

  // A chart's row shows its name, regex and total; what else a saved definition says (x, ys,
  // description, smooth: set through the API) is kept as it was.
  const kept = new WeakMap();

  function addMetricRow(definition = {}) {
    const row = appendRow(metricRows, "metric-row", "metric_definitions");
    const { name = "", regex = "", total, ...rest } = definition;
    row.querySelector("[name=m-name]").value = name;
    row.querySelector("[name=m-regex]").value = regex;
    row.querySelector("[name=m-total]").value = shown(total);
    kept.set(row, rest);
    return row;
  }

  function definitionOf(row) {
    // The regex as typed (spaces may be part of it); the name trimmed as other names are.
    const definition = { ...kept.get(row), name: row.querySelector("[name=m-name]").value.trim(), regex: row.querySelector("[name=m-regex]").value };
    // A number, or the name of a numeric parameter; the API judges which.
    const total = row.querySelector("[name=m-total]").value.trim();
    if (total !== "") definition.total = numberOrText(total);
    return definition;
  }

  function declarationOf(row) {
    const field = (name) => row.querySelector(`[name=p-${name}]`);
    const type = field("type").value;
    const declaration = { name: field("name").value.trim(), type, required: field("required").checked };
    const description = field("description").value.trim();
    if (description) declaration.description = description;
    const choices = type === "enum"
      ? field("choices").value.split(",").map((choice) => choice.trim()).filter((choice) => choice !== "").map(numberOrText)
      : [];
    if (choices.length) declaration.choices = choices;
    for (const bound of type === "int" || type === "float" ? ["min", "max"] : []) {
      const text = field(bound).value.trim();
      if (text !== "") declaration[bound] = numberOrText(text);
    }
    const length = field("max_length").value.trim();
    if (type === "string" && length !== "") declaration.max_length = numberOrText(length);
    const fallback = field("default").value.trim();
    const value = type === "bool" ? field("default-switch").checked : valueOf(fallback, type, choices);
    if (value !== undefined) declaration.default = value;
    return declaration;
  }

  function environmentOf(text) {
    const env = {};
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      const at = line.indexOf("=");
      // A line without "=" is a name with an empty value; the API judges the name.
      env[(at < 0 ? line : line.slice(0, at)).trim()] = at < 0 ? "" : line.slice(at + 1);
    }
    return env;
  }

  function documentOfForm() {
    const value = (name) => form.elements.namedItem(name).value;
    return {
      name: value("name").trim(),
      description: value("description").trim(),
      algorithm_type: value("algorithm_type"),
      sample_type: value("sample_type").trim(),
      image: value("image").trim(),
      command: value("command").split("\n").map((part) => part.trim()).filter((part) => part !== ""),
      env: environmentOf(value("env")),
      parameters: [...rows.querySelectorAll("tr.parameter")].map(declarationOf),
      metric_definitions: [...metricRows.querySelectorAll("tr.metric")].map(definitionOf),
    };
  }

  // The code chosen to upload as FormData (a folder's files by their path inside it, loose
  // files by their names, or one zip as the archive), or null when none is chosen.
  const folderInput = form.elements.namedItem("code-folder");
  const filesInput = form.elements.namedItem("code-files");
  const chosen = document.getElementById("code-chosen");
  const LEFT_OUT = new Set([".git", ".hg", ".svn", "__pycache__"]);

  function codeUpload() {
    const data = new FormData();
    const folder = [...folderInput.files];
    const loose = [...filesInput.files];
    if (folder.length) {
      for (const file of folder) {
        const parts = file.webkitRelativePath.split("/").slice(1); // inside the chosen folder
        if (!parts.some((part) => LEFT_OUT.has(part))) data.append("files", file, parts.join("/"));
      }
    } else if (loose.length === 1 && /\.zip$/i.test(loose[0].name)) {
      data.append("archive", loose[0], loose[0].name);
    } else if (loose.length) {
      for (const file of loose) data.append("files", file, file.name);
    } else {
      return null;
    }
    return data;
  }

  function sayChosen(input, other) {
    other.value = ""; // a folder or files, the one chosen last
    const data = codeUpload();
    if (!data) {
      chosen.textContent = "";
      return;
    }
    const parts = [...data.values()];
    const bytes = parts.reduce((sum, file) => sum + file.size, 0);
    chosen.textContent = data.has("archive")
      ? `To upload when you save: the zip ${parts[0].name} (${byteSize(bytes)}).`
      : `To upload when you save: ${parts.length} file${parts.length === 1 ? "" : "s"} (${byteSize(bytes)}).`;
  }
  folderInput.addEventListener("change", () => sayChosen(folderInput, filesInput));
  filesInput.addEventListener("change", () => sayChosen(filesInput, folderInput));

  function uploadCode(name, data) {
    return uploadWithProgress(`${collection}/${encodeURIComponent(name)}/code`, data, (sent, total) => {
      chosen.textContent = `Uploading the code: ${Math.round((100 * sent) / total)}%`;
    });
  }

  const lost = (error) => ({ ok: false, status: 0, body: { detail: error.message } });

  // A new algorithm is created, then its code uploaded; a refused upload deletes the algorithm
  // again, so that nothing is half-made. A change uploads the code first (a refusal changes
  // nothing), then saves the rest.
  async function createOrSave(document_, code) {
    if (!saved) {
      const created = await sendJson("POST", collection, document_).catch(lost);
      if (!created.ok || !code) return { answer: created };
      const uploaded = await uploadCode(created.body.name, code);
      if (!uploaded.ok) await sendJson("DELETE", `${collection}/${encodeURIComponent(created.body.name)}`).catch(lost);
      return { answer: uploaded.ok ? created : uploaded, version: uploaded.body.version };
    }
    let version;
    if (code) {
      const uploaded = await uploadCode(saved.name, code);
      if (!uploaded.ok) return { answer: uploaded };
      version = uploaded.body.version;
    }
    const changed = await sendJson("PATCH", `${collection}/${encodeURIComponent(saved.name)}`, document_).catch(lost);
    return { answer: changed, version };
  }

  async function save(event) {
    event.preventDefault();
    const button = document.getElementById("save");
    clearProblems(form, summary);
    button.disabled = true;
    const { answer, version } = await createOrSave(documentOfForm(), codeUpload());
    button.disabled = false;
    if (answer.ok) {
      const code = version ? `, with its code v${version}` : "";
      sayOnNextPage(`Algorithm ${answer.body.name} ${saved ? "saved" : "created"}${code}.`);
      window.location.assign(`${root}/ui/algorithms`);
      return;
    }
    if (version) {
      answer.body.detail = `The code was uploaded as v${version}; the other changes were not saved: ${answer.body.detail}`;
    }
    chosen.textContent = "";
    const first = showProblems(form, summary, answer);
    const field = first && form.elements.namedItem(first.dataset.errorFor);
    const target = first?.closest("tr.row-error")?.previousElementSibling
      || (field instanceof Element ? field.closest("label") : null) || first || summary;
    target.scrollIntoView({ block: "center" });
    // In a row, the input of the part the problem names ("metric_definitions.0.regex": the
    // row's regex), else its first.
    const place = first?.dataset.errorFor;
    const part = place && (answer.body.problems || []).map((problem) => problem.field)
      .find((name) => name.startsWith(`${place}.`))?.slice(place.length + 1).split(".")[0];
    const named = part && target.querySelector?.(`[name$="-${CSS.escape(part)}"]`);
    (named || target.querySelector?.("input, select, textarea"))?.focus({ preventScroll: true });
  }

  if (saved) {
    for (const name of ["name", "description", "algorithm_type", "sample_type", "image"]) form.elements.namedItem(name).value = saved[name];
    form.elements.namedItem("command").value = saved.command.join("\n");
    form.elements.namedItem("env").value = Object.entries(saved.env).map(([name, value]) => `${name}=${value}`).join("\n");
    for (const declaration of saved.parameters) addRow(declaration);
    for (const definition of saved.metric_definitions || []) addMetricRow(definition);
  }
  document.getElementById("add-parameter").addEventListener("click", () => addRow().querySelector("[name=p-name]").focus());
  document.getElementById("add-metric").addEventListener("click", () => addMetricRow().querySelector("[name=m-name]").focus());
  form.addEventListener("submit", save);
  page.dataset.ready = "true";
})();
