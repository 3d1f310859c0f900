// A task's sweep form (/ui/tasks/<id>/sweeps/new): a row per parameter of the task's algorithm
// (the task's value for every trial, a fixed other value, a range or choices; a number's range
// pre-filled around the task's value within the declared bounds), the objective (the charts the
// task's runs write as suggestions), the search, the budget, trials at once and early stopping.
// "Create and start" posts the sweep document with start=true; a refusal shows each problem once,
// next to its field, under a summary that is scrolled into view and focused (as the task form
// does); a sweep made opens its page. Text is only ever set as text.
"use strict";

(function () {
  const page = document.getElementById("sweep-form-page");
  const root = page.dataset.root;
  const api = `${root}/api/v1/tasks/${page.dataset.task}/sweeps`;
  const parameters = JSON.parse(document.getElementById("sweep-parameters-data").textContent);
  const charts = JSON.parse(document.getElementById("sweep-charts").textContent);
  const form = document.getElementById("sweep-form");
  const field = (name) => form.elements.namedItem(name);
  const NUMERIC = new Set(["int", "float"]);
  const has = (value) => value !== undefined && value !== null && value !== "";

  // ---- the parameters' rows --------------------------------------------------------------------

  // A range around the task's value (a tenth to ten times a float, half to twice an int; a log
  // scale where that spans a lot), within the declared bounds.
  function rangeAround(kind, declaration, value) {
    const min = declaration.min;
    const max = declaration.max;
    let low;
    let high;
    if (typeof value === "number" && value > 0) {
      [low, high] = kind === "float" ? [value / 10, value * 10] : [Math.max(1, Math.floor(value / 2)), value * 2];
    } else {
      [low, high] = [has(min) ? min : 0, has(max) ? max : (kind === "float" ? 1 : 10)];
    }
    if (has(min)) low = Math.max(low, min);
    if (has(max)) high = Math.min(high, max);
    if (kind === "float") [low, high] = [Number(low.toPrecision(3)), Number(high.toPrecision(3))];
    return { low, high, log: low > 0 && high / low >= 16 };
  }

  function shownValue(value) {
    return value === undefined || value === null ? "(none)" : JSON.stringify(value);
  }

  // What a parameter accepts and what the task runs it with, in words.
  function declarationHint(parameter) {
    const declaration = parameter.declaration;
    const parts = [parameter.type];
    if (has(declaration.min) && has(declaration.max)) parts.push(`${declaration.min} to ${declaration.max}`);
    else if (has(declaration.min)) parts.push(`at least ${declaration.min}`);
    else if (has(declaration.max)) parts.push(`at most ${declaration.max}`);
    if (declaration.choices?.length) parts.push(`one of ${declaration.choices.map(String).join(", ")}`);
    return `${parts.join("; ")} · the task's: ${shownValue(parameter.value)}`;
  }

  function input(name, type, value, label) {
    const made = element("input");
    made.name = name;
    made.type = type;
    if (type === "number") made.step = "any";
    if (type === "checkbox") made.checked = Boolean(value);
    else made.value = has(value) ? String(value) : "";
    made.setAttribute("aria-label", label);
    made.autocomplete = "off";
    return made;
  }

  function parameterRows(parameter) {
    const name = parameter.name;
    const key = `parameters.${name}`;
    const numeric = NUMERIC.has(parameter.type);
    const row = element("tr");
    row.dataset.parameter = name;
    const named = element("td");
    named.append(element("code", name), element("div", declarationHint(parameter), "hint"));
    if (parameter.description) named.title = parameter.description;
    const how = document.createElement("select");
    how.name = `${key}.how`;
    how.setAttribute("aria-label", `How ${name} varies`);
    const options = [["task", "task's value"], ["fixed", "fixed"]];
    if (numeric) options.push(["range", "range"]);
    if (!parameter.secret) options.push(["choice", "choices"]);
    for (const [value, label] of options) {
      const option = element("option", label);
      option.value = value;
      how.append(option);
    }
    const range = numeric ? rangeAround(parameter.type, parameter.declaration, parameter.value) : {};
    const low = input(`${key}.low`, "number", range.low, `${name} low`);
    const high = input(`${key}.high`, "number", range.high, `${name} high`);
    const log = input(`${key}.log`, "checkbox", range.log, `${name} on a log scale`);
    const step = input(`${key}.step`, "number", "", `${name} step`);
    const declared = parameter.declaration.choices?.length ? parameter.declaration.choices
      : (parameter.type === "bool" ? [true, false] : null);
    const values = input(`${key}.values`, "text", declared ? declared.map(String).join(", ") : "", `${name} value or choices`);
    values.placeholder = "a value, or choices: a, b, c";
    how.value = parameter.secret ? "task" : parameter.type === "float" ? "range" : "task";
    how.disabled = parameter.secret;
    if (parameter.secret) how.title = "a secret is not swept from here";
    const show = () => {
      const mode = how.value;
      for (const item of [low, high, log, step]) item.disabled = mode !== "range";
      values.disabled = mode !== "fixed" && mode !== "choice";
      if (mode === "fixed" && !values.value.trim() && has(parameter.value)) values.value = String(parameter.value);
      row.dataset.how = mode;
    };
    how.addEventListener("change", show);
    show();
    row.append(named, cell(how), cell(low), cell(high), cell(log), cell(step), cell(values));
    const problems = element("tr", undefined, "row-error");
    const error = element("td");
    error.colSpan = 7;
    const shown = element("p", undefined, "field-error");
    shown.dataset.errorFor = key;
    error.append(shown);
    problems.append(error);
    return [row, problems];
  }

  // A value typed for a parameter, as its declared type reads it ("0.1" a number, "true" a bool,
  // an enum's choice as declared); anything else stays text, for the API to refuse in words.
  function typed(parameter, text) {
    const value = text.trim();
    if (NUMERIC.has(parameter.type) && value !== "" && Number.isFinite(Number(value))) return Number(value);
    if (parameter.type === "bool" && (value === "true" || value === "false")) return value === "true";
    const declared = (parameter.declaration.choices || []).find((choice) => String(choice) === value);
    return declared === undefined ? value : declared;
  }

  function sweptParameters() {
    const swept = {};
    for (const parameter of parameters) {
      const key = `parameters.${parameter.name}`;
      const mode = field(`${key}.how`).value;
      const number = (name) => (field(`${key}.${name}`).value.trim() === "" ? undefined : Number(field(`${key}.${name}`).value));
      if (mode === "range") {
        swept[parameter.name] = { type: parameter.type, low: number("low"), high: number("high"),
                                  log: field(`${key}.log`).checked, step: number("step") };
      } else if (mode === "fixed") {
        swept[parameter.name] = { type: "fixed", value: typed(parameter, field(`${key}.values`).value) };
      } else if (mode === "choice") {
        const text = field(`${key}.values`).value;
        swept[parameter.name] = { type: "choice",
                                  choices: text.split(",").filter((part) => part.trim() !== "").map((part) => typed(parameter, part)) };
      }
    }
    return swept;
  }

  // ---- the document ----------------------------------------------------------------------------

  // A number field's value, or undefined when left empty (the API's default then).
  function numberOf(name) {
    const value = field(name).value.trim();
    return value === "" ? undefined : Number(value);
  }

  function sweepDocument() {
    const description = field("description").value;
    return {
      name: field("name").value,
      ...(description ? { description } : {}),
      parameters: sweptParameters(),
      objective: { chart: field("objective.chart").value.trim(), series: field("objective.series").value.trim(),
                   direction: field("objective.direction").value, take: field("objective.take").value },
      search: { sampler: field("search.sampler").value, seed: numberOf("search.seed") },
      budget: { trials: numberOf("budget.trials"), node_hours: numberOf("budget.node_hours"),
                wall_minutes: numberOf("budget.wall_minutes") },
      concurrency: numberOf("concurrency"),
      early_stopping: { pruner: field("early_stopping.pruner").value, min_steps: numberOf("early_stopping.min_steps"),
                        startup_trials: numberOf("early_stopping.startup_trials") },
      max_consecutive_failures: numberOf("max_consecutive_failures"),
    };
  }

  // ---- refusals --------------------------------------------------------------------------------

  const LABELS = {
    name: "Name", description: "Description", parameters: "Parameters", objective: "Objective",
    "objective.chart": "Chart", "objective.series": "Line", "objective.direction": "Direction",
    "objective.take": "Value", search: "Search", "search.sampler": "Search", "search.seed": "Seed",
    budget: "Budget", "budget.trials": "Trials", "budget.node_hours": "Node-hours",
    "budget.wall_minutes": "Wall time", concurrency: "Trials at once", early_stopping: "Early stopping",
    "early_stopping.pruner": "Pruner", "early_stopping.min_steps": "Not before step",
    "early_stopping.startup_trials": "After finished trials", max_consecutive_failures: "Failures in a row",
  };
  // A field of the API's answer in words: "Parameter learning_rate, high", "Trials".
  function labelOf(key) {
    const [head, name, ...rest] = key.split(".");
    if (head === "parameters" && name) {
      const part = rest.filter((item) => !/^\d+$/.test(item)).join(" ");
      const item = rest.find((each) => /^\d+$/.test(each));
      return `Parameter ${name}${part ? `, ${part}` : ""}${item === undefined ? "" : ` ${Number(item) + 1}`}`;
    }
    return LABELS[key] || LABELS[[head, name].filter(Boolean).join(".")] || LABELS[head] || key.replaceAll("_", " ");
  }

  // Where a problem of ``key`` is shown: its own field's error line, else its nearest parent's.
  function placeOf(key) {
    let place = key;
    while (place) {
      const target = form.querySelector(`[data-error-for="${CSS.escape(place)}"]`);
      if (target) return target;
      place = place.includes(".") ? place.slice(0, place.lastIndexOf(".")) : "";
    }
    return null;
  }

  // The input a problem is about: the field itself, else the first one of its row or group.
  function inputOf(key, target) {
    const own = field(key) || field(key.replace(/\.(choices|value)(\.\d+)?$/, ".values"));
    if (own instanceof Element) return own;
    return target?.closest("tr.row-error")?.previousElementSibling?.querySelector("input:not(:disabled), select")
      || target?.closest("div, fieldset")?.querySelector("input, select") || null;
  }

  function showProblems(unordered, detail) {
    for (const shown of form.querySelectorAll(".field-error")) shown.replaceChildren();
    for (const marked of form.querySelectorAll("[aria-invalid]")) marked.removeAttribute("aria-invalid");
    const places = [...form.querySelectorAll("[data-error-for]")];
    const order = (problem) => {
      const at = places.indexOf(placeOf(problem.field));
      return at < 0 ? places.length : at;
    };
    const problems = [...unordered].sort((a, b) => order(a) - order(b));
    const summary = document.getElementById("form-problems");
    const count = problems.length;
    summary.replaceChildren(element("strong", count
      ? `The sweep was not created: ${count} problem${count > 1 ? "s" : ""}, shown next to ${count > 1 ? "their fields" : "its field"}.`
      : `The sweep was not created: ${detail}`));
    const list = element("ul");
    for (const problem of problems) {
      const target = placeOf(problem.field);
      const label = labelOf(problem.field);
      const item = element("li");
      if (target) {
        const own = target.dataset.errorFor === problem.field;
        const rest = problem.field.slice(target.dataset.errorFor.length + 1).replaceAll(".", " ");
        const line = element("span", own ? problem.rule : `${rest || label}: ${problem.rule}`);
        target.append(...(target.childNodes.length ? [element("br")] : []), line);
        const marked = inputOf(problem.field, target);
        marked?.setAttribute("aria-invalid", "true");
        const link = element("a", label);
        link.href = "#";
        link.addEventListener("click", (event) => {
          event.preventDefault();
          target.scrollIntoView({ block: "center" });
          marked?.focus({ preventScroll: true });
        });
        item.append(link, ` ${problem.rule}`);
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
    const button = document.getElementById("create-sweep");
    const status = document.getElementById("sweep-status");
    button.disabled = true;
    status.textContent = "Creating the sweep…";
    const document_ = sweepDocument();
    try {
      const answer = await sendJson("POST", `${api}?start=true`, document_);
      const body = answer.body;
      if (answer.ok) {
        sayOnNextPage(`Sweep ${body.name} created and started.`);
        window.location.assign(`${root}/ui/sweeps/${body.id}`);
        return;
      }
      if (answer.status === 409 && /already has a sweep named/.test(body.detail || "")) {
        showProblems([{ field: "name", rule: "is taken: the task already has a sweep of this name" }], body.detail);
        return;
      }
      showProblems(body.problems || [], body.detail || `refused (${answer.status})`);
    } catch (error) {
      showProblems([], String(error));
    } finally {
      button.disabled = false;
      status.textContent = "";
    }
  }

  // ---- the page --------------------------------------------------------------------------------

  const rows = document.querySelector("#sweep-parameters tbody");
  for (const parameter of parameters) rows.append(...parameterRows(parameter));
  if (!parameters.length) {
    const none = element("td", "The task's algorithm declares no parameter: there is nothing to sweep.", "muted");
    none.colSpan = 7;
    const row = element("tr");
    row.append(none);
    rows.append(row);
  }
  function listOptions(id, values) {
    document.getElementById(id).replaceChildren(...values.map((value) => {
      const option = element("option");
      option.value = value;
      return option;
    }));
  }
  const showSeries = () => listOptions("series-names", charts[field("objective.chart").value.trim()] || []);
  listOptions("chart-names", Object.keys(charts));
  showSeries();
  field("objective.chart").addEventListener("input", showSeries);
  form.addEventListener("submit", submit);
  form.dataset.ready = "true";
})();
