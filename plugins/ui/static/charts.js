// The "Metrics" and "Resources" pages: ECharts line charts of a run, live while it runs.
// Metrics: up to six charts as the meta file declares them (one or two y axes, up to four
// series), each with full screen, PNG (titled, without the controls) and CSV downloads,
// smoothing (TensorBoard's debiased EMA, the raw line faint behind and in the tooltip), zoom
// (the wheel or the slider on x, the y range following the data in view; a box on x and y) and
// its reset, a log scale for y, x by step or wall time. Resources: one chart per node of CPU,
// memory and each GPU; CPU shown first; a click on a legend entry shows only that line, a
// double click shows them all. The charts take Airflow's light or dark theme, and follow it.
// Names and texts from the run are only ever set as text, or escaped, never parsed as HTML.
// The theme and the number and time formats are chart_theme.js's.
"use strict";

const page = document.getElementById("charts-page");
const api = page.dataset.api;
const kind = page.dataset.kind;
const $ = (id) => document.getElementById(id);
const REFRESH_MS = 5000;
const DOUBLE_CLICK_MS = 400;
// Up to this many points a line shows a marker at each one: a short run's one or two samples
// are otherwise invisible (a line needs two points).
const FEW_POINTS = 40;
// A single resource sample is shown this far from either end of the x axis (the sampler's
// interval): ECharts would otherwise widen a time axis of one instant to two days.
const SINGLE_SAMPLE_PAD_MS = 2000;
const charts = new Map();  // name → {chart, card, redraw(), …}
let node = null;
let live = page.dataset.live === "true";

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

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
  $("node-choice").firstChild.textContent = `node (${nodes.length} in this run) `;
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

// ---- theme (chart_theme.js): the charts follow Airflow's ---------------------------------------

document.addEventListener("octotrain:theme", () => {
  const theme = chartTheme();
  for (const entry of charts.values()) {
    entry.chart.setTheme(theme);
    entry.redraw();  // series colours come from the theme's palette
  }
});

// ---- shared by both pages ---------------------------------------------------------------------

// The axis tooltip: the x value, then each line's value to six significant digits, and the
// raw value next to a smoothed one (a point's third value).
// ``units``: the unit after each value, or a function of the series' name that gives it.
function tooltipFormatter(xLabel, byTime, units = "") {
  return (params) => {
    if (!params.length) return "";
    const x = params[0].value[0];
    const head = byTime ? formatDateTime(new Date(x)) : `${xLabel} ${significant(x)}`;
    const rows = params.map((point) => {
      const [, shown, raw] = point.value;
      const unit = typeof units === "function" ? units(point.seriesName) : units;
      const rawText = raw === undefined ? "" : ` <span class="raw">raw ${significant(raw)}${unit}</span>`;
      return `${point.marker}${escapeHtml(point.seriesName)} <b>${significant(shown)}${unit}</b>${rawText}`;
    });
    return [`<b>${escapeHtml(head)}</b>`, ...rows].join("<br>");
  };
}

// The chart as a PNG with its title and the run it is of above it, without the toolbox and
// the zoom slider, on the theme's background.
async function savePng(chart, title, subtitle, fileName) {
  const c = colours();
  const ratio = 2;
  const image = new Image();
  image.src = chart.getDataURL({ type: "png", pixelRatio: ratio, backgroundColor: c.panel,
                                 excludeComponents: ["toolbox", "dataZoom"] });
  await image.decode();
  const heading = 52 * ratio;
  const canvas = element("canvas");
  canvas.width = image.width;
  canvas.height = image.height + heading;
  const context = canvas.getContext("2d");
  context.fillStyle = c.panel;
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = c.fg;
  context.font = `600 ${16 * ratio}px ${c.font}`;
  context.fillText(title, 12 * ratio, 24 * ratio, canvas.width - 24 * ratio);
  context.fillStyle = c.muted;
  context.font = `${12 * ratio}px ${c.font}`;
  context.fillText(subtitle, 12 * ratio, 44 * ratio, canvas.width - 24 * ratio);
  context.drawImage(image, 0, heading);
  const link = element("a");
  link.href = canvas.toDataURL("image/png");
  link.download = `${fileName}.png`;
  link.click();
}

