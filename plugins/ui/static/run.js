// A run's page: its duration, and what Airflow knows of its DAG run, read from Airflow's own
// REST API with the user's session (the page is of Airflow's origin): the phase (the state of
// each stage's task instance), the conf it was triggered with and the note on it (who stopped
// it, rendered as Airflow renders it). While the run is active, the page follows it, and
// reloads once the catalog says it ended, so that its outcome (reason, model version) is shown
// as recorded. Stop and Resume ask first; Resume opens the new run's page. Text is only ever
// set as text.
"use strict";

(function () {
  const page = document.getElementById("run-page");
  const FOLLOW_MS = 3000;
  const dagRun = `${page.dataset.airflow}/api/v2/dags/${encodeURIComponent(page.dataset.dag)}` +
    `/dagRuns/${encodeURIComponent(page.dataset.airflowRun)}`;
  const catalogRun = `${page.dataset.root}/api/v1/tasks/${page.dataset.task}/runs/${page.dataset.run}`;

  function showDuration() {
    const shown = document.getElementById("run-duration");
    const start = new Date(shown.dataset.start);
    const end = shown.dataset.end ? new Date(shown.dataset.end) : new Date();
    const seconds = Math.max(0, Math.round((end - start) / 1000));
    const minutes = Math.floor(seconds / 60);
    const text = seconds < 120 ? `${seconds} s` : minutes < 120 ? `${minutes} min ${seconds % 60} s`
      : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
    shown.textContent = shown.dataset.end ? text : `${text} so far`;
  }

  // The stages in the order a run goes through them (the DAG's, dags/factory.py); a stage not
  // named here comes after them, in the order it started.
  const PIPELINE = ["validate", "stage_data", "launch", "collect_logs", "archive_model", "delete_service"];
  const place = (instance) => {
    const index = PIPELINE.indexOf(instance.task_id);
    return index < 0 ? PIPELINE.length : index;
  };

  // Each stage's task instance as Airflow shows it (mapped ones by index), in pipeline order.
  async function showPhase() {
    const shown = document.getElementById("run-phase");
    try {
      const body = await getJson(`${dagRun}/taskInstances?limit=100&order_by=start_date`);
      const ordered = body.task_instances.map((instance, started) => [place(instance), started, instance])
        .sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, , instance]) => instance);
      const stages = ordered.map((instance) => {
        const name = instance.map_index >= 0 ? `${instance.task_id}[${instance.map_index}]` : instance.task_id;
        const badge = element("span", `${name}: ${instance.state || "waiting"}`, `state state-${instance.state || "none"}`);
        badge.dataset.stage = instance.task_id;
        return badge;
      });
      shown.className = "stages";
      shown.replaceChildren(...(stages.length ? stages : [element("span", "no stage has started yet", "muted")]));
    } catch (error) {
      shown.className = "error";
      shown.textContent = `Airflow's task instances could not be read: ${error.message}`;
    }
  }

  // A secret's value never shows here, even should Airflow's conf hold one (its Params only
  // take "***", the saved value): names with the words Airflow itself hides are masked.
  const sensitiveWords = JSON.parse(page.dataset.sensitive || "[]");
  function masked(name, value) {
    const lowered = name.toLowerCase().replaceAll("-", "_");
    return sensitiveWords.some((word) => lowered.includes(word)) ? "***" : value;
  }

  async function showDagRun() {
    const conf = document.getElementById("run-conf");
    const note = document.getElementById("run-note");
    try {
      const body = await getJson(dagRun);
      const settings = Object.entries(body.conf || {}).filter(([, value]) => value !== null)
        .map(([name, value]) => [name, name === "env" && value && typeof value === "object"
          ? Object.fromEntries(Object.entries(value).map(([key, text]) => [key, masked(key, text)]))
          : masked(name, value)]);
      conf.className = settings.length ? "" : "muted";
      conf.replaceChildren(...(settings.length
        ? settings.map(([name, value]) => element("code", `${name}=${JSON.stringify(value)}`))
        : [element("span", "none: it ran with the task's saved settings")]));
      conf.append(element("span", ` (Airflow's state of the DAG run: ${body.state})`, "muted"));
      note.className = body.note ? "" : "muted";
      note.replaceChildren(body.note ? markdownNote(body.note) : "—");
    } catch (error) {
      conf.className = "error";
      conf.textContent = `Airflow's DAG run could not be read: ${error.message}`;
    }
  }

  async function follow() {
    showDuration();
    await Promise.all([showPhase(), showDagRun()]);
    if (page.dataset.active !== "true") return;
    try {
      const now = await getJson(catalogRun);
      if (now.state !== page.dataset.state) {
        window.location.reload();
        return;
      }
    } catch {
      // the next look tries again
    }
    setTimeout(follow, FOLLOW_MS);
  }

  function say(text, problem) {
    const shown = document.getElementById("run-message");
    shown.textContent = text;
    shown.className = problem ? "notice problem" : "notice";
    shown.hidden = false;
  }

  const run = `#${page.dataset.run}`;
  document.getElementById("stop-run")?.addEventListener("click", (event) => {
    const button = event.currentTarget;
    confirmFirst({
      title: `Stop run ${run}?`,
      text: "Every node is stopped (SIGTERM, then SIGKILL after the grace period); every log is " +
        "kept and no model version is archived. A checkpoint it synced can be resumed later.",
      confirm: "Stop the run",
      danger: true,
    }, async () => {
      const answer = await sendJson("POST", `${catalogRun}/stop`);
      if (answer.ok) {
        button.disabled = true;
        say(`Stopping run ${run}: ${answer.body.stopping_because}…`);
      }
      return answer;
    });
  });
  document.getElementById("resume-run")?.addEventListener("click", () => {
    confirmFirst({
      title: `Resume run ${run}?`,
      text: "A new run of the task starts, its nodes restoring the checkpoint this run left, " +
        "with the task's saved settings.",
      confirm: "Resume",
    }, async () => {
      const answer = await sendJson("POST", `${catalogRun}/resume`, { request_id: crypto.randomUUID() });
      if (answer.ok) {
        window.location.assign(`${page.dataset.root}/ui/tasks/${page.dataset.task}/runs/${answer.body.run.id}`);
      }
      return answer;
    });
  });

  follow().then(() => {
    page.dataset.ready = "true";
  });
})();
