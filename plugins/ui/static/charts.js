// The "Metrics" and "Resources" pages: ECharts line charts of a run, live while it runs.
// Metrics: up to six charts as the meta file declares them (one or two y axes, up to four
// series), each with full screen, PNG and CSV downloads, smoothing (TensorBoard's debiased
// EMA, the raw line faint behind), zoom by box or slider and its reset, x by step or wall
// time. Resources: one chart per node of CPU, memory and each GPU; CPU shown first; a click
// on a legend entry shows only that line, a double click shows them all.
// Names and texts from the run are only ever set as text, never parsed as HTML.
"use strict";

const page = document.getElementById("charts-page");
const api = page.dataset.api;
const kind = page.dataset.kind;
const $ = (id) => document.getElementById(id);
const REFRESH_MS = 5000;
const DOUBLE_CLICK_MS = 400;
const charts = new Map();  // name → {chart, meta, data, card}
let node = null;
let live = page.dataset.live === "true";

function notice(text, items = [], problem = false) {
  const box = element("div", text, problem ? "notice problem" : "notice");
  if (items.length) {
    const list = element("ul");
    for (const item of items) list.append(element("li", item));
    box.append(list);
  }
  $("notices").append(box);
}

function nodeSelector(nodes, chosen, onChange) {
  const select = $("node");
  if (nodes.length < 2 || select.options.length) return;
  for (const name of nodes) select.append(new Option(name, name, false, name === chosen));
  $("node-choice").hidden = false;
  select.addEventListener("change", () => onChange(select.value));
}

function card(title, subtitle) {
  const box = element("article", undefined, "chart-card");
  const heading = element("h2", title);
  if (subtitle) heading.append(" ", element("span", subtitle, "muted"));
  const tools = element("div", undefined, "tools");
  const plot = element("div", undefined, "plot");
  box.append(heading, tools, plot);
  $("charts").append(box);
  return { box, tools, plot };
}

function button(text, onClick) {
  const made = element("button", text);
  made.type = "button";
  made.addEventListener("click", onClick);
  return made;
}

function fullScreen(box, chart) {
  return button("Full screen", async () => {
    if (document.fullscreenElement) { await document.exitFullscreen(); return; }
    try { await box.requestFullscreen(); }
    catch { box.classList.toggle("maximized"); }  // an iframe without allow="fullscreen"
    setTimeout(() => chart.resize(), 50);
  });
}

function downloadPng(name, chart) {
  return button("PNG", () => {
    const link = element("a");
    link.href = chart.getDataURL({ type: "png", pixelRatio: 2, backgroundColor: "#fff" });
    link.download = `${name}.png`;
    link.click();
  });
}

// ---- metrics ----------------------------------------------------------------------------------

function pairs(xs, ys) {
  const out = new Array(xs.length);
  for (let i = 0; i < xs.length; i += 1) out[i] = [xs[i], ys[i] === null ? NaN : ys[i]];
  return out;
}

function metricsOption(entry) {
  const { meta, data, state } = entry;
  const byTime = state.axis === "time" && data.timestamps;
  const xs = byTime ? data.timestamps.map((t) => (t === null ? NaN : t * 1000)) : data.x;
  const series = [];
  meta.lines.forEach((line, index) => {
    const raw = data.lines[line];
    const axis = meta.series.length ? 0 : index;
    const base = { type: "line", yAxisIndex: axis, showSymbol: false, animation: false, sampling: "lttb" };
    if (state.smooth) {
      series.push({ ...base, name: `${line} (raw)`, data: pairs(xs, raw), silent: true,
                    lineStyle: { opacity: 0.25 }, itemStyle: { opacity: 0.25 }, tooltip: { show: false } });
      const smoothed = OctotrainSmoothing.smooth(raw.map((v) => (v === null ? NaN : v)), state.weight);
      series.push({ ...base, name: line, data: pairs(xs, smoothed) });
    } else {
      series.push({ ...base, name: line, data: pairs(xs, raw) });
    }
  });
  // A raw line takes its smoothed line's colour: pairs of series share a palette entry.
  const palette = ["#5470c6", "#91cc75", "#fac858", "#ee6666", "#73c0de", "#3ba272"];
  series.forEach((item, index) => {
    const colour = palette[Math.floor(index / (state.smooth ? 2 : 1)) % palette.length];
    item.color = colour;
  });
  const yAxes = (meta.series.length ? [meta.ys[0]] : meta.ys).map((name, index) => ({
    type: "value", name, scale: true, position: index ? "right" : "left",
  }));
  return {
    legend: { data: meta.lines, top: 0 },
    tooltip: { trigger: "axis" },
    grid: { left: 56, right: yAxes.length > 1 ? 56 : 24, top: 36, bottom: 64 },
    xAxis: { type: byTime ? "time" : "value", name: byTime ? "time" : meta.x, scale: true,
             nameLocation: "middle", nameGap: 24 },
    yAxis: yAxes,
    dataZoom: [{ type: "inside", filterMode: "none" }, { type: "slider", filterMode: "none", height: 18, bottom: 6 }],
    toolbox: { right: 8, feature: { dataZoom: { yAxisIndex: "none", title: { zoom: "Zoom to a region", back: "Back" } },
                                    restore: { title: "Reset" } } },
    series,
  };
}