function pngButton(chart, title, subtitle, fileName) {
  const made = button("PNG", () => savePng(chart, title, subtitle, fileName).catch(fail));
  made.title = "the chart with its title, without the controls";
  return made;
}

function runLabel() {
  return `${page.dataset.task} · run ${page.dataset.run} · node ${node}`;
}

// ---- metrics ----------------------------------------------------------------------------------

function nanForNull(values) {
  return values.map((value) => (value === null ? NaN : value));
}

// [x, y] points, or [x, y, raw] for a smoothed line (the tooltip shows both).
function pairs(xs, ys, raws) {
  const out = new Array(xs.length);
  for (let i = 0; i < xs.length; i += 1) out[i] = raws ? [xs[i], ys[i], raws[i]] : [xs[i], ys[i]];
  return out;
}

// Why y cannot be drawn on a log scale: the lines with values of 0 or less; "" when it can.
function logRefusal(entry) {
  const offending = entry.meta.lines
    .map((line) => [line, entry.data.lines[line].filter((value) => value !== null && value <= 0).length])
    .filter(([, count]) => count);
  if (!offending.length) return "";
  const which = offending.map(([line, count]) => `${line} has ${plural(count, "value")} ≤ 0`).join(", ");
  return `A log scale needs values above 0: ${which}.`;
}

function metricsOption(entry) {
  const { meta, data, state } = entry;
  const palette = PALETTES[dark() ? "dark" : "light"];
  const byTime = state.axis === "time" && data.timestamps;
  const xs = byTime ? data.timestamps.map((t) => (t === null ? NaN : t * 1000)) : data.x;
  const few = xs.length <= FEW_POINTS;
  const series = [];
  meta.lines.forEach((line, index) => {
    const raw = nanForNull(data.lines[line]);
    // A raw line takes its smoothed line's colour.
    const base = { type: "line", yAxisIndex: meta.series.length ? 0 : index, color: palette[index % palette.length],
                   showSymbol: few, symbolSize: 6, animation: false, sampling: "lttb" };
    if (state.smooth) {
      series.push({ ...base, name: `${line} (raw)`, data: pairs(xs, raw), silent: true,
                    lineStyle: { opacity: 0.25 }, itemStyle: { opacity: 0.25 }, tooltip: { show: false } });
      const smoothed = OctotrainSmoothing.smooth(raw, state.weight);
      series.push({ ...base, name: line, data: pairs(xs, smoothed, raw) });
    } else {
      series.push({ ...base, name: line, data: pairs(xs, raw) });
    }
  });
  const yAxes = (meta.series.length ? [meta.ys[0]] : meta.ys).map((name, index) => ({
    type: state.log ? "log" : "value", name, scale: true, position: index ? "right" : "left",
    nameTextStyle: { align: index ? "right" : "left" },
  }));
  return {
    // The legend and the toolbox share the top row; the axis names sit below them.
    legend: { data: meta.lines, top: 4, left: 8, right: 112, type: "scroll" },
    tooltip: { trigger: "axis", formatter: tooltipFormatter(meta.x, byTime) },
    grid: { left: 56, right: yAxes.length > 1 ? 56 : 24, top: 72, bottom: 64 },
    // x ends where the data ends (not at the next round number)
    xAxis: { type: byTime ? "time" : "value", name: byTime ? "time" : meta.x, min: "dataMin", max: "dataMax",
             nameLocation: "middle", nameGap: 24, ...(byTime ? { axisLabel: timeLabels(spanOf(xs)) } : {}) },
    yAxis: yAxes,
    // x zooms by the wheel and the slider; "filter" leaves out the points outside the window,
    // so that the y axes (scale: true) span only the data in view. The toolbox's box zoom
    // sets x and y to the box.
    dataZoom: [{ type: "inside", xAxisIndex: 0, filterMode: "filter" },
               { type: "slider", xAxisIndex: 0, filterMode: "filter", height: 18, bottom: 6 }],
    toolbox: { right: 8, top: 2, feature: {
      dataZoom: { filterMode: "none", title: { zoom: "Zoom to a box (x and y)", back: "Back" } },
      restore: { title: "Reset" } } },
    series,
  };
}

function draw(entry) {
  entry.chart.setOption(metricsOption(entry), { notMerge: true });
}

