// The comparison of runs (/ui/compare?runs=…): each run's final values, one chart per chart name
// with a line per run (the legend names the runs), and for each task of the runs the trend of
// its retraining runs' final values over time. The runs' parameters are rendered by the server;
// "only the differing parameters" hides the others. Texts from the runs are only ever set as
// text, or escaped in ECharts' HTML tooltips.
"use strict";

const page = document.getElementById("compare-page");
const api = page.dataset.api;
const runIds = page.dataset.runs;
const $ = (id) => document.getElementById(id);
const drawn = [];  // {chart, redraw()}: drawn anew when Airflow's theme changes
const FEW_POINTS = 40;

// The runs offered to add say when they started, in Airflow's format and timezone.
for (const option of document.querySelectorAll(".add-run option[data-started]")) {
  option.textContent += `, started ${formatDateTime(option.dataset.started)}`;
}

function notice(text, problem = false) {
  $("notices").append(element("div", text, problem ? "notice problem" : "notice"));
}

function card(parent, title, subtitle) {
  const box = element("article", undefined, "chart-card");
  const heading = element("h2", title);
  if (subtitle) heading.append(" ", element("span", subtitle, "muted"));
  const plot = element("div", undefined, "plot");
  box.append(heading, plot);
  parent.append(box);
  return { box, plot };
}

// A chart in ``plot`` of ``option()``; drawn anew in the new theme when Airflow's changes (a
// theme set on a drawn chart can leave its legend laid out with the old one's text widths).
function draw(plot, option) {
  const entry = {
    redraw: () => {
      entry.chart?.dispose();
      entry.chart = echarts.init(plot, chartTheme());
      entry.chart.setOption(option());
    },
  };
  entry.redraw();
  drawn.push(entry);
  return entry;
}

// The axis tooltip: the x, then each run's value there (a run without a point there is left out).
function axisTooltip(head) {
  return (params) => {
    // a smoothed point carries its raw value third
    const raw = (point) => (point.value.length > 2 ? ` (raw ${significant(point.value[2])})` : "");
    const rows = params.filter((point) => Number.isFinite(point.value[1])).map((point) =>
      `${point.marker}${escapeHtml(point.seriesName)} <b>${significant(point.value[1])}</b>${raw(point)}`);
    return [`<b>${escapeHtml(head(params[0].value[0], params[0]))}</b>`, ...rows].join("<br>");
  };
}

// ---- final values -----------------------------------------------------------------------------

// Which way a line is better, told by its name: lower for a loss or an error (loss, error, mae,
// mse, perplexity, time …), higher for anything else (accuracy, f1, auc …).
const LOWER_IS_BETTER = /loss|err|mae|mse|rmse|perplexity|time|latency|cost/i;

function bestOf(finals, line) {
  const values = finals.filter(Boolean).map((final) => final.value).filter(Number.isFinite);
  if (!values.length) return null;
  const lower = LOWER_IS_BETTER.test(line);
  return { value: lower ? Math.min(...values) : Math.max(...values), lower };
}

function finalsTable(overview) {
  const head = element("tr");
  head.append(element("th", "chart · line"), ...overview.runs.map((run) => element("th", run.label)));
  const rows = [head];
  for (const chart of overview.charts) {
    for (const line of chart.lines) {
      const row = element("tr");
      row.dataset.chart = chart.name;
      row.append(element("th", chart.lines.length > 1 || line !== chart.name ? `${chart.name} · ${line}` : chart.name));
      const finals = overview.runs.map((run) => overview.finals[run.label]?.[chart.name]?.[line]);
      const best = bestOf(finals, line);
      finals.forEach((final) => {
        const value = element("td", final ? significant(final.value) : "—", final ? "number" : "muted");
        if (final) value.title = `at ${chart.x} ${significant(final.x)}`;
        if (final && best !== null && final.value === best.value && finals.filter(Boolean).length > 1) {
          value.classList.add("best");
          value.title += ` · the best of these runs (${best.lower ? "lowest" : "highest"})`;
        }
        row.append(value);
      });
      rows.push(row);
    }
  }
  $("finals-table").tBodies[0].replaceChildren(...rows);
  if (!overview.charts.length) notice("None of these runs declared any metrics (no metrics.json in METRICS of its first node).");
}