function draw(entry) {
  entry.chart.setOption(metricsOption(entry), { notMerge: true });
}

function addMetricsChart(meta) {
  const { box, tools, plot } = card(meta.description, meta.name);
  box.dataset.chart = meta.name;
  const chart = echarts.init(plot);
  const entry = { chart, meta: { ...meta, lines: meta.series.length ? meta.series : meta.ys },
                  data: null, card: box, state: { smooth: meta.smooth, weight: 0.6, axis: "step" } };
  const smoothing = element("label", " smoothing");
  const toggle = element("input"); toggle.type = "checkbox"; toggle.checked = meta.smooth; toggle.className = "smooth";
  smoothing.prepend(toggle);
  const weight = element("input"); weight.type = "range"; weight.min = "0"; weight.max = "0.999";
  weight.step = "0.001"; weight.value = "0.6"; weight.className = "weight"; weight.title = "smoothing weight";
  const shown = element("span", "0.600", "muted");
  toggle.addEventListener("change", () => { entry.state.smooth = toggle.checked; draw(entry); });
  weight.addEventListener("input", () => {
    entry.state.weight = Number(weight.value);
    shown.textContent = entry.state.weight.toFixed(3);
    if (entry.state.smooth) draw(entry);
  });
  tools.append(smoothing, weight, shown);
  if (meta.with_timestamp) {
    const axis = element("select"); axis.className = "x-axis"; axis.title = "x axis";
    axis.append(new Option(`x: ${meta.x}`, "step"), new Option("x: wall time", "time"));
    axis.addEventListener("change", () => { entry.state.axis = axis.value; draw(entry); });
    tools.append(axis);
  }
  const reset = button("Reset zoom", () => chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 }));
  const csv = element("a", "CSV", "button");
  csv.href = `${api}/metrics/${encodeURIComponent(meta.name)}/csv?node=${encodeURIComponent(node)}`;
  csv.setAttribute("download", "");
  tools.append(reset, fullScreen(box, chart), downloadPng(meta.name, chart), csv);
  entry.note = element("span", "", "muted skipped");
  tools.append(entry.note);
  charts.set(meta.name, entry);
  return entry;
}

function chartUrl(name, after = 0) {
  return `${api}/metrics/${encodeURIComponent(name)}?node=${encodeURIComponent(node)}&after=${after}`;
}

async function loadMetrics() {
  const listed = await getJson(`${api}/metrics${node ? `?node=${encodeURIComponent(node)}` : ""}`);
  node = listed.node;
  live = listed.live;
  nodeSelector(listed.nodes, node, (chosen) => { node = chosen; reset(); loadMetrics().catch(fail); });
  if (!listed.declared) notice(`Node ${node} has not declared any metrics yet (no metrics.json in METRICS).`);
  if (listed.problems.length) {
    notice(`metrics.json of node ${node} breaks ${listed.problems.length} rule(s); the charts that keep them are shown:`,
           listed.problems.map((problem) => `${problem.field}: ${problem.rule}`), true);
  }
  await Promise.all(listed.charts.map(async (meta) => {
    const entry = addMetricsChart(meta);
    entry.data = await getJson(chartUrl(meta.name));
    showSkipped(entry);
    draw(entry);
  }));
}

function showSkipped(entry) {
  const { skipped, total, downsampled } = entry.data;
  const parts = [`${total} points${downsampled ? `, ${entry.data.x.length} drawn` : ""}`];
  if (skipped) parts.push(`${skipped} unreadable lines skipped`);
  entry.note.textContent = parts.join("; ");
}

async function refreshMetrics() {
  for (const entry of charts.values()) {
    const fresh = await getJson(chartUrl(entry.meta.name, entry.data.last));
    if (!fresh.x.length) continue;
    entry.data.x.push(...fresh.x);
    for (const line of entry.meta.lines) entry.data.lines[line].push(...fresh.lines[line]);
    if (entry.data.timestamps && fresh.timestamps) entry.data.timestamps.push(...fresh.timestamps);
    Object.assign(entry.data, { last: fresh.last, total: fresh.total, skipped: fresh.skipped });
    showSkipped(entry);
    draw(entry);
  }
}

