// The "New training task" / "Edit" form: choices from the catalog (embedded by the page), the
// algorithm's parameters and variables pre-filled with their ranges and choices as hints, data
// inputs as a filterable list of checkboxes with each one's status, the name and description
// checked as typed (nothing is cut: a value over its limit is refused with its rule), and the
// API's problems each shown once, next to its field, under a summary that is scrolled into
// view and focused. Text is only ever set as text.
"use strict";

(function () {
  const page = document.getElementById("task-form-page");
  const root = page.dataset.root;
  const taskId = page.dataset.task;
  const choices = JSON.parse(document.getElementById("choices").textContent);
  const saved = JSON.parse(document.getElementById("saved").textContent);
  const form = document.getElementById("task-form");
  const field = (name) => form.elements.namedItem(name);

  function fill(select, options, chosen) {
    select.replaceChildren(...options.map(([value, label]) => {
      const option = element("option", label);
      option.value = value;
      option.selected = chosen.includes(value);
      return option;
    }));
  }
  const checklist = (name) => form.querySelector(`[data-list-for="${name}"]`);
  // A list of checkboxes named ``name``: options are [value, label, status] (status: a badge).
  function fillChecklist(name, options, chosen) {
    const list = checklist(name);
    if (!options.length) {
      list.replaceChildren(element("p", "nothing to choose from in this project", "muted"));
      return;
    }
    list.replaceChildren(...options.map(([value, label, status]) => {
      const box = document.createElement("input");
      box.type = "checkbox";
      box.name = name;
      box.value = value;
      box.checked = chosen.includes(value);
      const shown = element("label", undefined, "check");
      shown.dataset.search = label.toLowerCase();
      shown.append(box, ` ${label} `);
      if (status) shown.append(element("span", status, `badge badge-${status.replace(/\W+/g, "-")}`));
      return shown;
    }));
    countPicked(name);
  }
  const picked = (name) => [...form.querySelectorAll(`input[type=checkbox][name="${name}"]:checked`)]
    .map((box) => box.value);
  function countPicked(name) {
    const count = form.querySelector(`[data-picked-for="${name}"]`);
    if (count) count.textContent = String(picked(name).length);
  }
  const algorithm = () => choices.algorithms.find((item) => item.name === field("algorithm").value);
  const spec = () => choices.resource_specs.find((item) => item.name === field("resource_spec").value);

  // What a parameter accepts, in words, before the user saves.
  function parameterHint(declaration) {
    const parts = [declaration.type];
    const has = (bound) => bound !== undefined && bound !== null;
    if (has(declaration.min) && has(declaration.max)) parts.push(`${declaration.min} to ${declaration.max}`);
    else if (has(declaration.min)) parts.push(`at least ${declaration.min}`);
    else if (has(declaration.max)) parts.push(`at most ${declaration.max}`);
    if (declaration.type === "enum") parts.push(`one of ${declaration.choices.map(String).join(", ")}`);
    if (declaration.max_length) parts.push(`at most ${declaration.max_length} characters`);
    if (declaration.required) parts.push("required");
    if (has(declaration.default)) parts.push(`default ${JSON.stringify(declaration.default)}`);
    return parts.join("; ") + (declaration.description ? `. ${declaration.description}` : "");
  }

  function parameterInput(declaration, value) {
    const name = `parameters.${declaration.name}`;
    const id = `parameter-${declaration.name}`;
    let input;
    if (declaration.type === "enum") {
      input = document.createElement("select");
      fill(input, declaration.choices.map((choice) => [JSON.stringify(choice), String(choice)]),
           [JSON.stringify(value)]);
    } else if (declaration.type === "bool") {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = value === true;
    } else {
      input = document.createElement("input");
      input.type = declaration.type === "string" ? "text" : "number";
      if (declaration.type === "float") input.step = "any";
      if (declaration.min !== undefined && declaration.min !== null) input.min = declaration.min;
      if (declaration.max !== undefined && declaration.max !== null) input.max = declaration.max;
      input.value = value === undefined || value === null ? "" : String(value);
    }
    input.name = name;
    input.id = id;
    input.dataset.kind = declaration.type;
    const hint = element("p", parameterHint(declaration), "hint");
    hint.id = `${id}-hint`;
    input.setAttribute("aria-describedby", hint.id);
    const label = element("label", declaration.type === "bool" ? ` ${declaration.name}` : declaration.name,
                          declaration.type === "bool" ? "check" : undefined);
    label.htmlFor = id;
    const field = element("div", undefined, "parameter");
    if (declaration.type === "bool") {
      label.prepend(input);
      field.append(label, hint, errorFor(name));
    } else {
      field.append(label, input, hint, errorFor(name));
    }
    return [field];
  }
  const errorFor = (name) => {
    const shown = element("p", "", "field-error");
    shown.dataset.errorFor = name;
    return shown;
  };

  // The chosen algorithm's code versions, the task's own (or else the newest) selected; hidden
  // for an algorithm without uploaded code.
  function showCodeVersions(kept) {
    const versions = algorithm()?.code_versions || [];
    const newest = versions[versions.length - 1];
    fill(field("code_version"), [...versions].reverse().map((version) =>
      [String(version), version === newest ? `v${version} (newest)` : `v${version}`]),
      [String(versions.includes(kept) ? kept : newest)]);
    document.getElementById("code-version-field").hidden = !versions.length;
  }

  function showAlgorithm(values, env) {
    const chosen = algorithm();
    document.getElementById("algorithm-description").textContent = chosen ? chosen.description : "";
    const parameters = document.getElementById("parameters");
    const variables = document.getElementById("env");
    parameters.replaceChildren();
    variables.replaceChildren();
    if (!chosen) return;
    if (chosen.parameters.length) parameters.append(element("h3", "Parameters"));
    for (const declaration of chosen.parameters) {
      const value = declaration.name in values ? values[declaration.name] : declaration.default;
      parameters.append(...parameterInput(declaration, value));
    }
    if (Object.keys(chosen.env).length) variables.append(element("h3", "Environment variables"));
    for (const [name, value] of Object.entries(chosen.env)) {
      const input = document.createElement("input");
      input.name = `env.${name}`;
      input.id = `env-${name}`;
      input.value = name in env ? env[name] : value;
      input.autocomplete = "off";
      const label = element("label", name);
      label.htmlFor = input.id;
      const shown = element("div", undefined, "parameter");
      shown.append(label, input, errorFor(`env.${name}`));
      variables.append(shown);
    }
    showData(picked("data_inputs"), picked("mounts"), picked("retrain_on"));
  }

  function showData(inputs, mounts, retrainOn) {
    const chosen = algorithm();
    const fitting = choices.datasets.filter((item) => !chosen || item.sample_type === chosen.sample_type);
    const versions = fitting.flatMap((item) => item.versions.map((version) =>
      [`dataset:${item.name}:${version}`, `${item.name} ${version}`, (item.version_statuses || {})[version]]));
    const caches = choices.caches.map((item) => [`cache:${item.name}`, `cache ${item.name}`, item.status]);
    fillChecklist("data_inputs", [...versions, ...caches], inputs);
    fillChecklist("mounts", versions, mounts);
    fillChecklist("retrain_on", fitting.filter((item) => item.published).map((item) => [item.name, item.name]),
                  retrainOn);
    filterChecklist("data_inputs");
  }

  function filterChecklist(name) {
    const filter = form.querySelector(`[data-filter-for="${name}"]`);
    const wanted = filter.value.trim().toLowerCase();
    for (const shown of checklist(name).querySelectorAll("label")) {
      shown.hidden = wanted !== "" && !shown.dataset.search.includes(wanted) && !shown.querySelector(":checked");
    }
  }

  // The name and description as typed: their length against the limit, and a rule broken
  // shown at once (the API judges again on save, with the same rules).
  const NAME = /^[A-Za-z0-9_\-\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]*$/;
  const NAME_RULE = "must be 1-64 characters of Chinese or English letters, digits, '_' and '-'";
  const DESCRIPTION_FORBIDDEN = "@^\\#$%&*<>'|\"/";
  function checkAsTyped(name) {
    const value = field(name).value;
    const count = form.querySelector(`[data-count-for="${name}"]`);
    const max = Number(count.dataset.max);
    const length = [...value].length;
    count.textContent = `${length}/${max}`;
    count.classList.toggle("over", length > max);
    let rule = "";
    if (length > max) rule = `is ${length} characters, ${length - max} over the limit of ${max}`;
    else if (name === "name" && !NAME.test(value)) rule = NAME_RULE;
    else if (name === "description") {
      const bad = [...new Set([...value].filter((character) => DESCRIPTION_FORBIDDEN.includes(character)))];
      if (bad.length) rule = `must not contain ${bad.join(" ")}`;
    }
    form.querySelector(`[data-error-for="${name}"]`).textContent = rule;
    field(name).setAttribute("aria-invalid", rule ? "true" : "false");
  }

  function showNodeHint() {
    const chosen = spec();
    const most = chosen ? Math.min(chosen.max_nodes, choices.max_nodes) : choices.max_nodes;
    document.getElementById("node-count-hint").textContent =
      `1 to ${most}${chosen ? ` on ${chosen.name}` : ""}: the nodes train together, one process each.`;
    field("node_count").max = most;
  }

  function showKind() {
    const incremental = form.querySelector("input[name=training_kind]:checked").value === "incremental";
    document.getElementById("input-models-field").hidden = !incremental;
    const modelArts = spec() && spec().kind === "modelarts";
    document.getElementById("mounts-field").hidden = !modelArts;
    showNodeHint();
  }

  const asRef = (value) => {
    const [kind, name, version] = value.split(":");
    return kind === "cache" ? { cache: name } : { dataset: name, version };
  };
  const refValue = (ref) => (ref.cache ? `cache:${ref.cache}` : `dataset:${ref.dataset}:${ref.version}`);

  function numberOrText(input) {
    if (input.value.trim() === "") return undefined;
    return input.type === "number" ? Number(input.value) : input.value;
  }

  function documentOfForm() {
    const document_ = {
      project: choices.project,
      name: field("name").value,
      description: field("description").value,
      resource_spec: field("resource_spec").value,
      node_count: numberOrText(field("node_count")),
      priority: numberOrText(field("priority")),
      algorithm: field("algorithm").value,
      // absent without uploaded code; null never sent (the API then takes the newest)
      ...(field("code_version").value ? { code_version: Number(field("code_version").value) } : {}),
      run_as_uid: numberOrText(field("run_as_uid")),
      training_kind: form.querySelector("input[name=training_kind]:checked").value,
      model_repository: field("model_repository").value,
      data_inputs: picked("data_inputs").map(asRef),
      mounts: spec() && spec().kind === "modelarts" ? picked("mounts").map(asRef) : [],
      retrain_on: picked("retrain_on"),
      parameters: {},
      env: {},
    };
    if (document_.training_kind === "incremental") {
      document_.input_models = picked("input_models").map((value) => {
        const cut = value.lastIndexOf(":");
        return { repository: value.slice(0, cut), version: Number(value.slice(cut + 1)) };
      });
    } else {
      document_.input_models = [];
    }
    const schedule = field("schedule").value.trim();
    document_.schedule = schedule === "" ? null : schedule;
    // Limits and restarts: an empty field is none (the task's default), sent as null so that
    // saving an edited task clears it.
    for (const name of ["max_wait_seconds", "max_training_seconds", "max_node_restarts"]) {
      document_[name] = numberOrText(field(name)) ?? null;
    }
    const hangAfter = numberOrText(field("hang_after_seconds"));
    document_.hang_detection = hangAfter === undefined
      ? null
      : { after_seconds: hangAfter, stop_when_hung: field("stop_when_hung").checked };
    for (const input of form.querySelectorAll("[name^='parameters.']")) {
      const name = input.name.slice("parameters.".length);
      if (input.dataset.kind === "bool") document_.parameters[name] = input.checked;
      else if (input.dataset.kind === "enum") document_.parameters[name] = JSON.parse(input.value);
      else {
        const value = numberOrText(input);
        if (value !== undefined) document_.parameters[name] = value;
      }
    }
    for (const input of form.querySelectorAll("[name^='env.']")) {
      document_.env[input.name.slice("env.".length)] = input.value;
    }
    for (const key of Object.keys(document_)) if (document_[key] === undefined) delete document_[key];
    return document_;
  }

  // A field of the API's answer in words: "Nodes", "Parameter epochs", "Data inputs, item 2".
  const LABELS = {
    project: "Project", name: "Name", description: "Description", resource_spec: "Resource spec",
    node_count: "Nodes", priority: "Priority", algorithm: "Algorithm", run_as_uid: "Run as user id",
    training_kind: "Training kind", input_models: "Input model versions",
    model_repository: "Output model repository", data_inputs: "Data inputs", mounts: "Resource mounts",
    schedule: "Cron schedule", retrain_on: "Retrain on", parameters: "Parameters", env: "Environment variables",
    max_wait_seconds: "Longest wait for resources", max_training_seconds: "Longest training",
    max_node_restarts: "Restarts after a lost node", hang_detection: "Hung when silent for",
  };
  function labelOf(key) {
    const [head, ...rest] = key.split(".");
    if (head === "parameters" && rest.length) return `Parameter ${rest.join(".")}`;
    if (head === "env" && rest.length) return `Variable ${rest.join(".")}`;
    const label = LABELS[head] || head.replaceAll("_", " ");
    const item = rest.find((part) => /^\d+$/.test(part));
    return item === undefined ? label : `${label}, item ${Number(item) + 1}`;
  }

  // Where a problem of ``key`` is shown: its own field's error line, else its nearest parent's.
  function placeOf(key) {
    let place = key;
    while (place) {
      const target = form.querySelector(`[data-error-for="${CSS.escape(place)}"]`);
      if (target && !target.closest("[hidden]")) return target;
      place = place.includes(".") ? place.slice(0, place.lastIndexOf(".")) : "";
    }
    return null;
  }

  // Each problem once: its rule next to its field (with the field's label when it is shown at a
  // parent's place), and in the summary a link to it; a problem with no field on the form is
  // written out in the summary itself. The summary is scrolled into view and focused.
  function showProblems(unordered, detail) {
    for (const shown of form.querySelectorAll(".field-error")) shown.replaceChildren();
    for (const marked of form.querySelectorAll("[aria-invalid]")) marked.removeAttribute("aria-invalid");
    // In the form's order, as a reader meets the fields; a problem with no field last.
    const places = [...form.querySelectorAll("[data-error-for]")];
    const order = (problem) => {
      const at = places.indexOf(placeOf(problem.field));
      return at < 0 ? places.length : at;
    };
    const problems = [...unordered].sort((a, b) => order(a) - order(b));
    const summary = document.getElementById("form-problems");
    const count = problems.length;
    summary.replaceChildren(element("strong", count
      ? `The task was not saved: ${count} problem${count > 1 ? "s" : ""}, shown next to ${count > 1 ? "their fields" : "its field"}.`
      : `The task was not saved: ${detail}`));
    const list = element("ul");
    for (const problem of problems) {
      const target = placeOf(problem.field);
      const label = labelOf(problem.field);
      const item = element("li");
      if (target) {
        const line = element("span", target.dataset.errorFor === problem.field ? problem.rule : `${label}: ${problem.rule}`);
        target.append(...(target.childNodes.length ? [element("br")] : []), line);
        const field = form.elements.namedItem(target.dataset.errorFor);
        if (field instanceof Element) field.setAttribute("aria-invalid", "true");
        const link = element("a", label);
        link.href = `#${target.previousElementSibling?.id || ""}`;
        link.addEventListener("click", (event) => {
          event.preventDefault();
          target.scrollIntoView({ block: "center" });
          const input = target.closest(".parameter, fieldset, div")?.querySelector("input, select");
          input?.focus({ preventScroll: true });
        });
        item.append(link);
      } else {
        item.textContent = `${label}: ${problem.rule}`;
      }
      list.append(item);
    }
    if (count) summary.append(list);
    summary.hidden = false;
    summary.scrollIntoView({ block: "start" });
    summary.focus({ preventScroll: true });
  }

  async function submit(event) {
    event.preventDefault();
    const button = document.getElementById("create");
    button.disabled = true;
    try {
      const answer = await sendJson(taskId ? "PATCH" : "POST",
        taskId ? `${root}/api/v1/tasks/${taskId}` : `${root}/api/v1/tasks`, documentOfForm());
      const body = answer.body;
      if (answer.ok) {
        sayOnNextPage(`Training task ${body.name} ${taskId ? "saved" : "created"}.`);
        window.location.assign(`${root}/ui/tasks/${body.id}`);
        return;
      }
      showProblems(body.problems || [], body.detail || `refused (${answer.status})`);
    } catch (error) {
      showProblems([], String(error));
    } finally {
      button.disabled = false;
    }
  }

  const start = saved || {};
  field("name").value = start.name || "";
  field("description").value = start.description || "";
  fill(field("resource_spec"), choices.resource_specs.map((item) =>
    [item.name, `${item.name} (${item.kind}, ${item.cpu} CPU, ${item.memory_mib} MiB, ${item.gpu_count} GPU, ≤${item.max_nodes} nodes)`]),
    [start.resource_spec]);
  if (start.node_count !== undefined) field("node_count").value = start.node_count;
  if (start.priority !== undefined) field("priority").value = start.priority;
  if (start.run_as_uid !== undefined) field("run_as_uid").value = start.run_as_uid;
  fill(field("algorithm"), choices.algorithms.map((item) => [item.name, item.name]), [start.algorithm]);
  fill(field("model_repository"), choices.model_repositories.map((item) => [item.name, item.name]),
       [start.model_repository]);
  fillChecklist("input_models", choices.model_repositories.flatMap((item) =>
    item.versions.map((version) => [`${item.name}:${version}`, `${item.name} v${version}`])),
    (start.input_models || []).map((ref) => `${ref.repository}:${ref.version}`));
  for (const radio of form.querySelectorAll("input[name=training_kind]")) {
    radio.checked = radio.value === (start.training_kind || "regular");
  }
  field("schedule").value = start.schedule || "";
  for (const name of ["max_wait_seconds", "max_training_seconds", "max_node_restarts"]) {
    if (start[name] !== undefined && start[name] !== null) field(name).value = start[name];
  }
  if (start.hang_detection) {
    field("hang_after_seconds").value = start.hang_detection.after_seconds;
    field("stop_when_hung").checked = Boolean(start.hang_detection.stop_when_hung);
  }
  showData((start.data_inputs || []).map(refValue), (start.mounts || []).map(refValue), start.retrain_on || []);
  showAlgorithm(start.parameters || {}, start.env || {});
  showCodeVersions(start.algorithm === field("algorithm").value ? start.code_version : undefined);
  showKind();
  field("algorithm").addEventListener("change", () => {
    showAlgorithm({}, {});
    showCodeVersions(undefined);
  });
  field("resource_spec").addEventListener("change", showKind);
  for (const radio of form.querySelectorAll("input[name=training_kind]")) radio.addEventListener("change", showKind);
  for (const name of ["name", "description"]) {
    field(name).addEventListener("input", () => checkAsTyped(name));
    checkAsTyped(name);
    if (field(name).value === "") form.querySelector(`[data-error-for="${name}"]`).textContent = "";
  }
  form.querySelector("[data-filter-for=data_inputs]").addEventListener("input", () => filterChecklist("data_inputs"));
  form.addEventListener("change", (event) => {
    if (event.target.type === "checkbox" && event.target.name) countPicked(event.target.name);
  });
  form.addEventListener("submit", submit);
  form.dataset.ready = "true";
})();
