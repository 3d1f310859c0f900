// A task's page: its runs (refreshed while one is active), run now with settings for this
// run (only the changed ones are sent as the run's conf; one request id per click, so that a
// retry never starts a second run), stop, and copy and delete through dialogs of the page
// (Airflow's iframe sandbox blocks the browser's prompt and confirm). Text is only ever set as
// text.
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
  let refreshing = null;

  async function send(method, url, body) {
    const answer = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await answer.json().catch(() => ({}));
    return { status: answer.status, ok: answer.ok, body: json };
  }

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

  function runRow(run) {
    const row = element("tr");
    row.dataset.run = run.id;
    const tab = `${page.dataset.airflow}/dags/${page.dataset.dag}/runs/${encodeURIComponent(run.airflow_run_id)}/plugin/octotrain-`;
    const views = element("td");
    for (const [name, label] of [["logs", "Logs"], ["metrics", "Metrics"], ["resources", "Resources"]]) {
      const link = element("a", label);
      link.href = tab + name;
      link.target = "_top";
      views.append(link, " ");
    }
    const state = element("td");
    state.append(element("span", run.state, `state state-${run.state}`));
    const actions = element("td");
    if (ACTIVE.has(run.state)) {
      const stop = element("button", "Stop", "stop");
      stop.type = "button";
      stop.addEventListener("click", () => stopRun(run, stop));
      actions.append(stop);
    }
    row.append(element("td", run.airflow_run_id), state,
               cell(timeElement(run.started_at)),
               element("td", duration(run)), element("td", run.trigger), element("td", run.triggered_by || "—"),
               element("td", run.model_version === null ? "—" : `v${run.model_version}`), views, actions);
    return row;
  }

  async function showRuns() {
    let runs;
    try {
      runs = (await getJson(`${api}/runs`)).slice().reverse();
    } catch (error) {
      message(`Could not read the runs: ${error.message}`, true);
      return;
    }
    document.querySelector("#runs tbody").replaceChildren(...runs.map(runRow));
    document.getElementById("no-runs").hidden = runs.length > 0;
    const active = runs.some((run) => ACTIVE.has(run.state));
    if (active && refreshing === null) refreshing = setInterval(showRuns, 3000);
    if (!active && refreshing !== null) {
      clearInterval(refreshing);
      refreshing = null;
    }
  }

  async function stopRun(run, button) {
    button.disabled = true;
    const answer = await send("POST", `${api}/runs/${run.id}/stop`);
    if (answer.ok) message(`Stopping run ${run.airflow_run_id}: ${answer.body.stopping_because}`);
    else message(answer.body.detail || `stop failed (${answer.status})`, true);
    showRuns();
  }

  function settingInput(name, label, value, kind) {
    const input = document.createElement("input");
    input.name = name;
    input.type = kind === "string" ? "text" : "number";
    if (kind === "float") input.step = "any";
    input.value = value === undefined || value === null ? "" : String(value);
    input.dataset.saved = input.value;
    input.dataset.kind = kind;
    const shown = element("label", `${label} `);
    shown.append(input);
    return shown;
  }

  function showRunSettings() {
    const settings = document.getElementById("run-settings");
    settings.append(settingInput("node_count", "Nodes", saved.node_count || 1, "int"),
                    settingInput("priority", "Priority", saved.priority || 0, "int"));
    for (const declaration of (algorithm && algorithm.parameters) || []) {
      if (!["int", "float", "string"].includes(declaration.type)) continue;
      const value = (saved.parameters || {})[declaration.name] ?? declaration.default;
      settings.append(settingInput(declaration.name, declaration.name, value, declaration.type));
    }
  }

  function changedSettings() {
    const conf = {};
    for (const input of document.querySelectorAll("#run-settings input")) {
      if (input.value === input.dataset.saved || input.value.trim() === "") continue;
      conf[input.name] = input.dataset.kind === "string" ? input.value : Number(input.value);
    }
    return conf;
  }

  async function runNow(event) {
    event.preventDefault();
    const button = document.getElementById("run-now");
    const status = document.getElementById("run-status");
    const problems = document.getElementById("run-problems");
    problems.hidden = true;
    button.disabled = true;
    const request = { request_id: crypto.randomUUID(), conf: changedSettings() };
    try {
      for (let attempt = 0; attempt < NOT_PARSED_TRIES; attempt += 1) {
        const answer = await send("POST", `${api}/runs`, request);
        if (answer.ok) {
          status.textContent = `Started ${answer.body.dag_run_id}`;
          await showRuns();
          return;
        }
        if (answer.status === 409 && /not parsed/.test(answer.body.detail || "")) {
          status.textContent = "Waiting for Airflow to parse the task's DAG…";
          await new Promise((resolve) => setTimeout(resolve, NOT_PARSED_RETRY_MS));
          continue;
        }
        problems.replaceChildren(element("strong", answer.body.detail || `${answer.status}`));
        const list = element("ul");
        for (const problem of answer.body.problems || []) list.append(element("li", `${problem.field}: ${problem.rule}`));
        problems.append(list);
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
    const answer = await send("POST", `${api}/copy`, name ? { name } : {});
    if (answer.ok) window.location.assign(`${root}/ui/tasks/${answer.body.id}`);
    return answer;
  });
  dialog("delete", async () => {
    const answer = await send("DELETE", api);
    if (answer.ok) window.location.assign(`${root}/ui/tasks`);
    return answer;
  });
  document.getElementById("run-form").addEventListener("submit", runNow);
  showRunSettings();
  showRuns();
  page.dataset.ready = "true";
})();
