// Where a run is: each element with data-progress-url (GET …/runs/{run}/progress) shows the
// run's phase, a bar of its percent and its estimated time left, refreshed while the run is
// live; with data-progress-nodes it also lists every node's. Unknown is said as unknown ("—",
// "no estimate yet"), never guessed. Text is only ever set as text.
"use strict";

(function () {
  const REFRESH_MS = 5000;
  const PHASES = {
    waiting: "waiting for resources",
    staging: "staging data",
    training: "training",
    uploading: "uploading",
    done: "done",
  };

  function duration(seconds) {
    const whole = Math.max(0, Math.round(seconds));
    if (whole < 60) return `${whole} s`;
    const minutes = Math.round(whole / 60);
    if (minutes < 120) return `${minutes} min`;
    return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  }

  function eta(shown) {
    if (shown.phase === "done") return "";
    if (shown.eta_seconds === null) {
      return shown.phase === "staging" || shown.phase === "training" ? "no estimate yet" : "";
    }
    return `about ${duration(shown.eta_seconds)} left`;
  }

  function bar(percent, label) {
    const made = element("progress", undefined, "progress-bar");
    made.max = 100;
    if (percent !== null) made.value = percent;
    made.setAttribute("aria-label", label);
    return made;
  }

  function summary(shown, label) {
    const line = element("span", undefined, "progress-summary");
    const percent = shown.percent === null ? "" : ` ${Math.floor(shown.percent)}%`;
    // A run that ended short of its total (stopped, failed) is not "done 39%".
    const cut = shown.phase === "done" && shown.percent !== null && shown.percent < 100;
    const phase = cut ? "ended at" : PHASES[shown.phase] || shown.phase;
    line.append(element("span", `${phase}${percent}`, `phase phase-${shown.phase}`));
    if (shown.phase === "staging" || shown.phase === "training") line.append(bar(shown.percent, label));
    const left = eta(shown);
    if (left) line.append(element("span", left, "muted eta"));
    return line;
  }

  function detail(node) {
    if (node.phase === "staging" && node.bytes_total !== null) {
      return `${byteSize(node.bytes_done)} of ${byteSize(node.bytes_total)}`;
    }
    if (node.current === null) return node.phase === "training" ? "no progress reported" : "";
    return node.total === null ? `at ${node.current} (total unknown)` : `${node.current} of ${node.total}`;
  }

  // Where the run stands in its queue: while it waits its position and the reason, stressed;
  // once admitted how long it waited, muted.
  function queueLine(admission, live) {
    const waiting = admission.admitted_at === null && live;
    const line = element("div", undefined, waiting ? "queue-state waiting" : "queue-state muted");
    line.dataset.queue = admission.queue;
    if (!waiting) {
      line.textContent = `waited ${duration(admission.waited_seconds)} in queue ${admission.queue}`;
      return line;
    }
    const place = admission.position === null ? "" : `, position ${admission.position}`;
    line.append(element("span", `queue ${admission.queue}${place}`, "queue-name"));
    line.append(element("span", ` · asked ${admission.asked} · waiting ${duration(admission.waited_seconds)}`, "muted"));
    line.append(element("div", admission.reason || "being admitted", "queue-reason"));
    return line;
  }

  function nodeTable(nodes) {
    const table = element("table", undefined, "progress-nodes");
    const head = element("tr");
    for (const title of ["Node", "Phase", "How far", "Phase since"]) head.append(element("th", title));
    table.append(element("thead"));
    table.tHead.append(head);
    const body = element("tbody");
    for (const node of nodes) {
      const row = element("tr");
      row.dataset.node = node.node;
      row.append(element("td", node.node), cell(summary(node, `node ${node.node}`)), element("td", detail(node)));
      row.append(node.since === null ? element("td", "—") : cell(timeElement(node.since * 1000)));
      body.append(row);
    }
    table.append(body);
    return table;
  }

  async function show(target) {
    try {
      const progress = await getJson(target.dataset.progressUrl);
      const parts = [summary(progress, "the run's progress")];
      if (progress.admission) parts.push(queueLine(progress.admission, progress.live));
      if ("progressNodes" in target.dataset && progress.nodes.length) parts.push(nodeTable(progress.nodes));
      target.replaceChildren(...parts);
      target.dataset.phase = progress.phase;
      target.classList.remove("error");
      return progress.live;
    } catch (error) {
      target.className = "run-progress error";
      target.textContent = `progress could not be read: ${error.message}`;
      return true;
    }
  }

  async function follow(target) {
    const live = await show(target);
    target.dataset.ready = "true";
    if (live) setTimeout(() => follow(target), REFRESH_MS);
  }

  for (const target of document.querySelectorAll("[data-progress-url]")) follow(target);
})();