// ---- resources --------------------------------------------------------------------------------

const RESOURCE_LABELS = {
  cpu_percent: "CPU %",
  memory_percent: "Memory %",
};

function resourceLabel(column) {
  if (RESOURCE_LABELS[column]) return RESOURCE_LABELS[column];
  const gpu = /^gpu(\d+)_(utilization|memory)_percent$/.exec(column);
  return gpu ? `GPU ${gpu[1]} ${gpu[2] === "utilization" ? "utilisation" : "memory"} %` : column;
}

function onlyOrAll(chart, names) {
  // A click shows only the line clicked; a second click soon after (a double click) shows all.
  let lastClick = 0;
  chart.on("legendselectchanged", (event) => {
    const now = Date.now();
    if (now - lastClick < DOUBLE_CLICK_MS) {
      chart.dispatchAction({ type: "legendAllSelect" });
      lastClick = 0;
      return;
    }
    lastClick = now;
    for (const name of names) {
      chart.dispatchAction({ type: name === event.name ? "legendSelect" : "legendUnSelect", name });
    }
  });
}

async function loadResources() {
  const samples = await getJson(`${api}/resources${node ? `?node=${encodeURIComponent(node)}` : ""}`);
  node = samples.node;
  live = samples.live;
  nodeSelector(samples.nodes, node, (chosen) => { node = chosen; reset(); loadResources().catch(fail); });
  if (samples.missing.includes("psutil")) {
    notice(`The image of node ${node} lacks psutil (pip install psutil pynvml): its resource usage `
           + "cannot be collected.", [], true);
  } else if (samples.missing.includes("pynvml")) {
    notice(`The image of node ${node} lacks pynvml (pip install pynvml): GPU usage cannot be `
           + "collected; CPU and memory are shown.", [], true);
  }
  const columns = Object.keys(samples.columns).filter((name) => name.endsWith("_percent"));
  if (!columns.length) {
    if (!samples.missing.includes("psutil")) notice(`Node ${node} has no resource samples yet.`);
    return;
  }
  const { box, tools, plot } = card(`Resource usage of ${node}`, "percent");
  const chart = echarts.init(plot);
  const times = samples.timestamps.map((t) => (t === null ? NaN : t * 1000));
  const names = columns.map(resourceLabel);
  const selected = Object.fromEntries(names.map((name) => [name, name === "CPU %"]));
  chart.setOption({
    legend: { data: names, selected, top: 0 },
    tooltip: { trigger: "axis" },
    grid: { left: 48, right: 24, top: 48, bottom: 64 },
    xAxis: { type: "time" },
    yAxis: { type: "value", min: 0, name: "%" },
    dataZoom: [{ type: "inside", filterMode: "none" }, { type: "slider", filterMode: "none", height: 18, bottom: 6 }],
    series: columns.map((column, index) => ({
      type: "line", name: names[index], showSymbol: false, animation: false,
      data: pairs(times, samples.columns[column]),
    })),
  });
  onlyOrAll(chart, names);
  tools.append(fullScreen(box, chart), downloadPng(`resources-${node}`, chart),
               element("span", "click a legend entry: only that line; double-click: all lines", "muted"));
  charts.set("resources", { chart, card: box, columns });
}

async function refreshResources() {
  const entry = charts.get("resources");
  if (!entry) { reset(); await loadResources(); return; }
  const samples = await getJson(`${api}/resources?node=${encodeURIComponent(node)}`);
  live = samples.live;
  const times = samples.timestamps.map((t) => (t === null ? NaN : t * 1000));
  // Only the data changes: the legend's selection and the zoom stay as the user left them.
  entry.chart.setOption({ series: entry.columns.map((column) => ({ data: pairs(times, samples.columns[column] || []) })) });
}

// ---- the page ---------------------------------------------------------------------------------

function reset() {
  for (const entry of charts.values()) entry.chart.dispose();
  charts.clear();
  $("charts").replaceChildren();
  $("notices").replaceChildren();
}

function fail(error) {
  notice(error.message, [], true);
}

const load = kind === "metrics" ? loadMetrics : loadResources;
load().catch(fail);
window.addEventListener("resize", () => { for (const entry of charts.values()) entry.chart.resize(); });
setInterval(() => {
  if (!live) return;
  if (kind === "metrics") refreshMetrics().catch(() => {});
  else refreshResources().catch(() => {});
}, REFRESH_MS);
