// The "New training task" / "Edit" form: choices from the catalog (embedded by the page), the
// algorithm's parameters and variables pre-filled, and the API's problems shown next to their
// fields. Text is only ever set as text.
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
  const picked = (select) => [...select.selectedOptions].map((option) => option.value);
  const algorithm = () => choices.algorithms.find((item) => item.name === field("algorithm").value);
  const spec = () => choices.resource_specs.find((item) => item.name === field("resource_spec").value);

  function parameterInput(declaration, value) {
    const name = `parameters.${declaration.name}`;
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
    input.dataset.kind = declaration.type;
    const label = element("label", `${declaration.name} (${declaration.type}) `);
    label.append(input);
    if (declaration.description) label.append(element("span", ` ${declaration.description}`, "muted"));
    return [label, errorFor(name)];
  }
  const errorFor = (name) => {
    const shown = element("p", "", "field-error");
    shown.dataset.errorFor = name;
    return shown;
  };

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
      input.value = name in env ? env[name] : value;
      const label = element("label", `${name} `);
      label.append(input);
      variables.append(label, errorFor(`env.${name}`));
    }
    showData(picked(field("data_inputs")), picked(field("mounts")), picked(field("retrain_on")));
  }

  function showData(inputs, mounts, retrainOn) {
    const chosen = algorithm();
    const fitting = choices.datasets.filter((item) => !chosen || item.sample_type === chosen.sample_type);
    const versions = fitting.flatMap((item) =>
      item.versions.map((version) => [`dataset:${item.name}:${version}`, `${item.name} ${version}`]));
    const caches = choices.caches.map((item) => [`cache:${item.name}`, `cache ${item.name}`]);
    fill(field("data_inputs"), [...versions, ...caches], inputs);
    fill(field("mounts"), versions, mounts);
    fill(field("retrain_on"), fitting.filter((item) => item.published).map((item) => [item.name, item.name]),
         retrainOn);
  }

  function showKind() {
    const incremental = form.querySelector("input[name=training_kind]:checked").value === "incremental";
    document.getElementById("input-models-field").hidden = !incremental;
    const modelArts = spec() && spec().kind === "modelarts";
    document.getElementById("mounts-field").hidden = !modelArts;
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
      run_as_uid: numberOrText(field("run_as_uid")),
      training_kind: form.querySelector("input[name=training_kind]:checked").value,
      model_repository: field("model_repository").value,
      data_inputs: picked(field("data_inputs")).map(asRef),
      mounts: spec() && spec().kind === "modelarts" ? picked(field("mounts")).map(asRef) : [],
      retrain_on: picked(field("retrain_on")),
      parameters: {},
      env: {},
    };
    if (document_.training_kind === "incremental") {
      document_.input_models = picked(field("input_models")).map((value) => {
        const cut = value.lastIndexOf(":");
        return { repository: value.slice(0, cut), version: Number(value.slice(cut + 1)) };
      });
    } else {
      document_.input_models = [];
    }
    const schedule = field("schedule").value.trim();
    document_.schedule = schedule === "" ? null : schedule;
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

  function showProblems(problems, detail) {
    for (const shown of form.querySelectorAll(".field-error")) shown.textContent = "";
    const summary = document.getElementById("form-problems");
    summary.replaceChildren(element("strong", detail || "The task was not saved:"));
    const list = element("ul");
    for (const problem of problems) {
      list.append(element("li", `${problem.field}: ${problem.rule}`));
      let place = problem.field;
      let target = null;
      while (place && !(target = form.querySelector(`[data-error-for="${CSS.escape(place)}"]`))) {
        place = place.includes(".") ? place.slice(0, place.lastIndexOf(".")) : "";
      }
      if (target) target.textContent = [target.textContent, problem.rule].filter(Boolean).join("; ");
    }
    summary.append(list);
    summary.hidden = false;
  }

  async function submit(event) {
    event.preventDefault();
    const button = document.getElementById("create");
    button.disabled = true;
    try {
      const answer = await fetch(taskId ? `${root}/api/v1/tasks/${taskId}` : `${root}/api/v1/tasks`, {
        method: taskId ? "PATCH" : "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(documentOfForm()),
      });
      const body = await answer.json().catch(() => ({}));
      if (answer.ok) {
        window.location.assign(`${root}/ui/tasks/${body.id}`);
        return;
      }
      showProblems(body.problems || [], body.detail || `${answer.status} ${answer.statusText}`);
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
  fill(field("input_models"), choices.model_repositories.flatMap((item) =>
    item.versions.map((version) => [`${item.name}:${version}`, `${item.name} v${version}`])),
    (start.input_models || []).map((ref) => `${ref.repository}:${ref.version}`));
  for (const radio of form.querySelectorAll("input[name=training_kind]")) {
    radio.checked = radio.value === (start.training_kind || "regular");
  }
  field("schedule").value = start.schedule || "";
  showData((start.data_inputs || []).map(refValue), (start.mounts || []).map(refValue), start.retrain_on || []);
  showAlgorithm(start.parameters || {}, start.env || {});
  showKind();
  field("algorithm").addEventListener("change", () => showAlgorithm({}, {}));
  field("resource_spec").addEventListener("change", showKind);
  for (const radio of form.querySelectorAll("input[name=training_kind]")) radio.addEventListener("change", showKind);
  form.addEventListener("submit", submit);
  form.dataset.ready = "true";
})();