// ---- one chart, a line per run ----------------------------------------------------------------

// A run's points of one line as [x, y], leaving out the x values only other runs have.
function runPoints(xs, values) {
  const points = [];
  for (let i = 0; i < xs.length; i += 1) if (values[i] !== null) points.push([xs[i], values[i]]);
  return points;
}

// One chart's lines, a line per run: the chart's first line on the left axis, its second on
// one of its own on the right (as the run page draws them); smoothed as on the run page (the
// raw line faint behind), zoomed by the wheel, the slider or a box.
function comparedOption(data, labels, state) {
  const palette = PALETTES[dark() ? "dark" : "light"];
  const series = [];
  const twoAxes = data.lines.length > 1;
  labels.filter((label) => data.values[label]).forEach((label) => {
    const index = labels.indexOf(label);
    data.lines.forEach((line, lineIndex) => {
      const values = data.values[label][line];
      if (!values) return;
      const raw = runPoints(data.x, values);
      const base = {
        type: "line", name: twoAxes ? `${label} · ${line}` : label, yAxisIndex: Math.min(lineIndex, 1),
        color: palette[index % palette.length], showSymbol: raw.length <= FEW_POINTS, symbolSize: 6,
        animation: false, sampling: "lttb",
        // a second line of the same run, and runs past the palette, are dashed
        lineStyle: { type: lineIndex > 0 || index >= palette.length ? "dashed" : "solid" },
      };
      if (!state.smooth) {
        series.push({ ...base, data: raw });
        return;
      }
      const smoothed = OctotrainSmoothing.smooth(raw.map((point) => point[1]), state.weight);
      series.push({ ...base, name: `${base.name} (raw)`, data: raw, silent: true, tooltip: { show: false },
                    lineStyle: { ...base.lineStyle, opacity: 0.25 }, itemStyle: { opacity: 0.25 } });
      series.push({ ...base, data: raw.map((point, at) => [point[0], smoothed[at], point[1]]) });
    });
  });
  const axis = (name, index) => ({ type: "value", scale: true, name, position: index ? "right" : "left",
                                   nameTextStyle: { align: index ? "right" : "left" } });
  return {
    // raw lines are left out of the legend: each goes with its smoothed line
    legend: { top: 4, left: 8, right: 112, type: "scroll",
              data: series.filter((item) => !item.silent).map((item) => item.name) },
    tooltip: { trigger: "axis", formatter: axisTooltip((x) => `${data.x_name} ${significant(x)}`) },
    grid: { left: 56, right: twoAxes ? 56 : 24, top: 72, bottom: 64 },
    xAxis: { type: "value", name: data.x_name, min: "dataMin", max: "dataMax", nameLocation: "middle", nameGap: 24 },
    yAxis: twoAxes ? [axis(data.lines[0], 0), axis(data.lines.slice(1).join(", "), 1)] : [axis("", 0)],
    dataZoom: [{ type: "inside", filterMode: "none" }, { type: "slider", filterMode: "none", height: 18, bottom: 6 }],
    toolbox: { right: 8, top: 2, feature: {
      dataZoom: { filterMode: "none", title: { zoom: "Zoom to a box (x and y)", back: "Back" } },
      restore: { title: "Reset" } } },
    series,
  };
}

// Smoothing for one chart: a switch and its weight, as on the run page.
function smoothingControls(box, state, redraw) {
  const controls = element("div", undefined, "tools");
  const label = element("label", " smoothing");
  const toggle = element("input");
  toggle.type = "checkbox"; toggle.className = "smooth"; toggle.checked = state.smooth;
  label.prepend(toggle);
  const weight = element("input");
  weight.type = "range"; weight.min = "0"; weight.max = "0.999"; weight.step = "0.001";
  weight.value = String(state.weight); weight.className = "weight"; weight.title = "smoothing weight";
  weight.setAttribute("aria-label", "smoothing weight");
  const shown = element("span", state.weight.toFixed(3), "muted");
  toggle.addEventListener("change", () => { state.smooth = toggle.checked; redraw(); });
  weight.addEventListener("input", () => {
    state.weight = Number(weight.value);
    shown.textContent = state.weight.toFixed(3);
    if (state.smooth) redraw();
  });
  controls.append(label, weight, shown);
  box.querySelector("h2").after(controls);
}