function logToggle(entry, refusal) {
  const label = element("label", " log y");
  const toggle = element("input");
  toggle.type = "checkbox";
  toggle.className = "log-y";
  label.prepend(toggle);
  toggle.addEventListener("change", () => {
    const why = toggle.checked ? logRefusal(entry) : "";
    refusal.textContent = why;
    if (why) toggle.checked = false;
    entry.state.log = toggle.checked;
    draw(entry);
  });
  return label;
}

function addMetricsChart(meta) {
  const { box, tools, plot } = card(meta.description, meta.name);
  box.dataset.chart = meta.name;
  const chart = echarts.init(plot, chartTheme());
  const entry = { chart, meta: { ...meta, lines: meta.series.length ? meta.series : meta.ys },
                  data: null, card: box, redraw: () => entry.data && draw(entry),
                  state: { smooth: meta.smooth, weight: 0.6, axis: "step", log: false } };
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
  // Two groups that wrap as wholes on a narrow card: how the chart is drawn, what to do with it.
  const view = element("span", undefined, "view");
  view.append(smoothing, weight, shown);
  if (meta.with_timestamp) {
    const axis = element("select"); axis.className = "x-axis"; axis.title = "x axis";
    axis.append(new Option(`x: ${meta.x}`, "step"), new Option("x: wall time", "time"));
    axis.addEventListener("change", () => { entry.state.axis = axis.value; draw(entry); });
    view.append(axis);
  }
  const refusal = element("span", "", "refusal");
  refusal.setAttribute("role", "alert");
  view.append(logToggle(entry, refusal));
  const actions = element("span", undefined, "actions");
  const reset = button("Reset zoom", () => chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 }));
  const csv = element("a", "CSV", "button");
  csv.href = `${api}/metrics/${encodeURIComponent(meta.name)}/csv?node=${encodeURIComponent(node)}`;
  csv.setAttribute("download", "");
  actions.append(reset, fullScreen(box, chart),
                 pngButton(chart, meta.description, `${meta.name} · ${runLabel()}`, meta.name), csv);
  // How many points, in the heading's line: the controls take two rows on a narrow card.
  entry.note = element("span", "", "muted skipped");
  box.querySelector("h2").append(entry.note);
  tools.append(view, actions, refusal);
  entry.refusal = refusal;
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
  if (!listed.declared) {
    notice(live ? `Node ${node} has not declared any metrics yet (no metrics.json in METRICS).`
                : `Node ${node} declared no metrics in this run (no metrics.json in METRICS).`);
  }
  if (listed.problems.length) {
    notice(`metrics.json of node ${node} breaks ${plural(listed.problems.length, "rule")}; the charts that keep them are shown:`,
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
  const parts = [`${plural(total, "point")}${downsampled ? `, ${entry.data.x.length} drawn` : ""}`];
  if (skipped) parts.push(`${plural(skipped, "unreadable line")} skipped`);
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
    if (entry.state.log && logRefusal(entry)) {
      entry.state.log = false;
      entry.card.querySelector("input.log-y").checked = false;
      entry.refusal.textContent = logRefusal(entry);
      draw(entry);
      continue;
    }
    // Only the points change: the zoom (the slider's window, a box) stays as the user left it.
    entry.chart.setOption({ series: metricsOption(entry).series });
  }
}

// ---- resources --------------------------------------------------------------------------------

const RESOURCE_LABELS = {
  cpu_percent: "CPU %",
  memory_percent: "Memory %",
  memory_bytes: "Memory MiB",
};
const MIB = 1024 * 1024;
// Shown when the page opens: CPU and memory, the memory both in % of the node's limit and in MiB.
const SHOWN_FIRST = new Set(["CPU %", "Memory %", "Memory MiB"]);

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

function spanOf(values) {
  const finite = values.filter(Number.isFinite);
  return finite.length ? Math.max(...finite) - Math.min(...finite) : 0;
}

// The x axis spans the samples' own times; one sample gets a short window around it.
function sampleSpan(times) {
  const finite = times.filter(Number.isFinite);
  if (!finite.length) return {};
  const [first, last] = [Math.min(...finite), Math.max(...finite)];
  return first === last ? { min: first - SINGLE_SAMPLE_PAD_MS, max: last + SINGLE_SAMPLE_PAD_MS }
                        : { min: first, max: last };
}

