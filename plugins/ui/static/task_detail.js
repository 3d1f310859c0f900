// A task's page: its runs (refreshed while one is active; each named by when and how it
// started, with the parameters it ran with and why it failed or who stopped it, linked to its
// own page), run now with settings for this run (every parameter type, the environment; only
// the changed ones are sent as the run's conf; one request id per click, so that a retry never
// starts a second run), stop, and copy and delete through dialogs of the page (Airflow's iframe
// sandbox blocks the browser's prompt and confirm). Text is only ever set as text.
"use strict";

(function () {
  const page = document.getElementById("task-page");
  const root = page.dataset.root;
  const api = `${root}/api/v1/tasks/${page.dataset.task}`;
  const algorithm = JSON.parse(document.getElementById("algorithm").textContent);
  const saved = JSON.parse(document.getElementById("document").textContent);
  const ACTIVE = new Set(["queued", "running"]);
  const NOT_PARSED_RETRY_MS = 2000;
  const NOT_PARSED_TRIES = 45;
  const MASK = "***";
  let refreshing = null;
  // The run a Stop was asked for (its id and what the stop answered): its banner says
  // "stopping" while it ends, then what it ended as.
  let stopping = null;
  // The runs ticked for Compare: kept while the table is refreshed.
  const comparing = new Set();
  const COMPARED = { min: 2, max: 8 };

  function message(text, problem) {
    const shown = document.getElementById("task-message");
    shown.textContent = text;
    shown.className = problem ? "notice problem" : "notice";
    shown.hidden = false;
  }

  function duration(run) {
    const end = run.ended_at ? new Date(run.ended_at) : new Date();
    const seconds = Math.max(0, Math.round((end - new Date(run.started_at)) / 1000));
    return seconds < 120 ? `${seconds} s` : `${Math.round(seconds / 60)} min`;
  }

  const runPage = (id) => `${root}/ui/tasks/${page.dataset.task}/runs/${id}`;

  function parametersOf(run) {
    const shown = Object.entries(run.parameters || {});
    if (!shown.length) return element("span", ACTIVE.has(run.state) ? "being planned" : "—", "muted");
    const list = element("span", undefined, "run-parameters");
    list.append(...shown.map(([name, value]) => element("code", `${name}=${JSON.stringify(value)}`)));
    return list;
  }

  function runRow(run) {
    const row = element("tr");
    row.dataset.run = run.id;
    row.dataset.airflowRun = run.airflow_run_id;
    const tab = `${page.dataset.airflow}/dags/${page.dataset.dag}/runs/${encodeURIComponent(run.airflow_run_id)}/plugin/octotrain-`;
    const views = element("td", undefined, "views");
    for (const [name, label] of [["metrics", "Metrics"], ["resources", "Resources"], ["logs", "Logs"]]) {
      const link = element("a", label);
      link.href = tab + name;
      link.target = "_top";
      views.append(link, " ");
    }
    const pick = element("input", undefined, "compare-pick");
    pick.type = "checkbox";
    pick.checked = comparing.has(run.id);
    pick.setAttribute("aria-label", `compare ${runName(run)}`);
    pick.addEventListener("change", () => {
      if (pick.checked) comparing.add(run.id); else comparing.delete(run.id);
      showCompare();
    });
    const named = element("td", undefined, "run-label");
    const link = element("a", runName(run), "run-link");
    link.href = runPage(run.id);
    link.title = `Airflow run ${run.airflow_run_id}`;
    named.append(link);
    if (run.sweep !== null && run.sweep !== undefined) {
      const sweep = element("a", sweepNames.get(run.sweep) || `sweep #${run.sweep}`, "sweep-link");
      sweep.href = `${root}/ui/sweeps/${run.sweep}`;
      const line = element("div", `trial ${run.trial} of `, "muted trial-of");
      line.append(sweep);
      named.append(line);
    }
    if (run.resumed_from !== null) {
      const earlier = element("a", `#${run.resumed_from}`, "resumed-from");
      earlier.href = runPage(run.resumed_from);
      const line = element("div", "resumed from ", "muted");
      line.append(earlier);
      named.append(line);
    }
    const state = element("td");
    state.append(element("span", run.state, `state state-${run.state}`));
    if (run.message && !ACTIVE.has(run.state)) state.append(element("div", run.message, "run-reason"));
    const actions = element("td");
    if (ACTIVE.has(run.state)) {
      const stop = element("button", "Stop", "stop");
      stop.type = "button";
      stop.disabled = stopping !== null && stopping.id === run.id;
      stop.addEventListener("click", () => stopRun(run, stop));
      actions.append(stop);
    }
    if (run.resumable) {
      const resume = element("button", "Resume", "resume");
      resume.type = "button";
      resume.title = "A new run that starts from the checkpoint this one left";
      resume.addEventListener("click", () => resumeRun(run));
      actions.append(resume);
    }
    row.append(cell(pick), named, state, element("td", duration(run)), cell(parametersOf(run)),
               element("td", run.model_version === null ? "—" : `v${run.model_version}`), views, actions);
    return row;
  }

  function showCompare() {
    const compare = document.getElementById("compare-runs");
    compare.disabled = comparing.size < COMPARED.min || comparing.size > COMPARED.max;
    compare.title = compare.disabled ? `tick ${COMPARED.min} to ${COMPARED.max} runs` : "";
  }

  document.getElementById("compare-runs").addEventListener("click", () => {
    window.location.href = `${root}/ui/compare?runs=${[...comparing].sort((a, b) => a - b).join(",")}`;
  });

  async function showRuns() {
    let runs;
    try {
      // Newest first; the table holds the newest 1,000 (the task page links each run).
      runs = (await getJson(`${api}/runs?order_by=-id&limit=1000`)).runs;
    } catch (error) {
      message(`Could not read the runs: ${error.message}`, true);
      return;
    }
    document.querySelector("#runs tbody").replaceChildren(...runs.map(runRow));
    document.getElementById("no-runs").hidden = runs.length > 0;
    showStopOutcome(runs);
    const active = runs.some((run) => ACTIVE.has(run.state));
    if (active && refreshing === null) refreshing = setInterval(showRuns, 3000);
    if (!active && refreshing !== null) {
      clearInterval(refreshing);
      refreshing = null;
    }
  }

  // The task's sweeps, newest first (a few; each links to its page), followed while one runs.
  const SWEEPS_SHOWN = 5;
  const ACTIVE_SWEEPS = new Set(["running", "stopping"]);
  const sweepNames = new Map();
  let followingSweeps = null;

  function sweepRow(sweep) {
    const row = element("tr");
    row.dataset.sweep = sweep.id;
    const named = element("td");
    const link = element("a", sweep.name, "sweep-link");
    link.href = `${root}/ui/sweeps/${sweep.id}`;
    named.append(link);
    const state = element("td");
    state.append(element("span", sweep.state, `state state-${sweep.state}`));
    const counts = sweep.counts || {};
    const done = (counts.success || 0) + (counts.failed || 0) + (counts.stopped || 0) + (counts.pruned || 0);
    const trials = element("td", `${done} of ${sweep.spec.budget.trials} done`);
    if (counts.pruned) trials.append(element("span", ` · ${counts.pruned} pruned`, "muted"));
    const best = element("td", sweep.best === null ? "—" : `${Number(sweep.best.objective.toPrecision(6))}`);
    if (sweep.best !== null) best.append(element("span", ` trial ${sweep.best.trial}`, "muted"));
    row.append(named, state, trials, best, cell(timeElement(sweep.created_at)));
    return row;
  }

  async function showSweeps() {
    clearTimeout(followingSweeps);
    let sweeps;
    try {
      sweeps = await getJson(`${api}/sweeps`);
    } catch (error) {
      message(`Could not read the sweeps: ${error.message}`, true);
      return;
    }
    for (const sweep of sweeps) sweepNames.set(sweep.id, sweep.name);
    document.getElementById("sweeps").hidden = sweeps.length === 0;
    document.querySelector("#sweep-list tbody").replaceChildren(...sweeps.slice(0, SWEEPS_SHOWN).map(sweepRow));
    const more = document.getElementById("more-sweeps");
    more.hidden = sweeps.length <= SWEEPS_SHOWN;
    more.textContent = `and ${sweeps.length - SWEEPS_SHOWN} older`;
    for (const link of document.querySelectorAll("#runs a.sweep-link")) {
      const id = Number(new URL(link.href, window.location.href).pathname.split("/").pop());
      if (sweepNames.has(id)) link.textContent = sweepNames.get(id);
    }
    if (sweeps.some((sweep) => ACTIVE_SWEEPS.has(sweep.state))) followingSweeps = setTimeout(showSweeps, 5000);
  }

  function stopRun(run, button) {
    confirmFirst({
      title: `Stop run #${run.id}?`,
      text: "Every node is stopped (SIGTERM, then SIGKILL after the grace period); every log is " +
        "kept and no model version is archived. A checkpoint it synced can be resumed later.",
      confirm: "Stop the run",
      danger: true,
    }, async () => {
      const answer = await sendJson("POST", `${api}/runs/${run.id}/stop`);
      if (answer.ok) {
        button.disabled = true;
        stopping = { id: run.id, because: answer.body.stopping_because };
        message(`Stopping run ${runName(run)}: ${answer.body.stopping_because}…`);
        showRuns();
      }
      return answer;
    });
  }

  function resumeRun(run) {
    confirmFirst({
      title: `Resume run #${run.id}?`,
      text: "A new run of the task starts, its nodes restoring the checkpoint this run left, " +
        "with the task's saved settings.",
      confirm: "Resume",
    }, async () => {
      const answer = await sendJson("POST", `${api}/runs/${run.id}/resume`, { request_id: crypto.randomUUID() });
      if (answer.ok) {
        message(`Started run #${answer.body.run.id}, resuming run #${run.id}.`);
        showRuns();
      }
      return answer;
    });
  }

  // Once the run a Stop was asked for has ended, the banner says so (not "stopping" for ever).
  function showStopOutcome(runs) {
    if (stopping === null) return;
    const run = runs.find((item) => item.id === stopping.id);
    if (!run || ACTIVE.has(run.state)) return;
    const why = run.message || stopping.because;
    message(run.state === "stopped" ? `Run ${runName(run)}: ${why}.`
      : `Run ${runName(run)} ended ${run.state} before the stop took hold: ${why}.`);
    stopping = null;
  }

  // One field of Run now; ``saved`` is what the run gets when the field is left as it is.
  function settingInput(name, label, saved, kind, choices) {
    let input;
    if (kind === "enum") {
      input = document.createElement("select");
      for (const choice of choices) {
        const option = element("option", String(choice));
        option.value = JSON.stringify(choice);
        input.append(option);
      }
      input.value = JSON.stringify(saved);
    } else if (kind === "bool") {
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = saved === true;
    } else if (saved === MASK) { // a secret: never shown, sent only when a new one is typed
      input = document.createElement("input");
      input.type = "password";
      input.placeholder = "*** (saved)";
      input.autocomplete = "off";
    } else {
      input = document.createElement("input");
      input.type = kind === "int" || kind === "float" ? "number" : "text";
      if (kind === "float") input.step = "any";
      input.value = saved === undefined || saved === null ? "" : String(saved);
    }
    input.name = name;
    input.dataset.kind = kind;
    input.dataset.saved = kind === "bool" ? String(saved === true) : input.value;
    const shown = element("label", `${label} `, kind === "bool" ? "check" : undefined);
    if (kind === "bool") shown.prepend(input);
    else shown.append(input);
    return shown;
  }

  function showRunSettings() {
    const settings = document.getElementById("run-settings");
    const env = document.getElementById("run-env");
    settings.replaceChildren();
    env.replaceChildren();
    settings.append(settingInput("node_count", "Nodes", saved.node_count || 1, "int"),
                    settingInput("priority", "Priority (higher runs first)", saved.priority || 0, "int"),
                    settingInput("max_wait_seconds", "Longest wait, s", saved.max_wait_seconds, "int"),
                    settingInput("max_training_seconds", "Longest training, s", saved.max_training_seconds, "int"));
    for (const declaration of (algorithm && algorithm.parameters) || []) {
      const value = (saved.parameters || {})[declaration.name] ?? declaration.default;
      settings.append(settingInput(declaration.name, declaration.name, value, declaration.type,
                                   declaration.choices));
    }
    const variables = { ...((algorithm && algorithm.env) || {}), ...(saved.env || {}) };
    if (Object.keys(variables).length) env.append(element("h3", "Environment variables"));
    for (const [name, value] of Object.entries(variables)) {
      env.append(settingInput(`env.${name}`, name, value, "string"));
    }
  }

  function valueOf(input) {
    if (input.dataset.kind === "bool") return input.checked;
    if (input.dataset.kind === "enum") return JSON.parse(input.value);
    if (input.dataset.kind === "int" || input.dataset.kind === "float") return Number(input.value);
    return input.value;
  }

  function changedSettings() {
    const conf = {};
    for (const input of document.querySelectorAll("#run-settings [name], #run-env [name]")) {
      const current = input.dataset.kind === "bool" ? String(input.checked) : input.value;
      if (current === input.dataset.saved || (input.dataset.kind !== "bool" && current.trim() === "")) continue;
      if (input.name.startsWith("env.")) {
        conf.env = { ...(conf.env || {}), [input.name.slice("env.".length)]: input.value };
      } else {
        conf[input.name] = valueOf(input);
      }
    }
    return conf;
  }

  // A refused setting of Run now in words: its field's label ("epochs: must be within …",
  // not "conf.parameters.epochs: …"), the field itself marked.
  function runProblem(problem) {
    const name = problem.field.replace(/^conf\./, "").replace(/^parameters\./, "");
    const input = document.querySelector(`#run-form [name="${CSS.escape(name)}"]`);
    if (!input) return `${name.replaceAll("_", " ")}: ${problem.rule}`;
    input.setAttribute("aria-invalid", "true");
    const label = input.closest("label")?.firstChild?.textContent.trim() || name;
    return `${label}: ${problem.rule}`;
  }

  async function runNow(event) {
    event.preventDefault();
    const button = document.getElementById("run-now");
    const status = document.getElementById("run-status");
    const problems = document.getElementById("run-problems");
    problems.hidden = true;
    for (const marked of document.querySelectorAll("#run-form [aria-invalid]")) marked.removeAttribute("aria-invalid");
    button.disabled = true;
    const request = { request_id: crypto.randomUUID(), conf: changedSettings() };
    try {
      for (let attempt = 0; attempt < NOT_PARSED_TRIES; attempt += 1) {
        const answer = await sendJson("POST", `${api}/runs`, request);
        if (answer.ok) {
          status.textContent = `Started run ${runName(answer.body.run)}; the fields are the task's again.`;
          showRunSettings();  // the next run starts from the saved settings, not this one's
          await showRuns();
          return;
        }
        if (answer.status === 409 && /not parsed/.test(answer.body.detail || "")) {
          status.textContent = "Waiting for Airflow to parse the task's DAG…";
          await new Promise((resolve) => setTimeout(resolve, NOT_PARSED_RETRY_MS));
          continue;
        }
        // Each broken rule once (the detail repeats them all when there are any)
        const broken = answer.body.problems || [];
        problems.replaceChildren(element("strong", broken.length ? "The run was not started:"
          : `The run was not started: ${answer.body.detail || answer.status}`));
        const list = element("ul");
        for (const problem of broken) list.append(element("li", runProblem(problem)));
        if (broken.length) problems.append(list);
        problems.hidden = false;
        status.textContent = "";
        return;
      }
      status.textContent = "Airflow has not parsed the task's DAG yet; try again later.";
    } finally {
      button.disabled = false;
    }
  }

  // The dialog opened by button ``id``: its form's submit (Enter) does ``act``, which answers
  // the API's answer; a refusal is shown inside the dialog, which stays open so that the user
  // can correct and retry. Escape and Cancel close it; its autofocus element has the focus
  // when it opens and again after a refusal.
  function dialog(id, act) {
    const shown = document.getElementById(`${id}-dialog`);
    const form = document.getElementById(`${id}-form`);
    const problems = document.getElementById(`${id}-problems`);
    const buttons = form.querySelectorAll("button");
    document.getElementById(id).addEventListener("click", () => {
      problems.hidden = true;
      shown.showModal();
    });
    form.querySelector(".cancel").addEventListener("click", () => shown.close());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      for (const button of buttons) button.disabled = true;
      const answer = await act(form).catch((error) => ({ ok: false, body: { detail: error.message } }));
      for (const button of buttons) button.disabled = false;
      if (answer.ok) return;
      // Each broken rule once (a refusal's detail already names them when there are any)
      const broken = (answer.body.problems || []).map((problem) => `${problem.field}: ${problem.rule}`);
      const lines = broken.length ? broken : [answer.body.detail || `refused (${answer.status})`];
      const list = element("ul");
      list.append(...lines.map((line) => element("li", line)));
      problems.replaceChildren(lines.length > 1 ? list : element("span", lines[0]));
      problems.hidden = false;
      form.querySelector("[autofocus]").focus();
    });
  }

  dialog("copy", async (form) => {
    const name = form.elements.namedItem("name").value.trim();
    const answer = await sendJson("POST", `${api}/copy`, name ? { name } : {});
    if (answer.ok) {
      sayOnNextPage(`Training task ${answer.body.name} created as a copy.`);
      window.location.assign(`${root}/ui/tasks/${answer.body.id}`);
    }
    return answer;
  });
  dialog("delete", async () => {
    const answer = await sendJson("DELETE", api);
    if (answer.ok) {
      sayOnNextPage(`Training task ${page.dataset.name} deleted.`);
      window.location.assign(`${root}/ui/tasks`);
    }
    return answer;
  });
  document.getElementById("run-form").addEventListener("submit", runNow);
  showRunSettings();
  showRuns();
  showSweeps();
  page.dataset.ready = "true";
})();
