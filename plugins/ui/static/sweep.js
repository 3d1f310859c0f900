// A sweep's page (/ui/sweeps/<id>): its state, message and best trial (its parameters, its run
// and model version; "Re-run best" starts one ordinary run with them), Stop while it runs, its
// trials (run, state, parameters, objective, duration, node-hours; 2 to 8 ticked open Compare),
// and its charts: the best objective so far over the trials, the objective against each varying
// parameter, the parameters and the objective as parallel coordinates, and the values each trial
// reported as it ran (pruned trials faint and grey behind the others). The sweep is read in one
// request and its trials' curves in another, whatever the number of trials; both again every few
// seconds while it runs. Texts from the sweep are only ever set as text, or escaped in ECharts'
// HTML tooltips.
"use strict";

(function () {
  const page = document.getElementById("sweep-page");
  const root = page.dataset.root;
  const api = `${root}/api/v1/sweeps/${page.dataset.sweep}`;
  const $ = (id) => document.getElementById(id);
  const ACTIVE = new Set(["running", "stopping"]);
  const FOLLOW_MS = 4000;
  const COMPARED = { min: 2, max: 8 };
  const comparing = new Set();  // run ids ticked for Compare, kept across refreshes
  const drawn = [];  // {plot, option, chart}: drawn anew when Airflow's theme changes
  let sweep = null;
  let curves = null;
  let following = null;

  // ---- words -----------------------------------------------------------------------------------

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    const whole = Math.max(0, Math.round(seconds));
    if (whole < 120) return `${whole} s`;
    const minutes = Math.round(whole / 60);
    return minutes < 120 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  }

  // Hours as the usage pages write them in a table: "0.50", a short one "2.4 min" or "42 s".
  // Node-hours as a person reads them: hours from a tenth of one, else minutes or seconds.
  function hours(value) {
    if (value === 0) return "0 s";
    if (value >= 0.1) return value.toFixed(2);
    const minutes = value * 60;
    return minutes >= 1 ? `${minutes.toFixed(1)} min` : `${(minutes * 60).toFixed(0)} s`;
  }

  const shownValue = (value) => (typeof value === "number" ? significant(value) : JSON.stringify(value));
  const varying = () => Object.entries(sweep.spec.parameters).filter(([, swept]) => swept.type !== "fixed");
  const runPage = (runId) => `${root}/ui/tasks/${page.dataset.task}/runs/${runId}`;
  const finished = () => sweep.trials.filter((trial) => trial.complete && trial.objective !== null);
  const minimize = () => sweep.spec.objective.direction === "minimize";
  const objectiveName = () => `${sweep.spec.objective.series} (${sweep.spec.objective.take})`;

  function chips(parameters, only) {
    const list = element("span", undefined, "run-parameters");
    const names = only || Object.keys(parameters);
    list.append(...names.filter((name) => name in parameters)
      .map((name) => element("code", `${name}=${shownValue(parameters[name])}`)));
    return list;
  }

  // ---- header, result and trials ---------------------------------------------------------------

  function showHeader() {
    const state = $("sweep-state");
    state.textContent = sweep.state;
    state.className = `state state-${sweep.state}`;
    const message = $("sweep-message");
    message.textContent = sweep.message;
    message.className = sweep.state === "failed" ? "notice problem" : "notice";
    message.hidden = !sweep.message;
    $("start-sweep").hidden = sweep.state !== "created";
    const stop = $("stop-sweep");
    stop.hidden = !ACTIVE.has(sweep.state) && sweep.state !== "created";
    stop.disabled = sweep.state === "stopping";
    stop.title = sweep.state === "stopping" ? "stopping: its running trials are being stopped" : "";
    $("rerun-best").hidden = sweep.best === null;
    const counts = Object.entries(sweep.counts).sort((a, b) => b[1] - a[1]);
    const done = sweep.trials.filter((trial) => !["queued", "running"].includes(trial.state)).length;
    const shown = $("sweep-counts");
    shown.className = "";
    shown.replaceChildren(`${done} of ${sweep.spec.budget.trials} done`, counts.length ? " · " : "",
      ...counts.flatMap(([state, count], index) => [index ? " " : "", element("span", `${count} ${state}`, `state state-${state}`)]),
      element("span", ` · ${hours(sweep.node_hours)} node-hours`, "muted"));
    const times = $("sweep-times");
    times.replaceChildren();
    if (sweep.started_at) times.append(timeElement(sweep.started_at));
    else times.append("not started");
    if (sweep.ended_at) times.append(" · ", timeElement(sweep.ended_at));
  }

  function showBest() {
    const best = sweep.best;
    $("sweep-best").hidden = best === null;
    if (best === null) return;
    const facts = $("best-facts");
    const run = element("a", `run #${best.run_id}`);
    run.href = runPage(best.run_id);
    const trial = element("dd");
    trial.append(`trial ${best.trial}, `, run, sweep.ended_at ? "" : element("span", " (the best so far)", "muted"));
    const model = element("dd");
    if (best.model_version !== null) {
      const link = element("a", `${best.model_repository} v${best.model_version}`);
      link.id = "best-model";
      link.href = `${root}/ui/models/${encodeURIComponent(page.dataset.project)}/` +
        `${encodeURIComponent(best.model_repository)}/${best.model_version}`;
      model.append(link);
    } else {
      model.append(element("span", "none", "muted"));
    }
    const objective = element("dd", significant(best.objective), "number");
    objective.id = "best-objective";
    const parameters = element("dd");
    parameters.id = "best-parameters";
    parameters.append(chips(best.parameters));
    facts.replaceChildren(element("dt", "Trial"), trial, element("dt", objectiveName()), objective,
                          element("dt", "Parameters"), parameters, element("dt", "Model version"), model);
  }

  function trialRow(trial, names) {
    const row = element("tr");
    row.dataset.trial = trial.number;
    row.dataset.state = trial.state;
    const pick = element("input", undefined, "compare-pick");
    pick.type = "checkbox";
    pick.disabled = trial.run_id === null;
    pick.checked = comparing.has(trial.run_id);
    pick.setAttribute("aria-label", `compare trial ${trial.number}`);
    pick.addEventListener("change", () => {
      if (pick.checked) comparing.add(trial.run_id); else comparing.delete(trial.run_id);
      showCompare();
    });
    const run = element("td");
    if (trial.run_id !== null) {
      const link = element("a", `#${trial.run_id}`, "run-link");
      link.href = runPage(trial.run_id);
      link.title = `Airflow run ${trial.airflow_run_id}`;
      run.append(link);
    } else {
      run.append(element("span", "—", "muted"));
    }
    const state = element("td");
    state.append(element("span", trial.state, `state state-${trial.state}`));
    if (trial.message && !["queued", "running", "success"].includes(trial.state)) {
      state.append(element("div", trial.message, "run-reason"));
    }
    const objective = element("td", trial.objective === null ? "—" : significant(trial.objective), "number");
    if (trial.objective !== null && !trial.complete) {
      objective.classList.add("muted");
      objective.title = `the last value reported, at its step ${trial.steps_reported}`;
    }
    if (sweep.best && trial.number === sweep.best.trial) row.classList.add("best");
    row.append(cell(pick), element("td", String(trial.number), "number"), run, state,
               cell(chips(trial.parameters, names)), objective,
               element("td", duration(trial.duration_seconds), "number"),
               element("td", hours(trial.node_hours), "number"));
    return row;
  }

  function showTrials() {
    const names = varying().map(([name]) => name);
    // the newest trial first, as the task page lists runs
    const rows = [...sweep.trials].reverse().map((trial) => trialRow(trial, names));
    $("trials").tBodies[0].replaceChildren(...rows);
    $("no-trials").hidden = rows.length > 0;
    showCompare();
  }

  function showCompare() {
    const compare = $("compare-trials");
    compare.disabled = comparing.size < COMPARED.min || comparing.size > COMPARED.max;
    compare.title = compare.disabled ? `tick ${COMPARED.min} to ${COMPARED.max} trials` : "";
  }

  $("compare-trials").addEventListener("click", () => {
    window.location.href = `${root}/ui/compare?runs=${[...comparing].sort((a, b) => a - b).join(",")}`;
  });

  // ---- charts ----------------------------------------------------------------------------------

  function card(title, subtitle, key) {
    const box = element("article", undefined, "chart-card");
    box.dataset.chart = key;
    const heading = element("h2", title);
    if (subtitle) heading.append(" ", element("span", subtitle, "muted"));
    const plot = element("div", undefined, "plot");
    box.append(heading, plot);
    $("charts").append(box);
    return plot;
  }

  function draw(plot, option) {
    const entry = { plot, option, chart: null };
    entry.redraw = () => {
      entry.chart?.dispose();
      entry.chart = echarts.init(plot, chartTheme());
      entry.chart.setOption(option());
    };
    entry.redraw();
    drawn.push(entry);
  }

  // Pruned trials' grey (faint through their opacity), readable on either theme's background.
  const greyed = () => (dark() ? "rgb(139, 148, 158)" : "rgb(140, 149, 159)");
  const trialTip = (trial, extra = "") => `<b>trial ${trial.number}</b> · ${escapeHtml(trial.state)}${extra}<br>` +
    varying().map(([name]) => `${escapeHtml(name)} = ${escapeHtml(shownValue(trial.parameters[name]))}`).join("<br>");

  function bestSoFarOption() {
    const points = finished().sort((a, b) => a.number - b.number);
    let best = null;
    const line = points.map((trial) => {
      best = best === null ? trial.objective : (minimize() ? Math.min(best, trial.objective) : Math.max(best, trial.objective));
      return [trial.number, best];
    });
    const byNumber = new Map(points.map((trial) => [trial.number, trial]));
    return {
      animation: false,
      legend: { top: 4, left: 8 },
      tooltip: { trigger: "item", formatter: (point) => point.seriesIndex === 1
        ? `<b>best after trial ${point.value[0]}</b>: ${significant(point.value[1])}`
        : trialTip(byNumber.get(point.value[0]), `<br>${escapeHtml(objectiveName())} <b>${significant(point.value[1])}</b>`) },
      grid: { left: 56, right: 24, top: 36, bottom: 40 },
      xAxis: { type: "value", name: "trial", nameLocation: "middle", nameGap: 24, minInterval: 1 },
      yAxis: { type: "value", scale: true },
      series: [
        { type: "scatter", name: "finished trials", symbolSize: 7, data: points.map((trial) => [trial.number, trial.objective]) },
        { type: "line", name: "best so far", step: "end", showSymbol: false, lineStyle: { width: 2 }, data: line },
      ],
    };
  }

  // The objective against one parameter: a log axis where it is swept on a log scale, its
  // choices as categories; pruned trials (their last value) faint and grey.
  function parameterOption(name, swept) {
    const axis = swept.type === "choice"
      ? { type: "category", data: swept.choices.map(String) }
      : { type: swept.log ? "log" : "value", scale: true };
    const valueOf = (trial) => (swept.type === "choice" ? String(trial.parameters[name]) : trial.parameters[name]);
    const points = (trials) => trials.filter((trial) => name in trial.parameters && trial.objective !== null)
      .map((trial) => ({ value: [valueOf(trial), trial.objective], trial }));
    const pruned = sweep.trials.filter((trial) => trial.state === "pruned");
    return {
      animation: false,
      legend: { top: 4, left: 8 },
      tooltip: { trigger: "item", formatter: (point) => trialTip(point.data.trial,
        `<br>${escapeHtml(objectiveName())} <b>${significant(point.value[1])}</b>`) },
      grid: { left: 56, right: 24, top: 36, bottom: 40 },
      xAxis: { ...axis, name, nameLocation: "middle", nameGap: 24 },
      yAxis: { type: "value", scale: true },
      series: [
        { type: "scatter", name: "pruned (last value)", symbolSize: 6, itemStyle: { color: greyed(), opacity: 0.6 }, z: 1,
          data: points(pruned) },
        { type: "scatter", name: "finished", symbolSize: 8, z: 2, data: points(finished()) },
      ],
    };
  }

  // The finished trials as parallel coordinates: an axis per varying parameter, the objective
  // last; each trial's line coloured by its objective (the better, the stronger).
  function parallelOption() {
    const parameters = varying();
    const c = colours();
    const axes = parameters.map(([name, swept], dim) => (swept.type === "choice"
      ? { dim, name, type: "category", data: swept.choices.map(String) }
      : { dim, name, type: swept.log ? "log" : "value", scale: true }));
    const objective = parameters.length;
    axes.push({ dim: objective, name: sweep.spec.objective.series, type: "value", scale: true });
    const trials = finished();
    const data = trials.map((trial) => ({ value: [...parameters.map(([name, swept]) => (swept.type === "choice"
      ? String(trial.parameters[name]) : trial.parameters[name])), trial.objective], trial }));
    const values = trials.map((trial) => trial.objective);
    const [low, high] = values.length ? [Math.min(...values), Math.max(...values)] : [0, 1];
    const strong = c.palette[0];
    return {
      animation: false,
      tooltip: { trigger: "item", formatter: (point) => trialTip(point.data.trial,
        `<br>${escapeHtml(objectiveName())} <b>${significant(point.data.trial.objective)}</b>`) },
      parallel: { left: 56, right: 150, top: 40, bottom: 28,
                  parallelAxisDefault: { nameTextStyle: { color: c.fg }, axisLine: { lineStyle: { color: c.strong } },
                                         axisLabel: { color: c.muted }, axisTick: { lineStyle: { color: c.strong } } } },
      parallelAxis: axes,
      visualMap: { type: "continuous", dimension: objective, min: low, max: high === low ? low + 1 : high,
                   right: 4, top: "middle", itemHeight: 140, calculable: false, precision: 3,
                   textStyle: { color: c.muted }, text: minimize() ? ["worse", "better"] : ["better", "worse"],
                   inRange: { color: minimize() ? [strong, greyed()] : [greyed(), strong] } },
      series: [{ type: "parallel", lineStyle: { width: 1.5, opacity: 0.8 }, data }],
    };
  }

  // Each trial's reported values by step: the pruned ones faint and grey, behind the others.
  function curvesOption() {
    const c = colours();
    const series = curves.trials.filter((trial) => trial.steps.length).map((trial) => {
      const pruned = trial.state === "pruned";
      return {
        type: "line", name: `trial ${trial.number}`, showSymbol: false, animation: false, z: pruned ? 1 : 2,
        data: trial.steps.map((step, at) => [step, trial.values[at]]),
        color: pruned ? greyed() : c.palette[trial.number % c.palette.length],
        lineStyle: { width: pruned ? 1 : 1.5, opacity: pruned ? 0.45 : 0.9 },
        emphasis: { focus: "series", lineStyle: { width: 2.5, opacity: 1 } },
        state: trial.state,
      };
    });
    return {
      animation: false,
      tooltip: { trigger: "item", formatter: (point) => `<b>${escapeHtml(point.seriesName)}</b> · ` +
        `${escapeHtml(series[point.seriesIndex].state)}<br>step ${significant(point.value[0])}: <b>${significant(point.value[1])}</b>` },
      grid: { left: 64, right: 24, top: 24, bottom: 64 },
      xAxis: { type: "value", name: "step", nameLocation: "middle", nameGap: 24, min: "dataMin", max: "dataMax" },
      yAxis: { type: "value", scale: true },
      dataZoom: [{ type: "inside", filterMode: "none" }, { type: "slider", filterMode: "none", height: 18, bottom: 6 }],
      series,
    };
  }

  function makeCharts() {
    const direction = minimize() ? "lower is better" : "higher is better";
    draw(card("Best so far", `${objectiveName()} of the finished trials, ${direction}`, "best-so-far"), bestSoFarOption);
    for (const [name, swept] of varying()) {
      draw(card(`${sweep.spec.objective.series} against ${name}`,
                swept.log ? "log scale; pruned trials grey" : "pruned trials grey", `parameter-${name}`),
           () => parameterOption(name, swept));
    }
    draw(card("Parameters and objective", "the finished trials, coloured by their objective", "parallel"), parallelOption);
    draw(card("Reported curves", `${sweep.spec.objective.series} by step as the pruner saw it; pruned trials grey, behind`, "curves"),
         curvesOption);
  }

  function redrawCharts() {
    if (!drawn.length) makeCharts();
    else for (const entry of drawn) entry.chart.setOption(entry.option(), true);
  }

  // ---- actions ---------------------------------------------------------------------------------

  function say(text, problem = false) {
    const shown = $("sweep-message");
    shown.textContent = text;
    shown.className = problem ? "notice problem" : "notice";
    shown.hidden = false;
  }

  $("start-sweep").addEventListener("click", async () => {
    const answer = await sendJson("POST", `${api}/start`);
    if (answer.ok) await load();
    else say(answer.body && answer.body.detail ? String(answer.body.detail) : `Not started (${answer.status}).`, true);
  });

  $("stop-sweep").addEventListener("click", () => {
    confirmFirst({
      title: `Stop sweep ${sweep.name}?`,
      text: "It starts no more trials and its running trials are stopped; finished trials and " +
        "their model versions are kept.",
      confirm: "Stop the sweep",
      danger: true,
    }, async () => {
      const answer = await sendJson("POST", `${api}/stop`);
      if (answer.ok) await load();
      return answer;
    });
  });

  $("rerun-best").addEventListener("click", () => {
    const best = sweep.best;
    confirmFirst({
      title: `Re-run trial ${best.trial}?`,
      text: `One ordinary run of ${sweep.task_name} (not a trial) with the best trial's parameters: ` +
        Object.entries(best.parameters).map(([name, value]) => `${name}=${shownValue(value)}`).join(", "),
      confirm: "Run it",
    }, async () => {
      const answer = await sendJson("POST", `${api}/rerun-best`, { request_id: crypto.randomUUID() });
      if (answer.ok) {
        sayOnNextPage(`Started run #${answer.body.run.id} with the parameters of trial ${best.trial} of sweep ${sweep.name}.`);
        window.location.assign(runPage(answer.body.run.id));
      }
      return answer;
    });
  });

  // ---- the page --------------------------------------------------------------------------------

  async function load() {
    clearTimeout(following);
    // both asked at once; the trials are shown as soon as the sweep is read, the charts once
    // the curves are too
    const reading = [getJson(api), getJson(`${api}/curves`)];
    reading[1].catch(() => null);  // (its failure is the one awaited below)
    let drawing;
    try {
      sweep = await reading[0];
      drawing = performance.now();
      showHeader();
      showBest();
      showTrials();
      const waited = performance.now();
      curves = await reading[1];
      drawing += performance.now() - waited;
    } catch (error) {
      say(`Could not read the sweep: ${error.message}`, true);
      following = setTimeout(load, FOLLOW_MS * 2);
      return;
    }
    redrawCharts();
    // how long the page took to show what it read (the browser test keeps it short)
    page.dataset.drawnInMs = String(Math.round(performance.now() - drawing));
    page.dataset.state = sweep.state;
    page.dataset.ready = "true";
    if (ACTIVE.has(sweep.state)) following = setTimeout(load, FOLLOW_MS);
  }

  load();
  document.addEventListener("octotrain:theme", () => { for (const entry of drawn) entry.redraw(); });
  window.addEventListener("resize", () => { for (const entry of drawn) entry.chart.resize(); });
})();