function resourceSeries(entry) {
  const times = entry.samples.timestamps.map((t) => (t === null ? NaN : t * 1000));
  return {
    xAxis: { type: "time", ...sampleSpan(times), axisLabel: timeLabels(spanOf(times)) },
    series: entry.columns.map((column, index) => {
      const values = nanForNull(entry.samples.columns[column] || []);
      const inMib = column === "memory_bytes";
      return {
        type: "line", name: entry.names[index], showSymbol: times.length <= FEW_POINTS, symbolSize: 6,
        animation: false, yAxisIndex: inMib ? 1 : 0,
        data: pairs(times, inMib ? values.map((value) => value / MIB) : values),
      };
    }),
  };
}

function resourcesOption(entry) {
  return {
    legend: { data: entry.names, selected: entry.selected, top: 4, left: 8, right: 8, type: "scroll" },
    tooltip: { trigger: "axis", formatter: tooltipFormatter("time", true, (name) => (name.endsWith("MiB") ? " MiB" : " %")) },
    grid: { left: 48, right: 64, top: 56, bottom: 64 },
    yAxis: [{ type: "value", min: 0, name: "%" },
            { type: "value", min: 0, name: "MiB", position: "right", splitLine: { show: false } }],
    dataZoom: [{ type: "inside", filterMode: "none" }, { type: "slider", filterMode: "none", height: 18, bottom: 6 }],
    ...resourceSeries(entry),
  };
}

// What the page says about collecting a node's usage: a missing psutil means nothing could be
// measured; a missing pynvml matters only to a node that has GPUs (an unplanned run: unknown).
function collectorNotices(samples) {
  if (samples.missing.includes("psutil")) {
    notice(`The image of node ${node} lacks psutil (pip install psutil pynvml): its resource usage `
           + "cannot be collected.", [], true);
  } else if (samples.missing.includes("pynvml") && samples.gpu_count !== 0) {
    notice(`The image of node ${node} lacks pynvml (pip install pynvml): GPU usage cannot be `
           + "collected; CPU and memory are shown.", [], true);
  }
}

async function loadResources() {
  const samples = await getJson(`${api}/resources${node ? `?node=${encodeURIComponent(node)}` : ""}`);
  node = samples.node;
  live = samples.live;
  nodeSelector(samples.nodes, node, (chosen) => { node = chosen; reset(); loadResources().catch(fail); });
  collectorNotices(samples);
  const columns = Object.keys(samples.columns)
    .filter((name) => name.endsWith("_percent") || name === "memory_bytes");
  if (!columns.length) {
    if (samples.missing.includes("psutil")) return;
    notice(live ? `Node ${node} has no resource samples yet.`
                : `Node ${node} of this run recorded no resource samples.`);
    return;
  }
  const { box, tools, plot } = card(`Resource usage of ${node}`, "percent, and memory in MiB");
  box.dataset.chart = "resources";
  const chart = echarts.init(plot, chartTheme());
  const names = columns.map(resourceLabel);
  const entry = { chart, card: box, columns, names, samples,
                  selected: Object.fromEntries(names.map((name) => [name, SHOWN_FIRST.has(name)])) };
  // A redraw (a theme change) keeps the legend's selection as the user left it.
  entry.redraw = () => {
    entry.selected = chart.getOption().legend[0].selected;
    chart.setOption(resourcesOption(entry), { notMerge: true });
  };
  chart.setOption(resourcesOption(entry));
  onlyOrAll(chart, names);
  tools.append(fullScreen(box, chart), pngButton(chart, `Resource usage of ${node}`, runLabel(), `resources-${node}`),
               element("span", "click a legend entry: only that line; double-click: all lines", "muted"),
               element("span", plural(samples.timestamps.length, "sample"), "muted samples"));
  charts.set("resources", entry);
}

async function refreshResources() {
  const entry = charts.get("resources");
  if (!entry) { reset(); await loadResources(); return; }
  entry.samples = await getJson(`${api}/resources?node=${encodeURIComponent(node)}`);
  live = entry.samples.live;
  entry.card.querySelector(".samples").textContent = plural(entry.samples.timestamps.length, "sample");
  // Only the data changes: the legend's selection and the zoom stay as the user left them.
  entry.chart.setOption(resourceSeries(entry));
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