async function comparedChart(chart, labels) {
  const { box, plot } = card($("charts"), chart.description, chart.name);
  box.dataset.chart = chart.name;
  const data = await getJson(`${api}/compare/charts/${encodeURIComponent(chart.name)}?runs=${runIds}`);
  const notes = [];
  if (data.missing.length) notes.push(`not declared by ${data.missing.join(", ")}`);
  if (data.downsampled) notes.push("downsampled, peaks kept");
  if (notes.length) box.querySelector("h2").append(element("span", ` (${notes.join("; ")})`, "muted"));
  const state = { smooth: Boolean(chart.smooth), weight: 0.6 };
  const entry = draw(plot, () => comparedOption(data, labels, state));
  smoothingControls(box, state, () => entry.chart.setOption(comparedOption(data, labels, state), true));
}

// ---- the trend of a task's retraining runs ----------------------------------------------------

function trendOption(lines) {
  const series = Object.entries(lines).map(([line, points]) => ({
    type: "line", name: line, showSymbol: true, symbolSize: 7, animation: false,
    data: points.map((point) => ({ value: [Date.parse(utcUnlessZoned(point.started_at)), point.value], run: point.run_id })),
  }));
  return {
    legend: { top: 4, left: 8, right: 8, type: "scroll" },
    tooltip: { trigger: "axis", formatter: axisTooltip((x, first) => `${formatDateTime(new Date(x))} · run ${first.data.run}`) },
    grid: { left: 56, right: 24, top: 48, bottom: 40 },
    // retraining runs are hours or days apart: the labels always have the date
    xAxis: { type: "time", axisLabel: timeLabels(Number.POSITIVE_INFINITY) },
    yAxis: { type: "value", scale: true },
    series,
  };
}

async function taskTrend(taskId, taskName) {
  const trend = await getJson(`${api}/tasks/${taskId}/trend`);
  const section = $("trend");
  const heading = element("h2", `Retraining trend of ${taskName}`);
  heading.append(" ", element("span", "final values of its runs started by its schedule or a new dataset version", "muted"));
  section.append(heading);
  if (!trend.runs.length) {
    section.append(element("p", `${taskName} has no scheduled or dataset-triggered run yet.`, "muted no-trend"));
    return;
  }
  const cards = element("div", undefined, "charts");
  cards.dataset.task = taskId;
  section.append(cards);
  for (const [chart, lines] of Object.entries(trend.charts)) {
    const runs = new Set(Object.values(lines).flatMap((points) => points.map((point) => point.run_id)));
    const { box, plot } = card(cards, chart, `${runs.size} of ${trend.runs.length} runs`);
    box.dataset.trend = chart;
    draw(plot, () => trendOption(lines));
  }
  if (!Object.keys(trend.charts).length) {
    section.append(element("p", `The ${trend.runs.length} retraining runs of ${taskName} wrote no metrics.`, "muted no-trend"));
  }
}

// ---- the page ---------------------------------------------------------------------------------

$("only-differing").addEventListener("change", (event) => {
  for (const row of document.querySelectorAll("#compare-table tr.parameter:not(.differs)")) row.hidden = event.target.checked;
});

async function load() {
  const overview = await getJson(`${api}/compare?runs=${runIds}`);
  finalsTable(overview);
  const labels = overview.runs.map((run) => run.label);
  await Promise.all(overview.charts.map((chart) => comparedChart(chart, labels)));
  const tasks = new Map(overview.runs.map((run) => [run.task_id, run.task]));
  for (const [taskId, name] of tasks) await taskTrend(taskId, name);
  page.dataset.loaded = "true";
}

load().catch((error) => notice(error.message, true));
document.addEventListener("octotrain:theme", () => { for (const entry of drawn) entry.redraw(); });
window.addEventListener("resize", () => { for (const entry of drawn) entry.chart.resize(); });
